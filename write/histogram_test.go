package write_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// rawRows reads back what the data table holds of series lbls, decoded by
// cellenc.DecodeDataRow: its float and histogram samples, ascending.
func (f *fixture) rawRows(t testing.TB, lbls labels.Labels) ([]cellenc.Sample, []cellenc.HistogramSample) {
	t.Helper()
	ctx := context.Background()
	ids := make([]uint64, 1)
	if err := f.reg.Lookup(ctx, []labels.Labels{lbls}, ids); err != nil {
		t.Fatal(err)
	}
	if ids[0] == 0 {
		return nil, nil
	}
	host := schema.HostOf(lbls, f.settings.HostLabels)
	salt := schema.Salt(host, f.settings.Salts)
	start, stop := schema.SeriesRowRange(salt, host, lbls.Get(model.MetricNameLabel), ids[0], 0, kv.MaxTimestamp-f.settings.BucketWidth.Milliseconds())
	sc := f.st.Scan(ctx, schema.TableData, start, stop)
	defer sc.Close()
	var (
		floats []cellenc.Sample
		hists  []cellenc.HistogramSample
	)
	// Rows come newest bucket first.
	for sc.Next() {
		rs, err := cellenc.DecodeDataRow(sc.Row(), f.settings.BucketWidth, 0, kv.MaxTimestamp)
		if err != nil {
			t.Fatalf("DecodeDataRow: %v", err)
		}
		floats = append(rs.Samples, floats...)
		hists = append(rs.Histograms, hists...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return floats, hists
}

// encoded is a histogram sample's raw cell value: every field, bit for bit.
func encoded(hs cellenc.HistogramSample) string {
	return string(cellenc.AppendHistogramSampleValue(nil, hs))
}

// intH is an integer histogram with both sides and a zero bucket.
func intH(hint histogram.CounterResetHint) *histogram.Histogram {
	return &histogram.Histogram{
		CounterResetHint: hint, Schema: 1, ZeroThreshold: 0.001, ZeroCount: 2, Count: 12, Sum: 18.4,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}},
		PositiveBuckets: []int64{1, 1, -1, 0},
		NegativeSpans:   []histogram.Span{{Offset: -2, Length: 2}},
		NegativeBuckets: []int64{2, 1},
	}
}

// histogramCorpus are histogram samples of every shape, at nowMs - 10s.. .
func histogramCorpus() []cellenc.HistogramSample {
	at := func(i int) int64 { return nowMs - 10_000 + int64(i)*1000 }
	return []cellenc.HistogramSample{
		{T: at(0), H: intH(histogram.UnknownCounterReset)},
		{T: at(1), ST: at(0) - 500, H: intH(histogram.CounterReset)},
		{T: at(2), H: intH(histogram.NotCounterReset)},
		{T: at(3), H: intH(histogram.GaugeType)},
		{T: at(4), ST: at(0), FH: &histogram.FloatHistogram{
			CounterResetHint: histogram.NotCounterReset, Schema: -4, ZeroThreshold: 1e-128, ZeroCount: 0.5, Count: 3.5, Sum: -2.25,
			PositiveSpans: []histogram.Span{{Offset: 3, Length: 1}}, PositiveBuckets: []float64{1},
			NegativeSpans: []histogram.Span{{Offset: 0, Length: 1}}, NegativeBuckets: []float64{2},
		}},
		{T: at(5), FH: &histogram.FloatHistogram{
			Schema: histogram.CustomBucketsSchema, Count: 6, Sum: 1.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{1, 2, 3},
			CustomValues: []float64{0.1, 0.5, 1},
		}},
		{T: at(6), H: &histogram.Histogram{
			Schema: histogram.CustomBucketsSchema, Count: 4, Sum: 1.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 2},
			CustomValues: []float64{0.25, 1},
		}},
		{T: at(7), H: &histogram.Histogram{Schema: 8, Sum: math.Float64frombits(value.StaleNaN)}},
		{T: at(8), FH: &histogram.FloatHistogram{Schema: 3, Sum: math.Float64frombits(value.StaleNaN), CounterResetHint: histogram.GaugeType}},
		{T: at(9), H: &histogram.Histogram{Schema: 0, Count: 5, Sum: math.NaN(), ZeroCount: 1,
			PositiveSpans: []histogram.Span{{Offset: 5, Length: 1}}, PositiveBuckets: []int64{3}}}, // NaN sum: count >= buckets
	}
}

