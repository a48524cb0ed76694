package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/testing/opentsdbtest"
)

// TestOpenTSDBCompare puts the same datapoints into a real OpenTSDB 2.4.1 and
// into hbtsdb (on the test HBase), both through POST /api/put, and asks both
// the same questions: /api/suggest and /api/aggregators (the same bytes),
// /api/query (the same groups and values), /api/query/last, /api/search/lookup
// and /api/config/filters, and the requests Grafana's OpenTSDB data source
// sends. Errors must have the same code and message (OpenTSDB adds a stack
// trace, which hbtsdb leaves out). One OpenTSDB serves every subtest.
func TestOpenTSDBCompare(t *testing.T) {
	p := startOpenTSDBPair(t)
	for _, sub := range []struct {
		name string
		run  func(*testing.T)
	}{
		// last first: it reads the hour the datapoints were put in as the
		// current one (waitOutHourEnd).
		{"last", p.compareLast}, {"suggest", p.compareSuggest}, {"query", p.compareQueries},
		{"lookup", p.compareLookup}, {"filters", p.compareFilters}, {"grafana", p.compareGrafana},
	} {
		before := p.asked.Load()
		t.Run(sub.name, sub.run)
		t.Logf("%s: %d requests answered by both", sub.name, p.asked.Load()-before)
	}
	t.Logf("%d requests answered by both", p.asked.Load())
}

// openTSDBPair is a real OpenTSDB and an hbtsdb that hold the same datapoints.
type openTSDBPair struct {
	otsdb, hbtsdb string
	// base is where queryDataset starts (seconds, an hour's start), hour the
	// start of the hour the datapoints were put in (seconds).
	base, hour int64
	// asked counts the requests both answered.
	asked atomic.Int64
}

// askBoth asks OpenTSDB and hbtsdb one question at once (so that "now" is
// the same to both, to a few milliseconds) and counts it; ok is false, and
// the test failed, when either did not answer.
func (p *openTSDBPair) askBoth(t *testing.T, method, path, query string) (wantStatus int, want string, gotStatus int, got string, ok bool) {
	t.Helper()
	p.asked.Add(1)
	var wg sync.WaitGroup
	var werr, gerr error
	wg.Go(func() { wantStatus, _, want, werr = openTSDBDo(p.otsdb, method, path, query) })
	wg.Go(func() { gotStatus, _, got, gerr = openTSDBDo(p.hbtsdb, method, path, query) })
	wg.Wait()
	if err := errors.Join(werr, gerr); err != nil {
		t.Error(err)
		return 0, "", 0, "", false
	}
	return wantStatus, want, gotStatus, got, true
}

