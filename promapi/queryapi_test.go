package promapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/db"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// apiCase is one request to the Prometheus HTTP API and the exact answer
// Prometheus gives for it on the fixture.
type apiCase struct {
	name    string
	path    string
	query   url.Values
	status  int
	body    string
	getOnly bool // Prometheus serves the path on GET only
}

// apiCases are asked with GET and with a form POST; the bodies are what
// Prometheus answers on the same data.
var apiCases = []apiCase{
	// Grafana's health check: an instant query of 1+1 at "now".
	{name: "the Grafana health check 1+1 is the scalar 2", path: "/api/v1/query",
		query:  q("query", "1+1", "time", "1700000000"),
		status: 200, body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"2"]}}`},
	{name: "an instant selector returns the sample within the lookback", path: "/api/v1/query",
		query:  q("query", `cpu{host="web1",cpu="0"}`, "time", "1700000630"),
		status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"cpu","cpu":"0","host":"web1","job":"node"},"value":[1700000630,"10"]}]}}`},
	{name: "values come back bit-exact: NaN", path: "/api/v1/query",
		query:  q("query", "mem", "time", "1700000060"),
		status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"mem","host":"web1"},"value":[1700000060,"NaN"]}]}}`},
	{name: "values come back bit-exact: 1e-300", path: "/api/v1/query",
		query:  q("query", "mem", "time", "1700000120.5"),
		status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"mem","host":"web1"},"value":[1700000120.500,"1e-300"]}]}}`},
	{name: "a range query sums two series per step", path: "/api/v1/query_range",
		query:  q("query", `sum(cpu{host="web1"})`, "start", "1700000000", "end", "1700000120", "step", "60"),
		status: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"0"],[1700000060,"3"],[1700000120,"6"]]}]}}`},
	{name: "a range query across a bucket boundary (23:00) with RFC 3339 times", path: "/api/v1/query_range",
		query:  q("query", `cpu{cpu="0",host="web1"} * 2`, "start", "2023-11-14T22:58:20Z", "end", "2023-11-14T23:01:20Z", "step", "1m"),
		status: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"cpu":"0","host":"web1","job":"node"},"values":[[1700002700,"90"],[1700002760,"92"],[1700002820,"94"],[1700002880,"96"]]}]}}`},
	{name: "rate of a non-counter name carries Prometheus' info annotation", path: "/api/v1/query",
		query:  q("query", "rate(mem[5m])", "time", "1700000120"),
		status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"host":"web1"},"value":[1700000120,"-0.0020833333333333333"]}]},"infos":["PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: \"mem\" (1:6)"]}`},
	{name: "series by matcher", path: "/api/v1/series",
		query:  q("match[]", `cpu{host="web1"}`, "start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":[{"__name__":"cpu","cpu":"0","host":"web1","job":"node"},{"__name__":"cpu","cpu":"1","host":"web1","job":"node"}]}`},
	{name: "label names", path: "/api/v1/labels",
		query:  q("start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":["__name__","cpu","host","job"]}`},
	{name: "label names of the series matching match[] (Grafana autocomplete)", path: "/api/v1/labels",
		query:  q("match[]", "mem", "start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":["__name__","host"]}`},
	{name: "metric names (Grafana's metric autocomplete)", path: "/api/v1/label/__name__/values",
		query:  q("start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":["cpu","mem"]}`, getOnly: true},
	{name: "label values of the series matching match[]", path: "/api/v1/label/host/values",
		query:  q("match[]", `cpu{cpu="1"}`, "start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":["web1"]}`, getOnly: true},
	{name: "label values cut at limit carry a warning", path: "/api/v1/label/host/values",
		query:  q("limit", "1", "start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":["web1"],"warnings":["results truncated due to limit"]}`, getOnly: true},
	{name: "metadata of every metric, from what remote write stored", path: "/api/v1/metadata",
		status: 200, body: `{"status":"success","data":{"cpu":[{"type":"counter","unit":"","help":"CPU seconds."}],"mem":[{"type":"gauge","unit":"bytes","help":"Memory in use."}]}}`, getOnly: true},
	{name: "metadata of one metric", path: "/api/v1/metadata", query: q("metric", "mem", "limit_per_metric", "1"),
		status: 200, body: `{"status":"success","data":{"mem":[{"type":"gauge","unit":"bytes","help":"Memory in use."}]}}`, getOnly: true},
	{name: "metadata of an unknown metric is empty", path: "/api/v1/metadata", query: q("metric", "nope"),
		status: 200, body: `{"status":"success","data":{}}`, getOnly: true},
	{name: "metadata limit=1 gives the first metric", path: "/api/v1/metadata", query: q("limit", "1"),
		status: 200, body: `{"status":"success","data":{"cpu":[{"type":"counter","unit":"","help":"CPU seconds."}]}}`, getOnly: true},
	{name: "metadata limit=0 gives nothing, as in Prometheus", path: "/api/v1/metadata", query: q("limit", "0"),
		status: 200, body: `{"status":"success","data":{}}`, getOnly: true},
	{name: "buildinfo", path: "/api/v1/status/buildinfo",
		status: 200, body: `{"status":"success","data":{"version":"3.16.0","revision":"rev","branch":"hbtsdb-test","buildUser":"hbtsdb","buildDate":"today","goVersion":"go1.26"}}`, getOnly: true},
	{name: "format_query", path: "/api/v1/format_query", query: q("query", "sum(rate(x[5m]))by(job)"),
		status: 200, body: `{"status":"success","data":"sum by (job) (rate(x[5m]))"}`},
	{name: "exemplars are empty", path: "/api/v1/query_exemplars",
		query:  q("query", "cpu", "start", "1700000000", "end", "1700006000"),
		status: 200, body: `{"status":"success","data":[]}`},

	// Errors: Prometheus' errorType, status code and text.
	{name: "a missing query", path: "/api/v1/query", status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": unknown position: parse error: no expression found in input"}`},
	{name: "a query that does not parse", path: "/api/v1/query", query: q("query", "sum(("), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:6: parse error: unclosed left parenthesis"}`},
	{name: "a bad time", path: "/api/v1/query", query: q("query", "1", "time", "yesterday"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"time\": invalid time value for 'time': cannot parse \"yesterday\" to a valid timestamp"}`},
	{name: "a bad start", path: "/api/v1/query_range", query: q("query", "1", "start", "x", "end", "1", "step", "1"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"start\": cannot parse \"x\" to a valid timestamp"}`},
	{name: "a bad step", path: "/api/v1/query_range", query: q("query", "1", "start", "0", "end", "1", "step", "often"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"step\": cannot parse \"often\" to a valid duration"}`},
	{name: "a zero step", path: "/api/v1/query_range", query: q("query", "1", "start", "0", "end", "1", "step", "0"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer"}`},
	{name: "a step too small: more than 11000 points", path: "/api/v1/query_range", query: q("query", "1", "start", "0", "end", "11001", "step", "1"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"}`},
	{name: "an end before the start", path: "/api/v1/query_range", query: q("query", "1", "start", "10", "end", "5", "step", "1"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"end\": end timestamp must not be before start time"}`},
	{name: "a bad duration (timeout)", path: "/api/v1/query", query: q("query", "1", "timeout", "soon"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"timeout\": cannot parse \"soon\" to a valid duration"}`},
	{name: "a bad matcher", path: "/api/v1/series", query: q("match[]", `{job=~"("}`), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"match[]\": 1:2: parse error: error parsing regexp: missing closing ): ` + "`(`" + `"}`},
	{name: "series without match[]", path: "/api/v1/series", status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"no match[] parameter provided"}`},
	{name: "a bad label name", path: "/api/v1/label/%FF/values", status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid label name: \"\\xff\""}`, getOnly: true},
	{name: "an execution error is 422", path: "/api/v1/query",
		query: q("query", `label_replace(cpu{host="web1"}, "cpu", "x", "", "")`, "time", "1700000000"), status: 422,
		body: `{"status":"error","errorType":"execution","error":"vector cannot contain metrics with the same labelset"}`},
	{name: "a negative timeout", path: "/api/v1/query", query: q("query", "cpu", "timeout", "-1"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"timeout\": timeout must be positive, got -1s"}`},
	{name: "metadata limit not a number", path: "/api/v1/metadata", query: q("limit", "x"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"limit must be a number"}`, getOnly: true},
	{name: "metadata limit_per_metric not a number", path: "/api/v1/metadata", query: q("limit_per_metric", "x"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"limit_per_metric must be a number"}`, getOnly: true},
}