// TestHistogramsAreStoredBitExact writes histograms of every shape and floats
// with and without start timestamps, and reads the raw cells back.
func TestHistogramsAreStoredBitExact(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		h := labels.FromStrings("__name__", "lat_seconds", "instance", "i")
		c := labels.FromStrings("__name__", "requests_total", "instance", "i")
		corpus := histogramCorpus()
		floats := []cellenc.Sample{{T: nowMs - 2000, V: 1, ST: nowMs - 60_000}, {T: nowMs - 1000, V: 2}, {T: nowMs, V: 3, ST: nowMs - 60_000}}
		res := f.write(t, write.Request{Series: []write.Series{{Labels: h, Histograms: corpus}, {Labels: c, Samples: floats}}})
		want := write.Result{SeriesWritten: 2, SamplesWritten: 3, HistogramsWritten: len(corpus)}
		if res.SeriesWritten != want.SeriesWritten || res.SamplesWritten != want.SamplesWritten ||
			res.HistogramsWritten != want.HistogramsWritten || len(res.Rejected) != 0 {
			t.Fatalf("Result %+v, want %+v", res, want)
		}
		gotF, gotH := f.rawRows(t, h)
		if len(gotF) != 0 || len(gotH) != len(corpus) {
			t.Fatalf("read %d floats and %d histograms, want 0 and %d", len(gotF), len(gotH), len(corpus))
		}
		for i, hs := range gotH {
			if hs.T != corpus[i].T || hs.ST != corpus[i].ST || (hs.H == nil) != (corpus[i].H == nil) || encoded(hs) != encoded(corpus[i]) {
				t.Errorf("histogram %d = %+v %v %v, want %+v %v %v", i, hs, hs.H, hs.FH, corpus[i], corpus[i].H, corpus[i].FH)
			}
		}
		gotF, gotH = f.rawRows(t, c)
		if len(gotH) != 0 || !sameSamples(gotF, floats) {
			t.Errorf("floats = %+v (and %d histograms), want %+v", gotF, len(gotH), floats)
		}
		// Floats without a start timestamp keep their 8-byte cells.
		if n := f.st.Puts(schema.TableData, schema.FamilyRaw); n != 3+len(corpus) {
			t.Errorf("%d raw cells put, want %d", n, 3+len(corpus))
		}
	})
}

func sameSamples(a, b []cellenc.Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].T != b[i].T || a[i].ST != b[i].ST || math.Float64bits(a[i].V) != math.Float64bits(b[i].V) {
			return false
		}
	}
	return true
}

