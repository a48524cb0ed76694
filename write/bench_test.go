package write_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// Benchmarks of the write pipeline on requests shaped like Prometheus' remote
// write: 2000 samples (its default max_samples_per_send), one per series.
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 200x ./write/
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh status) go test -run '^$' -bench BenchmarkWrite -benchtime 100x ./write/
//
// existing-series: 10,000 series registered beforehand, each request carries the
// next 2000 of them (like five scrape targets' worth rotating) with timestamps
// advancing 15s per request, so rows change bucket now and then as in real life.
// new-series: every request carries 2000 series never seen before: registry
// (read, ID block, reverse rows, a check-and-put each) and postings included.
// Both report samples/s, allocs/sample and B/sample of the whole Write call, the
// store's own work included.

const (
	benchBatch  = 2000
	benchSeries = 10_000
)

func benchLabels(prefix string, i int) labels.Labels {
	return labels.FromStrings(
		"__name__", fmt.Sprintf("node_metric_%d", i%100),
		"instance", fmt.Sprintf("%s-%d:9100", prefix, i/100),
		"job", "node",
		"mode", fmt.Sprintf("m%d", i%8),
	)
}

func BenchmarkWrite(b *testing.B) {
	for _, be := range schematest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			if !be.Available() {
				b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
			}
			b.Run("existing-series", func(b *testing.B) { benchExisting(b, be) })
			b.Run("new-series", func(b *testing.B) { benchNew(b, be) })
		})
	}
}

func newBenchWriter(b *testing.B, be schematest.Backend) *write.Writer {
	b.Helper()
	w, err := write.New(be.Store(b), be.Settings, nil, nil, write.Options{Limits: write.DefaultLimits()})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func benchExisting(b *testing.B, be schematest.Backend) {
	ctx := context.Background()
	w := newBenchWriter(b, be)
	base := time.Now().Add(-24 * time.Hour).UnixMilli()
	reqs := make([]write.Request, benchSeries/benchBatch)
	for r := range reqs {
		for i := range benchBatch {
			reqs[r].Series = append(reqs[r].Series, write.Series{
				Labels:  benchLabels("host", r*benchBatch+i),
				Samples: []cellenc.Sample{{T: base, V: float64(i)}},
			})
		}
		// Register every series, index it and write its first row's tags.
		if _, err := w.Write(ctx, &reqs[r]); err != nil {
			b.Fatal(err)
		}
	}
	run := func(i int) {
		req := &reqs[i%len(reqs)]
		// 15s per request, wrapping after 20h (old timestamps are rewritten).
		ts := base + int64((i+1)%4800)*15_000
		for s := range req.Series {
			req.Series[s].Samples[0] = cellenc.Sample{T: ts, V: float64(i)}
		}
		res, err := w.Write(ctx, req)
		if err != nil || res.SamplesWritten != benchBatch {
			b.Fatalf("Write = %+v, %v", res, err)
		}
	}
	measure(b, run)
}

func benchNew(b *testing.B, be schematest.Backend) {
	ctx := context.Background()
	w := newBenchWriter(b, be)
	ts := time.Now().UnixMilli()
	// Label sets are made before the clock starts; each round of the benchmark
	// gets series of its own.
	var round int
	reqs := func(n int) []write.Request {
		round++
		out := make([]write.Request, n)
		for r := range out {
			for i := range benchBatch {
				out[r].Series = append(out[r].Series, write.Series{
					Labels:  benchLabels(fmt.Sprintf("new%d-%d", round, r), i),
					Samples: []cellenc.Sample{{T: ts, V: float64(i)}},
				})
			}
		}
		return out
	}
	var pending []write.Request
	b.StopTimer()
	pending = reqs(b.N)
	b.StartTimer()
	measure(b, func(i int) {
		res, err := w.Write(ctx, &pending[i])
		if err != nil || res.SamplesWritten != benchBatch {
			b.Fatalf("Write = %+v, %v", res, err)
		}
	})
}

// measure runs fn b.N times and reports samples/s, allocs/sample and B/sample.
func measure(b *testing.B, fn func(i int)) {
	b.ReportAllocs()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fn(i)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	samples := float64(b.N * benchBatch)
	b.ReportMetric(samples/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/samples, "allocs/sample")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/samples, "B/sample")
}
