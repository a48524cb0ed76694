package promapi

import (
	"math"
	"reflect"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// fromV1 is the reference decodeV1 is held to: prompb's generated Unmarshal,
// then the conversion decodeV1 does (labels sorted, series without float samples
// left out with their histograms and exemplars counted).
func fromV1(msg *prompb.WriteRequest) (write.Request, notStored) {
	var (
		dropped notStored
		total   int
		b       = labels.NewScratchBuilder(16)
	)
	for i := range msg.Timeseries {
		total += len(msg.Timeseries[i].Samples)
	}
	samples := make([]schema.Sample, 0, total)
	req := write.Request{Series: make([]write.Series, 0, len(msg.Timeseries))}
	for i := range msg.Timeseries {
		ts := &msg.Timeseries[i]
		dropped.histograms += len(ts.Histograms)
		dropped.exemplars += len(ts.Exemplars)
		if len(ts.Samples) == 0 {
			continue
		}
		b.Reset()
		for _, l := range ts.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		start := len(samples)
		for _, s := range ts.Samples {
			samples = append(samples, schema.Sample{T: s.Timestamp, V: s.Value})
		}
		req.Series = append(req.Series, write.Series{Labels: b.Labels(), Samples: samples[start:len(samples):len(samples)]})
	}
	for _, m := range msg.Metadata {
		req.Metadata = append(req.Metadata, schema.Metadata{
			Metric: m.MetricFamilyName, Type: metricTypeV1(m.Type), Help: m.Help, Unit: m.Unit,
		})
	}
	return req, dropped
}

// referenceV1 decodes data with the generated code.
func referenceV1(data []byte) (write.Request, notStored, error) {
	var msg prompb.WriteRequest
	if err := msg.Unmarshal(data); err != nil {
		return write.Request{}, notStored{}, err
	}
	req, dropped := fromV1(&msg)
	return req, dropped, nil
}

// sameRequest compares two decoded requests, sample values bit for bit.
func sameRequest(a, b write.Request) bool {
	if len(a.Series) != len(b.Series) || !reflect.DeepEqual(a.Metadata, b.Metadata) {
		return false
	}
	for i := range a.Series {
		if !labels.Equal(a.Series[i].Labels, b.Series[i].Labels) || !sameSamples(a.Series[i].Samples, b.Series[i].Samples) {
			return false
		}
	}
	return true
}

func FuzzDecodeV1(f *testing.F) {
	stale := math.Float64frombits(0x7ff0000000000002)
	for _, msg := range []*prompb.WriteRequest{
		{},
		{Timeseries: []prompb.TimeSeries{{Labels: v1Labels("job", "a", "__name__", "up"), Samples: []prompb.Sample{{Timestamp: 1, Value: stale}, {Timestamp: -2, Value: 3}}}}},
		{Timeseries: []prompb.TimeSeries{
			{Labels: v1Labels("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1, Count: &prompb.Histogram_CountInt{CountInt: 3}}}},
			{Labels: v1Labels("__name__", "e", "", "x\xff"), Samples: []prompb.Sample{{Timestamp: 3, Value: 3}},
				Exemplars: []prompb.Exemplar{{Labels: v1Labels("trace_id", "1"), Timestamp: 3, Value: 1}}}},
			Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "e", Help: "help", Unit: "u"}}},
	} {
		b, err := msg.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x0a\x02\x1b\x1c"))         // a group in a series
	f.Add([]byte("\x0a\x04\x12\x02\x11\x01")) // a truncated sample value
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantDropped, wantErr := referenceV1(data)
		got, gotDropped, gotErr := decodeV1(data)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("decodeV1 error %v, generated code error %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if !sameRequest(got, want) || gotDropped != wantDropped {
			t.Fatalf("decodeV1 = %+v %+v\ngenerated code = %+v %+v", got, gotDropped, want, wantDropped)
		}
	})
}

func BenchmarkDecodeV1(b *testing.B) {
	data, err := snappy.Decode(nil, benchBody(0, 0, false))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		decode func([]byte) (write.Request, notStored, error)
	}{{"hand-written", decodeV1}, {"generated", referenceV1}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := tc.decode(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchBatch, "ns/sample")
		})
	}
}