// TestInvalidHistogramsAreRejected is the bad-histogram corpus: each is sent
// between two good histograms of its series, is rejected with its reason, and
// the good ones are stored.
func TestInvalidHistogramsAreRejected(t *testing.T) {
	shared := map[string]kv.Store{}
	for _, b := range schematest.Backends() {
		if b.Available() {
			shared[b.Name] = b.Store(t)
		}
	}
	good := func(t int64) cellenc.HistogramSample { return cellenc.HistogramSample{T: t, H: intH(0)} }
	bad := nowMs - 5000
	when := "histogram at timestamp " + itoa(bad) + " (" + dateOf(bad) + ")"
	for i, tc := range []struct {
		name    string
		h       cellenc.HistogramSample
		problem string
		kind    error
		floats  []cellenc.Sample
	}{
		{"spans that ask for more buckets than sent", cellenc.HistogramSample{H: &histogram.Histogram{Count: 1, Sum: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1}}},
			": positive side: spans need 2 buckets, have 1 buckets: histogram spans specify different number of buckets than provided", write.ErrInvalidHistogram, nil},
		{"a negative bucket count", cellenc.HistogramSample{H: &histogram.Histogram{Count: 1, Sum: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, -3}}},
			": positive side: bucket number 2 has observation count of -1: histogram has a bucket whose observation count is negative", write.ErrInvalidHistogram, nil},
		{"a negative float bucket count", cellenc.HistogramSample{FH: &histogram.FloatHistogram{Count: 1, Sum: 1,
			NegativeSpans: []histogram.Span{{Offset: 0, Length: 1}}, NegativeBuckets: []float64{-1}}},
			": negative side: bucket number 1 has observation count of -1: histogram has a bucket whose observation count is negative", write.ErrInvalidHistogram, nil},
		{"a count smaller than its buckets", cellenc.HistogramSample{H: &histogram.Histogram{Count: 2, Sum: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, 0}}},
			": 4 observations found in buckets, but the Count field is 2: histogram's observation count should equal the number of observations found in the buckets (in absence of NaN)", write.ErrInvalidHistogram, nil},
		{"a count that does not add up with a NaN sum", cellenc.HistogramSample{H: &histogram.Histogram{Count: 1, Sum: math.NaN(), ZeroCount: 3}},
			": 3 observations found in buckets, but the Count field is 1: histogram's observation count should be at least the number of observations found in the buckets", write.ErrInvalidHistogram, nil},
		{"schema -5", cellenc.HistogramSample{H: &histogram.Histogram{Schema: -5}},
			": histogram has an invalid schema, which must be between -4 and 8 for exponential buckets, or -53 for custom buckets, got schema -5", write.ErrInvalidHistogram, nil},
		{"schema 53", cellenc.HistogramSample{H: &histogram.Histogram{Schema: 53}},
			": histogram has an invalid schema, which must be between -4 and 8 for exponential buckets, or -53 for custom buckets, got schema 53", write.ErrInvalidHistogram, nil},
		{"custom bounds with an exponential schema", cellenc.HistogramSample{FH: &histogram.FloatHistogram{Schema: 2, CustomValues: []float64{1}}},
			": histogram with exponential schema must not have custom bounds", write.ErrInvalidHistogram, nil},
		{"custom buckets without enough bounds", cellenc.HistogramSample{H: &histogram.Histogram{Schema: -53, Count: 3, Sum: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 0, 0}, CustomValues: []float64{1}}},
			": custom buckets: only 1 custom bounds defined which is insufficient to cover total span length of 3: histogram custom bounds are too few", write.ErrInvalidHistogram, nil},
		{"custom buckets with a zero bucket", cellenc.HistogramSample{H: &histogram.Histogram{Schema: -53, ZeroCount: 1, Count: 1, CustomValues: []float64{1}}},
			": custom buckets: must have zero count of 0", write.ErrInvalidHistogram, nil},
		{"a NaN zero threshold", cellenc.HistogramSample{H: &histogram.Histogram{ZeroThreshold: math.NaN()}},
			" has an invalid zero threshold NaN (it must be a number >= 0)", write.ErrInvalidHistogram, nil},
		{"a negative zero threshold", cellenc.HistogramSample{FH: &histogram.FloatHistogram{ZeroThreshold: -1}},
			" has an invalid zero threshold -1 (it must be a number >= 0)", write.ErrInvalidHistogram, nil},
		{"an unknown counter reset hint", cellenc.HistogramSample{H: &histogram.Histogram{CounterResetHint: 4}},
			" has the unknown counter reset hint 4", write.ErrInvalidHistogram, nil},
		{"no histogram at all", cellenc.HistogramSample{},
			" has neither an integer nor a float histogram", write.ErrInvalidHistogram, nil},
		{"both kinds at once", cellenc.HistogramSample{H: &histogram.Histogram{}, FH: &histogram.FloatHistogram{}},
			" has neither an integer nor a float histogram", write.ErrInvalidHistogram, nil},
		{"a float sample at the same timestamp", cellenc.HistogramSample{H: intH(0)},
			" duplicates a float sample at the same timestamp", write.ErrDuplicateSample, []cellenc.Sample{{T: bad, V: 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range schematest.Backends() {
				t.Run(b.Name, func(t *testing.T) {
					st := shared[b.Name]
					if st == nil { // no test HBase: skips, or fails under TSDB_TEST_REQUIRE_HBASE=1
						st = b.Store(t)
					}
					f := newFixture(t, st, b.Settings, testLimits)
					lbls := labels.FromStrings("__name__", "bad_histogram", "case", strconv.Itoa(i))
					h := tc.h
					h.T = bad
					res := f.write(t, write.Request{Series: []write.Series{{Labels: lbls, Samples: tc.floats,
						Histograms: []cellenc.HistogramSample{good(bad - 1000), h, good(bad + 1000)}}}})
					reason := when + tc.problem + " in series {__name__=\"bad_histogram\", case=" + strconv.Quote(lbls.Get("case")) + "}"
					if len(res.Rejected) != 1 || res.Rejected[0].Reason != reason || res.Rejected[0].Samples != 1 ||
						res.Rejected[0].Series != 0 || res.Rejected[0].Sample != len(tc.floats)+1 || !errors.Is(res.Rejected[0].Kind, tc.kind) {
						t.Fatalf("rejected:\n%s want one of sample %d: %s (%v)", rejections(res.Rejected), len(tc.floats)+1, reason, tc.kind)
					}
					if res.HistogramsWritten != 2 || res.SamplesWritten != len(tc.floats) {
						t.Errorf("Result %+v, want 2 histograms and %d floats written", res, len(tc.floats))
					}
					floats, hists := f.rawRows(t, lbls)
					if len(hists) != 2 || hists[0].T != bad-1000 || hists[1].T != bad+1000 {
						t.Errorf("stored histograms %+v, want the two good ones", hists)
					}
					if !sameSamples(floats, tc.floats) {
						t.Errorf("stored floats %+v, want %+v", floats, tc.floats)
					}
					err := write.RejectionError(res)
					want := "invalid write request: 1 samples rejected, " + itoa(int64(2+len(tc.floats))) + " written: " + reason
					if err == nil || err.Error() != want {
						t.Errorf("RejectionError = %v, want %q", err, want)
					}
				})
			}
		})
	}
}

