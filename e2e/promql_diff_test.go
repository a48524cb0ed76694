package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// diffQuery is one PromQL expression of the differential test, asked as an instant
// query, as a range query, or both.
type diffQuery struct {
	expr    string
	instant bool
	ranged  bool
	// empty: Prometheus' answer is expected to be empty (absent of a series that
	// exists, a filter nothing passes); every other query must return something,
	// or it would prove nothing.
	empty bool
}

// atPlaceholder in an expression is replaced by the @ modifier's time (seconds),
// which lies in the compared window.
const atPlaceholder = "@AT@"

// diffQueries are the expressions asked of Prometheus and of tsdb. They cover the
// functions and operators Grafana dashboards use on counters, gauges and classic
// histograms, the modifiers (offset, @, subqueries), every matcher type, and
// staleness: e2e_flapping's generations disappear and are marked stale.
var diffQueries = []diffQuery{
	// Selectors and matchers.
	{expr: `e2e_requests_total`, instant: true, ranged: true},
	{expr: `e2e_requests_total{handler="/api"}`, instant: true},
	{expr: `e2e_requests_total{handler=~"/lo.*"}`, instant: true},
	{expr: `e2e_requests_total{code!="200"}`, instant: true, ranged: true},
	{expr: `e2e_requests_total{handler!~"/api|/x", method="POST"}`, instant: true},
	{expr: `e2e_many{i=~"00[0-9]|29.", parity!="0"}`, instant: true},
	{expr: `{__name__=~"e2e_temp.*", floor=~"0|2"}`, instant: true},
	{expr: `e2e_requests_total{handler="/nope"}`, instant: true, empty: true},
	{expr: `e2e_many{i=~"01."}[8s]`, instant: true},
	{expr: `up`, instant: true, ranged: true},
	{expr: `e2e_special_value`, instant: true},
	// Counters.
	{expr: `rate(e2e_requests_total[10s])`, instant: true, ranged: true},
	{expr: `irate(e2e_requests_total[10s])`, instant: true, ranged: true},
	{expr: `increase(e2e_requests_total[15s])`, instant: true, ranged: true},
	{expr: `rate(e2e_resetting_total[20s])`, instant: true, ranged: true},
	{expr: `increase(e2e_resetting_total[30s])`, instant: true},
	{expr: `resets(e2e_resetting_total[1m])`, instant: true},
	{expr: `sum by (job) (rate(prometheus_http_requests_total[15s]))`, instant: true, ranged: true},
	// Gauges.
	{expr: `delta(e2e_temperature_celsius[15s])`, instant: true, ranged: true},
	{expr: `idelta(e2e_temperature_celsius[15s])`, instant: true},
	{expr: `deriv(e2e_temperature_celsius[20s])`, instant: true},
	{expr: `predict_linear(e2e_temperature_celsius[20s], 60)`, instant: true},
	{expr: `avg_over_time(e2e_temperature_celsius[20s])`, instant: true, ranged: true},
	{expr: `quantile_over_time(0.75, e2e_temperature_celsius[30s])`, instant: true},
	{expr: `clamp_max(e2e_temperature_celsius, 21)`, instant: true},
	{expr: `round(e2e_temperature_celsius, 0.5)`, instant: true},
	// Classic histograms.
	{expr: `histogram_quantile(0.9, rate(e2e_request_duration_seconds_bucket[15s]))`, instant: true, ranged: true},
	{expr: `histogram_quantile(0.5, sum by (le) (rate(e2e_request_duration_seconds_bucket[15s])))`, instant: true, ranged: true},
	{expr: `histogram_quantile(0.99, sum by (le, handler) (increase(e2e_request_duration_seconds_bucket[20s])))`, instant: true},
	{expr: `rate(e2e_request_duration_seconds_sum[15s]) / rate(e2e_request_duration_seconds_count[15s])`, instant: true, ranged: true},
	{expr: `sum(rate(e2e_request_duration_seconds_bucket{le="0.1"}[15s])) / sum(rate(e2e_request_duration_seconds_count[15s]))`, instant: true},
	// Aggregations.
	{expr: `sum by (handler) (rate(e2e_requests_total[10s]))`, instant: true, ranged: true},
	{expr: `sum by (code) (e2e_requests_total)`, instant: true},
	{expr: `avg without (room) (e2e_temperature_celsius)`, instant: true, ranged: true},
	{expr: `count(e2e_many)`, instant: true},
	{expr: `count by (parity) (e2e_many)`, instant: true},
	{expr: `topk(3, e2e_many)`, instant: true},
	{expr: `topk by (parity) (2, e2e_many)`, instant: true},
	{expr: `bottomk(2, e2e_temperature_celsius)`, instant: true, ranged: true},
	{expr: `quantile(0.3, e2e_temperature_celsius)`, instant: true},
	{expr: `stddev(e2e_temperature_celsius)`, instant: true},
	{expr: `group by (floor) (e2e_temperature_celsius)`, instant: true},
	{expr: `count_values("v", e2e_resetting_total)`, instant: true},
	{expr: `sort_desc(sum by (handler, method) (e2e_requests_total))`, instant: true},
	// Offset, @ and subqueries.
	{expr: `e2e_requests_total offset 10s`, instant: true},
	{expr: `rate(e2e_requests_total[10s] offset 5s)`, instant: true, ranged: true},
	{expr: `e2e_temperature_celsius offset -5s`, instant: true},
	{expr: `e2e_temperature_celsius @ ` + atPlaceholder, instant: true, ranged: true},
	{expr: `e2e_temperature_celsius @ end()`, ranged: true},
	{expr: `rate(e2e_requests_total[10s] @ start())`, ranged: true},
	{expr: `max_over_time(rate(e2e_requests_total[5s])[20s:2s])`, instant: true, ranged: true},
	{expr: `avg_over_time(e2e_temperature_celsius[20s:3s])`, instant: true},
	// absent and absent_over_time.
	{expr: `absent(e2e_requests_total{handler="/nope"})`, instant: true, ranged: true},
	{expr: `absent(e2e_requests_total)`, instant: true, empty: true},
	{expr: `absent_over_time(e2e_temperature_celsius{room="cellar"}[30s])`, instant: true},
	{expr: `absent_over_time(e2e_temperature_celsius[30s])`, instant: true, empty: true},
	// Labels.
	{expr: `label_replace(e2e_temperature_celsius, "place", "room-$1", "room", "(.*)")`, instant: true},
	{expr: `label_join(e2e_requests_total, "route", " ", "method", "handler")`, instant: true},
	// Time functions.
	{expr: `time()`, instant: true, ranged: true},
	{expr: `timestamp(e2e_temperature_celsius)`, instant: true},
	{expr: `minute() + hour() * 60 + day_of_week()`, instant: true},
	{expr: `e2e_explicit_timestamp - timestamp(e2e_explicit_timestamp)`, instant: true},
	// Comparisons, bool, set operators, vector matching.
	{expr: `e2e_temperature_celsius > 20`, instant: true, ranged: true},
	{expr: `e2e_temperature_celsius > bool 20`, instant: true},
	{expr: `e2e_temperature_celsius > 1000`, instant: true, empty: true},
	{expr: `e2e_requests_total / on (handler) group_left sum by (handler) (e2e_requests_total)`, instant: true, ranged: true},
	{expr: `e2e_requests_total * ignoring (code, method) group_left e2e_request_duration_seconds_count`, instant: true},
	{expr: `e2e_requests_total unless e2e_requests_total{method="GET"}`, instant: true},
	{expr: `rate(e2e_requests_total[10s]) and on (code) e2e_requests_total{code="200"}`, instant: true},
	{expr: `max by (floor) (e2e_temperature_celsius) == bool on (floor) min by (floor) (e2e_temperature_celsius)`, instant: true},
	{expr: `scalar(sum(e2e_resetting_total)) * 2`, instant: true, ranged: true},
	{expr: `1 + 1`, instant: true},
	// Staleness: each generation of e2e_flapping ends with a stale marker.
	{expr: `e2e_flapping`, instant: true, ranged: true},
	{expr: `count_over_time(e2e_flapping[20s])`, instant: true, ranged: true},
	{expr: `last_over_time(e2e_flapping[10s])`, instant: true},
	{expr: `changes(e2e_flapping[30s])`, instant: true},
}

