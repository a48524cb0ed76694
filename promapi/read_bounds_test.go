package promapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// TestCORSOrigin: a request with an Origin header is answered as Prometheus
// answers it (it panicked on a nil CORS regexp before), with the default
// origin ".*" and with a configured one; OPTIONS is the browser's preflight.
func TestCORSOrigin(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{})
	do := func(srvURL, method, origin string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srvURL+"/api/v1/query?query=1%2B1&time=1700000000", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if method == http.MethodGet && resp.StatusCode == 200 {
			if want := `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"2"]}}`; strings.TrimSpace(string(b)) != want {
				t.Errorf("body %s, want %s", b, want)
			}
		}
		return resp
	}
	resp := do(e.srv.URL, http.MethodGet, "https://grafana.example")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		resp.Header.Get("Access-Control-Allow-Methods") != "GET, POST, OPTIONS" ||
		resp.Header.Get("Access-Control-Allow-Headers") != "Accept, Authorization, Content-Type, Origin" ||
		!slices.Contains(resp.Header.Values("Vary"), "Origin") {
		t.Errorf("default origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do(e.srv.URL, http.MethodOptions, "https://grafana.example"); resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	re, err := CompileCORSOrigin(`https://ok\.example`)
	if err != nil {
		t.Fatal(err)
	}
	e2 := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{CORSOrigin: re}})
	if resp := do(e2.srv.URL, http.MethodGet, "https://ok.example"); resp.StatusCode != 200 ||
		resp.Header.Get("Access-Control-Allow-Origin") != "https://ok.example" {
		t.Errorf("allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do(e2.srv.URL, http.MethodGet, "https://ok.example.evil"); resp.StatusCode != 200 ||
		resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin (anchored): %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := CompileCORSOrigin("("); err == nil || err.Error() != "CORS origin \"(\": error parsing regexp: missing closing ): `^(?:()$`" {
		t.Errorf("CompileCORSOrigin(\"(\") = %v", err)
	}
}

// chain is "1+1+...+1" with n terms.
func chain(n int) string { return "1" + strings.Repeat("+1", n-1) }

// TestQueryMaxLength: a query or selector over --query.max-length is 400
// bad_data on every endpoint that parses one, before it is parsed; one at the
// limit is served.
func TestQueryMaxLength(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{MaxQueryLength: 99}})
	long, ok := chain(51), chain(50) // 101 and 99 bytes
	tooLong := `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": the query is 101 bytes long, more than the limit of 99 (--query.max-length)"}`
	for _, post := range []bool{false, true} {
		for _, tc := range []struct {
			path   string
			params []string
		}{
			{"/api/v1/query", []string{"time", "1700000000"}},
			{"/api/v1/query_range", []string{"start", "1700000000", "end", "1700000060", "step", "60"}},
			{"/api/v1/parse_query", nil},
			{"/api/v1/format_query", nil},
		} {
			status, _, body := e.get(t, post, tc.path, q(append([]string{"query", long}, tc.params...)...))
			if status != 400 || body != tooLong {
				t.Errorf("%s (post %v) with 101 bytes = %d %s, want 400 %s", tc.path, post, status, body, tooLong)
			}
			if status, _, body := e.get(t, post, tc.path, q(append([]string{"query", ok}, tc.params...)...)); status != 200 {
				t.Errorf("%s (post %v) with 99 bytes = %d %s, want 200", tc.path, post, status, body)
			}
		}
		sel := `cpu{host=~"` + strings.Repeat("a|", 45) + `b"}` // 104 bytes
		want := `{"status":"error","errorType":"bad_data","error":"invalid parameter \"match[]\": a selector is 104 bytes long, more than the limit of 99 (--query.max-length)"}`
		if status, _, body := e.get(t, post, "/api/v1/series", q("match[]", "mem", "match[]", sel)); status != 400 || body != want {
			t.Errorf("series (post %v) = %d %s, want 400 %s", post, status, body, want)
		}
	}
}

// TestFormatQueryMaxDepth: format_query refuses an expression nested deeper
// than --query.format-max-depth (Prometheus' pretty-printer takes seconds on
// 1 000 levels), and formats one at the limit.
func TestFormatQueryMaxDepth(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{FormatMaxDepth: 20}})
	want := `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": the expression nests 21 deep, more than format_query's limit of 20 (--query.format-max-depth)"}`
	if status, _, body := e.get(t, false, "/api/v1/format_query", q("query", chain(21))); status != 400 || body != want {
		t.Errorf("21 deep = %d %s, want 400 %s", status, body, want)
	}
	if status, _, body := e.get(t, false, "/api/v1/format_query", q("query", chain(20))); status != 200 ||
		body != `{"status":"success","data":"`+strings.Join(strings.Split(chain(20), "+"), " + ")+`"}` {
		t.Errorf("20 deep = %d %s, want 200", status, body)
	}
	// An expression that does not parse gets Prometheus' own answer.
	if status, _, body := e.get(t, false, "/api/v1/format_query", q("query", "sum((")); status != 400 ||
		body != `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:6: parse error: unclosed left parenthesis"}` {
		t.Errorf("unparseable = %d %s", status, body)
	}
}

