package promapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// exemplarSeries are the series of the exemplar tests: each with one sample
// and its exemplars, ascending (as Prometheus' storage takes them).
func exemplarSeries() []write.Series {
	const ms = t0 * 1000
	ex := func(v float64, ts int64, pairs ...string) exemplar.Exemplar {
		return exemplar.Exemplar{Labels: labels.FromStrings(pairs...), Value: v, Ts: ts, HasTs: true}
	}
	return []write.Series{
		{Labels: ls("__name__", "req_bucket", "host", "web1", "job", "api", "le", "0.1"),
			Exemplars: []exemplar.Exemplar{ex(0.05, ms, "trace_id", "a1"), ex(0.07, ms+15_000, "trace_id", "a2")}},
		{Labels: ls("__name__", "req_bucket", "host", "web1", "job", "api", "le", "+Inf"),
			Exemplars: []exemplar.Exemplar{ex(3.5, ms+30_000, "span_id", "s", "trace_id", "b1")}},
		{Labels: ls("__name__", "req_bucket", "host", "web2", "job", "api", "le", "0.1"),
			// Two at one timestamp (a native histogram's buckets), a NaN among them.
			Exemplars: []exemplar.Exemplar{ex(math.NaN(), ms+3_600_000, "trace_id", "c1"), ex(0.01, ms+3_600_000, "trace_id", "c2")}},
		{Labels: ls("__name__", "other", "host", "web1"),
			Exemplars: []exemplar.Exemplar{ex(1, ms, "trace_id", "d1")}},
	}
}

// exemplarEnv serves a db.DB on a fresh store of b (raw and exemplar
// retention off, so that 2023 stays visible), and Prometheus' own exemplar
// storage (tsdb.CircularExemplarStorage) through the same API.
type exemplarEnv struct {
	db       *db.DB
	st       kv.Store
	srv, ref *httptest.Server
	circular tsdb.ExemplarStorage
}