// seriesMatchers are the match[] sets whose /api/v1/series and /api/v1/labels
// answers are compared.
var seriesMatchers = [][]string{
	{`e2e_requests_total`},
	{`{__name__=~"e2e_temp.*|e2e_resetting_total"}`},
	{`e2e_request_duration_seconds_bucket{le=~"0.0.*"}`, `e2e_request_duration_seconds_count`},
	{`{job="e2e-target", __name__=~"e2e_m.*", parity!="1"}`},
	{`e2e_flapping`},
	{`{job="e2e-target"}`},
}

// diffWindow is where the differential test asks its queries: times that both
// Prometheus and tsdb hold completely (from the first scrape to the cut-off T).
type diffWindow struct {
	instants         []int64 // evaluation times of instant queries (ms)
	start, end, step int64   // range queries (ms)
	at               int64   // the @ modifier's time (ms)
}

// newDiffWindow is the window of a run whose first scrape of the synthetic target
// was at first and whose cut-off is cutoff (ms). Range queries start 6 s after the
// first scrape, so that `@ start()` and 10 s rates at the start have samples.
func newDiffWindow(first, cutoff int64) diffWindow {
	start := (first/1000 + 7) * 1000
	return diffWindow{
		instants: []int64{cutoff, cutoff - 7300},
		start:    start,
		end:      cutoff,
		step:     2000,
		at:       cutoff - 10000,
	}
}

