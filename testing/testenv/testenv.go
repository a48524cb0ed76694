// Package testenv decides what a test does when the machine lacks something it
// needs — a test HBase, a Prometheus binary, a browser, a tmpfs to fill,
// /proc/<pid>/clear_refs to reset a process's peak RSS: it skips and says how
// to provide it, except where a TSDB_TEST_REQUIRE_* variable is "1", where it
// fails naming what is missing. `make test` and CI set every one of them
// (Makefile), so that no such test passes there without checking; and the
// Makefile's test report (testing/testreport) fails the run if any test
// skipped all the same.
//
// It also provides the two capabilities that only the machine can give: a
// tmpfs mounted for the test (MountTmpfs) and a reset of a process's peak RSS
// (ResetPeakRSS). It imports no package of the module, so that every test
// helper can use it.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Environment variables that turn a missing capability into a failure when
// "1". The HBase and end-to-end ones are defined by testing/hbasetest and e2e.
const (
	// EnvRequireTmpfs: MountTmpfs fails instead of skipping.
	EnvRequireTmpfs = "TSDB_TEST_REQUIRE_TMPFS"
	// EnvRequireClearRefs: ResetPeakRSS fails instead of skipping.
	EnvRequireClearRefs = "TSDB_TEST_REQUIRE_CLEAR_REFS"
)

// Required reports whether the environment variable require is "1".
func Required(require string) bool { return os.Getenv(require) == "1" }

// Missing ends the test for want of something: it skips with msg (what is
// missing and how to provide it), or fails when the environment variable
// require is "1".
func Missing(t testing.TB, require, msg string) {
	t.Helper()
	if Required(require) {
		t.Fatalf("%s is 1 but %s", require, msg)
	}
	t.Skip(msg)
}

// MountTmpfs mounts a tmpfs of size (mount(8)'s size=, like "64m") on a fresh
// temporary directory and returns the directory, unmounted when the test and
// its cleanups registered later are done. Where mount fails (it needs root on
// Linux) the test skips, or fails under EnvRequireTmpfs=1.
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		Missing(t, EnvRequireTmpfs, fmt.Sprintf("cannot mount a tmpfs to fill: mount -t tmpfs -o size=%s tmpfs %s: %v: %s "+
			"(it needs root on Linux: run the test as root, as make test and CI do)", size, mnt, err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// ResetPeakRSS resets the peak resident set size (VmHWM in /proc/<pid>/status)
// of process pid to its current RSS, by writing 5 to /proc/<pid>/clear_refs.
// Where that fails (not Linux, or a /proc that refuses it) the test skips, or
// fails under EnvRequireClearRefs=1.
func ResetPeakRSS(t testing.TB, pid int) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/clear_refs", pid)
	if err := os.WriteFile(path, []byte("5"), 0); err != nil {
		Missing(t, EnvRequireClearRefs, fmt.Sprintf("cannot reset the peak RSS of process %d: %v "+
			"(it needs Linux's /proc/<pid>/clear_refs, writable by the process's owner)", pid, err))
	}
}