func newExemplarEnv(t *testing.T, b schematest.Backend) *exemplarEnv {
	t.Helper()
	b.TableOptions.RawRetention, b.TableOptions.ExemplarRetention = 0, 0
	st := b.Store(t)
	ctx := context.Background()
	d, err := db.Open(ctx, db.Options{Store: st, Settings: b.Settings, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(d), Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)

	circular, err := tsdb.NewCircularExemplarStorage(100_000, tsdb.NewExemplarMetrics(nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	refStore := exemplarStore{DB: d, ExemplarQueryable: circular}
	ref := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(refStore), Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(ref.Close)
	return &exemplarEnv{db: d, st: st, srv: srv, ref: ref, circular: circular}
}

// exemplarStore is a Store whose exemplars come from another queryable.
type exemplarStore struct {
	DB
	storage.ExemplarQueryable
}

// write stores series through the write pipeline and adds their exemplars to
// Prometheus' storage too; it returns how many exemplars the pipeline stored.
func (e *exemplarEnv) write(t *testing.T, series []write.Series) int {
	t.Helper()
	res, err := e.db.Write(context.Background(), &write.Request{Series: e.withSamples(series)})
	if err != nil || len(res.Rejected) > 0 || len(res.RejectedExemplars) > 0 {
		t.Fatalf("write: %v %+v %+v", err, res.Rejected, res.RejectedExemplars)
	}
	for _, s := range series {
		for _, ex := range s.Exemplars {
			if err := e.circular.AddExemplar(s.Labels, ex); err != nil && err != storage.ErrDuplicateExemplar {
				t.Fatalf("Prometheus' exemplar storage refused %v of %s: %v", ex, s.Labels, err)
			}
		}
	}
	return res.ExemplarsWritten
}

// withSamples gives every series a sample, so that it is registered and
// indexed (an exemplar alone does not create a series).
func (e *exemplarEnv) withSamples(series []write.Series) []write.Series {
	for i := range series {
		series[i].Samples = []cellenc.Sample{{T: t0 * 1000, V: 1}}
	}
	return series
}

func getExemplars(t *testing.T, base string, v url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query_exemplars?" + v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// TestQueryExemplars: exemplars written through the write pipeline come back
// from /api/v1/query_exemplars over HTTP exactly as Prometheus' own exemplar
// storage answers the same input through the same API, on both backends:
// grouped by series (sorted by labels), ascending, selectors of the query
// ORed, [start, end] inclusive, NaN values, two exemplars at one timestamp.
func TestQueryExemplars(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			e := newExemplarEnv(t, b)
			if n := e.write(t, exemplarSeries()); n != 6 {
				t.Errorf("ExemplarsWritten = %d, want 6", n)
			}
			s := func(sec int64) string { return fmt.Sprint(sec) }
			for _, tc := range []struct {
				name string
				v    url.Values
				want string // exact body, when given; always equal to Prometheus'
			}{
				{
					name: "Grafana's histogram_quantile query: the selector of req_bucket",
					v:    q("query", `histogram_quantile(0.9, sum by (le) (rate(req_bucket{job="api"}[5m])))`, "start", s(t0), "end", s(t0+3600)),
					want: `{"status":"success","data":[` +
						`{"seriesLabels":{"__name__":"req_bucket","host":"web1","job":"api","le":"+Inf"},"exemplars":[{"labels":{"span_id":"s","trace_id":"b1"},"value":"3.5","timestamp":1700000030}]},` +
						`{"seriesLabels":{"__name__":"req_bucket","host":"web1","job":"api","le":"0.1"},"exemplars":[{"labels":{"trace_id":"a1"},"value":"0.05","timestamp":1700000000},{"labels":{"trace_id":"a2"},"value":"0.07","timestamp":1700000015}]},` +
						`{"seriesLabels":{"__name__":"req_bucket","host":"web2","job":"api","le":"0.1"},"exemplars":[{"labels":{"trace_id":"c1"},"value":"NaN","timestamp":1700003600},{"labels":{"trace_id":"c2"},"value":"0.01","timestamp":1700003600}]}]}`,
				},
				{
					name: "two selectors are ORed",
					v:    q("query", `req_bucket{host="web2"} + on() group_left other`, "start", s(t0), "end", s(t0+3600)),
				},
				{
					name: "start and end are inclusive and cut exemplars",
					v:    q("query", `req_bucket`, "start", s(t0+15), "end", s(t0+30)),
					want: `{"status":"success","data":[` +
						`{"seriesLabels":{"__name__":"req_bucket","host":"web1","job":"api","le":"+Inf"},"exemplars":[{"labels":{"span_id":"s","trace_id":"b1"},"value":"3.5","timestamp":1700000030}]},` +
						`{"seriesLabels":{"__name__":"req_bucket","host":"web1","job":"api","le":"0.1"},"exemplars":[{"labels":{"trace_id":"a2"},"value":"0.07","timestamp":1700000015}]}]}`,
				},
				{
					name: "no start and end: everything",
					v:    q("query", `{host="web1"}`),
				},
				{
					name: "no series matches",
					v:    q("query", `nothing`, "start", s(t0), "end", s(t0+3600)),
					want: `{"status":"success","data":[]}`,
				},
				{
					name: "a series without exemplars in the range is left out",
					v:    q("query", `other`, "start", s(t0+1), "end", s(t0+3600)),
					want: `{"status":"success","data":[]}`,
				},
				{
					name: "a query without selectors: 204, as Prometheus answers",
					v:    q("query", `1+1`),
				},
				{
					name: "a bad query is a 400",
					v:    q("query", `rate(`),
				},
				{
					name: "end before start is a 400",
					v:    q("query", `req_bucket`, "start", s(t0+10), "end", s(t0)),
					want: `{"status":"error","errorType":"bad_data","error":"end timestamp must not be before start timestamp"}`,
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					code, got := getExemplars(t, e.srv.URL, tc.v)
					refCode, want := getExemplars(t, e.ref.URL, tc.v)
					if code != refCode || got != want {
						t.Errorf("got %d %s\nPrometheus' storage: %d %s", code, got, refCode, want)
					}
					if tc.want != "" && got != tc.want {
						t.Errorf("got %s\nwant %s", got, tc.want)
					}
				})
			}
		})
	}
}