// firstScrape returns the timestamp (ms) of Prometheus' first scrape of the
// synthetic target: Prometheus starts scraping a few seconds after it was
// started, later on a loaded machine.
func firstScrape(ctx context.Context, promURL string, cutoff int64) (int64, error) {
	res, err := apiQuery(ctx, promURL, "/api/v1/query", url.Values{
		"query": {`up{job="e2e-target"}[10m]`},
		"time":  {apiTime(cutoff)},
	})
	if err != nil {
		return 0, fmt.Errorf("first scrape of the target: %w", err)
	}
	if len(res.series) != 1 {
		return 0, fmt.Errorf("first scrape of the target: %d series of up{job=\"e2e-target\"}, want 1", len(res.series))
	}
	for _, s := range res.series {
		return s.samples[0].t, nil
	}
	panic("unreachable")
}

// diffRequest is one query request: an expression at one instant or over the range.
type diffRequest struct {
	desc   string // the expression and where it was evaluated
	path   string
	params url.Values
	empty  bool
}

// requests expands the queries into requests over the window.
func (w diffWindow) requests(queries []diffQuery) []diffRequest {
	var out []diffRequest
	for _, q := range queries {
		expr := strings.ReplaceAll(q.expr, atPlaceholder, apiTime(w.at))
		if q.instant {
			for _, at := range w.instants {
				out = append(out, diffRequest{
					desc:   fmt.Sprintf("%s at %s", expr, apiTime(at)),
					path:   "/api/v1/query",
					params: url.Values{"query": {expr}, "time": {apiTime(at)}},
					empty:  q.empty,
				})
			}
		}
		if q.ranged {
			out = append(out, diffRequest{
				desc:   fmt.Sprintf("%s over [%s, %s] step %ds", expr, apiTime(w.start), apiTime(w.end), w.step/1000),
				path:   "/api/v1/query_range",
				params: url.Values{"query": {expr}, "start": {apiTime(w.start)}, "end": {apiTime(w.end)}, "step": {apiTime(w.step)}},
				empty:  q.empty,
			})
		}
	}
	return out
}

