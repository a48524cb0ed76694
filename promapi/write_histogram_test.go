package promapi

// Native histograms, start timestamps and exemplars through the remote-write
// endpoint: real protobuf, snappy and HTTP, into the real write pipeline on
// both backends, read back from the raw cells.

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// httpHistograms are histogram samples of every shape, the last at t0.
func httpHistograms(t0 int64) []cellenc.HistogramSample {
	exp := func(hint histogram.CounterResetHint) *histogram.Histogram {
		return &histogram.Histogram{CounterResetHint: hint, Schema: 3, ZeroThreshold: 1e-9, ZeroCount: 1, Count: 11, Sum: -3.5,
			PositiveSpans: []histogram.Span{{Offset: -3, Length: 1}, {Offset: 4, Length: 2}}, PositiveBuckets: []int64{1, 2, -1},
			NegativeSpans: []histogram.Span{{Offset: 1, Length: 2}}, NegativeBuckets: []int64{3, -2}}
	}
	return []cellenc.HistogramSample{
		{T: t0 - 8000, H: exp(histogram.UnknownCounterReset)},
		{T: t0 - 7000, ST: t0 - 60_000, H: exp(histogram.CounterReset)},
		{T: t0 - 6000, H: exp(histogram.NotCounterReset)},
		{T: t0 - 5000, H: exp(histogram.GaugeType)},
		{T: t0 - 4000, ST: t0 - 60_000, FH: &histogram.FloatHistogram{Schema: 8, ZeroThreshold: 0.5, ZeroCount: 0.25, Count: 1.75, Sum: 1e300,
			PositiveSpans: []histogram.Span{{Offset: 1000, Length: 1}}, PositiveBuckets: []float64{1.5}}},
		{T: t0 - 3000, FH: &histogram.FloatHistogram{Schema: histogram.CustomBucketsSchema, Count: 3, Sum: 0.75,
			PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []float64{1, 2}, CustomValues: []float64{0.1, 0.2, 0.4}}},
		{T: t0 - 2000, H: &histogram.Histogram{Schema: histogram.CustomBucketsSchema, Count: 2, Sum: 0.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{2}, CustomValues: []float64{1}}},
		{T: t0 - 1000, H: &histogram.Histogram{Schema: -4, Sum: math.Float64frombits(value.StaleNaN)}},
		{T: t0, FH: &histogram.FloatHistogram{Schema: 0, Sum: math.Float64frombits(value.StaleNaN), CounterResetHint: histogram.GaugeType}},
	}
}

// sameHistogramSamples compares timestamps, start timestamps, kinds and every
// field bit for bit (by the raw cell encoding, which holds each of them).
func sameHistogramSamples(a, b []cellenc.HistogramSample) bool {
	return slices.EqualFunc(a, b, func(x, y cellenc.HistogramSample) bool {
		return x.T == y.T && x.ST == y.ST && (x.H == nil) == (y.H == nil) &&
			string(cellenc.AppendHistogramSampleValue(nil, x)) == string(cellenc.AppendHistogramSampleValue(nil, y))
	})
}

func TestRemoteWriteV1HistogramsRoundTrip(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
			t0 := e.now.UnixMilli()
			want := httpHistograms(t0)
			for i := range want {
				want[i].ST = 0 // 1.0 carries none
			}
			lat := ls("__name__", "lat_seconds", "instance", "web-1")
			ts := prompb.TimeSeries{Labels: prompb.FromLabels(lat, nil)}
			for _, h := range want {
				if h.H != nil {
					ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(h.T, h.H))
				} else {
					ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(h.T, h.FH))
				}
			}
			// Exemplars travel in series of their own, as Prometheus' queue
			// manager sends them.
			ex := prompb.TimeSeries{Labels: prompb.FromLabels(lat, nil), Exemplars: []prompb.Exemplar{
				{Labels: v1Labels("trace_id", "4bf92f3577b34da6"), Value: 0.02, Timestamp: t0 - 8000}}}
			msg := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts, ex,
				{Labels: prompb.FromLabels(ls("__name__", "up", "instance", "web-1"), nil), Samples: []prompb.Sample{{Timestamp: t0, Value: 1}}}}}
			for range 2 { // a retry stores one copy
				if r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, msg)); r.status != 204 || r.body != "" {
					t.Fatalf("write: %d %q", r.status, r.body)
				}
			}
			got := e.storedHistograms(t)
			if len(got) != 1 || !sameHistogramSamples(got[lat.String()], want) {
				t.Errorf("stored histograms %v\nwant %s: %v", got, lat, want)
			}
			if floats := e.stored(t); len(floats) != 1 || !sameSamples(floats[`{__name__="up", instance="web-1"}`], []cellenc.Sample{{T: t0, V: 1}}) {
				t.Errorf("stored floats %v", floats)
			}
			if n := e.exemplarCells(t); n != 1 {
				t.Errorf("%d exemplar cells, want 1", n)
			}
		})
	}
}

