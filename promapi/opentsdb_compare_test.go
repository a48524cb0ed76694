package promapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/testing/opentsdbtest"
)

// TestOpenTSDBCompare puts the same datapoints into a real OpenTSDB 2.4.1 and
// into hbtsdb (on the test HBase), both through POST /api/put, and asks both
// the same /api/suggest and /api/aggregators questions: the answers must be the
// same bytes, and the errors the same code and message (OpenTSDB adds a stack
// trace, which hbtsdb leaves out).
func TestOpenTSDBCompare(t *testing.T) {
	tsd := opentsdbtest.Start(t)
	b := schematest.Backends()[1]
	st := b.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := db.Open(ctx, db.Options{Store: st, Settings: b.Settings, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(d)}))
	t.Cleanup(srv.Close)

	points := compareDatapoints(time.Now().Add(-time.Hour).Unix())
	for _, target := range []struct{ name, url string }{{"OpenTSDB", tsd.URL + "/api/put?sync&details"}, {"hbtsdb", srv.URL + "/api/put?details"}} {
		status, _, body := openTSDBAsk(t, target.url, "POST", "", points)
		var res struct{ Success, Failed int }
		if err := json.Unmarshal([]byte(body), &res); err != nil || status != 200 || res.Success != 12 || res.Failed != 0 {
			t.Fatalf("%s /api/put = %d %s, want 200 with 12 stored and none failed", target.name, status, body)
		}
	}

	// Both must know every name, or the comparisons below could pass on two empty lists.
	for _, base := range []string{tsd.URL, srv.URL} {
		const want = `["0metric","Sys.Upper","a","app.latency-p99","app.requests","app_errors","sys.cpu.idle","sys.cpu.nice","sys.cpu.user","sys.if.bytes_in","sys.mem.free"]`
		if status, _, got := openTSDBAsk(t, base, "GET", "/api/suggest", "type=metrics"); status != 200 || got != want {
			t.Fatalf("%s/api/suggest?type=metrics = %d %s, want 200 %s", base, status, got, want)
		}
	}
	var asked int
	for _, typ := range []string{"metrics", "tagk", "tagv"} {
		for _, q := range []string{"", "s", "sys.", "sys.cpu.", "S", "w", "web0", "a", "app.", "0", "nothing", "h"} {
			for _, max := range []string{"", "1", "2", "-1"} {
				v := url.Values{"type": {typ}}
				if q != "" {
					v.Set("q", q)
				}
				if max != "" {
					v.Set("max", max)
				}
				compareOpenTSDB(t, tsd.URL, srv.URL, "GET", "/api/suggest", v.Encode())
				body, _ := json.Marshal(map[string]string{"type": typ, "q": q, "max": max})
				compareOpenTSDB(t, tsd.URL, srv.URL, "POST", "/api/suggest", string(body))
				asked += 2
			}
		}
	}
	for _, bad := range []struct{ method, query string }{
		{"GET", "type=hosts"}, {"GET", "q=sys"}, {"GET", "type=metrics&max=ten"}, {"GET", "type=tagk&max=1.5"},
		{"GET", "type=tagv&max=9999999999"}, {"POST", `{"q":"sys"}`}, {"POST", `{"type":"tags"}`}, {"POST", ``},
		{"POST", `{"type":"tagk","max":"x"}`},
	} {
		compareOpenTSDB(t, tsd.URL, srv.URL, bad.method, "/api/suggest", bad.query)
		asked++
	}
	compareOpenTSDB(t, tsd.URL, srv.URL, "GET", "/api/aggregators", "")
	compareOpenTSDB(t, tsd.URL, srv.URL, "POST", "/api/aggregators", "")
	t.Logf("%d questions answered alike", asked+2)
}

// compareOpenTSDB asks OpenTSDB and hbtsdb one question and fails the test when
// the answers differ: status and body, or for an error the code and message.
func compareOpenTSDB(t *testing.T, otsdb, hbtsdb, method, path, query string) {
	t.Helper()
	wantStatus, _, want := openTSDBAsk(t, otsdb, method, path, query)
	gotStatus, _, got := openTSDBAsk(t, hbtsdb, method, path, query)
	if wantStatus >= 400 {
		want, got = errorCodeAndMessage(t, want), errorCodeAndMessage(t, got)
	}
	if gotStatus != wantStatus || got != want {
		t.Errorf("%s %s %s: hbtsdb answers %d %s, OpenTSDB %d %s", method, path, query, gotStatus, got, wantStatus, want)
	}
}

// errorCodeAndMessage is the code and message of an OpenTSDB error body.
func errorCodeAndMessage(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an OpenTSDB error body: %v: %s", err, body)
	}
	return fmt.Sprintf("%d %q", e.Error.Code, e.Error.Message)
}

// compareDatapoints is an /api/put body of 12 datapoints at ts (seconds; some
// in milliseconds), with metric names, tag keys and tag values that share
// prefixes and differ in case, so that order and prefix cuts show.
func compareDatapoints(ts int64) string {
	type dp struct {
		metric string
		ms     bool
		tags   map[string]string
	}
	dps := []dp{
		{"sys.cpu.user", false, map[string]string{"host": "web01", "cpu": "0"}},
		{"sys.cpu.user", true, map[string]string{"host": "web02", "cpu": "1"}},
		{"sys.cpu.nice", false, map[string]string{"host": "web01", "cpu": "0"}},
		{"sys.cpu.idle", true, map[string]string{"host": "web10", "cpu": "10"}},
		{"sys.mem.free", false, map[string]string{"host": "web01"}},
		{"sys.if.bytes_in", false, map[string]string{"host": "db-1", "iface": "eth0"}},
		{"Sys.Upper", false, map[string]string{"Host": "Web01"}},
		{"app.requests", false, map[string]string{"host": "web01", "env": "prod", "path": "/api/v1"}},
		{"app.latency-p99", true, map[string]string{"host": "web02", "env": "staging"}},
		{"app_errors", false, map[string]string{"host": "app-1", "env": "prod"}},
		{"a", false, map[string]string{"h": "a"}},
		{"0metric", false, map[string]string{"0tag": "0value"}},
	}
	parts := make([]string, len(dps))
	for i, p := range dps {
		stamp := fmt.Sprint(ts)
		if p.ms {
			stamp = fmt.Sprintf("%d%03d", ts, i)
		}
		tags, _ := json.Marshal(p.tags)
		parts[i] = fmt.Sprintf(`{"metric":%q,"timestamp":%s,"value":%d.5,"tags":%s}`, p.metric, stamp, i, tags)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