// referenceAnswers asks Prometheus every request and checks that the answers are
// meaningful: non-empty unless the query is meant to be empty.
func referenceAnswers(ctx context.Context, t *testing.T, promURL string, reqs []diffRequest) []*queryResult {
	t.Helper()
	out := make([]*queryResult, len(reqs))
	for i, r := range reqs {
		res, err := apiQuery(ctx, promURL, r.path, r.params)
		if err != nil {
			t.Fatalf("Prometheus: %s: %v", r.desc, err)
		}
		if isEmpty := len(res.series) == 0 && res.str == ""; isEmpty != r.empty {
			t.Errorf("Prometheus: %s: empty answer %v, the test expects %v: the query proves nothing", r.desc, isEmpty, r.empty)
		}
		out[i] = res
	}
	return out
}

// maxFailedRequests is how many failed requests compareAnswers reports before it
// gives up on a server.
const maxFailedRequests = 10

// compareAnswers asks the server at base (named who) every request and compares its
// answers with Prometheus' (want); it returns how many requests were compared.
func compareAnswers(ctx context.Context, t *testing.T, who, base string, reqs []diffRequest, want []*queryResult) int {
	t.Helper()
	failed, asked := 0, 0
	for i, r := range reqs {
		asked++
		got, err := apiQuery(ctx, base, r.path, r.params)
		if err != nil {
			t.Errorf("%s: %s: %v", who, r.desc, err)
			failed++
			continue
		}
		if d := compareResults(want[i], got, closeEnough); len(d) > 0 {
			t.Errorf("%s answers %s differently from Prometheus in %d places:%s", who, r.desc, len(d), summarize(d, 10))
			failed++
		}
		if failed == maxFailedRequests && i+1 < len(reqs) {
			// A store that went away makes every request wait for its timeout.
			t.Errorf("%s: %d requests failed; not asking the other %d", who, failed, len(reqs)-i-1)
			break
		}
	}
	t.Logf("%s: %d of %d query requests answered as Prometheus does", who, asked-failed, len(reqs))
	return len(reqs)
}

// compareSeriesAPI compares the /api/v1/series and /api/v1/labels answers of the
// server at base with Prometheus' for every set of seriesMatchers over the window.
//
// One difference is by design and allowed: tsdb's series API lists the series its
// per-day tag index has for the days of the window, without reading their samples,
// while Prometheus lists those with a chunk overlapping the window — exact to the
// sample for its in-memory head. So tsdb may list more: series of the same day with
// no sample in the window (here e2e_flapping's generations that ended before it or
// began after it). Each such extra must be a series Prometheus has just outside the
// window; every series Prometheus lists must be there, and the label names must be
// the same.
func compareSeriesAPI(ctx context.Context, t *testing.T, who, promURL, base string, w diffWindow) {
	t.Helper()
	for _, match := range seriesMatchers {
		want, err := apiSeries(ctx, promURL, match, w.start, w.end)
		if err != nil {
			t.Fatalf("Prometheus: series %v: %v", match, err)
		}
		if len(want) == 0 {
			t.Errorf("Prometheus: series %v: none, the comparison proves nothing", match)
		}
		got, err := apiSeries(ctx, base, match, w.start, w.end)
		if err != nil {
			t.Errorf("%s: series %v: %v", who, match, err)
		} else {
			// Prometheus' series of the whole day so far, for the extras.
			dayStart := w.start - w.start%(24*3600*1000)
			wider, err := apiSeries(ctx, promURL, match, dayStart, time.Now().UnixMilli())
			if err != nil {
				t.Fatalf("Prometheus: series %v of the day: %v", match, err)
			}
			var d, outside []string
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if !got[k] {
					d = append(d, "missing "+k)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				switch {
				case want[k]:
				case wider[k]:
					outside = append(outside, k)
				default:
					d = append(d, "extra "+k+", unknown to Prometheus")
				}
			}
			if len(d) > 0 {
				t.Errorf("%s: /api/v1/series %v over [%s, %s] differs from Prometheus' (%d series) in %d places:%s",
					who, match, apiTime(w.start), apiTime(w.end), len(want), len(d), summarize(d, 10))
			}
			if len(outside) > 0 {
				t.Logf("%s: /api/v1/series %v also lists %d series of the day without samples in the window (by design, see compareSeriesAPI):%s",
					who, match, len(outside), summarize(outside, 5))
			}
		}

		wantNames, err := apiLabels(ctx, promURL, match, w.start, w.end)
		if err != nil {
			t.Fatalf("Prometheus: labels %v: %v", match, err)
		}
		gotNames, err := apiLabels(ctx, base, match, w.start, w.end)
		if err != nil {
			t.Errorf("%s: labels %v: %v", who, match, err)
		} else if !slices.Equal(wantNames, gotNames) {
			t.Errorf("%s: /api/v1/labels %v = %q, Prometheus %q", who, match, gotNames, wantNames)
		}
	}
}

