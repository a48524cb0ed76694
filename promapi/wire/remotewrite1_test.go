package wire

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// fromV1 is the reference decodeV1 is held to: prompb's generated Unmarshal,
// then the conversion decodeV1 does (labels sorted, histograms and exemplars
// converted by prompb's own converters, series with none of samples,
// histograms and exemplars left out).
func fromV1(msg *prompb.WriteRequest) write.Request {
	var (
		total int
		b     = labels.NewScratchBuilder(16)
	)
	for i := range msg.Timeseries {
		total += len(msg.Timeseries[i].Samples)
	}
	samples := make([]cellenc.Sample, 0, total)
	req := write.Request{Series: make([]write.Series, 0, len(msg.Timeseries))}
	for i := range msg.Timeseries {
		ts := &msg.Timeseries[i]
		if len(ts.Samples) == 0 && len(ts.Histograms) == 0 && len(ts.Exemplars) == 0 {
			continue
		}
		b.Reset()
		for _, l := range ts.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		s := write.Series{Labels: b.Labels()}
		start := len(samples)
		for _, x := range ts.Samples {
			samples = append(samples, cellenc.Sample{T: x.Timestamp, V: x.Value})
		}
		s.Samples = samples[start:len(samples):len(samples)]
		for _, h := range ts.Histograms {
			if h.IsFloatHistogram() {
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: h.Timestamp, FH: h.ToFloatHistogram()})
			} else {
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: h.Timestamp, H: h.ToIntHistogram()})
			}
		}
		for _, e := range ts.Exemplars {
			s.Exemplars = append(s.Exemplars, e.ToExemplar(&b, nil))
		}
		req.Series = append(req.Series, s)
	}
	for _, m := range msg.Metadata {
		req.Metadata = append(req.Metadata, schema.Metadata{
			Metric: m.MetricFamilyName, Type: metricTypeV1(m.Type), Help: m.Help, Unit: m.Unit,
		})
	}
	return req
}

// referenceV1 decodes data with the generated code.
func referenceV1(data []byte) (write.Request, error) {
	var msg prompb.WriteRequest
	if err := msg.Unmarshal(data); err != nil {
		return write.Request{}, err
	}
	return fromV1(&msg), nil
}

// sameRequest compares two decoded requests, sample values bit for bit.
func sameRequest(a, b write.Request) bool {
	if len(a.Series) != len(b.Series) || !reflect.DeepEqual(a.Metadata, b.Metadata) {
		return false
	}
	for i := range a.Series {
		x, y := &a.Series[i], &b.Series[i]
		if !labels.Equal(x.Labels, y.Labels) || !sameSamples(x.Samples, y.Samples) ||
			!sameHistograms(x.Histograms, y.Histograms) || !sameExemplars(x.Exemplars, y.Exemplars) {
			return false
		}
	}
	return true
}

// sameSamples compares bit-exactly (NaN payloads included).
func sameSamples(a, b []cellenc.Sample) bool {
	return slices.EqualFunc(a, b, func(x, y cellenc.Sample) bool {
		return x.T == y.T && x.ST == y.ST && math.Float64bits(x.V) == math.Float64bits(y.V)
	})
}

// sameHistograms compares bit-exactly: kind, every field and float bits, by
// their raw cell encoding, which holds each of them.
func sameHistograms(a, b []cellenc.HistogramSample) bool {
	return slices.EqualFunc(a, b, func(x, y cellenc.HistogramSample) bool {
		return x.T == y.T && (x.H == nil) == (y.H == nil) && (x.FH == nil) == (y.FH == nil) &&
			string(cellenc.AppendHistogramSampleValue(nil, x)) == string(cellenc.AppendHistogramSampleValue(nil, y))
	})
}

// sameExemplars compares labels, timestamps and value bits.
func sameExemplars(a, b []exemplar.Exemplar) bool {
	return slices.EqualFunc(a, b, func(x, y exemplar.Exemplar) bool {
		return labels.Equal(x.Labels, y.Labels) && x.Ts == y.Ts && x.HasTs == y.HasTs &&
			math.Float64bits(x.Value) == math.Float64bits(y.Value)
	})
}

// v1Labels builds prompb labels as given, without sorting or checks.
func v1Labels(pairs ...string) []prompb.Label {
	var out []prompb.Label
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, prompb.Label{Name: pairs[i], Value: pairs[i+1]})
	}
	return out
}

