package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestServeReadsWithTheQueryFlags checks that tsdb serve wires the PromQL API to
// the store and the per-selector read limits (--query.max-series and, through its
// environment twin, --query.max-fetched-samples) to the query layer, whose errors
// reach the client as Prometheus' 422 execution errors.
func TestServeReadsWithTheQueryFlags(t *testing.T) {
	t.Setenv("TSDB_QUERY_MAX_FETCHED_SAMPLES", "3")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--query.max-series=1")
	s.waitFor(t, "/-/ready", 200)
	now := time.Now().Unix()
	var points []string
	for _, host := range []string{"a", "b"} {
		for i := range 2 {
			points = append(points, fmt.Sprintf(`{"metric":"m","timestamp":%d,"value":%d,"tags":{"host":%q}}`, now-int64(i), 10*i+len(host), host))
		}
	}
	if code, body := s.post(t, "/api/put", "["+strings.Join(points, ",")+"]", nil); code != 204 {
		t.Fatalf("put: %d %q", code, body)
	}
	query := func(q string) string { return fmt.Sprintf("/api/v1/query?time=%d&query=%s", now, url.QueryEscape(q)) }
	for _, tc := range []struct {
		name, path string
		code       int
		body       string
	}{
		{"Grafana's health check", query("1+1"), 200,
			fmt.Sprintf(`{"status":"success","data":{"resultType":"scalar","result":[%d,"2"]}}`, now)},
		{"one series", query(`m{host="a"}`), 200,
			fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"m","host":"a"},"value":[%d,"1"]}]}}`, now)},
		{"--query.max-series", query("m"), 422,
			`{"status":"error","errorType":"execution","error":"expanding series: query: 2 series match {__name__=\"m\"}, more than the limit of 1: too many series: query limit exceeded"}`},
		{"--query.max-series on /api/v1/series", "/api/v1/series?match[]=m", 422,
			`{"status":"error","errorType":"execution","error":"query: 2 series match {__name__=\"m\"}, more than the limit of 1: too many series: query limit exceeded"}`},
	} {
		if code, body := s.get(tc.path); code != tc.code || body != tc.body {
			t.Errorf("%s: %d %s\nwant %d %s", tc.name, code, body, tc.code, tc.body)
		}
	}
	// Host a's two samples fit in 3; with three more, its selector reads 5.
	more := []string{}
	for i := 2; i < 5; i++ {
		more = append(more, fmt.Sprintf(`{"metric":"m","timestamp":%d,"value":%d,"tags":{"host":"a"}}`, now-int64(i), i))
	}
	if code, body := s.post(t, "/api/put", "["+strings.Join(more, ",")+"]", nil); code != 204 {
		t.Fatalf("put: %d %q", code, body)
	}
	code, body := s.get(query(`count_over_time(m{host="a"}[1m])`))
	if code != 422 || !strings.Contains(body, `"errorType":"execution"`) || !strings.Contains(body, "more than 3 samples") {
		t.Errorf("--query.max-fetched-samples: %d %s, want 422 execution naming the limit of 3 samples", code, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

func TestServeRefusesUnworkableQueryLimits(t *testing.T) {
	code, _, stderr := tsdb(t, "serve", "--storage=embedded:"+t.TempDir(), "--query.max-series=-1",
		"--query.max-concurrency=-2", "--listen=127.0.0.1:0")
	want := "tsdb serve: --query.max-concurrency must not be negative (0 takes the default), got -2\n" +
		"--query.max-series must not be negative (0 means no limit), got -1\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}

// TestSchemaHostLabelsFlag checks that --schema.host-labels reaches the schema
// settings: a store created with one list refuses a process configured with
// another, naming both.
func TestSchemaHostLabelsFlag(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := tsdb(t, "schema", "create", "--storage=embedded:"+dir, "--schema.host-labels=node,instance"); code != 0 {
		t.Fatalf("schema create: exit %d: %s", code, stderr)
	}
	code, _, stderr := tsdb(t, "schema", "check", "--storage=embedded:"+dir)
	want := "the store was created with node,instance, this process is configured with host,instance: start with --schema.host-labels=node,instance"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("schema check with the default host labels: exit %d, stderr %q, want %q", code, stderr, want)
	}
}

// TestServeReadBoundsFlags checks that --web.cors.origin, --query.max-length
// and --query.format-max-depth reach the Prometheus API, and that a bad CORS
// expression is refused at start.
func TestServeReadBoundsFlags(t *testing.T) {
	s := startServe(t, "--storage=embedded:"+t.TempDir(), `--web.cors.origin=https://ok\.example`,
		"--query.max-length=10B", "--query.format-max-depth=3")
	s.waitFor(t, "/-/ready", 200)
	for _, tc := range []struct{ origin, allowed string }{{"https://ok.example", "https://ok.example"}, {"https://evil.example", ""}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+"/api/v1/query?query=1%2B1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", tc.origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != tc.allowed {
			t.Errorf("Origin %s: %d, Access-Control-Allow-Origin %q, want 200 %q", tc.origin, resp.StatusCode,
				resp.Header.Get("Access-Control-Allow-Origin"), tc.allowed)
		}
	}
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/api/v1/parse_query?query=" + url.QueryEscape("1+1+1+1+1+1"), 400,
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": the query is 11 bytes long, more than the limit of 10 (--query.max-length)"}`},
		{"/api/v1/format_query?query=" + url.QueryEscape("1+1+1+1"), 400,
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": the expression nests 4 deep, more than format_query's limit of 3 (--query.format-max-depth)"}`},
		{"/api/v1/format_query?query=" + url.QueryEscape("1+1+1"), 200, `{"status":"success","data":"1 + 1 + 1"}`},
	} {
		if code, body := s.get(tc.path); code != tc.code || body != tc.body {
			t.Errorf("%s: %d %s\nwant %d %s", tc.path, code, body, tc.code, tc.body)
		}
	}
	code, _, stderr := tsdb(t, "serve", "--storage=embedded:"+t.TempDir(), "--web.cors.origin=(", "--listen=127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "--web.cors.origin: CORS origin \"(\": error parsing regexp: missing closing )") {
		t.Errorf("--web.cors.origin=(: exit %d, stderr %q", code, stderr)
	}
}

// TestProcKBField: the kB lines of /proc files (meminfo, a process's status)
// are read by name, and a missing or malformed one says which.
func TestProcKBField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(path, []byte("Name:\ttsdb\nVmHWM:\t  123456 kB\nVmRSS:\t x kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if kb, err := procKBField(path, "VmHWM"); err != nil || kb != 123456 {
		t.Errorf("VmHWM = %d, %v; want 123456", kb, err)
	}
	if _, err := procKBField(path, "VmRSS"); err == nil || !strings.Contains(err.Error(), `read VmRSS of `+path+`: "VmRSS:\t x kB\n"`) {
		t.Errorf("malformed VmRSS: %v", err)
	}
	if _, err := procKBField(path, "VmSwap"); err == nil || err.Error() != "read VmSwap: not in "+path {
		t.Errorf("missing VmSwap: %v", err)
	}
	if runtime.GOOS == "linux" && machineMemory() <= 0 {
		t.Errorf("machineMemory() = %d on Linux, want the machine's memory", machineMemory())
	}
}