// checkQueryAPIs is the query half of a run, asked while Prometheus and tsdb both
// still run, once Prometheus has sent tsdb every sample up to the cut-off: the
// differential PromQL test (every diffQueries request of tsdb's /api/v1/query and
// /api/v1/query_range compared with Prometheus' answer), /api/v1/series and
// /api/v1/labels, the raw remote-read protocol test, and a second Prometheus
// without data of its own that answers the same queries by remote-reading tsdb —
// once as Prometheus negotiates it (streamed chunks) and once forced to sampled
// responses by a proxy.
func checkQueryAPIs(ctx context.Context, t *testing.T, promBin, dir string, ps *promServer, tsdb *tsdbServer, cutoff int64) {
	t.Helper()
	// No budget for the whole: on a loaded machine these hundreds of requests take
	// long, and each one is bounded by httpClient's timeout (stallTimeout).
	began := time.Now()
	first, err := firstScrape(ctx, ps.url, cutoff)
	if err != nil {
		t.Fatalf("Prometheus: %v", err)
	}
	w := newDiffWindow(first, cutoff)
	reqs := w.requests(diffQueries)
	want := referenceAnswers(ctx, t, ps.url, reqs)
	tsdbURL := "http://" + tsdb.addr
	n := compareAnswers(ctx, t, "tsdb", tsdbURL, reqs, want)
	compareSeriesAPI(ctx, t, "tsdb", ps.url, tsdbURL, w)
	checkRawRemoteRead(ctx, t, ps.url, tsdbURL, w.start, cutoff)

	readerDir := filepath.Join(dir, "reader")
	if err := os.Mkdir(readerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	proxy := startReadProxy(t, tsdbURL+"/api/v1/read")
	reader := startPrometheus(t, promBin, readerDir, promConfig{readURL: proxy.srv.URL})
	for _, mode := range []struct {
		name         string
		forceSamples bool
		contentType  string
	}{
		{"streamed chunks", false, contentTypeStreamed},
		{"samples", true, contentTypeSampled},
	} {
		proxy.setForceSamples(mode.forceSamples)
		compareAnswers(ctx, t, "a Prometheus remote-reading tsdb ("+mode.name+")", reader.url, reqs, want)
		answered, err := proxy.result()
		if err != nil {
			t.Errorf("remote read through the proxy (%s): %v", mode.name, err)
		}
		if len(answered) != 1 || answered[mode.contentType] == 0 {
			t.Errorf("remote read (%s): tsdb answered with Content-Types %v, want only %q", mode.name, answered, mode.contentType)
		}
		t.Logf("remote read (%s): tsdb answered %v", mode.name, answered)
	}
	if err := reader.stop(); err != nil {
		t.Errorf("stop the remote-reading Prometheus: %v", err)
	}
	t.Logf("query checks: %d expressions, %d requests per server, took %s", len(diffQueries), n, time.Since(began).Round(time.Millisecond))
}
