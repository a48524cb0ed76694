package testenv_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// The test re-runs itself as a child process (helperEnv set) to watch a test
// end in a skip or a failure, which it cannot do in its own process.
const helperEnv = "TSDB_TESTENV_HELPER"

func TestMissingSkipsOrFailsUnderTheRequireVariable(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		testenv.Missing(t, "TSDB_TEST_REQUIRE_TESTENV_HELPER", "no widget: install one")
		t.Error("Missing returned")
		return
	}
	for _, tc := range []struct {
		require string
		want    []string
	}{
		{"", []string{"--- SKIP", "no widget: install one"}},
		{"0", []string{"--- SKIP", "no widget: install one"}},
		{"1", []string{"--- FAIL", "TSDB_TEST_REQUIRE_TESTENV_HELPER is 1 but no widget: install one"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingSkipsOrFailsUnderTheRequireVariable$", "-test.v")
		cmd.Env = append(os.Environ(), helperEnv+"=1", "TSDB_TEST_REQUIRE_TESTENV_HELPER="+tc.require)
		out, _ := cmd.CombinedOutput()
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("require=%q: output lacks %q:\n%s", tc.require, w, out)
			}
		}
		if strings.Contains(string(out), "Missing returned") {
			t.Errorf("require=%q: Missing returned:\n%s", tc.require, out)
		}
	}
}

func TestMountTmpfsAndResetPeakRSS(t *testing.T) {
	mnt := testenv.MountTmpfs(t, "1m")
	if err := os.WriteFile(mnt+"/f", make([]byte, 2<<20), 0o644); err == nil {
		t.Errorf("wrote 2 MiB to a 1 MiB tmpfs at %s", mnt)
	}
	testenv.ResetPeakRSS(t, os.Getpid())
}