// each runs fn for 0..n-1, eight at a time: the TSD and hbtsdb each answer
// several requests at once. fn must not call t.Fatal.
func each(n int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// startOpenTSDBPair starts OpenTSDB and hbtsdb on the test HBase and puts the
// datapoints of every comparison into both: compareDatapoints (suggest),
// queryDataset and lastDataset.
func startOpenTSDBPair(t *testing.T) *openTSDBPair {
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

	now := waitOutHourEnd(t, time.Now())
	p := &openTSDBPair{otsdb: tsd.URL, hbtsdb: srv.URL, hour: now.Unix() - now.Unix()%3600}
	p.base = p.hour - 4*3600
	bodies := []string{compareDatapoints(now.Add(-time.Hour).Unix())}
	points := append(queryDataset(p.base), lastDataset(p.hour)...)
	bodies = append(bodies, putBodies(points, 1000)...)
	targets := []struct{ name, url string }{{"OpenTSDB", tsd.URL + "/api/put?sync&details"}, {"hbtsdb", srv.URL + "/api/put?details"}}
	each(2*len(bodies), func(i int) {
		target, body := targets[i%2], bodies[i/2]
		status, _, answer, err := openTSDBDo(target.url, "POST", "", body)
		var res struct{ Success, Failed int }
		want := strings.Count(body, `"metric"`)
		if err != nil || json.Unmarshal([]byte(answer), &res) != nil || status != 200 || res.Success != want || res.Failed != 0 {
			t.Errorf("%s /api/put = %d %s (%v), want 200 with %d stored and none failed", target.name, status, answer, err, want)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	p.waitForTracking(t, points)
	return p
}

// waitOutHourEnd returns now, or, in the last 20 seconds of an hour, the time
// once the next hour has begun: /api/query/last reads the hour the datapoints
// were put in, which must still be the current hour when it is asked.
func waitOutHourEnd(t *testing.T, now time.Time) time.Time {
	t.Helper()
	if left := time.Duration(3600-now.Unix()%3600) * time.Second; left <= 20*time.Second {
		t.Logf("%v before the hour ends: waiting for the next one", left)
		<-time.After(left - time.Duration(now.Nanosecond()))
		return time.Now()
	}
	return now
}

// compareSuggest asks both 297 /api/suggest questions (three types, a dozen
// prefixes, four max, GET and POST, and the bad requests) and
// /api/aggregators: the answers must be the same bytes.
func (p *openTSDBPair) compareSuggest(t *testing.T) {
	// Both must know every name, or the comparisons below could pass on two empty lists.
	for _, base := range []string{p.otsdb, p.hbtsdb} {
		const want = `["0metric","Sys.Upper","a","app.latency-p99","app.requests","app_errors","q.cpu","q.floatint","q.last",` +
			`"q.mixed","q.requests","sys.cpu.idle","sys.cpu.nice","sys.cpu.user","sys.if.bytes_in","sys.mem.free"]`
		if status, _, got := openTSDBAsk(t, base, "GET", "/api/suggest", "type=metrics"); status != 200 || got != want {
			t.Fatalf("%s/api/suggest?type=metrics = %d %s, want 200 %s", base, status, got, want)
		}
	}
	type question struct{ method, path, query string }
	var qs []question
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
				body, _ := json.Marshal(map[string]string{"type": typ, "q": q, "max": max})
				qs = append(qs, question{"GET", "/api/suggest", v.Encode()}, question{"POST", "/api/suggest", string(body)})
			}
		}
	}
	for _, bad := range []struct{ method, query string }{
		{"GET", "type=hosts"}, {"GET", "q=sys"}, {"GET", "type=metrics&max=ten"}, {"GET", "type=tagk&max=1.5"},
		{"GET", "type=tagv&max=9999999999"}, {"POST", `{"q":"sys"}`}, {"POST", `{"type":"tags"}`}, {"POST", ``},
		{"POST", `{"type":"tagk","max":"x"}`},
	} {
		qs = append(qs, question{bad.method, "/api/suggest", bad.query})
	}
	qs = append(qs, question{"GET", "/api/aggregators", ""}, question{"POST", "/api/aggregators", ""})
	each(len(qs), func(i int) { p.compare(t, qs[i].method, qs[i].path, qs[i].query) })
}

// compare asks OpenTSDB and hbtsdb one question and fails the test when the
// answers differ: status and body, or for an error the code and message.
func (p *openTSDBPair) compare(t *testing.T, method, path, query string) {
	t.Helper()
	wantStatus, want, gotStatus, got, ok := p.askBoth(t, method, path, query)
	if !ok {
		return
	}
	if wantStatus >= 400 {
		want, got = errorCodeAndMessage(t, want), errorCodeAndMessage(t, got)
	}
	if gotStatus != wantStatus || got != want {
		t.Errorf("%s %s %s: hbtsdb answers %d %s, OpenTSDB %d %s", method, path, query, gotStatus, got, wantStatus, want)
	}
}

// checkErrors compares the answers of a request when either is an error,
// and says whether either was: the same status, code and message.
func checkErrors(t *testing.T, request string, wantStatus int, want string, gotStatus int, got string) bool {
	t.Helper()
	if wantStatus == gotStatus && wantStatus < 400 {
		return false
	}
	if wantStatus != gotStatus || errorCodeAndMessage(t, want) != errorCodeAndMessage(t, got) {
		t.Errorf("%s: hbtsdb answers %d %s\nOpenTSDB %d %s", request, gotStatus, got, wantStatus, shorten(want))
	}
	return true
}

// checkOpenTSDB500 checks the answers of a bad request that OpenTSDB answers
// 500 (its parser's exception escapes unwrapped) and hbtsdb 400, with the
// same message.
func checkOpenTSDB500(t *testing.T, request string, wantStatus int, want string, gotStatus int, got string) {
	t.Helper()
	w, g := errorCodeAndMessage(t, want), errorCodeAndMessage(t, got)
	if wantStatus != 500 || gotStatus != 400 || strings.TrimPrefix(w, "500") != strings.TrimPrefix(g, "400") {
		t.Errorf("%s: hbtsdb answers %d %s, OpenTSDB %d %s; want 400 where OpenTSDB answers 500, with the same message",
			request, gotStatus, g, wantStatus, w)
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
		t.Errorf("not an OpenTSDB error body: %v: %s", err, body)
		return "unreadable " + body
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