// failingQueryable is a real DB whose Select waits for the query's context and
// then fails with its error wrapped, as a store scan cut by a deadline does.
type failingQueryable struct{ *db.DB }

func (s failingQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := s.DB.Querier(mint, maxt)
	return failingQuerier{q}, err
}

type failingQuerier struct{ storage.Querier }

// Select returns at once; the set's Next waits, as the store's lazy sets do,
// so that the deadline passes while the engine expands the series.
func (failingQuerier) Select(ctx context.Context, _ bool, _ *storage.SelectHints, _ ...*labels.Matcher) storage.SeriesSet {
	return &waitingSet{ctx: ctx}
}

type waitingSet struct {
	ctx context.Context
	err error
}

func (s *waitingSet) Next() bool {
	<-s.ctx.Done()
	s.err = fmt.Errorf("query: %w", s.ctx.Err())
	return false
}

func (s *waitingSet) At() storage.Series                { return nil }
func (s *waitingSet) Err() error                        { return s.err }
func (s *waitingSet) Warnings() annotations.Annotations { return nil }

// TestQueryTimeoutParameterIs503: a request's timeout=1s that the store runs
// into is 503 errorType timeout, as README says, not 422 execution.
func TestQueryTimeoutParameterIs503(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{})
	srv := httptest.NewServer(mustRouter(t, Options{Store: StaticStore(failingQueryable{e.db})}))
	t.Cleanup(srv.Close)
	e.srv = srv
	for _, tc := range []struct{ path, params string }{
		{"/api/v1/query", "time=1700000000"},
		{"/api/v1/query_range", "start=1700000000&end=1700000060&step=60"},
	} {
		status, _, body := e.get(t, false, tc.path+"?query=cpu&timeout=1s&"+tc.params, nil)
		want := `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation: expanding series: query: context deadline exceeded"}`
		if status != http.StatusServiceUnavailable || body != want {
			t.Errorf("%s: got %d %s\nwant 503 %s", tc.path, status, body, want)
		}
	}
}

// postReadStatus posts req to /api/v1/read and returns the status and body.
func postReadStatus(t *testing.T, e *queryEnv, req *prompb.ReadRequest) (int, string) {
	t.Helper()
	raw, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(e.srv.URL+"/api/v1/read", "application/x-protobuf", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// copies is readRequest with its query n times.
func copies(n int, types ...prompb.ReadRequest_ResponseType) *prompb.ReadRequest {
	r := readRequest(types...)
	for range n - 1 {
		r.Queries = append(r.Queries, r.Queries[0])
	}
	return r
}

// TestRemoteReadSampleLimitPerRequest: the sample limit of a SAMPLES remote
// read bounds the request, summed over its queries (readRequest's query reads
// 6 samples): two queries of 6 are over a limit of 10, and answered as
// Prometheus answers its own limit.
func TestRemoteReadSampleLimitPerRequest(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{RemoteReadSampleLimit: 10}})
	if status, body := postReadStatus(t, e, copies(1)); status != 200 {
		t.Fatalf("one query of 6 samples = %d %q", status, body)
	}
	if status, body := postReadStatus(t, e, copies(2)); status != 400 || body != "exceeded sample limit (10)\n" {
		t.Errorf("two queries of 6 samples = %d %q, want 400 %q", status, body, "exceeded sample limit (10)\n")
	}
	// Streamed responses are bounded per frame, not by the sample limit.
	if status, body := postReadStatus(t, e, copies(2, prompb.ReadRequest_STREAMED_XOR_CHUNKS)); status != 200 {
		t.Errorf("streamed, two queries = %d %q, want 200", status, body)
	}
	// The budget is per request: the next one starts afresh.
	if status, body := postReadStatus(t, e, copies(1)); status != 200 {
		t.Errorf("one query after a refused request = %d %q", status, body)
	}
}

// TestRemoteReadMaxQueries: a request with more queries than
// --remote-read.max-queries is 400 before any runs, whatever its response type.
func TestRemoteReadMaxQueries(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{RemoteReadMaxQueries: 3}})
	if status, body := postReadStatus(t, e, copies(3)); status != 200 {
		t.Fatalf("3 queries = %d %q", status, body)
	}
	want := "exceeded query limit: 4 queries in one remote-read request, more than the limit of 3 (--remote-read.max-queries)\n"
	for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		if status, body := postReadStatus(t, e, copies(4, typ)); status != 400 || body != want {
			t.Errorf("4 queries (%v) = %d %q, want 400 %q", typ, status, body, want)
		}
	}
}
