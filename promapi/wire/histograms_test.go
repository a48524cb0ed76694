package wire

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// testHistograms are histogram samples of every shape the decoders must keep:
// integer and float, positive and negative spans, a zero bucket, custom
// buckets (NHCB), every counter-reset hint, the extreme schemas, a stale
// marker, and start timestamps (which only 2.0 carries).
func testHistograms() []cellenc.HistogramSample {
	intH := func(hint histogram.CounterResetHint) *histogram.Histogram {
		return &histogram.Histogram{
			CounterResetHint: hint, Schema: 1, ZeroThreshold: 0.001, ZeroCount: 2, Count: 12, Sum: 18.4,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}},
			PositiveBuckets: []int64{1, 1, -1, 0},
			NegativeSpans:   []histogram.Span{{Offset: -2, Length: 2}},
			NegativeBuckets: []int64{2, 1},
		}
	}
	return []cellenc.HistogramSample{
		{T: 1000, H: intH(histogram.UnknownCounterReset)},
		{T: 2000, ST: 500, H: intH(histogram.CounterReset)},
		{T: 3000, H: intH(histogram.NotCounterReset)},
		{T: 4000, H: intH(histogram.GaugeType)},
		{T: 5000, ST: 4500, FH: &histogram.FloatHistogram{
			CounterResetHint: histogram.NotCounterReset, Schema: -4, ZeroThreshold: 1e-128, ZeroCount: 0.5, Count: 3.5, Sum: -2.25,
			PositiveSpans: []histogram.Span{{Offset: 3, Length: 1}}, PositiveBuckets: []float64{1},
			NegativeSpans: []histogram.Span{{Offset: 0, Length: 1}}, NegativeBuckets: []float64{2},
		}},
		{T: 6000, FH: &histogram.FloatHistogram{
			Schema: histogram.CustomBucketsSchema, Count: 6, Sum: 1.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{1, 2, 3},
			CustomValues: []float64{0.1, 0.5, 1},
		}},
		{T: 7000, H: &histogram.Histogram{
			Schema: histogram.CustomBucketsSchema, Count: 4, Sum: 1.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 2},
			CustomValues: []float64{0.25, 1},
		}},
		{T: 8000, H: &histogram.Histogram{Schema: 8, Sum: math.Float64frombits(value.StaleNaN)}},
		{T: 9000, H: &histogram.Histogram{Schema: 0}}, // empty
	}
}

// v1Histograms are testHistograms as 1.0 sends them (no start timestamps).
func v1Histograms() []prompb.Histogram {
	var out []prompb.Histogram
	for _, h := range testHistograms() {
		if h.H != nil {
			out = append(out, prompb.FromIntHistogram(h.T, h.H))
		} else {
			out = append(out, prompb.FromFloatHistogram(h.T, h.FH))
		}
	}
	return out
}

// v2Histograms are testHistograms as 2.0 sends them.
func v2Histograms() []writev2.Histogram {
	var out []writev2.Histogram
	for _, h := range testHistograms() {
		if h.H != nil {
			out = append(out, writev2.FromIntHistogram(h.ST, h.T, h.H))
		} else {
			out = append(out, writev2.FromFloatHistogram(h.ST, h.T, h.FH))
		}
	}
	return out
}

func TestDecodeV1Histograms(t *testing.T) {
	body := marshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: v1Labels("__name__", "lat", "job", "a"), Histograms: v1Histograms(),
			Exemplars: []prompb.Exemplar{{Labels: v1Labels("trace_id", "abc", "span_id", "7"), Timestamp: 5000, Value: 0.25}}},
		{Labels: v1Labels("job", "a", "__name__", "lat"), Exemplars: []prompb.Exemplar{{Timestamp: 0, Value: 1}}},
	}})
	req, err := DecodeV1(body)
	if err != nil {
		t.Fatal(err)
	}
	want := testHistograms()
	for i := range want {
		want[i].ST = 0 // 1.0 has no start timestamps
	}
	lbls := labels.FromStrings("__name__", "lat", "job", "a")
	if len(req.Series) != 2 || !labels.Equal(req.Series[0].Labels, lbls) || !labels.Equal(req.Series[1].Labels, lbls) {
		t.Fatalf("series = %+v", req.Series)
	}
	if got := req.Series[0].Histograms; !sameHistograms(got, want) {
		t.Errorf("histograms = %v\nwant %v", got, want)
	}
	if len(req.Series[0].Samples) != 0 {
		t.Errorf("samples = %v, want none", req.Series[0].Samples)
	}
	wantEx := []exemplar.Exemplar{{Labels: labels.FromStrings("span_id", "7", "trace_id", "abc"), Value: 0.25, Ts: 5000, HasTs: true}}
	if got := req.Series[0].Exemplars; !sameExemplars(got, wantEx) {
		t.Errorf("exemplars = %+v, want %+v", got, wantEx)
	}
	wantEx = []exemplar.Exemplar{{Labels: labels.EmptyLabels(), Value: 1}}
	if got := req.Series[1].Exemplars; !sameExemplars(got, wantEx) {
		t.Errorf("exemplar-only series: exemplars = %+v, want %+v", got, wantEx)
	}
}

func TestDecodeV2HistogramsAndStartTimestamps(t *testing.T) {
	st := writev2.NewSymbolTable()
	lat := labels.FromStrings("__name__", "lat", "job", "a")
	req2 := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: st.SymbolizeLabels(lat, nil), Histograms: v2Histograms(),
			Exemplars: []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "abc"), nil), Timestamp: 5000, Value: 0.25}}},
		{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "up"), nil),
			Samples: []writev2.Sample{{Value: 1, Timestamp: 1000, StartTimestamp: 10}, {Value: 2, Timestamp: 2000}}},
		{LabelsRefs: st.SymbolizeLabels(lat, nil),
			Exemplars: []writev2.Exemplar{{Timestamp: 6000, Value: 2}}},
	}}
	req2.Symbols = st.Symbols()
	req, err := DecodeV2(marshal(t, req2))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Series) != 3 {
		t.Fatalf("series = %+v", req.Series)
	}
	if got, want := req.Series[0].Histograms, testHistograms(); !sameHistograms(got, want) {
		t.Errorf("histograms = %v\nwant %v", got, want)
	}
	for i, h := range req.Series[0].Histograms {
		if want := testHistograms()[i].ST; h.ST != want {
			t.Errorf("histogram %d: start timestamp %d, want %d", i, h.ST, want)
		}
	}
	wantEx := []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "abc"), Value: 0.25, Ts: 5000, HasTs: true}}
	if got := req.Series[0].Exemplars; !sameExemplars(got, wantEx) {
		t.Errorf("exemplars = %+v, want %+v", got, wantEx)
	}
	wantSamples := []cellenc.Sample{{T: 1000, V: 1, ST: 10}, {T: 2000, V: 2}}
	if got := req.Series[1].Samples; !sameSamples(got, wantSamples) {
		t.Errorf("samples = %+v, want %+v", got, wantSamples)
	}
	wantEx = []exemplar.Exemplar{{Labels: labels.EmptyLabels(), Value: 2, Ts: 6000, HasTs: true}}
	if got := req.Series[2]; !labels.Equal(got.Labels, lat) || !sameExemplars(got.Exemplars, wantEx) || len(got.Samples)+len(got.Histograms) != 0 {
		t.Errorf("exemplar-only series = %+v, want %s with %+v", got, lat, wantEx)
	}
}