// TestHistogramResolutionIsReduced: schemas 9..52 are stored at 8, as
// Prometheus' receiver does, and histograms over MaxHistogramBuckets at the
// highest resolution that fits.
func TestHistogramResolutionIsReduced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		lim := testLimits
		lim.MaxHistogramBuckets = 2
		f := newFixture(t, b.Store(t), b.Settings, lim)
		lbls := labels.FromStrings("__name__", "fine", "instance", "i")
		fine := &histogram.Histogram{Schema: 10, Count: 4, Sum: 4,
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []int64{1, 0}, // buckets 1 and 2 of schema 10
		}
		wide := &histogram.FloatHistogram{Schema: 2, Count: 3, Sum: 3, // buckets 1, 2, 5: three at schema 2, two at 1
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}, {Offset: 2, Length: 1}}, PositiveBuckets: []float64{1, 1, 1},
		}
		tooWide := &histogram.Histogram{Schema: -4, Count: 3, Sum: 3,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 0, 0},
		}
		nhcb := &histogram.Histogram{Schema: -53, Count: 3, Sum: 3, CustomValues: []float64{1, 2},
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 0, 0},
		}
		fine.ZeroCount = 2
		in := []cellenc.HistogramSample{{T: nowMs - 4000, H: fine}, {T: nowMs - 3000, FH: wide}, {T: nowMs - 2000, H: tooWide}, {T: nowMs - 1000, H: nhcb}}
		keep := []*histogram.Histogram{fine.Copy(), tooWide.Copy(), nhcb.Copy()}
		keepF := wide.Copy()
		res := f.write(t, write.Request{Series: []write.Series{{Labels: lbls, Histograms: in}}})
		s := `{__name__="fine", instance="i"}`
		wantRejected := "histogram at timestamp " + itoa(nowMs-2000) + " (" + dateOf(nowMs-2000) + ") has 3 buckets, over the limit of 2, even at schema -4 in series " + s + "\n" +
			"histogram at timestamp " + itoa(nowMs-1000) + " (" + dateOf(nowMs-1000) + ") has 3 custom buckets, over the limit of 2 in series " + s + "\n"
		var got strings.Builder
		for _, r := range res.Rejected {
			got.WriteString(r.Reason + "\n")
		}
		if got.String() != wantRejected || res.HistogramsWritten != 2 {
			t.Fatalf("rejected:\n%swant:\n%s(Result %+v)", got.String(), wantRejected, res)
		}
		// The request's histograms are not changed in place.
		if encoded(cellenc.HistogramSample{H: in[0].H}) != encoded(cellenc.HistogramSample{H: keep[0]}) ||
			encoded(cellenc.HistogramSample{FH: in[1].FH}) != encoded(cellenc.HistogramSample{FH: keepF}) {
			t.Errorf("the request's histograms were changed: %v %v", in[0].H, in[1].FH)
		}
		_, hists := f.rawRows(t, lbls)
		if len(hists) != 2 {
			t.Fatalf("stored %d histograms, want 2", len(hists))
		}
		// Schema 10 -> 8: buckets 1 and 2 merge into bucket 1.
		wantFine := &histogram.Histogram{Schema: 8, Count: 4, Sum: 4, ZeroCount: 2,
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []int64{2}}
		if encoded(hists[0]) != encoded(cellenc.HistogramSample{T: nowMs - 4000, H: wantFine}) {
			t.Errorf("schema 10 histogram stored as %v, want %v", hists[0].H, wantFine)
		}
		wantWide := &histogram.FloatHistogram{Schema: 1, Count: 3, Sum: 3,
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}, {Offset: 1, Length: 1}}, PositiveBuckets: []float64{2, 1}}
		if encoded(hists[1]) != encoded(cellenc.HistogramSample{T: nowMs - 3000, FH: wantWide}) {
			t.Errorf("3-bucket histogram stored as %v, want %v", hists[1].FH, wantWide)
		}
	})
}

