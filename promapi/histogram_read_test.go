package promapi

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
	"github.com/prometheus/prometheus/util/teststorage"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// histSample is one sample of the histogram fixture: a float (h and fh nil)
// or a native histogram, with its start timestamp (ms, 0 unknown).
type histSample struct {
	t, st int64
	v     float64
	h     *histogram.Histogram
	fh    *histogram.FloatHistogram
}

// histFixture is written beside the query fixture, on host web3, at t0 + 15 s
// steps:
//
//	mixed{host="web3"}   a float with a start timestamp, two integer histograms
//	                     with one, a counter reset, a float histogram, a stale
//	                     marker, a custom-buckets (NHCB) histogram
//	gauge{host="web3"}   four gauge histograms
//	floats{host="web3"}  floats with start timestamps only
func histFixture() map[string][]histSample {
	at := func(i int64) int64 { return (t0 + 15*i) * 1000 }
	st := at(0) - 10_000
	mixed := []histSample{
		{t: at(0), st: st, v: 1},
		{t: at(1), st: st, h: tsdbutil.GenerateTestHistogram(1)},
		{t: at(2), st: st, h: tsdbutil.GenerateTestHistogram(2)},
		{t: at(3), h: tsdbutil.GenerateTestHistogram(0)}, // a counter reset
		{t: at(4), fh: tsdbutil.GenerateTestFloatHistogram(3)},
		{t: at(5), v: math.Float64frombits(0x7ff0000000000002)},
		{t: at(6), h: tsdbutil.GenerateTestCustomBucketsHistogram(1)},
	}
	var gauge, floats []histSample
	for i := range int64(4) {
		gauge = append(gauge, histSample{t: at(i), h: tsdbutil.GenerateTestGaugeHistogram(i)})
		floats = append(floats, histSample{t: at(i), st: at(i) - 500, v: float64(i) + 0.5})
	}
	return map[string][]histSample{"mixed": mixed, "gauge": gauge, "floats": floats}
}

func histLabels(name string) labels.Labels { return ls("__name__", name, "host", "web3") }

// writeHistFixture writes histFixture through the DB's write pipeline.
func writeHistFixture(t *testing.T, e *queryEnv) {
	t.Helper()
	req := &write.Request{}
	for name, samples := range histFixture() {
		s := write.Series{Labels: histLabels(name)}
		for _, x := range samples {
			if x.h == nil && x.fh == nil {
				s.Samples = append(s.Samples, cellenc.Sample{T: x.t, V: x.v, ST: x.st})
			} else {
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: x.t, ST: x.st, H: x.h, FH: x.fh})
			}
		}
		req.Series = append(req.Series, s)
	}
	res, err := e.db.Write(context.Background(), req)
	if err != nil || len(res.Rejected) > 0 {
		t.Fatalf("write the histogram fixture: %v %+v", err, res.Rejected)
	}
}