// exemplarCells counts the cells of the exemplar table.
func (e *env) exemplarCells(t testing.TB) int {
	t.Helper()
	sc := e.st.Scan(context.Background(), schema.TableExemplars, nil, nil, kv.MaxVersions(math.MaxInt32))
	defer sc.Close()
	n := 0
	for sc.Next() {
		n += len(sc.Row().Cells)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan exemplars: %v", err)
	}
	return n
}

func TestRemoteWriteV2HistogramsRoundTrip(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
			t0 := e.now.UnixMilli()
			want := httpHistograms(t0)
			lat := ls("__name__", "lat_seconds", "instance", "web-1")
			var hs []writev2.Histogram
			for _, h := range want {
				if h.H != nil {
					hs = append(hs, writev2.FromIntHistogram(h.ST, h.T, h.H))
				} else {
					hs = append(hs, writev2.FromFloatHistogram(h.ST, h.T, h.FH))
				}
			}
			msg := v2Request(
				v2In{labels: lat, histograms: hs, typ: writev2.Metadata_METRIC_TYPE_HISTOGRAM, help: "Latency."},
				v2In{labels: ls("__name__", "requests_total", "instance", "web-1"),
					samples: []writev2.Sample{{Timestamp: t0 - 1000, Value: 7, StartTimestamp: t0 - 60_000}, {Timestamp: t0, Value: 8, StartTimestamp: t0 - 60_000}}},
			)
			// An exemplar-only series of lat_seconds (as Prometheus' queue manager
			// sends them), with label refs into the request's own table.
			msg.Symbols = append(msg.Symbols, "trace_id", "4bf92f3577b34da6", "span_id", "00f067aa0ba902b7")
			ref := func(s string) uint32 { return uint32(slices.Index(msg.Symbols, s)) }
			msg.Timeseries = append(msg.Timeseries, writev2.TimeSeries{
				LabelsRefs: []uint32{ref("__name__"), ref("lat_seconds"), ref("instance"), ref("web-1")},
				Exemplars: []writev2.Exemplar{
					{LabelsRefs: []uint32{ref("trace_id"), ref("4bf92f3577b34da6")}, Value: 0.02, Timestamp: t0 - 8000},
					{LabelsRefs: []uint32{ref("span_id"), ref("00f067aa0ba902b7"), ref("trace_id"), ref("4bf92f3577b34da6")}, Value: 0.5, Timestamp: t0 - 4000},
				}})
			for range 2 { // a retry stores one copy and says so again
				r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV2), marshalV2(t, msg))
				if r.status != 204 || r.body != "" || r.header.Get(headerSamplesWritten) != "2" ||
					r.header.Get(headerHistogramsWritten) != "9" || r.header.Get(headerExemplarsWritten) != "2" {
					t.Fatalf("write: %d %q, written headers %q %q %q", r.status, r.body, r.header.Get(headerSamplesWritten),
						r.header.Get(headerHistogramsWritten), r.header.Get(headerExemplarsWritten))
				}
			}
			got := e.storedHistograms(t)
			if len(got) != 1 || !sameHistogramSamples(got[lat.String()], want) {
				t.Errorf("stored histograms %v\nwant %s: %v", got, lat, want)
			}
			floats := e.stored(t)
			if !sameSamples(floats[`{__name__="requests_total", instance="web-1"}`], []cellenc.Sample{{T: t0 - 1000, V: 7}, {T: t0, V: 8}}) {
				t.Errorf("stored floats %v", floats)
			}
			if n := e.exemplarCells(t); n != 2 {
				t.Errorf("%d exemplar cells, want 2", n)
			}
		})
	}
}

