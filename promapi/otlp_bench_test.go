package promapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// otlpBenchBody is request r of BenchmarkOTLP: benchBatch gauge points of 40
// hosts (resources) with 50 metrics each, cycling through benchSeries series
// (200 hosts), one second later each cycle: the shape of benchBody's series.
func otlpBenchBody(tb testing.TB, t0 int64, r int) []byte {
	const metrics = 50
	hostsPerRequest := benchBatch / metrics
	cycle := r * benchBatch / benchSeries
	ts := pcommon.Timestamp(uint64(t0+int64(cycle)*1000) * 1e6)
	md := pmetric.NewMetrics()
	for j := range hostsPerRequest {
		host := (r*hostsPerRequest + j) % (benchSeries / metrics)
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "node")
		rm.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("host-%d:9100", host))
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		for m := range metrics {
			metric := ms.AppendEmpty()
			metric.SetName(fmt.Sprintf("node_bench_metric_%d", m))
			dp := metric.SetEmptyGauge().DataPoints().AppendEmpty()
			dp.Attributes().PutStr("mode", "user")
			dp.SetTimestamp(ts)
			dp.SetDoubleValue(float64(r*benchBatch + j*metrics + m))
		}
	}
	return otlpProto(tb, md)
}

// BenchmarkOTLP is BenchmarkRemoteWriteV1's known-series case over OTLP/HTTP
// protobuf: the same 10 000 series (plus one target_info series per host),
// 2 000 points per request, through Prometheus' OTLP handler and translator
// into the real pipeline and store, one request at a time. Samples counted are
// the data points; each request also stores 40 target_info samples.
//
//	go test -run '^$' -bench OTLP -benchtime 200x ./promapi/
func BenchmarkOTLP(b *testing.B) {
	for _, backend := range schematest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			e := newEnv(b, backend, write.DefaultLimits(), WriteLimits{})
			client := &http.Client{}
			send := func(body []byte) {
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+OTLPPath, bytes.NewReader(body))
				req.Header.Set("Content-Type", ctOTLPProto)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("write: %d %s", resp.StatusCode, msg)
				}
			}
			t0 := e.now.Add(-time.Hour).UnixMilli()
			for r := range benchSeries / benchBatch {
				send(otlpBenchBody(b, t0-1000, r))
			}
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = otlpBenchBody(b, t0, i)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			cpu0 := processCPU(b)
			start := time.Now()
			for i := range b.N {
				send(bodies[i])
			}
			elapsed := time.Since(start)
			cpu := processCPU(b) - cpu0
			b.StopTimer()
			runtime.ReadMemStats(&after)
			samples := float64(b.N * benchBatch)
			b.ReportMetric(samples/elapsed.Seconds(), "samples/s")
			b.ReportMetric(cpu.Seconds()/samples*1e6, "CPU-s/M")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/samples, "allocs/sample")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/samples, "B/sample")
			b.ReportMetric(float64(len(bodies[0])), "body-bytes")
		})
	}
}
