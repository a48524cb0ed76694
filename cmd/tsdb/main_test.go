package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// TestMain lets the test binary act as the tsdb binary in a child process, so that
// serve's signal handling is tested on a real process.
func TestMain(m *testing.M) {
	if os.Getenv("TSDB_TEST_BE_TSDB") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// tsdb runs one command line in-process and returns its exit code, stdout and stderr.
func tsdb(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestHelpListsCommandsAndEnvironmentTwins(t *testing.T) {
	code, out, _ := tsdb(t, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	for _, want := range []string{"serve", "schema create", "schema check", "version",
		"($TSDB_STORAGE)", "($TSDB_SCHEMA_SALTS)", "($TSDB_HBASE_TABLE_PREFIX)"} {
		if !strings.Contains(out, want) {
			t.Errorf("tsdb --help does not mention %q", want)
		}
	}
	code, out, _ = tsdb(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "--listen=\":9201\"") || !strings.Contains(out, "($TSDB_LISTEN)") ||
		!strings.Contains(out, "($TSDB_SCHEMA_AUTO_CREATE)") {
		t.Fatalf("tsdb serve --help exited %d:\n%s", code, out)
	}
}

func TestEnvironmentTwinSetsFlag(t *testing.T) {
	t.Setenv("TSDB_STORAGE", "nope:x")
	code, _, stderr := tsdb(t, "schema", "check")
	if code != 1 || !strings.Contains(stderr, `unknown --storage "nope:x"`) {
		t.Fatalf("TSDB_STORAGE=nope:x: exit %d, stderr %q", code, stderr)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"bogus"}, 2, `tsdb: unknown command "bogus"; the commands are`},
		{[]string{}, 2, "command not specified"},
		{[]string{"schema", "check", "--storage=foo:bar"}, 1, `tsdb schema check: unknown --storage "foo:bar": use embedded:<dir>`},
		{[]string{"schema", "check", "--storage=embedded:"}, 1, `names no directory`},
		{[]string{"schema", "create", "--schema.bucket-width=7m", "--storage=embedded:" + t.TempDir()}, 1, "bucket width"},
		{[]string{"serve", "--shutdown-timeout=soon"}, 2, `"soon" is not a duration`},
	} {
		code, _, stderr := tsdb(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.inStderr) {
			t.Errorf("tsdb %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.inStderr)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := tsdb(t, "version")
	if code != 0 || !strings.HasPrefix(out, "tsdb 0.1.0-dev (revision ") || !strings.Contains(out, "schema format 2)") {
		t.Fatalf("tsdb version: exit %d, %q", code, out)
	}
}

func TestSchemaCreatePrintNeedsNoStore(t *testing.T) {
	// Port 1 on loopback answers nothing: --print must not try to connect.
	code, out, stderr := tsdb(t, "schema", "create", "--print", "--storage=hbase:127.0.0.1:1", "--hbase.table-prefix=m-")
	if code != 0 {
		t.Fatalf("schema create --print: exit %d, %s", code, stderr)
	}
	for _, want := range []string{
		"# hbtsdb schema format 2: bucket width 1h0m0s, 16 salts; paste into `hbase shell`.\n",
		"create 'm-data', ",
		"create 'm-meta', ",
		"put 'm-meta', 'schema', 'm:format_version', '2'\n",
		"put 'm-meta', 'schema', 'm:bucket_width_ms', '3600000'\n",
		"put 'm-meta', 'schema', 'm:salt_buckets', '16'\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("schema create --print lacks %q:\n%s", want, out)
		}
	}
}

func TestSchemaCreateAndCheckEmbedded(t *testing.T) {
	store := "--storage=embedded:" + t.TempDir()
	if code, _, stderr := tsdb(t, "schema", "check", store); code != 1 || !strings.Contains(stderr, "tsdb schema create") {
		t.Fatalf("check before create: exit %d, stderr %q; want 1 and advice to run tsdb schema create", code, stderr)
	}
	if code, _, stderr := tsdb(t, "schema", "create", store); code != 0 {
		t.Fatalf("schema create: exit %d: %s", code, stderr)
	}
	code, out, stderr := tsdb(t, "schema", "check", "--print", store)
	if code != 0 {
		t.Fatalf("schema check: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "format_version: 2 (hash-derived series IDs; this binary supports 1 to 2)\nbucket_width: 1h0m0s\nsalt_buckets: 1\nrollups: 5m:90d,1h:5y\nraw_retention: 400d\nexemplar_retention: 30d\ntables: data exemplars index meta pending rollup-1h rollup-5m series\n") {
		t.Fatalf("schema check --print = %q", out)
	}
	// Under the flag's old name, --schema.salt-buckets.
	code, _, stderr = tsdb(t, "schema", "check", store, "--schema.salt-buckets=4")
	if code != 1 || !strings.Contains(stderr, "the store was created with 1, this process is configured with 4") {
		t.Fatalf("check with other salts: exit %d, stderr %q", code, stderr)
	}
	// The new name, and the old name's environment twin.
	code, _, stderr = tsdb(t, "schema", "check", store, "--schema.salts=8")
	if code != 1 || !strings.Contains(stderr, "the store was created with 1, this process is configured with 8") {
		t.Fatalf("check with --schema.salts=8: exit %d, stderr %q", code, stderr)
	}
	t.Setenv("TSDB_SCHEMA_SALT_BUCKETS", "2")
	code, _, stderr = tsdb(t, "schema", "check", store)
	if code != 1 || !strings.Contains(stderr, "the store was created with 1, this process is configured with 2") {
		t.Fatalf("check with TSDB_SCHEMA_SALT_BUCKETS=2: exit %d, stderr %q", code, stderr)
	}
}

func TestLockedEmbeddedDirectory(t *testing.T) {
	dir := t.TempDir()
	st, err := embedded.Open(context.Background(), dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, _, stderr := tsdb(t, "schema", "create", "--storage=embedded:"+dir)
	if code != 1 || !strings.Contains(stderr, "is already open in this process") {
		t.Fatalf("schema create on a locked directory: exit %d, stderr %q", code, stderr)
	}
}

// server is a tsdb serve child process.
type server struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startServe(t *testing.T, args ...string) *server {
	t.Helper()
	return startServeBinary(t, os.Args[0], []string{"TSDB_TEST_BE_TSDB=1"}, args...)
}

// startServeBinary is startServe with another tsdb binary (such as one built
// without the race detector) and extra environment.
func startServeBinary(t *testing.T, bin string, env []string, args ...string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t), done: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"serve", "--listen=" + s.addr}, args...)...)
	s.cmd.Env = append(os.Environ(), env...)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
		s.done <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
	})
	return s
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// get returns the status and body of a GET, or 0 if the server does not answer.
func (s *server) get(path string) (int, string) {
	resp, err := http.Get("http://" + s.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitStall is how long waitFor waits without progress: neither the answer nor
// the server's log changed. A slow machine only makes each step slower, so the
// wait never fails while the server is still doing something.
const waitStall = 2 * time.Minute

// waitFor polls path until it answers with code. It fails at once when the server
// exits, and otherwise only when it made no progress for waitStall.
func (s *server) waitFor(t *testing.T, path string, code int) string {
	t.Helper()
	type state struct {
		code   int
		body   string
		logLen int
	}
	var last state
	lastChange := time.Now()
	for {
		got, body := s.get(path)
		if got == code {
			return body
		}
		if now := (state{got, body, len(s.log())}); now != last {
			last, lastChange = now, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("%s answered %d %q, want %d, and the server made no progress for %s; server log:\n%s",
				path, got, body, code, waitStall, s.log())
		}
		select {
		case err := <-s.done:
			t.Fatalf("server exited (%v) before %s answered %d; log:\n%s", err, path, code, s.log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitExit waits for the server to exit on its own and returns its exit error. It
// fails when the server keeps running with a log that has not grown for waitStall.
func (s *server) waitExit(t *testing.T) error {
	t.Helper()
	logLen, lastChange := -1, time.Now()
	for {
		select {
		case err := <-s.done:
			return err
		case <-time.After(100 * time.Millisecond):
		}
		if n := len(s.log()); n != logLen {
			logLen, lastChange = n, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("serve kept running, its log unchanged for %s; log:\n%s", waitStall, s.log())
		}
	}
}

// waitLog waits until the server's log contains text. It fails at once when the
// server exits, and when its log has not grown for waitStall.
func (s *server) waitLog(t *testing.T, text string) {
	t.Helper()
	logLen, lastChange := -1, time.Now()
	for {
		log := s.log()
		if strings.Contains(log, text) {
			return
		}
		if len(log) != logLen {
			logLen, lastChange = len(log), time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("the server has not logged %q, and its log is unchanged for %s; log:\n%s", text, waitStall, log)
		}
		select {
		case err := <-s.done:
			t.Fatalf("server exited (%v) before logging %q; log:\n%s", err, text, s.log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and returns the exit error.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		return err
	case <-time.After(waitStall):
		// The server's own --shutdown-timeout (30s) bounds the wait for requests.
		t.Fatalf("server did not stop within %s of SIGTERM; log:\n%s", waitStall, s.log())
		return nil
	}
}

func TestServeEmbeddedLifecycle(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, "--storage=embedded:"+dir)
	if body := s.waitFor(t, "/-/ready", 200); body != "hbtsdb is Ready.\n" {
		t.Fatalf("/-/ready = %q", body)
	}
	if code, body := s.get("/-/healthy"); code != 200 || body != "hbtsdb is Healthy.\n" {
		t.Fatalf("/-/healthy = %d %q", code, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
	if log := s.log(); !strings.Contains(log, `msg="store ready"`) || !strings.Contains(log, "msg=stopped") {
		t.Fatalf("serve log lacks the ready and stopped lines:\n%s", log)
	}
	// The store was closed: the directory can be opened again, and holds the schema.
	if code, _, stderr := tsdb(t, "schema", "check", "--storage=embedded:"+dir); code != 0 {
		t.Fatalf("schema check after serve: exit %d: %s", code, stderr)
	}
}

func TestServeRefusesMissingSchemaWithoutAutoCreate(t *testing.T) {
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--schema.auto-create=false")
	if err := s.waitExit(t); err == nil || !strings.Contains(s.log(), "tsdb schema create") {
		t.Fatalf("serve exited with %v; want a failure advising tsdb schema create; log:\n%s", err, s.log())
	}
}

func TestServeWaitsForUnreachableHBase(t *testing.T) {
	// Nothing listens on this port: serve must stay up, not ready, and say why.
	zk := freeAddr(t)
	s := startServe(t, "--storage=hbase:"+zk, "--storage.retry-max-backoff=1s")
	s.waitFor(t, "/-/healthy", 200)
	body := s.waitFor(t, "/-/ready", 503)
	if !strings.Contains(body, "hbtsdb is not ready") {
		t.Fatalf("/-/ready = %q", body)
	}
	s.waitLog(t, "store unavailable, retrying")
	if _, body := s.get("/-/ready"); !strings.Contains(body, "waiting for the store hbase:"+zk) {
		t.Fatalf("/-/ready does not name the store it waits for: %q", body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

func TestOneShotCommandFailsOnUnreachableHBase(t *testing.T) {
	zk := freeAddr(t)
	code, _, stderr := tsdb(t, "schema", "check", "--storage=hbase:"+zk, "--hbase.zookeeper-timeout=2s", "--hbase.rpc-timeout=2s")
	if code != 1 || !strings.Contains(stderr, zk) {
		t.Fatalf("schema check on an unreachable HBase: exit %d, stderr %q; want 1 naming %s", code, stderr, zk)
	}
}

func TestServeOnRealHBase(t *testing.T) {
	zk := hbasetest.ZooKeeper(t)
	prefix := fmt.Sprintf("cmd%d-", time.Now().UnixNano())
	t.Cleanup(func() { hbasestore.DropPrefix(t, zk, prefix) })
	s := startServe(t, "--storage=hbase:"+zk, "--hbase.table-prefix="+prefix, "--schema.salts=4")
	s.waitFor(t, "/-/ready", 200)
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
	code, out, stderr := tsdb(t, "schema", "check", "--print", "--storage=hbase:"+zk, "--hbase.table-prefix="+prefix, "--schema.salts=4")
	if code != 0 || !strings.Contains(out, "salt_buckets: 4\nrollups: 5m:90d,1h:5y\nraw_retention: 400d\nexemplar_retention: 30d\ntables: data exemplars index meta pending rollup-1h rollup-5m series\n") {
		t.Fatalf("schema check on HBase: exit %d, out %q, stderr %q", code, out, stderr)
	}
	// A changed retention: the error gives the HBase shell commands, with the prefix.
	code, _, stderr = tsdb(t, "schema", "check", "--storage=hbase:"+zk, "--hbase.table-prefix="+prefix, "--schema.salts=4",
		"--rollups=5m:30d,1h:5y")
	want := "\ntsdb schema check: schema: rollup 5m: the store keeps it for 90d, this process is configured to keep it for 30d; " +
		"the retention is the TTL of table rollup-5m, set when the table was created, and tsdb cannot change it: " +
		"start with --rollups=5m:90d,1h:5y, or change the TTL in the HBase shell with alter '" + prefix + "rollup-5m', NAME => 'a', TTL => 2592000 " +
		"and then record the new list with put '" + prefix + "meta', 'schema', 'm:rollups', '5m:30d,1h:5y'\n"
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Fatalf("check with a changed retention on HBase: exit %d, stderr %q\nwant it to end with %q", code, stderr, want)
	}
	code, _, stderr = tsdb(t, "schema", "check", "--storage=hbase:"+zk, "--hbase.table-prefix="+prefix)
	if code != 1 || !strings.Contains(stderr, "the store was created with 4, this process is configured with 16") {
		t.Fatalf("check with default salts: exit %d, stderr %q", code, stderr)
	}
}
