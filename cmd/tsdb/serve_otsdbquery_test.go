package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestOpenTSDBQueryTakesTheReadRole: /api/query is a read endpoint: the
// write-only user gets 403, the read-only user the answer to what the
// write-only user put.
func TestOpenTSDBQueryTakesTheReadRole(t *testing.T) {
	s := startRolesServer(t)
	c := http.DefaultClient
	base := "http://" + s.addr
	ts := time.Now().Add(-time.Minute).Unix()
	put := fmt.Sprintf(`{"metric":"otsdb.roles","timestamp":%d,"value":2.5,"tags":{"host":"a"}}`, ts)
	if code, body := do(t, c, "POST", base+"/api/put", "prometheus", "pw-prometheus", put); code != 204 {
		t.Fatalf("write-only user's put: %d %q, want 204", code, body)
	}
	q := base + "/api/query?" + url.Values{"start": {fmt.Sprint(ts)}, "end": {fmt.Sprint(ts + 1)}, "m": {"sum:otsdb.roles"}}.Encode()
	const writeOnly = "403 Forbidden: this user may only write (--web.write-only-users)\n"
	if code, body := do(t, c, "GET", q, "prometheus", "pw-prometheus", ""); code != 403 || body != writeOnly {
		t.Errorf("write-only user's /api/query: %d %q, want 403 %q", code, body, writeOnly)
	}
	want := fmt.Sprintf(`[{"metric":"otsdb.roles","tags":{"host":"a"},"aggregateTags":[],"dps":{"%d":2.5}}]`, ts)
	if code, body := do(t, c, "GET", q, "grafana", "pw-grafana", ""); code != 200 || body != want {
		t.Errorf("read-only user's /api/query: %d %q, want 200 %q", code, body, want)
	}
}

// TestServeHelpListsTheOpenTSDBQueryFlags: the /api/query bounds are flags
// with their defaults in tsdb serve --help, and negative ones are refused.
func TestServeHelpListsTheOpenTSDBQueryFlags(t *testing.T) {
	code, stdout, stderr := tsdb(t, "serve", "--help")
	out := stdout + stderr
	if code != 0 {
		t.Fatalf("tsdb serve --help: exit %d\n%s", code, out)
	}
	for _, want := range []string{"--opentsdb.query.max-body-bytes=1MiB", "--opentsdb.query.max-sub-queries=50",
		"--opentsdb.query.max-fill-intervals=1000000"} {
		if !strings.Contains(out, want) {
			t.Errorf("tsdb serve --help lacks %q", want)
		}
	}
	code, _, stderr = tsdb(t, "serve", "--storage=embedded:"+t.TempDir(), "--opentsdb.query.max-sub-queries=-1",
		"--listen=127.0.0.1:0")
	want := "tsdb serve: --opentsdb.query.max-sub-queries must not be negative (0 takes the default), got -1\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}