// TestExemplarsIdempotentAndBounded: a request written again stores the same
// cells; a series keeps at most --exemplars.per-slot exemplars per slot (the
// newest), across requests; both backends.
func TestExemplarsIdempotentAndBounded(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			e := newExemplarEnv(t, b)
			ctx := context.Background()
			cells := func() int {
				t.Helper()
				sc := e.st.Scan(ctx, schema.TableExemplars, nil, nil, kv.MaxVersions(10))
				defer sc.Close()
				n := 0
				for sc.Next() {
					n += len(sc.Row().Cells)
				}
				if err := sc.Err(); err != nil {
					t.Fatal(err)
				}
				return n
			}
			e.write(t, exemplarSeries())
			res, err := e.db.Write(ctx, &write.Request{Series: e.withSamples(exemplarSeries())})
			if err != nil || res.ExemplarsWritten != 6 {
				t.Fatalf("the repeat: %v %+v", err, res)
			}
			if n := cells(); n != 6 {
				t.Errorf("%d exemplar cells after writing 6 exemplars twice, want 6", n)
			}
			all := q("query", `req_bucket`)
			_, once := getExemplars(t, e.srv.URL, all)
			if _, want := getExemplars(t, e.ref.URL, all); once != want {
				t.Errorf("after a repeat: %s\nPrometheus' storage: %s", once, want)
			}

			// 12 exemplars in one 10 s slot of one series, 100 ms apart, in one
			// request: the newest 10 (t02..t11) are kept, in places 0..9 (t02..t09
			// point to place 0 and move on to the next free one; t10 and t11 to
			// place 1, the first free ones being 8 and 9). Then 3 more in the same
			// slot, newer, in another request: all point to place 1 and take 1, 2
			// and 3, replacing t03..t05. The slot still holds 10.
			lbls := ls("__name__", "lat_bucket", "host", "web3", "le", "1")
			var first, second []exemplar.Exemplar
			for i := range 12 {
				first = append(first, exemplar.Exemplar{Labels: ls("trace_id", fmt.Sprintf("t%02d", i)), Value: float64(i), Ts: t0*1000 + int64(i)*100, HasTs: true})
			}
			for i := 12; i < 15; i++ {
				second = append(second, exemplar.Exemplar{Labels: ls("trace_id", fmt.Sprintf("t%02d", i)), Value: float64(i), Ts: t0*1000 + int64(i)*100, HasTs: true})
			}
			if n := e.write(t, []write.Series{{Labels: lbls, Exemplars: first}}); n != 10 {
				t.Errorf("ExemplarsWritten = %d for 12 exemplars in one slot, want 10", n)
			}
			if n := e.write(t, []write.Series{{Labels: lbls, Exemplars: second}}); n != 3 {
				t.Errorf("ExemplarsWritten = %d, want 3", n)
			}
			_, got := getExemplars(t, e.srv.URL, q("query", "lat_bucket"))
			var want strings.Builder
			want.WriteString(`{"status":"success","data":[{"seriesLabels":{"__name__":"lat_bucket","host":"web3","le":"1"},"exemplars":[`)
			for i, id := range []int{2, 6, 7, 8, 9, 10, 11, 12, 13, 14} {
				if i > 0 {
					want.WriteString(",")
				}
				ts := fmt.Sprintf("%d.%03d", t0+id/10, id%10*100) // Prometheus' JSON: seconds, ms as 3 decimals
				if id%10 == 0 {
					ts = fmt.Sprint(t0 + id/10)
				}
				fmt.Fprintf(&want, `{"labels":{"trace_id":"t%02d"},"value":"%d","timestamp":%s}`, id, id, ts)
			}
			want.WriteString(`]}]}`)
			if got != want.String() {
				t.Errorf("bounded slot:\n%s\nwant\n%s", got, want.String())
			}

			// Exemplars of one slot in two requests (a native histogram's, one
			// scrape apart) keep both: their times point to places 1 and 5.
			lbls = ls("__name__", "nh", "host", "web3")
			for _, off := range []int64{1_000, 5_000} {
				ex := exemplar.Exemplar{Labels: ls("trace_id", fmt.Sprint(off)), Value: 1, Ts: t0*1000 + off, HasTs: true}
				if n := e.write(t, []write.Series{{Labels: lbls, Exemplars: []exemplar.Exemplar{ex}}}); n != 1 {
					t.Errorf("ExemplarsWritten = %d, want 1", n)
				}
			}
			_, got = getExemplars(t, e.srv.URL, q("query", "nh"))
			if want := `{"status":"success","data":[{"seriesLabels":{"__name__":"nh","host":"web3"},"exemplars":[` +
				`{"labels":{"trace_id":"1000"},"value":"1","timestamp":1700000001},{"labels":{"trace_id":"5000"},"value":"1","timestamp":1700000005}]}]}`; got != want {
				t.Errorf("one slot, two requests:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestExemplarsOfAStoreWithoutTheTable: a store created before exemplars has
// no exemplar table; /api/v1/query_exemplars answers none instead of failing,
// and once provision.Open (tsdb serve at start) created the table, exemplars
// are written and read.
func TestExemplarsOfAStoreWithoutTheTable(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			e := newExemplarEnv(t, b)
			ctx := context.Background()
			if err := e.st.DropTable(ctx, schema.TableExemplars); err != nil {
				t.Fatal(err)
			}
			res, err := e.db.Write(ctx, &write.Request{Series: []write.Series{{Labels: ls("__name__", "up", "host", "a"),
				Samples: []cellenc.Sample{{T: t0 * 1000, V: 1}}}}})
			if err != nil || res.SamplesWritten != 1 {
				t.Fatalf("a write without exemplars: %v %+v", err, res)
			}
			code, got := getExemplars(t, e.srv.URL, q("query", "up"))
			if code != http.StatusOK || got != `{"status":"success","data":[]}` {
				t.Errorf("without the table: %d %s", code, got)
			}
			opts := b.TableOptions
			opts.RawRetention, opts.ExemplarRetention = 0, 0
			if _, err := provision.Open(ctx, e.st, b.Settings, opts, true, provision.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
				t.Fatal(err)
			}
			if n := e.write(t, exemplarSeries()[:1]); n != 2 {
				t.Errorf("ExemplarsWritten = %d after the table was created, want 2", n)
			}
			_, got = getExemplars(t, e.srv.URL, q("query", "req_bucket"))
			if want := `{"status":"success","data":[{"seriesLabels":{"__name__":"req_bucket","host":"web1","job":"api","le":"0.1"},"exemplars":[` +
				`{"labels":{"trace_id":"a1"},"value":"0.05","timestamp":1700000000},{"labels":{"trace_id":"a2"},"value":"0.07","timestamp":1700000015}]}]}`; got != want {
				t.Errorf("after provisioning:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestExemplarRetentionHidesOldExemplars: the family's TTL (the exemplar
// retention) counts from each exemplar's timestamp.
func TestExemplarRetentionHidesOldExemplars(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testExemplarRetention(t, b)
		})
	}
}

func testExemplarRetention(t *testing.T, b schematest.Backend) {
	b.TableOptions.RawRetention = 0
	b.TableOptions.ExemplarRetention = 24 * time.Hour
	st := b.Store(t)
	ctx := context.Background()
	d, err := db.Open(ctx, db.Options{Store: st, Settings: b.Settings, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	now := time.Now().UnixMilli()
	lbls := ls("__name__", "x_bucket", "host", "h")
	res, err := d.Write(ctx, &write.Request{Series: []write.Series{{Labels: lbls,
		Samples:   []cellenc.Sample{{T: now - 48*3600_000, V: 1}, {T: now, V: 2}},
		Exemplars: []exemplar.Exemplar{{Labels: ls("trace_id", "old"), Value: 1, Ts: now - 48*3600_000, HasTs: true}, {Labels: ls("trace_id", "new"), Value: 2, Ts: now, HasTs: true}}}}})
	if err != nil || res.ExemplarsWritten != 2 {
		t.Fatalf("write: %v %+v", err, res)
	}
	eq, _ := d.Reader().ExemplarQuerier(ctx)
	got, err := eq.Select(0, now, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "x_bucket")})
	if err != nil || len(got) != 1 || len(got[0].Exemplars) != 1 || got[0].Exemplars[0].Labels.Get("trace_id") != "new" {
		t.Errorf("Select = %+v, %v; want only the exemplar within a day", got, err)
	}
}

// TestRemoteWriteExemplars: exemplars sent by remote write 1.0 and 2.0 over
// HTTP are stored and answered by /api/v1/query_exemplars; 2.0 counts them in
// X-Prometheus-Remote-Write-Exemplars-Written.
func TestRemoteWriteExemplars(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			e := newExemplarEnv(t, b)
			const ms = t0 * 1000
			lbls1 := ls("__name__", "rw1_bucket", "host", "h", "le", "1")
			v1 := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
				Labels:    prompb.FromLabels(lbls1, nil),
				Samples:   []prompb.Sample{{Timestamp: ms, Value: 1}},
				Exemplars: []prompb.Exemplar{{Labels: prompb.FromLabels(ls("trace_id", "v1"), nil), Value: 0.5, Timestamp: ms + 1}},
			}}}
			if r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, v1)); r.status != http.StatusNoContent {
				t.Fatalf("remote write 1.0: %d %s", r.status, r.body)
			}

			st := writev2.NewSymbolTable()
			lbls2 := ls("__name__", "rw2_bucket", "host", "h", "le", "1")
			v2 := &writev2.Request{Timeseries: []writev2.TimeSeries{{
				LabelsRefs: st.SymbolizeLabels(lbls2, nil),
				Samples:    []writev2.Sample{{Timestamp: ms, Value: 1}},
				Exemplars: []writev2.Exemplar{
					{LabelsRefs: st.SymbolizeLabels(ls("trace_id", "v2a"), nil), Value: 0.25, Timestamp: ms + 2},
					{LabelsRefs: st.SymbolizeLabels(ls("trace_id", "v2b"), nil), Value: 0.75, Timestamp: ms + 3},
				},
			}}}
			v2.Symbols = st.Symbols()
			r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV2), marshalV2(t, v2))
			if r.status != http.StatusNoContent || r.header.Get("X-Prometheus-Remote-Write-Exemplars-Written") != "2" {
				t.Fatalf("remote write 2.0: %d %s, exemplars written %q", r.status, r.body, r.header.Get("X-Prometheus-Remote-Write-Exemplars-Written"))
			}

			_, got := getExemplars(t, e.srv.URL, q("query", `histogram_quantile(0.5, rate({__name__=~"rw._bucket"}[5m]))`))
			want := `{"status":"success","data":[` +
				`{"seriesLabels":{"__name__":"rw1_bucket","host":"h","le":"1"},"exemplars":[{"labels":{"trace_id":"v1"},"value":"0.5","timestamp":1700000000.001}]},` +
				`{"seriesLabels":{"__name__":"rw2_bucket","host":"h","le":"1"},"exemplars":[{"labels":{"trace_id":"v2a"},"value":"0.25","timestamp":1700000000.002},` +
				`{"labels":{"trace_id":"v2b"},"value":"0.75","timestamp":1700000000.003}]}]}`
			if got != want {
				t.Errorf("query_exemplars:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