// TestExemplarProblemsDoNotFailTheirSamples: invalid exemplars are left out
// with their reasons, in RejectedExemplars, and their samples are stored;
// exemplars of a series that is not stored do not create it.
func TestExemplarProblemsDoNotFailTheirSamples(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		lbls := labels.FromStrings("__name__", "traced", "instance", "i")
		lonely := labels.FromStrings("__name__", "lonely", "instance", "i")
		s := `{__name__="traced", instance="i"}`
		long := strings.Repeat("é", 120) // with the names and the span ID: 145 runes
		req := write.Request{Series: []write.Series{
			{Labels: lbls, Samples: one(nowMs, 1), Exemplars: []exemplar.Exemplar{
				{Labels: labels.FromStrings("trace_id", "abc"), Value: 0.5, Ts: nowMs, HasTs: true},
				{Labels: labels.FromStrings("trace_id", long, "span_id", "0123456789"), Value: 1, Ts: nowMs, HasTs: true},
				{Labels: sorted("trace_id", "a", "trace_id", "b"), Value: 2, Ts: nowMs, HasTs: true},
				{Labels: labels.FromStrings("trace_id", "\xff"), Value: 3, Ts: nowMs, HasTs: true},
				{Labels: labels.FromStrings("trace_id", "old"), Value: 4, Ts: 0},
				{Labels: labels.FromStrings("trace_id", "x", "empty", ""), Value: 5, Ts: nowMs - 1, HasTs: true},
			}},
			{Labels: lonely, Exemplars: []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "y"), Value: 1, Ts: nowMs, HasTs: true}}},
		}}
		res := f.write(t, req)
		if len(res.Rejected) != 0 || res.SamplesWritten != 1 || res.SeriesWritten != 1 {
			t.Fatalf("Result %+v: exemplar problems must not reject samples", res)
		}
		want := []string{
			`exemplar {span_id="0123456789", trace_id="` + long[:128] + `"…} 1 ` + itoa(nowMs) + `: label length for exemplar exceeds maximum of 128 UTF-8 characters in series ` + s,
			`exemplar {trace_id="a", trace_id="b"} 2 ` + itoa(nowMs) + `: label name "trace_id" is not unique in series ` + s,
			`exemplar {trace_id="\xff"} 3 ` + itoa(nowMs) + `: value of label "trace_id" is not valid UTF-8 in series ` + s,
			`exemplar {trace_id="old"} 4 0: timestamp 0 (1970-01-01T00:00:00Z) is older than the max age of 1d (before ` + dateOf(nowMs-24*3600_000) + `) in series ` + s,
			`1 exemplars not stored: series {__name__="lonely", instance="i"} has no samples stored, and exemplars alone do not create a series`,
		}
		var got []string
		for _, r := range res.RejectedExemplars {
			got = append(got, r.Reason)
			if r.Kind != write.ErrInvalidExemplar {
				t.Errorf("%s: kind %v", r.Reason, r.Kind)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("rejected exemplars:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if res.ExemplarsWritten != 2 || f.st.Puts(schema.TableExemplars, schema.FamilyExemplars) != 2 {
			t.Errorf("%d exemplars written, %d put; want the 2 valid ones", res.ExemplarsWritten, f.st.Puts(schema.TableExemplars, schema.FamilyExemplars))
		}
		if floats, _ := f.rawRows(t, lonely); floats != nil {
			t.Errorf("exemplars created series %s", lonely)
		}
		series, err := f.r.SeriesInRange(context.Background(), 0, kv.MaxTimestamp, labels.MustNewMatcher(labels.MatchEqual, "__name__", "lonely"))
		if err != nil || len(series) != 0 {
			t.Errorf("exemplars alone made series %v visible (%v)", series, err)
		}
		// Once the series has samples, its exemplars alone are accepted.
		res = f.write(t, write.Request{Series: []write.Series{{Labels: lbls, Exemplars: []exemplar.Exemplar{
			{Labels: labels.FromStrings("trace_id", "def"), Value: 0.25, Ts: nowMs + 1, HasTs: true}}}}})
		if len(res.Rejected) != 0 || len(res.RejectedExemplars) != 0 || res.SeriesWritten != 0 || res.SamplesWritten != 0 || res.ExemplarsWritten != 1 {
			t.Errorf("exemplar-only write of a stored series: Result %+v, want 1 exemplar written", res)
		}
	})
}

// TestHistogramsCountAgainstMaxSamplesPerRequest: 20 samples are allowed.
func TestHistogramsCountAgainstMaxSamplesPerRequest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		s := write.Series{Labels: labels.FromStrings("__name__", "mixed")}
		for i := range 11 {
			s.Samples = append(s.Samples, cellenc.Sample{T: nowMs - int64(i), V: 1})
			s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: nowMs - 100 - int64(i), H: intH(0)})
		}
		_, err := f.w.Write(context.Background(), &write.Request{Series: []write.Series{s}})
		if want := "invalid write request: 22 samples in the request, over the limit of 20"; err == nil || err.Error() != want {
			t.Errorf("Write = %v, want %q", err, want)
		}
		if n := f.st.Puts(schema.TableData, schema.FamilyRaw); n != 0 {
			t.Errorf("a refused request put %d raw cells", n)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func dateOf(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
