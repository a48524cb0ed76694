package promapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

const (
	benchBatch  = 2_000  // samples per request: Prometheus' default max_samples_per_send
	benchSeries = 10_000 // distinct series the requests cycle through
)

// benchLabels is series k of the benchmark: 50 metric names on 200 hosts, with
// the labels a node exporter scrape has.
func benchLabels(k int) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("node_bench_metric_%d", k%50),
		"instance", fmt.Sprintf("host-%d:9100", k/50), "job", "node", "mode", "user")
}

// benchBody is request r: benchBatch series with one sample each. With
// firstSeen every series is new; otherwise request r covers series
// [r*benchBatch, (r+1)*benchBatch) mod benchSeries, one second later each cycle.
func benchBody(t0 int64, r int, firstSeen bool) []byte {
	msg := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, benchBatch)}
	cycle := r * benchBatch / benchSeries
	for j := range benchBatch {
		k := (r*benchBatch + j) % benchSeries
		ts := t0 + int64(cycle)*1000
		if firstSeen {
			k = benchSeries + r*benchBatch + j
			ts = t0
		}
		msg.Timeseries[j] = prompb.TimeSeries{Labels: prompb.FromLabels(benchLabels(k), nil),
			Samples: []prompb.Sample{{Timestamp: ts, Value: float64(r*benchBatch + j)}}}
	}
	b, err := msg.Marshal()
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, b)
}

// BenchmarkRemoteWriteV1 sends remote-write 1.0 requests of 2 000 samples over real
// HTTP through the whole handler into the real pipeline and store, one request at
// a time, and reports samples/s and allocations per sample (of the whole process:
// HTTP client and server, decoding, the write pipeline and the store's client).
// "known-series" cycles through 10 000 series already registered; "first-seen"
// sends 2 000 new series per request (series registry and index cost) and also
// reports them as series/s. CPU-s/M is the process's CPU time (user and system,
// getrusage: the HTTP client and server, the pipeline, and on the embedded store
// Pebble's background work) per million samples.
//
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh status) go test -run '^$' -bench RemoteWriteV1 -benchtime 200x ./promapi/
func BenchmarkRemoteWriteV1(b *testing.B) {
	for _, backend := range schematest.Backends() {
		for _, firstSeen := range []bool{false, true} {
			name := backend.Name + "/known-series"
			if firstSeen {
				name = backend.Name + "/first-seen"
			}
			b.Run(name, func(b *testing.B) {
				e := newEnv(b, backend, write.DefaultLimits(), WriteLimits{})
				client := &http.Client{}
				send := func(body []byte) {
					req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/write", bytes.NewReader(body))
					for k, v := range remoteHeaders(ctV1) {
						req.Header.Set(k, v)
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						b.Fatalf("write: %d %s", resp.StatusCode, msg)
					}
				}
				t0 := e.now.Add(-time.Hour).UnixMilli()
				if !firstSeen {
					// Register the 10 000 series first (cycle -1 of the bodies).
					for r := range benchSeries / benchBatch {
						send(benchBody(t0-1000, r, false))
					}
				}
				bodies := make([][]byte, b.N)
				for i := range bodies {
					bodies[i] = benchBody(t0, i, firstSeen)
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
				if firstSeen {
					b.ReportMetric(samples/elapsed.Seconds(), "series/s")
				}
				b.ReportMetric(cpu.Seconds()/samples*1e6, "CPU-s/M")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/samples, "allocs/sample")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/samples, "B/sample")
				b.ReportMetric(float64(len(bodies[0])), "body-bytes")
			})
		}
	}
}

// processCPU is the CPU time of this process so far, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