func marshal(tb testing.TB, msg interface{ Marshal() ([]byte, error) }) []byte {
	tb.Helper()
	b, err := msg.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkDecoded checks what every decoder promises of a request it accepts:
// every series has a sample, a histogram or an exemplar, and its labels (and
// its exemplars') are sorted by name.
func checkDecoded(t *testing.T, req write.Request) {
	t.Helper()
	for i, s := range req.Series {
		if len(s.Samples) == 0 && len(s.Histograms) == 0 && len(s.Exemplars) == 0 {
			t.Errorf("series %d %s has no samples, histograms or exemplars", i, s.Labels)
		}
		for j, e := range s.Exemplars {
			if !slices.IsSortedFunc(labelNames(e.Labels), strings.Compare) {
				t.Errorf("series %d exemplar %d: labels %s not sorted by name", i, j, e.Labels)
			}
		}
		prev := ""
		s.Labels.Range(func(l labels.Label) {
			if l.Name < prev {
				t.Errorf("series %d %s: labels not sorted by name", i, s.Labels)
			}
			prev = l.Name
		})
	}
}

func labelNames(ls labels.Labels) []string {
	var names []string
	ls.Range(func(l labels.Label) { names = append(names, l.Name) })
	return names
}

// v1Seeds are the interesting 1.0 bodies: well-formed requests of every kind,
// and the malformed bodies of the bad-input corpus.
func v1Seeds(tb testing.TB) [][]byte {
	stale := math.Float64frombits(0x7ff0000000000002)
	var seeds [][]byte
	for _, msg := range []*prompb.WriteRequest{
		{},
		{Timeseries: []prompb.TimeSeries{{Labels: v1Labels("job", "a", "__name__", "up"), Samples: []prompb.Sample{{Timestamp: 1, Value: stale}, {Timestamp: -2, Value: 3}}}}},
		{Timeseries: []prompb.TimeSeries{
			{Labels: v1Labels("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1, Count: &prompb.Histogram_CountInt{CountInt: 3}}}},
			{Labels: v1Labels("__name__", "e", "", "x\xff"), Samples: []prompb.Sample{{Timestamp: 3, Value: 3}},
				Exemplars: []prompb.Exemplar{{Labels: v1Labels("trace_id", "1"), Timestamp: 3, Value: 1}}}},
			Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "e", Help: "help", Unit: "u"}}},
		{Timeseries: []prompb.TimeSeries{{Labels: v1Labels("__name__", "cpu", "host", "a", "host", "a"), Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}}}},
		{Timeseries: []prompb.TimeSeries{
			{Labels: v1Labels("__name__", "lat"), Histograms: v1Histograms(), Exemplars: []prompb.Exemplar{
				{Labels: v1Labels("trace_id", "abc", "span_id", "1"), Timestamp: 5, Value: 0.5}, {Timestamp: 0, Value: math.NaN()}}},
			{Labels: v1Labels("__name__", "only_exemplars"), Exemplars: []prompb.Exemplar{{Labels: v1Labels("trace_id", "x"), Timestamp: 7, Value: 2}}},
			{Labels: v1Labels("__name__", "nothing")},
		}},
		{Timeseries: []prompb.TimeSeries{{Labels: v1Labels("host", "h1"), Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}}}},
	} {
		seeds = append(seeds, marshal(tb, msg))
	}
	return append(seeds,
		[]byte("\x0a\x02\x1b\x1c"),         // a group in a series
		[]byte("\x0a\x04\x12\x02\x11\x01"), // a sample timestamp of the wrong wire type
		[]byte("\x0a\x04\x12\x02\x09\x01"), // a truncated sample value
		[]byte("\xff\xff\xff\xff not a protobuf"),
		marshal(tb, v2Request(v2In{labels: labels.FromStrings("__name__", "cpu"), samples: []v2Sample{{1, 1}}})), // 2.0 sent as 1.0
	)
}

// FuzzDecodeV1 holds the hand-written decoder to prompb's generated code: both
// accept and reject the same bodies, and decode them to the same request.
func FuzzDecodeV1(f *testing.F) {
	for _, seed := range v1Seeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := referenceV1(data)
		got, gotErr := decodeV1(data)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("decodeV1 error %v, generated code error %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if !sameRequest(got, want) {
			t.Fatalf("decodeV1 = %+v\ngenerated code = %+v", got, want)
		}
		checkDecoded(t, got)
		// DecodeV1 is decodeV1 plus the wrong-schema check, its errors invalid input.
		req, err := DecodeV1(data)
		if err != nil {
			if !errors.Is(err, write.ErrInvalid) {
				t.Fatalf("DecodeV1 error %v does not wrap write.ErrInvalid", err)
			}
			if len(got.Series) != 0 || len(got.Metadata) != 0 {
				t.Fatalf("DecodeV1 refused a body with content: %v", err)
			}
			return
		}
		if !sameRequest(req, got) {
			t.Fatalf("DecodeV1 = %+v, decodeV1 = %+v", req, got)
		}
	})
}

