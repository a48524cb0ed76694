package promapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

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
	srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(failingQueryable{e.db})}))
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

// readServer serves the router over the query fixture with opts, behind a
// bodyWatch that counts the body bytes each request's handler read.
func readServer(t *testing.T, opts QueryOptions) (*httptest.Server, *bodyWatch) {
	t.Helper()
	e := newQueryEnv(t, schematest.Backends()[0], Options{})
	watch := &bodyWatch{read: map[string]int{}}
	srv := httptest.NewServer(watch.wrap(mustRouter(t, Options{DB: StaticDB(e.db), Query: opts})))
	t.Cleanup(srv.Close)
	return srv, watch
}

// TestRemoteReadSnappyClaim: an 8-byte remote-read body whose snappy header
// claims 30 MiB is refused before anything is allocated for it.
func TestRemoteReadSnappyClaim(t *testing.T) {
	srv, _ := readServer(t, QueryOptions{})
	body := binary.AppendUvarint(nil, 30<<20)
	body = append(body, 0, 0, 0, 0)
	r := post(t, srv.URL+"/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf"}, body)
	want := "invalid remote-read request: snappy block of 8 bytes claims a decoded length of 31457280 bytes, " +
		"more than the 85 bytes it can hold or remote read accepts\n"
	if r.status != 400 || r.body != want {
		t.Errorf("snappy claim = %d %q, want 400 %q", r.status, r.body, want)
	}
}

// TestRemoteReadInflightBytes: remote-read bodies held at once are bounded by
// --remote-read.max-inflight-bytes, counted as they arrive (a slow sender holds
// what it sent, and no slot): a request that does not fit is 429 with
// Retry-After; once the slow one is gone, the same request is served.
func TestRemoteReadInflightBytes(t *testing.T) {
	srv, watch := readServer(t, QueryOptions{RemoteReadMaxInflightBytes: 1000})
	slow := slowSend(t, srv, "/api/v1/read", 1000, bytes.Repeat([]byte("x"), 990))
	watch.waitRead(t, []net.Conn{slow}, 990)
	raw, err := readRequest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body := snappy.Encode(nil, raw)
	r := post(t, srv.URL+"/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf"}, body)
	want := "overloaded: more than 1000 bytes of remote-read request bodies in flight " +
		"(--remote-read.max-inflight-bytes); retry later\n"
	if r.status != 429 || r.body != want || r.header.Get("Retry-After") != "1" {
		t.Errorf("a read while 990 bytes are held = %d %q Retry-After %q, want 429 %q", r.status, r.body,
			r.header.Get("Retry-After"), want)
	}
	slow.Close()
	for {
		r = post(t, srv.URL+"/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf"}, body)
		if r.status != 429 {
			break
		}
		time.Sleep(5 * time.Millisecond) // the server has yet to see the slow connection close
	}
	if r.status != 200 {
		t.Errorf("the read once the slow sender left = %d %q", r.status, r.body)
	}
}

// TestRemoteReadBodyTimeout: a remote-read body that stops arriving is 408
// naming the flag.
func TestRemoteReadBodyTimeout(t *testing.T) {
	srv, _ := readServer(t, QueryOptions{RemoteReadBodyTimeout: 100 * time.Millisecond})
	c := slowSend(t, srv, "/api/v1/read", 1000, []byte("x"))
	want := "remote-read request body not received within 100ms (--remote-read.body-read-timeout); 1 bytes arrived\n"
	if r := readResponse(t, c); r.status != 408 || r.body != want {
		t.Errorf("a body that stops = %d %q, want 408 %q", r.status, r.body, want)
	}
}

// TestRemoteReadBadMatcher: a matcher whose regular expression does not
// compile is the client's error, 400 naming the query, where Prometheus'
// handler answers 500.
func TestRemoteReadBadMatcher(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{})
	req := copies(2)
	req.Queries[1] = &prompb.Query{StartTimestampMs: t0 * 1000, EndTimestampMs: (t0 + 60) * 1000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "cpu("}}}
	want := "query 1: error parsing regexp: missing closing ): `cpu(`\n"
	if status, body := postReadStatus(t, e, req); status != 400 || body != want {
		t.Errorf("bad regexp = %d %q, want 400 %q", status, body, want)
	}
}
