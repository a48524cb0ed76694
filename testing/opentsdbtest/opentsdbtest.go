// Package opentsdbtest starts a real OpenTSDB 2.4.1 (a TSD, by
// testing/opentsdb/opentsdb.sh) for one test, on the test HBase and under table
// names of its own, and stops it and drops its tables when the test ends. Tests
// that compare hbtsdb's OpenTSDB endpoints with OpenTSDB's use it.
//
// A test runs one when the test HBase is configured (testing/hbasetest) and either
// EnvEnable or the end-to-end requirement (TSDB_TEST_REQUIRE_E2E=1, as `make test`
// sets) is "1"; otherwise it skips, saying how to run it. Under
// TSDB_TEST_REQUIRE_E2E=1 a missing Java, Maven or curl fails the test instead
// (testing/testenv). It imports no package of the module but the test helpers.
package opentsdbtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// Environment variables that configure the OpenTSDB tests.
const (
	// EnvEnable, when "1", runs the tests that need a real OpenTSDB outside
	// `make test` (they need the test HBase too).
	EnvEnable = "TSDB_TEST_OPENTSDB"
	// EnvRequire is the end-to-end tests' requirement: when "1" the OpenTSDB
	// tests run, and a missing Java, Maven or curl fails them.
	EnvRequire = "TSDB_TEST_REQUIRE_E2E"
)

// TSD is one running OpenTSDB.
type TSD struct {
	// URL is its HTTP API's base, http://127.0.0.1:<port>.
	URL string
	// TablePrefix prefixes its four tables (<prefix>tsdb, <prefix>tsdb-uid, ...).
	TablePrefix string
	// Log is its log file, for tests to show when it did not do what they
	// waited for.
	Log string
}

// Start starts an OpenTSDB for t on the test HBase, or skips t (see the package
// doc). The first start in a cache resolves OpenTSDB from Maven Central (about a
// minute); later ones take the JVM's start, about 15 s on a loaded machine.
func Start(t testing.TB) *TSD {
	t.Helper()
	if os.Getenv(EnvEnable) != "1" && !testenv.Required(EnvRequire) {
		t.Skipf("no OpenTSDB: set %s=1 (and %s to the test HBase's ZooKeeper) to run the tests against a real OpenTSDB 2.4.1; make test does",
			EnvEnable, hbasetest.EnvZooKeeper)
	}
	zk := hbasetest.ZooKeeper(t)
	for _, tool := range []string{"java", "mvn", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, EnvRequire, fmt.Sprintf("no %s on PATH, which testing/opentsdb/opentsdb.sh needs (Debian: apt-get install openjdk-17-jdk-headless maven curl)", tool))
		}
	}
	script, err := scriptPath()
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "opentsdb")
	prefix := hbasetest.UniquePrefix("otsdb")
	env := append(os.Environ(), "HBTSDB_OPENTSDB_RUN="+run, "OPENTSDB_TABLE_PREFIX="+prefix)
	var stdout, stderr bytes.Buffer
	start := exec.Command(script, "start", zk)
	start.Env, start.Stdout, start.Stderr = env, &stdout, &stderr
	t.Cleanup(func() { stop(t, script, env) })
	if err := start.Run(); err != nil {
		t.Fatalf("%s start %s: %v\n%s", script, zk, err, stderr.String())
	}
	url := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("%s start printed %q, want http://127.0.0.1:<port>\n%s", script, url, stderr.String())
	}
	t.Logf("OpenTSDB at %s (tables %stsdb*): %s", url, prefix, strings.TrimSpace(stderr.String()))
	return &TSD{URL: url, TablePrefix: prefix, Log: filepath.Join(run, "logs", "opentsdb.log")}
}

// stop stops the TSD and drops its tables; a failure fails the test, since the
// next run would find the tables or the JVM still there.
func stop(t testing.TB, script string, env []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "stop")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s stop: %v\n%s", script, err, out)
	}
}

// scriptPath is testing/opentsdb/opentsdb.sh of this source tree.
func scriptPath() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("opentsdbtest: cannot tell where its source is")
	}
	p := filepath.Join(filepath.Dir(file), "..", "opentsdb", "opentsdb.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("opentsdbtest: the launcher: %w", err)
	}
	return p, nil
}