func (s histSample) typ() chunkenc.ValueType {
	switch {
	case s.h != nil:
		return chunkenc.ValHistogram
	case s.fh != nil:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

// String renders a sample as "t/st/type/value", value its raw cell value in
// hex (schema's canonical encoding of every field, so equal strings are equal
// bits).
func (s histSample) String() string {
	var v []byte
	if s.typ() == chunkenc.ValFloat {
		v = cellenc.AppendSampleValue(nil, cellenc.Sample{T: s.t, V: s.v})
	} else {
		v = cellenc.AppendHistogramSampleValue(nil, cellenc.HistogramSample{T: s.t, H: s.h, FH: s.fh})
	}
	return fmt.Sprintf("%d/%d/%s/%x", s.t, s.st, s.typ(), v)
}

// renderSeriesSet renders a series set as "labels" lines followed by one line
// per sample.
func renderSeriesSet(t *testing.T, ss storage.SeriesSet) string {
	t.Helper()
	var b strings.Builder
	var it chunkenc.Iterator
	for ss.Next() {
		fmt.Fprintf(&b, "%s\n", ss.At().Labels())
		it = ss.At().Iterator(it)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			s := histSample{t: it.AtT(), st: it.AtST()}
			switch typ {
			case chunkenc.ValFloat:
				_, s.v = it.At()
			case chunkenc.ValHistogram:
				_, s.h = it.AtHistogram(nil)
			case chunkenc.ValFloatHistogram:
				_, s.fh = it.AtFloatHistogram(nil)
			}
			fmt.Fprintf(&b, "  %s\n", s)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wantHistRead renders what a remote read of the fixture must give: every
// sample bit-exact, the counter-reset hints those of Prometheus' chunks
// (chunkHints), as Prometheus' own remote read gives them from its head; with
// streamed chunks, the start timestamps; with SAMPLES none (prompb.Sample and
// prompb.Histogram carry none).
func wantHistRead(chunked bool) string {
	fx := histFixture()
	var b strings.Builder
	for _, name := range []string{"floats", "gauge", "mixed"} {
		fmt.Fprintf(&b, "%s\n", histLabels(name))
		for _, s := range chunkHints(fx[name]) {
			if !chunked {
				s.st = 0
			}
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return b.String()
}

// chunkHints sets the counter-reset hints a reader of Prometheus' histogram
// chunks sees (chunkenc's counterResetHint): gauge histograms stay gauges;
// a counter histogram is UnknownCounterReset when it starts a chunk (the
// first of a run of its kind, or after a counter reset) and NotCounterReset
// otherwise. The fixture's histograms share one layout, so nothing else
// changes.
func chunkHints(samples []histSample) []histSample {
	out := make([]histSample, len(samples))
	for i, s := range samples {
		out[i] = s
		if s.h == nil || s.h.CounterResetHint == histogram.GaugeType {
			continue
		}
		s.h = s.h.Copy()
		s.h.CounterResetHint = histogram.NotCounterReset
		if prev := samples[max(i-1, 0)]; i == 0 || prev.h == nil || s.h.Count < prev.h.Count {
			s.h.CounterResetHint = histogram.UnknownCounterReset
		}
		out[i] = s
	}
	return out
}

// newHistEnv is newQueryEnv's router over a DB holding histFixture only, and
// the store under it.
func newHistEnv(t *testing.T, b schematest.Backend) (*queryEnv, kv.Store) {
	t.Helper()
	b.TableOptions.RawRetention = 0
	st := b.Store(t)
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: b.Settings, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(d), Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	e := &queryEnv{srv: srv, db: d}
	writeHistFixture(t, e)
	return e, st
}

// Remote read of native histograms, decoded by Prometheus' own remote-read
// client (storage/remote.NewReadClient) with each response type it can ask
// for: SAMPLES carries prompb.Histogram, STREAMED_XOR_CHUNKS histogram and
// float histogram chunks (their ST forms where samples have start
// timestamps). A series that changes kind (float, histograms, float again)
// comes back whole, in order, bit-exact; the same once compaction sealed the
// buckets into chunk cells (handed out as they are by streamed reads).
func TestRemoteReadHistograms(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e, st := newHistEnv(t, b)
			u, err := url.Parse(e.srv.URL + "/api/v1/read")
			if err != nil {
				t.Fatal(err)
			}
			read := func(t *testing.T, types ...prompb.ReadRequest_ResponseType) string {
				c, err := remote.NewReadClient("hbtsdb", &remote.ClientConfig{
					URL: &config_util.URL{URL: u}, Timeout: model.Duration(time.Minute),
					ChunkedReadLimit: 50 << 20, AcceptedResponseTypes: types,
				})
				if err != nil {
					t.Fatal(err)
				}
				ms, err := remote.ToLabelMatchers([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "host", "web3")})
				if err != nil {
					t.Fatal(err)
				}
				ss, err := c.Read(context.Background(), &prompb.Query{StartTimestampMs: (t0 - 60) * 1000,
					EndTimestampMs: (t0 + 600) * 1000, Matchers: ms}, true)
				if err != nil {
					t.Fatal(err)
				}
				return renderSeriesSet(t, ss)
			}
			for _, compacted := range []bool{false, true} {
				if compacted {
					c, err := compact.NewCompactor(st, b.Settings, compact.Options{
						Now: func() time.Time { return time.UnixMilli(kv.MaxTimestamp) }})
					if err != nil {
						t.Fatal(err)
					}
					if stats, err := c.Compact(context.Background()); err != nil || stats.Rows != 3 {
						t.Fatalf("Compact = %+v, %v; want the 3 series' rows compacted", stats, err)
					}
				}
				if got, want := read(t, prompb.ReadRequest_SAMPLES), wantHistRead(false); got != want {
					t.Errorf("remote read, samples, compacted %t:\n%s\nwant\n%s", compacted, got, want)
				}
				if got, want := read(t, prompb.ReadRequest_STREAMED_XOR_CHUNKS), wantHistRead(true); got != want {
					t.Errorf("remote read, streamed chunks, compacted %t:\n%s\nwant\n%s", compacted, got, want)
				}
			}
		})
	}
}

// /api/v1/query and /api/v1/query_range write histograms exactly as
// Prometheus' own API does: the same expressions over the same samples in a
// Prometheus TSDB (util/teststorage), evaluated by the same engine and
// written by web/api/v1's JSON codec, give the same bytes.
func TestQueryAPIHistogramsAsPrometheus(t *testing.T) {
	ref := teststorage.New(t)
	app := ref.Appender(context.Background())
	for name, samples := range histFixture() {
		for _, s := range samples {
			var err error
			if s.typ() == chunkenc.ValFloat {
				_, err = app.Append(0, histLabels(name), s.t, s.v)
			} else {
				_, err = app.AppendHistogram(0, histLabels(name), s.t, s.h, s.fh)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		Parser: parser.NewParser(parser.Options{})})
	t.Cleanup(func() { engine.Close() })
	prometheus := func(t *testing.T, qs string, start, end time.Time, step time.Duration) string {
		t.Helper()
		var (
			qry promql.Query
			err error
		)
		if step == 0 {
			qry, err = engine.NewInstantQuery(context.Background(), ref, nil, qs, start)
		} else {
			qry, err = engine.NewRangeQuery(context.Background(), ref, nil, qs, start, end, step)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer qry.Close()
		res := qry.Exec(context.Background())
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		resp := &v1.Response{Status: "success", Data: &v1.QueryData{ResultType: res.Value.Type(), Result: res.Value}}
		if len(res.Warnings) > 0 {
			warnings, infos := res.Warnings.AsStrings(qs, 10, 10)
			resp.Warnings, resp.Infos = warnings, infos
		}
		body, err := v1.JSONCodec{}.Encode(resp)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	start := time.Unix(t0, 0)
	cases := []struct {
		query      string
		start, end time.Time
		step       time.Duration
	}{
		{query: `mixed`, start: start.Add(20 * time.Second)},
		{query: `mixed`, start: start.Add(65 * time.Second)},
		{query: `gauge`, start: start.Add(50 * time.Second)},
		{query: `mixed[2m]`, start: start.Add(100 * time.Second)},
		{query: `{host="web3"}`, start: start, end: start.Add(90 * time.Second), step: 15 * time.Second},
		// (Where two annotations come, their order is a map's, in Prometheus too.)
		{query: `rate(mixed[1m])`, start: start.Add(30 * time.Second), end: start.Add(60 * time.Second), step: 15 * time.Second},
		{query: `histogram_quantile(0.9, gauge)`, start: start, end: start.Add(60 * time.Second), step: 15 * time.Second},
		{query: `histogram_count(mixed)`, start: start, end: start.Add(90 * time.Second), step: 15 * time.Second},
		{query: `sum(gauge)`, start: start.Add(45 * time.Second)},
	}
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newQueryEnv(t, b, Options{})
			writeHistFixture(t, e)
			for _, tc := range cases {
				path, form := "/api/v1/query", q("query", tc.query, "time", ts(tc.start))
				if tc.step > 0 {
					path, form = "/api/v1/query_range", q("query", tc.query, "start", ts(tc.start), "end", ts(tc.end),
						"step", fmt.Sprint(tc.step.Seconds()))
				}
				status, _, body := e.get(t, false, path, form)
				want := prometheus(t, tc.query, tc.start, tc.end, tc.step)
				if status != 200 || body != want {
					t.Errorf("%s %s = %d\n%s\nPrometheus answers\n%s", path, form.Encode(), status, body, want)
				}
			}
		})
	}
}

func ts(t time.Time) string { return fmt.Sprintf("%.3f", float64(t.UnixMilli())/1000) }

// /api/v1/last writes a series' newest readings of both kinds as Prometheus'
// query API writes a range vector's series (web/api/v1's JSON codec over a
// promql.Series), newest first: floats under "values", histograms under
// "histograms", each key left out when the n newest hold none of its kind.
func TestLastHistograms(t *testing.T) {
	fx := histFixture()
	// as Prometheus writes these points of the series, in this order
	prometheus := func(name string, samples ...histSample) string {
		s := promql.Series{Metric: histLabels(name)}
		for _, x := range samples {
			switch x.typ() {
			case chunkenc.ValFloat:
				s.Floats = append(s.Floats, promql.FPoint{T: x.t, F: x.v})
			case chunkenc.ValHistogram:
				s.Histograms = append(s.Histograms, promql.HPoint{T: x.t, H: x.h.ToFloat(nil)})
			default:
				s.Histograms = append(s.Histograms, promql.HPoint{T: x.t, H: x.fh})
			}
		}
		body, err := v1.JSONCodec{}.Encode(&v1.Response{Status: "success", Data: promql.Matrix{s}})
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	mixed, gauge, floats := fx["mixed"], fx["gauge"], fx["floats"]
	cases := []apiCase{
		{name: "the newest 3 of a series that changes kind", query: q("host", "web3", "metric", "mixed", "n", "3"),
			body: prometheus("mixed", mixed[6], mixed[5], mixed[4])},
		{name: "all of it", query: q("host", "web3", "metric", "mixed", "n", "100"),
			body: prometheus("mixed", mixed[6], mixed[5], mixed[4], mixed[3], mixed[2], mixed[1], mixed[0])},
		{name: "histograms only: no values key", query: q("host", "web3", "metric", "mixed", "n", "1"),
			body: prometheus("mixed", mixed[6])},
		{name: "gauge histograms", query: q("host", "web3", "metric", "gauge", "n", "2"),
			body: prometheus("gauge", gauge[3], gauge[2])},
		{name: "floats only: no histograms key", query: q("host", "web3", "metric", "floats", "n", "2"),
			body: prometheus("floats", floats[3], floats[2])},
	}
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newQueryEnv(t, b, Options{})
			writeHistFixture(t, e)
			for _, tc := range cases {
				status, _, body := e.get(t, false, "/api/v1/last", tc.query)
				if status != 200 || body != tc.body {
					t.Errorf("%s: /api/v1/last?%s = %d\n%s\nwant\n%s", tc.name, tc.query.Encode(), status, body, tc.body)
				}
			}
		})
	}
}
