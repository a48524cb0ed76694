package index_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// BenchmarkRegisterNewSeries registers batches of 2 000 new series (a
// remote-write request's worth, node-exporter-like labels) with Resolve, from 1
// or 4 concurrent writers (remote-write shards) on one registry, on stores of
// format 1 (counter IDs, a check-and-put per series) and format 2 (hash-derived
// IDs). It reports series/s and the process's CPU time per million series
// (user+system, getrusage; on the embedded store that includes Pebble's
// background work, on HBase not the region server's).
//
//	go test -run '^$' -bench RegisterNewSeries -benchtime 20x ./index/
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh status) go test -run '^$' -bench 'RegisterNewSeries/hbase' -benchtime 20x ./index/
func BenchmarkRegisterNewSeries(b *testing.B) {
	const batch = 2000
	for _, backend := range schematest.Backends() {
		for _, format := range formats {
			for _, writers := range []int{1, 4} {
				b.Run(fmt.Sprintf("%s/format-%d/writers-%d", backend.Name, format, writers), func(b *testing.B) {
					backend.Settings.FormatVersion = format
					st := backend.Store(b)
					r := index.NewRegistry(st, index.RegistryOptions{})
					batches := make([][]labels.Labels, b.N)
					for i := range batches {
						batches[i] = make([]labels.Labels, batch)
						for j := range batch {
							k := i*batch + j
							batches[i][j] = labels.FromStrings("__name__", fmt.Sprintf("node_bench_metric_%d", k%50),
								"instance", fmt.Sprintf("host-%d:9100", k/50), "job", "node", "mode", "user")
						}
					}
					next := make(chan []labels.Labels, len(batches))
					for _, bt := range batches {
						next <- bt
					}
					close(next)
					b.ResetTimer()
					cpu0 := processCPU(b)
					start := time.Now()
					var wg sync.WaitGroup
					for range writers {
						wg.Go(func() {
							ids := make([]uint64, batch)
							for bt := range next {
								if err := r.Resolve(context.Background(), bt, ids); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					elapsed := time.Since(start)
					cpu := processCPU(b) - cpu0
					b.StopTimer()
					series := float64(b.N * batch)
					if s := r.Stats(); s.Registered != int64(series) {
						b.Fatalf("registered %d series, want %d", s.Registered, int64(series))
					}
					b.ReportMetric(series/elapsed.Seconds(), "series/s")
					b.ReportMetric(cpu.Seconds()/series*1e6, "CPU-s/M")
				})
			}
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
