package wire

import (
	"errors"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// v2In is one series of a 2.0 request to build.
type v2In struct {
	labels     labels.Labels
	samples    []v2Sample
	histograms int
	exemplars  int
	typ        writev2.Metadata_MetricType
	help, unit string
}

// v2Sample is a sample at (t, v).
type v2Sample struct {
	t int64
	v float64
}

// v2Request symbolizes series with writev2's own symbol table.
func v2Request(series ...v2In) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(s.labels, nil)}
		for _, x := range s.samples {
			ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: x.t, Value: x.v})
		}
		ts.Histograms = append(ts.Histograms, v2Histograms()[:s.histograms]...)
		for i := range s.exemplars {
			ts.Exemplars = append(ts.Exemplars, writev2.Exemplar{Timestamp: int64(i), Value: 1})
		}
		if s.help != "" || s.unit != "" || s.typ != 0 {
			ts.Metadata = writev2.Metadata{Type: s.typ, HelpRef: st.Symbolize(s.help), UnitRef: st.Symbolize(s.unit)}
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	return req
}

// v2Seeds are the interesting 2.0 bodies: well-formed requests of every kind,
// and the malformed bodies of the bad-input corpus.
func v2Seeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, msg := range []*writev2.Request{
		{},
		v2Request(
			v2In{labels: labels.FromStrings("__name__", "http_requests_total", "code", "200"), samples: []v2Sample{{5, 7}, {6, 8}},
				typ: writev2.Metadata_METRIC_TYPE_COUNTER, help: "Requests.", unit: "requests"},
			v2In{labels: labels.FromStrings("__name__", "lat_bucket", "le", "+Inf"), samples: []v2Sample{{5, 1}},
				typ: writev2.Metadata_METRIC_TYPE_HISTOGRAM, help: "Latency."},
			v2In{labels: labels.FromStrings("__name__", "lat"), histograms: 2, exemplars: 1},
			v2In{labels: labels.FromStrings("host", "bad"), samples: []v2Sample{{5, 1}}}),
		{Symbols: []string{"", "__name__", "cpu"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 7}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}}}}},
		{Symbols: []string{"", "__name__", "cpu", "trace_id"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2},
			Samples: []writev2.Sample{{Timestamp: 5, Value: 1, StartTimestamp: 2}}, Histograms: v2Histograms(),
			Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{3, 2}, Timestamp: 5, Value: 1}, {LabelsRefs: []uint32{3, 9}}}}}},
		{Symbols: []string{"", "__name__", "cpu"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 1}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}}}}},
		{Symbols: []string{"__name__", "cpu"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{0, 1}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}}}}},
		{Symbols: []string{"", "__name__", "cpu"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}},
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: 3}}}},
		{Symbols: []string{"", "__name__", "cpu", "x", "y"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{3, 4, 1, 2, 3, 4}, Samples: []writev2.Sample{{Timestamp: 1, Value: 1}},
			Metadata: writev2.Metadata{Type: writev2.Metadata_MetricType(99), UnitRef: 4}}}},
	} {
		seeds = append(seeds, marshal(tb, msg))
	}
	return append(seeds,
		[]byte("\xff\xff\xff\xff not a protobuf"),
		marshal(tb, benchBodyV1(3)), // 1.0 sent as 2.0
	)
}