// TestRemoteWriteV2PartialHistogramWrite: a bad histogram among good ones is
// rejected with a 400 naming it; the good ones are stored and counted in the
// Written headers.
func TestRemoteWriteV2PartialHistogramWrite(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
			t0 := e.now.UnixMilli()
			good := &histogram.Histogram{Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}}
			bad := &histogram.Histogram{Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1, 0}}
			msg := v2Request(v2In{labels: ls("__name__", "lat"), histograms: []writev2.Histogram{
				writev2.FromIntHistogram(0, t0-2000, good), writev2.FromIntHistogram(0, t0-1000, bad), writev2.FromIntHistogram(0, t0, good)},
				exemplars: []writev2.Exemplar{{Value: 1, Timestamp: t0}}})
			r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV2), marshalV2(t, msg))
			want := "invalid write request: 1 samples rejected, 2 written: " + histogramAt(t0-1000) +
				`: positive side: spans need 1 buckets, have 2 buckets: histogram spans specify different number of buckets than provided in series {__name__="lat"}` + "\n"
			if r.status != 400 || r.body != want || r.header.Get(headerSamplesWritten) != "0" ||
				r.header.Get(headerHistogramsWritten) != "2" || r.header.Get(headerExemplarsWritten) != "1" {
				t.Errorf("got %d %q, written headers %q %q %q\nwant 400 %q, 0 2 1", r.status, r.body, r.header.Get(headerSamplesWritten),
					r.header.Get(headerHistogramsWritten), r.header.Get(headerExemplarsWritten), want)
			}
			got := e.storedHistograms(t)[`{__name__="lat"}`]
			if len(got) != 2 || got[0].T != t0-2000 || got[1].T != t0 {
				t.Errorf("stored %v, want the two good histograms", got)
			}
		})
	}
}

// benchHistogram is the histogram of series k at request r: a counter-like
// exponential histogram (schema 3) with 20 to 40 positive buckets in two
// spans and a zero bucket, its counts growing with r.
func benchHistogram(k, r int) *histogram.Histogram {
	n := 20 + k%21
	h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128, ZeroCount: uint64(r),
		PositiveSpans: []histogram.Span{{Offset: int32(k % 7), Length: uint32(n / 2)}, {Offset: 2, Length: uint32(n - n/2)}}}
	var prev int64
	count := h.ZeroCount
	for i := range n {
		c := int64(r*(i%5+1) + i)
		h.PositiveBuckets = append(h.PositiveBuckets, c-prev)
		prev = c
		count += uint64(c)
	}
	h.Count = count
	h.Sum = float64(count) * 0.042
	return h
}

