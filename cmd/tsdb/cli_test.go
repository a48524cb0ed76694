package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A mistyped flag or command gets the closest known ones; an unknown word far
// from every known one lists the commands.
func TestMistypedCommandLinesSuggest(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--lisen"}, "tsdb: unknown flag --lisen; did you mean --listen? (see tsdb --help)\n"},
		{[]string{"serve", "--lisen=:9201"}, "tsdb: unknown flag --lisen; did you mean --listen? (see tsdb --help)\n"},
		{[]string{"serve", "--rpc-timeout=1s"}, "tsdb: unknown flag --rpc-timeout; did you mean --hbase.rpc-timeout? (see tsdb --help)\n"},
		{[]string{"serve", "--retention=1d"}, "tsdb: unknown flag --retention; did you mean --retention.exemplars or --retention.raw? (see tsdb --help)\n"},
		{[]string{"serve", "--zzzz"}, "tsdb: unknown flag --zzzz (see tsdb --help)\n"},
		{[]string{"serv"}, `tsdb: unknown command "serv"; did you mean serve? (see tsdb --help)` + "\n"},
		{[]string{"schema", "creat"}, `tsdb: unknown command "creat"; did you mean create? (see tsdb --help)` + "\n"},
		{[]string{"schema", "chek"}, `tsdb: unknown command "chek"; did you mean check? (see tsdb --help)` + "\n"},
		{[]string{"bogus"}, `tsdb: unknown command "bogus"; the commands are help, serve, schema, compact, delete, import, version (see tsdb --help)` + "\n"},
	} {
		code, _, stderr := tsdb(t, tc.args...)
		if code != 2 || stderr != tc.stderr {
			t.Errorf("tsdb %s: exit %d, stderr %q; want exit 2, %q", strings.Join(tc.args, " "), code, stderr, tc.stderr)
		}
	}
}

// The parse errors explainParseError rewrites are kingpin's own texts: if an
// upgrade changed them, the suggestions would silently stop.
func TestKingpinErrorTextsAreTheOnesRewritten(t *testing.T) {
	app := newApp(nil, nil)
	if _, err := app.kp.Parse([]string{"--lisen"}); err == nil || !unknownFlagError.MatchString(err.Error()) {
		t.Errorf("unknown flag: kingpin says %v, which %s does not match", err, unknownFlagError)
	}
	if _, err := app.kp.Parse([]string{"serv"}); err == nil || !unknownCommandError.MatchString(err.Error()) {
		t.Errorf("unknown command: kingpin says %v, which %s does not match", err, unknownCommandError)
	}
}