// FuzzDecodeV2: DecodeV2 never panics, its errors say the input is invalid, and
// what it accepts is what the message holds: every series with float samples,
// histograms or exemplars, their labels resolved and sorted, every sample,
// histogram and exemplar in order, converted as writev2 converts them, one
// metadata entry per metric family.
func FuzzDecodeV2(f *testing.F) {
	for _, seed := range v2Seeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeV2(data)
		if err != nil {
			if !errors.Is(err, write.ErrInvalid) {
				t.Fatalf("DecodeV2 error %v does not wrap write.ErrInvalid", err)
			}
			return
		}
		checkDecoded(t, req)
		var msg writev2.Request
		if err := msg.Unmarshal(data); err != nil {
			t.Fatalf("DecodeV2 accepted what the generated code refuses: %v", err)
		}
		s := 0
		for i := range msg.Timeseries {
			ts := &msg.Timeseries[i]
			if len(ts.Samples) == 0 && len(ts.Histograms) == 0 && len(ts.Exemplars) == 0 {
				continue
			}
			if s >= len(req.Series) {
				t.Fatalf("DecodeV2 returned %d series; timeseries[%d] has samples too", len(req.Series), i)
			}
			got := req.Series[s]
			s++
			if got.Labels.Len() != len(ts.LabelsRefs)/2 {
				t.Errorf("timeseries[%d]: %d labels, from %d refs", i, got.Labels.Len(), len(ts.LabelsRefs))
			}
			for j := 0; j < len(ts.LabelsRefs); j += 2 {
				name, value := msg.Symbols[ts.LabelsRefs[j]], msg.Symbols[ts.LabelsRefs[j+1]]
				if !hasLabel(got.Labels, name, value) {
					t.Errorf("timeseries[%d]: label %q=%q missing from %s", i, name, value, got.Labels)
				}
			}
			wantSamples := make([]cellenc.Sample, len(ts.Samples))
			for j, x := range ts.Samples {
				wantSamples[j] = cellenc.Sample{T: x.Timestamp, V: x.Value, ST: x.StartTimestamp}
			}
			if !sameSamples(got.Samples, wantSamples) {
				t.Errorf("timeseries[%d]: samples %v, want %v", i, got.Samples, wantSamples)
			}
			var wantHistograms []cellenc.HistogramSample
			for _, h := range ts.Histograms {
				wantHistograms = append(wantHistograms, histogramV2(&h))
			}
			if !sameHistograms(got.Histograms, wantHistograms) {
				t.Errorf("timeseries[%d]: histograms %v, want %v", i, got.Histograms, wantHistograms)
			}
			var wantExemplars []exemplar.Exemplar
			b := labels.NewScratchBuilder(0)
			for _, e := range ts.Exemplars {
				x, err := e.ToExemplar(&b, msg.Symbols)
				if err != nil {
					t.Fatalf("timeseries[%d]: DecodeV2 accepted an exemplar writev2 refuses: %v", i, err)
				}
				wantExemplars = append(wantExemplars, x)
			}
			if !sameExemplars(got.Exemplars, wantExemplars) {
				t.Errorf("timeseries[%d]: exemplars %v, want %v", i, got.Exemplars, wantExemplars)
			}
		}
		if s != len(req.Series) {
			t.Errorf("DecodeV2 returned %d series, the message has %d with samples, histograms or exemplars", len(req.Series), s)
		}
		seen := map[string]bool{}
		for _, md := range req.Metadata {
			if md.Metric == "" || seen[md.Metric] {
				t.Errorf("metadata %+v: metric empty or repeated in %+v", md, req.Metadata)
			}
			seen[md.Metric] = true
		}
	})
}

func hasLabel(lbls labels.Labels, name, value string) bool {
	found := false
	lbls.Range(func(l labels.Label) { found = found || l.Name == name && l.Value == value })
	return found
}

func TestDecodeV2ResolvesSymbolsAndMetadata(t *testing.T) {
	body := marshal(t, v2Request(
		v2In{labels: labels.FromStrings("__name__", "http_requests_total", "code", "200"),
			samples: []v2Sample{{5, 7}}, typ: writev2.Metadata_METRIC_TYPE_COUNTER, help: "Requests.", unit: "requests"},
		v2In{labels: labels.FromStrings("__name__", "http_requests_total", "code", "500"),
			samples: []v2Sample{{5, 1}}, typ: writev2.Metadata_METRIC_TYPE_COUNTER, help: "Requests.", unit: "requests"},
		v2In{labels: labels.FromStrings("__name__", "lat"), histograms: 1},
	))
	req, err := DecodeV2(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Series) != 3 || len(req.Series[2].Histograms) != 1 || req.Series[1].Labels.Get("code") != "500" || req.Series[1].Samples[0] != (cellenc.Sample{T: 5, V: 1}) {
		t.Errorf("series = %+v", req.Series)
	}
	want := schema.Metadata{Metric: "http_requests_total", Type: model.MetricTypeCounter, Help: "Requests.", Unit: "requests"}
	if len(req.Metadata) != 1 || req.Metadata[0] != want {
		t.Errorf("metadata = %+v, want one %+v", req.Metadata, want)
	}
}