// BenchmarkRemoteWriteV2Histograms sends remote-write 2.0 requests of 1 000
// native histogram samples (1 000 series with 20 to 40 buckets, one sample
// each, 15 s apart from one request to the next: what a Prometheus scraping
// them sends) over real HTTP into the real pipeline and store, and reports
// histograms/s, CPU-s/M (process CPU per million histogram samples),
// value-bytes, the mean raw cell value of one histogram sample (the 4-byte
// qualifier and the store's own overhead per cell come on top), and
// body-bytes/histogram, the snappy-compressed request body per sample.
//
//	TSDB_TEST_HBASE_ZK=127.0.0.1:32483 go test -run '^$' -bench RemoteWriteV2Histograms -benchtime 50x ./promapi/
func BenchmarkRemoteWriteV2Histograms(b *testing.B) {
	const series = 1_000
	for _, backend := range schematest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			e := newEnv(b, backend, write.DefaultLimits(), WriteLimits{})
			t0 := e.now.Add(-time.Hour).UnixMilli()
			body := func(r int) []byte {
				var in []v2In
				for k := range series {
					in = append(in, v2In{labels: ls("__name__", "http_request_duration_seconds", "instance", fmt.Sprintf("web-%d", k/10), "handler", fmt.Sprintf("/h%d", k%10)),
						histograms: []writev2.Histogram{writev2.FromIntHistogram(t0-3600_000, t0+int64(r)*15_000, benchHistogram(k, r+1))}})
				}
				return marshalV2(b, v2Request(in...))
			}
			send := func(data []byte) {
				r := post(b, e.srv.URL+"/api/v1/write", remoteHeaders(ctV2), data)
				if r.status != http.StatusNoContent || r.header.Get(headerHistogramsWritten) != strconv.Itoa(series) {
					b.Fatalf("write: %d %q, %s %q", r.status, r.body, headerHistogramsWritten, r.header.Get(headerHistogramsWritten))
				}
			}
			send(body(-1)) // register the series
			bodies := make([][]byte, b.N)
			valueBytes := 0
			for i := range bodies {
				bodies[i] = body(i)
			}
			for k := range series {
				valueBytes += len(cellenc.AppendHistogramSampleValue(nil, cellenc.HistogramSample{H: benchHistogram(k, 0)}))
			}
			b.ResetTimer()
			cpu0 := processCPU(b)
			start := time.Now()
			for i := range b.N {
				send(bodies[i])
			}
			elapsed := time.Since(start)
			cpu := processCPU(b) - cpu0
			b.StopTimer()
			n := float64(b.N * series)
			b.ReportMetric(n/elapsed.Seconds(), "histograms/s")
			b.ReportMetric(cpu.Seconds()/n*1e6, "CPU-s/M")
			b.ReportMetric(float64(valueBytes)/series, "value-bytes")
			b.ReportMetric(float64(len(bodies[0]))/series, "body-bytes/histogram")
		})
	}
}

// TestRemoteWriteExemplarProblemsAreNotFailures: an invalid exemplar, and the
// exemplars of a series that has no samples stored, are left out without
// failing the request, as Prometheus' receiver does; the 2.0 Written headers
// count what was stored.
func TestRemoteWriteExemplarProblemsAreNotFailures(t *testing.T) {
	b := schematest.Backends()[0]
	e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
	t0 := e.now.UnixMilli()
	msg := v2Request(
		v2In{labels: ls("__name__", "req_total", "instance", "a"), samples: []writev2.Sample{{Timestamp: t0, Value: 1}}},
		v2In{labels: ls("__name__", "never_sampled")})
	msg.Symbols = append(msg.Symbols, "trace_id", "abc", string(make([]byte, 130)))
	ref := func(s string) uint32 { return uint32(slices.Index(msg.Symbols, s)) }
	msg.Timeseries[0].Exemplars = []writev2.Exemplar{
		{LabelsRefs: []uint32{ref("trace_id"), ref("abc")}, Value: 1, Timestamp: t0},
		{LabelsRefs: []uint32{ref("trace_id"), ref(string(make([]byte, 130)))}, Value: 2, Timestamp: t0},
	}
	msg.Timeseries[1].Exemplars = []writev2.Exemplar{{LabelsRefs: []uint32{ref("trace_id"), ref("abc")}, Value: 3, Timestamp: t0}}
	r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV2), marshalV2(t, msg))
	if r.status != 204 || r.body != "" || r.header.Get(headerSamplesWritten) != "1" ||
		r.header.Get(headerHistogramsWritten) != "0" || r.header.Get(headerExemplarsWritten) != "1" {
		t.Errorf("got %d %q, written headers %q %q %q; want 204, 1 0 1", r.status, r.body, r.header.Get(headerSamplesWritten),
			r.header.Get(headerHistogramsWritten), r.header.Get(headerExemplarsWritten))
	}
	if n := e.exemplarCells(t); n != 1 {
		t.Errorf("%d exemplar cells, want 1", n)
	}
	if got := e.stored(t); len(got) != 1 {
		t.Errorf("stored series %v, want req_total only", got)
	}
}