func TestPrometheusAPI(t *testing.T) {
	build := BuildInfo{Version: "3.16.0", Revision: "rev", Branch: "hbtsdb-test", BuildUser: "hbtsdb", BuildDate: "today", GoVersion: "go1.26"}
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newQueryEnv(t, b, Options{BuildInfo: build})
			for _, tc := range apiCases {
				for _, post := range []bool{false, true} {
					if post && tc.getOnly {
						continue
					}
					method := map[bool]string{false: "GET", true: "POST"}[post]
					t.Run(tc.name+"/"+method, func(t *testing.T) {
						status, ctype, body := e.get(t, post, tc.path, tc.query)
						if status != tc.status || body != tc.body {
							t.Errorf("%s %s?%s = %d\n%s\nwant %d\n%s", method, tc.path, tc.query.Encode(), status, body, tc.status, tc.body)
						}
						if ctype != "application/json" {
							t.Errorf("Content-Type %q, want application/json", ctype)
						}
					})
				}
			}
		})
	}
}

// TestPrometheusAPIUnknownPaths: the parts of Prometheus' API hbtsdb does not
// serve (no targets, rules or local TSDB) are 404, not a panic on a nil
// retriever.
func TestPrometheusAPIUnknownPaths(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{})
	for _, path := range []string{"/api/v1/targets", "/api/v1/rules", "/api/v1/alerts", "/api/v1/status/config",
		"/api/v1/status/tsdb", "/api/v1/admin/tsdb/snapshot"} {
		if status, _, _ := e.get(t, false, path, nil); status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, status)
		}
	}
}

// slowQueryable is a real DB whose queriers' Select first waits until the
// query's context is done, so that a query always runs into its timeout.
type slowQueryable struct{ *db.DB }

func (s slowQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := s.DB.Querier(mint, maxt)
	return slowQuerier{q}, err
}

type slowQuerier struct{ storage.Querier }

func (s slowQuerier) Select(ctx context.Context, sorted bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	<-ctx.Done()
	return s.Querier.Select(ctx, sorted, hints, ms...)
}

// TestPrometheusAPITimeout: a query over --query.timeout is 503 with errorType
// timeout, as in Prometheus.
func TestPrometheusAPITimeout(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{Timeout: 50 * time.Millisecond}})
	srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(slowQueryable{e.db}),
		Query: QueryOptions{Timeout: 50 * time.Millisecond}}))
	defer srv.Close()
	e.srv = srv
	status, _, body := e.get(t, false, "/api/v1/query", q("query", "cpu", "time", "1700000000"))
	want := `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`
	if status != http.StatusServiceUnavailable || body != want {
		t.Errorf("got %d %s\nwant 503 %s", status, body, want)
	}
}
