package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// Environment variables that configure the end-to-end tests.
const (
	// EnvPrometheus is the path of the Prometheus server binary;
	// testing/prometheus/prometheus.sh builds it and prints the path.
	EnvPrometheus = "TSDB_TEST_PROMETHEUS"
	// EnvPromtool is the path of Prometheus' promtool, built from the same
	// version; testing/prometheus/prometheus.sh promtool builds it and prints
	// the path.
	EnvPromtool = "TSDB_TEST_PROMTOOL"
	// EnvRequire, when "1", turns a missing EnvPrometheus or EnvPromtool into
	// a failure.
	EnvRequire = "TSDB_TEST_REQUIRE_E2E"
	// EnvDuration is how long Prometheus scrapes and remote-writes per run
	// (a Go duration, default 30s).
	EnvDuration = "TSDB_TEST_E2E_DURATION"
	// EnvKeep, when "1", keeps the store of a failed run (embedded directory or
	// HBase tables) and says where, for a post-mortem.
	EnvKeep = "TSDB_TEST_E2E_KEEP"
)

// prometheusBinary returns the Prometheus binary to run, or skips the test (fails it
// under EnvRequire=1) when none is configured.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	return binaryFromEnv(t, "Prometheus", "a Prometheus server binary", EnvPrometheus, "testing/prometheus/prometheus.sh")
}

// promtoolBinary returns the promtool binary to run, or skips the test (fails it
// under EnvRequire=1) when none is configured.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	return binaryFromEnv(t, "promtool", "Prometheus' promtool binary", EnvPromtool, "testing/prometheus/prometheus.sh promtool")
}

// binaryFromEnv returns the executable file that the environment variable env
// names, or skips the test (fails it under EnvRequire=1) when it names none;
// what is a binary's name, desc what it is, and build the command that builds
// it and prints its path.
func binaryFromEnv(t *testing.T, what, desc, env, build string) string {
	t.Helper()
	bin := os.Getenv(env)
	msg := ""
	switch {
	case bin == "":
		msg = fmt.Sprintf("no %s: set %s to %s; `%s=$(%s) go test ./e2e/` builds (once, cached) and uses one (make e2e does)", what, env, desc, env, build)
	default:
		if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			msg = fmt.Sprintf("%s=%s is not an executable file (build it with %s)", env, bin, build)
		} else {
			return bin
		}
	}
	testenv.Missing(t, EnvRequire, msg)
	return ""
}

// runDuration is how long one run lets Prometheus scrape and remote-write.
func runDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv(EnvDuration)
	if s == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 5*time.Second {
		t.Fatalf("%s=%q: want a Go duration of at least 5s, like 30s or 2m", EnvDuration, s)
	}
	return d
}

// The tsdb binary under test is built once per test process into binDir, which
// TestMain removes.
var (
	binDir      string
	tsdbOnce    sync.Once
	tsdbBinPath string
	tsdbErr     error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// tsdbBinary builds ./cmd/tsdb of this checkout (with -race when the tests run with
// -race) and returns its path; the build happens once per test process.
func tsdbBinary(t *testing.T) string {
	t.Helper()
	tsdbOnce.Do(func() {
		start := time.Now()
		root, err := moduleRoot()
		if err != nil {
			tsdbErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "hbtsdb-e2e-bin-")
		if err != nil {
			tsdbErr = err
			return
		}
		bin := filepath.Join(binDir, "tsdb")
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/tsdb")
		cmd := exec.Command(goCommand(), args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			tsdbErr = fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), root, err, out)
			return
		}
		tsdbBinPath = bin
		t.Logf("built tsdb (race=%v) in %s", raceEnabled, time.Since(start).Round(time.Millisecond))
	})
	if tsdbErr != nil {
		t.Fatalf("build tsdb: %v", tsdbErr)
	}
	return tsdbBinPath
}

// goCommand is the go command that runs these tests, so that the binary under test is
// built by the same toolchain.
func goCommand() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// moduleRoot is the directory of this checkout's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