func TestDecodeV2Errors(t *testing.T) {
	sample := []writev2.Sample{{Timestamp: 1, Value: 1}}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"garbage", []byte("\xff\xff\xff\xff not a protobuf"),
			"invalid write request: body is not a protobuf io.prometheus.write.v2.Request: proto: illegal wireType 7"},
		{"a 1.0 body", marshal(t, benchBodyV1(1)),
			"invalid write request: body is a prometheus.WriteRequest (it has fields 1 to 3, which 2.0 reserves), " +
				"but Content-Type says io.prometheus.write.v2.Request"},
		{"an empty symbols table", marshal(t, &writev2.Request{Timeseries: []writev2.TimeSeries{{Samples: sample}}}),
			"invalid write request: the symbols table is empty; its first element must be the empty string"},
		{"symbols[0] not empty", marshal(t, &writev2.Request{Symbols: []string{"__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{0, 1}, Samples: sample}}}),
			`invalid write request: symbols[0] is "__name__"; the first element of the symbols table must be the empty string`},
		{"labels_refs of odd length", marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 1}, Samples: sample}}}),
			"invalid write request: timeseries[0]: labels_refs has odd length 3; it must hold name/value pairs"},
		{"a label reference outside the table", marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 7}, Samples: sample}}}),
			"invalid write request: timeseries[0]: labels_refs[1] = 7 is outside the symbols table of 3 symbols"},
		{"a help reference outside the table", marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: sample, Metadata: writev2.Metadata{HelpRef: 3}}}}),
			"invalid write request: timeseries[0]: metadata help_ref = 3 is outside the symbols table of 3 symbols"},
		{"a unit reference outside the table", marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: sample, Metadata: writev2.Metadata{UnitRef: 4}}}}),
			"invalid write request: timeseries[0]: metadata unit_ref = 4 is outside the symbols table of 3 symbols"},
		{"an exemplar label reference outside the table", marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: sample, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{1, 3}}}}}}),
			"invalid write request: timeseries[0]: exemplars[0]: labels_refs[1] = 3 is outside the symbols table of 3 symbols"},
		{"exemplar labels_refs of odd length", marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "cpu"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{1}}}}}}),
			"invalid write request: timeseries[0]: exemplars[0]: labels_refs has odd length 1; it must hold name/value pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeV2(tc.body)
			if err == nil || err.Error() != tc.want || !errors.Is(err, write.ErrInvalid) {
				t.Errorf("DecodeV2 error = %v, want %q wrapping write.ErrInvalid", err, tc.want)
			}
		})
	}
}

func TestMetricFamilyOfRemoteWrite2Metadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  model.MetricType
		want string
	}{
		{"http_duration_seconds_bucket", model.MetricTypeHistogram, "http_duration_seconds"},
		{"http_duration_seconds_sum", model.MetricTypeHistogram, "http_duration_seconds"},
		{"http_duration_seconds_count", model.MetricTypeHistogram, "http_duration_seconds"},
		{"rpc_latency_sum", model.MetricTypeSummary, "rpc_latency"},
		{"rpc_latency", model.MetricTypeSummary, "rpc_latency"},
		{"queue_gsum", model.MetricTypeGaugeHistogram, "queue"},
		{"requests_total", model.MetricTypeCounter, "requests_total"},
		{"build_count", model.MetricTypeGauge, "build_count"},
		{"_bucket", model.MetricTypeHistogram, "_bucket"},
	} {
		if got := metricFamily(tc.name, tc.typ); got != tc.want {
			t.Errorf("metricFamily(%s, %s) = %s, want %s", tc.name, tc.typ, got, tc.want)
		}
	}
}