func TestDecodeV1KeepsValuesAndMetadata(t *testing.T) {
	stale := math.Float64frombits(0x7ff0000000000002)
	body := marshal(t, &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			{Labels: v1Labels("job", "a", "__name__", "up"), // unsorted on the wire
				Samples: []prompb.Sample{{Timestamp: 1, Value: stale}, {Timestamp: 2, Value: 5e-324}}},
			{Labels: v1Labels("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}, {Timestamp: 2}}},
			{Labels: v1Labels("__name__", "e"), Samples: []prompb.Sample{{Timestamp: 3, Value: 3}},
				Exemplars: []prompb.Exemplar{{Timestamp: 3, Value: 1}}},
		},
		Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "up", Help: "h", Unit: "seconds"}},
	})
	req, err := DecodeV1(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Series) != 3 || !labels.Equal(req.Series[0].Labels, labels.FromStrings("__name__", "up", "job", "a")) {
		t.Fatalf("series = %+v", req.Series)
	}
	if got := math.Float64bits(req.Series[0].Samples[0].V); got != 0x7ff0000000000002 {
		t.Errorf("stale marker bits = %x", got)
	}
	if got := req.Series[0].Samples[1]; got != (cellenc.Sample{T: 2, V: 5e-324}) {
		t.Errorf("second sample = %v", got)
	}
	want := schema.Metadata{Metric: "up", Type: model.MetricTypeCounter, Help: "h", Unit: "seconds"}
	if len(req.Metadata) != 1 || req.Metadata[0] != want {
		t.Errorf("metadata = %+v, want %+v", req.Metadata, want)
	}
}

func TestDecodeV1LabelsDoNotAliasTheBody(t *testing.T) {
	body := marshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: v1Labels("__name__", "up", "job", "node"), Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}}}})
	req, err := DecodeV1(body)
	if err != nil {
		t.Fatal(err)
	}
	clear(body) // the caller reuses its buffer
	if want := labels.FromStrings("__name__", "up", "job", "node"); !labels.Equal(req.Series[0].Labels, want) {
		t.Errorf("labels after the body was overwritten: %s, want %s", req.Series[0].Labels, want)
	}
}

func TestDecodeV1Errors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"garbage", []byte("\xff\xff\xff\xff not a protobuf"),
			"invalid write request: body is not a protobuf prometheus.WriteRequest: proto: illegal wireType 7"},
		{"a sample timestamp of the wrong wire type", []byte("\x0a\x04\x12\x02\x11\x01"),
			"invalid write request: body is not a protobuf prometheus.WriteRequest: proto: wrong wireType = 1 for field Timestamp"},
		{"a truncated sample value", []byte("\x0a\x04\x12\x02\x09\x01"),
			"invalid write request: body is not a protobuf prometheus.WriteRequest: unexpected EOF"},
		{"a 2.0 body", marshal(t, v2Request(v2In{labels: labels.FromStrings("__name__", "cpu"), samples: []v2Sample{{1, 1}}})),
			"invalid write request: body is an io.prometheus.write.v2.Request (it has symbols or timeseries in fields 4 and 5), " +
				"but Content-Type says prometheus.WriteRequest; send it with Content-Type application/x-protobuf;proto=io.prometheus.write.v2.Request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeV1(tc.body)
			if err == nil || err.Error() != tc.want || !errors.Is(err, write.ErrInvalid) {
				t.Errorf("DecodeV1 error = %v, want %q wrapping write.ErrInvalid", err, tc.want)
			}
		})
	}
}

// benchBodyV1 is a request of n series with one sample each, with the labels a
// node exporter scrape has: what Prometheus sends (max_samples_per_send 2 000).
func benchBodyV1(n int) *prompb.WriteRequest {
	msg := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, n)}
	for k := range n {
		lbls := labels.FromStrings("__name__", fmt.Sprintf("node_bench_metric_%d", k%50),
			"instance", fmt.Sprintf("host-%d:9100", k/50), "job", "node", "mode", "user")
		msg.Timeseries[k] = prompb.TimeSeries{Labels: prompb.FromLabels(lbls, nil),
			Samples: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: float64(k)}}}
	}
	return msg
}

func BenchmarkDecodeV1(b *testing.B) {
	const batch = 2_000
	data := marshal(b, benchBodyV1(batch))
	for _, tc := range []struct {
		name   string
		decode func([]byte) (write.Request, error)
	}{{"hand-written", decodeV1}, {"generated", referenceV1}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.decode(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/batch, "ns/sample")
		})
	}
}