func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"serv", []string{"serve", "schema"}, "did you mean serve?"},
		{"--log.levle", []string{"--log.level", "--log.format"}, "did you mean --log.level?"},
		{"xyz", []string{"serve", "schema"}, ""},
		{"--query.max", []string{"--query.max-samples", "--query.max-series", "--query.timeout"},
			"did you mean --query.max-samples or --query.max-series?"},
		{"abcd", []string{"abce", "abcf", "abcg", "abch"}, "did you mean abce, abcf or abcg?"},
	} {
		if got := didYouMean(tc.word, tc.candidates); got != tc.want {
			t.Errorf("didYouMean(%q, %q) = %q, want %q", tc.word, tc.candidates, got, tc.want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance(kitten, sitting) = %d, want 3", d)
	}
}

func TestVersionFlag(t *testing.T) {
	_, want, _ := tsdb(t, "version")
	for _, args := range [][]string{{"--version"}, {"serve", "--version"}} {
		code, out, stderr := tsdb(t, args...)
		if code != 0 || out != want || stderr != "" {
			t.Errorf("tsdb %v: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, out, stderr, want)
		}
	}
}

// HBase's own shell takes compression names in any case; so does the flag, and
// the log flags with it. A wrong value names the flag and the allowed ones.
func TestEnumerationsIgnoreCase(t *testing.T) {
	app := newApp(nil, nil)
	if _, err := app.kp.Parse([]string{"schema", "check", "--schema.compression=snappy", "--log.level=DEBUG", "--log.format=JSON"}); err != nil {
		t.Fatal(err)
	}
	if *app.common.compression != "SNAPPY" || *app.common.logLevel != "debug" || *app.common.logFormat != "json" {
		t.Errorf("compression %q, log level %q, log format %q; want SNAPPY, debug, json",
			*app.common.compression, *app.common.logLevel, *app.common.logFormat)
	}
	code, _, stderr := tsdb(t, "schema", "check", "--schema.compression=snapy")
	if want := `tsdb: --schema.compression: "snapy" is not one of NONE, SNAPPY, GZ, LZ4, ZSTD (see tsdb --help)` + "\n"; code != 2 || stderr != want {
		t.Errorf("--schema.compression=snapy: exit %d, stderr %q; want 2, %q", code, stderr, want)
	}
}

func TestListenAddressErrors(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		listen, want string
	}{
		{"9203", "--listen=9203 is not an address to listen on (address 9203: missing port in address); did you mean --listen=:9203?"},
		{"localhost", "--listen=localhost is not an address to listen on (address localhost: missing port in address); " +
			"give host:port or :port, e.g. --listen=:9201 or --listen=127.0.0.1:9201"},
		{":99999", `--listen=:99999: "99999" is not a port: give a number from 0 to 65535`},
		{held.Addr().String(), "listen on " + held.Addr().String() + ": listen tcp " + held.Addr().String() +
			": bind: address already in use: another process (another tsdb?) listens there; stop it or choose another --listen"},
	} {
		ln, err := listen(tc.listen)
		if err == nil {
			ln.Close()
			t.Errorf("listen(%q): no error", tc.listen)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("listen(%q):\n got %s\nwant %s", tc.listen, err, tc.want)
		}
	}
}

func TestServerURL(t *testing.T) {
	for _, tc := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"[::]:9201", false, "http://localhost:9201"},
		{"0.0.0.0:9201", true, "https://localhost:9201"},
		{"127.0.0.1:19201", false, "http://127.0.0.1:19201"},
		{"[::1]:9201", false, "http://[::1]:9201"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverURL(addr, tc.tls); got != tc.want {
			t.Errorf("serverURL(%s, tls=%v) = %s, want %s", tc.addr, tc.tls, got, tc.want)
		}
	}
}

// The start-up line says where to point Prometheus; while data arrives, a line
// per interval says how much, and nothing is logged while none does.
func TestServeLogsWhereToWriteAndWhatArrived(t *testing.T) {
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--log.ingest-summary-interval=200ms")
	s.waitFor(t, "/-/ready", 200)
	if want := "remote_write_url=http://" + s.addr + "/api/v1/write"; !strings.Contains(s.log(), want) {
		t.Fatalf("the start-up line lacks %s; log:\n%s", want, s.log())
	}
	if strings.Contains(s.log(), "ingest summary") {
		t.Fatalf("an ingest summary before anything was written; log:\n%s", s.log())
	}
	body := fmt.Sprintf(`[{"metric":"m","timestamp":%d,"value":1,"tags":{"host":"a"}},`+
		`{"metric":"m","timestamp":%[1]d,"value":2,"tags":{"host":"b"}},{"metric":"m","timestamp":%[1]d,"value":3,"tags":{}}]`,
		time.Now().Unix())
	resp, err := http.Post("http://"+s.addr+"/api/put", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("/api/put with one datapoint without tags: %d, want 400", resp.StatusCode)
	}
	s.waitLog(t, `msg="ingest summary" interval=200ms requests=1 failed_requests=1 series_written=2 samples_written=2 samples_rejected=1`)
	// The two samples and the pending marks of their two rows, in the head.
	if !strings.Contains(s.log(), " head_cells=4 head_bytes=") {
		t.Fatalf("the ingest summary does not say what the head holds; log:\n%s", s.log())
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v; log:\n%s", err, s.log())
	}
	if n := strings.Count(s.log(), "ingest summary"); n != 1 {
		t.Errorf("%d ingest summaries for one request, want 1; log:\n%s", n, s.log())
	}
}
