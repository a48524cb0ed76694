package db_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkQueryCompare runs the queries of bench/compare on the
// data shape it loads, through the real PromQL engine, without HTTP:
//
//	go test -run '^$' -bench BenchmarkQueryCompare -benchtime 20x -benchmem ./db/
//
// The load: 100 hosts × 100 series × 240 samples at 15 s (2.4 M samples, the
// hour ending at end), labels __name__, job="node", host="host-NNN",
// series="N"; series 0 of a host is the counter c, series 1 the gauge g, the
// others node_counter_N / node_gauge_N. It is written as remote write sends it
// (time-major, requests of 2 000 samples), each sample on time — the writer's
// clock follows the load, as it does for a live Prometheus (schema/late.go) —
// so that the embedded store holds one Pebble key per sample ("raw");
// "compacted" is the same load after the compactor sealed every bucket into
// chunks, as a user's store is right after a round ("compacted-store-compacted":
// and after the store compacted its files, which no user waits for).
//
// The cases, as bench/compare names them:
//
//	rate-15s     sum by (job) (rate(c[5m])), the hour at a 15 s step
//	rate-5m      the same at a 5 m step
//	avg-5m       avg by (host) (g), the hour at a 5 m step
//	one-series   {host="host-001",series="7"}, instant at end
func BenchmarkQueryCompare(b *testing.B) {
	const (
		hosts    = 100
		perHost  = 100
		samples  = 240
		interval = 15 * time.Second
	)
	end := time.Now().Truncate(time.Hour).Add(-time.Hour).Add(30 * time.Minute)
	first := end.Add(-time.Duration(samples-1) * interval)
	for _, be := range schematest.Backends() {
		for _, layout := range []string{"raw", "compacted", "compacted-store-compacted", "raw-cache192m"} {
			b.Run(be.Name+"/"+layout, func(b *testing.B) {
				if !be.Available() {
					b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
				}
				ctx := context.Background()
				var st kv.Store
				if layout != "raw-cache192m" {
					st = be.Store(b)
				} else if be.Name == "embedded" {
					st = embeddedWithCache(b, be, 192<<20)
				} else {
					b.Skip("a block cache size is the embedded store's")
				}
				clock := new(loadClock)
				d, err := db.Open(ctx, db.Options{Store: st, Settings: be.Settings, Write: write.Options{Now: clock.Now}})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { d.Close() })
				took := loadCompareShape(b, d, clock, hosts, perHost, samples, first, interval)
				if strings.HasPrefix(layout, "compacted") {
					compactAll(b, st, be.Settings, end, layout == "compacted-store-compacted")
				}
				settle(b)
				b.Logf("%s: loaded %d samples in %s", layout, hosts*perHost*samples, took.Round(time.Millisecond))
				eng := benchEngine()
				span := end.Sub(first)
				for _, c := range []struct {
					name, expr string
					step       time.Duration
					series     int
				}{
					{"rate-15s", `sum by (job) (rate(c[5m]))`, interval, 1},
					{"rate-5m", `sum by (job) (rate(c[5m]))`, 5 * time.Minute, 1},
					{"avg-5m", `avg by (host) (g)`, 5 * time.Minute, hosts},
					{"one-series", `{host="host-001",series="7"}`, 0, 1},
				} {
					b.Run(c.name, func(b *testing.B) {
						var n int
						run(b, func() {
							withQuery(b, ctx, eng, d, c.expr, end.Add(-span), end, c.step, func(v parser.Value) {
								switch v := v.(type) {
								case promql.Matrix:
									n = len(v)
								case promql.Vector:
									n = len(v)
								}
							})
						})
						if n != c.series {
							b.Fatalf("%s: %d series, want %d", c.expr, n, c.series)
						}
					})
				}
			})
		}
	}
}

// compareLabels are the labels of series i of host h in bench/compare's load.
func compareLabels(h, i int) labels.Labels {
	name := "node_gauge_" + strconv.Itoa(i)
	switch {
	case i == 0:
		name = "c"
	case i == 1:
		name = "g"
	case i%2 == 0:
		name = "node_counter_" + strconv.Itoa(i)
	}
	return labels.FromStrings("__name__", name, "host", fmt.Sprintf("host-%03d", h), "job", "node", "series", strconv.Itoa(i))
}

// loadClock is a writer's clock that a load sets to the time of the samples
// it sends, as if they were scraped just now.
type loadClock struct{ ms atomic.Int64 }

func (c *loadClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// loadCompareShape writes bench/compare's load time-major in requests of
// 2 000 samples, as remote write delivers it, with clock at each request's
// newest sample.
func loadCompareShape(b *testing.B, d *db.DB, clock *loadClock, hosts, perHost, samples int, first time.Time, interval time.Duration) time.Duration {
	b.Helper()
	start := time.Now()
	lbls := make([]labels.Labels, 0, hosts*perHost)
	for h := range hosts {
		for i := range perHost {
			lbls = append(lbls, compareLabels(h, i))
		}
	}
	var req write.Request
	for k := range samples {
		ts := first.Add(time.Duration(k) * interval).UnixMilli()
		clock.ms.Store(ts)
		for j, ls := range lbls {
			v := float64(k * (j%7 + 1)) // counters grow; gauges too, harmlessly
			if j%2 == 1 {
				v = math.Sin(float64(k+j)) * 100
			}
			req.Series = append(req.Series, write.Series{Labels: ls, Samples: []cellenc.Sample{{T: ts, V: v}}})
			if len(req.Series) == loadBatchSeries {
				mustWrite(b, d, &req)
				req.Series = req.Series[:0]
			}
		}
	}
	if len(req.Series) > 0 {
		mustWrite(b, d, &req)
	}
	return time.Since(start)
}

// compactAll seals every bucket before end+2h into chunks (the compactor's
// compactor) and, with storeCompaction on the embedded store, compacts
// Pebble's files, so that the deleted raw cells are gone.
func compactAll(b *testing.B, st kv.Store, settings schema.Settings, end time.Time, storeCompaction bool) {
	b.Helper()
	ctx := context.Background()
	c, err := compact.NewCompactor(st, settings, compact.Options{Now: func() time.Time { return end.Add(3 * time.Hour) }})
	if err != nil {
		b.Fatal(err)
	}
	stats, err := c.Compact(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if cs, ok := st.(interface{ Compact(context.Context) error }); ok && storeCompaction {
		if err := cs.Compact(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("compacted %d samples", stats.Samples)
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// settle waits until the process has gone idle after a load (under 5 % of a
// core for half a second, at most 60 s), as bench/compare waits for the
// server: the store's flushes and compactions are over before queries are
// timed.
func settle(b *testing.B) {
	b.Helper()
	cpu := func() time.Duration { return processCPU(b) }
	const window = 500 * time.Millisecond
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		before := cpu()
		time.Sleep(window)
		if cpu()-before < window/20 {
			return
		}
	}
	b.Logf("the store did not go idle in a minute")
}

// embeddedWithCache is a fresh embedded store like be.Store's, with a block
// cache of cacheSize bytes. Pebble reserves the memory of its memtables in the
// block cache: with kv/embedded's 32 MiB memtables, two of them take all of
// the default 64 MiB, and blocks are read from disk on every query
// (docs/query-latency.md); this layout shows what a cache with room does.
func embeddedWithCache(b *testing.B, be schematest.Backend, cacheSize int64) kv.Store {
	b.Helper()
	st, err := embedded.Open(context.Background(), b.TempDir(), embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1, CacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	schematest.CreateWith(b, st, be.Settings, be.TableOptions)
	return st
}

// BenchmarkQueryOneOf1M: an instant query that selects one series out of
// 1 000 000 registered ones by two matchers, `{job="job-0042", shard="s-0007"}`
// (each alone selects 1 000 series), embedded store only (the load is long):
//
//	go test -run '^$' -bench BenchmarkQueryOneOf1M -benchtime 50x -benchmem ./db/
//
// Every series has one sample a minute before end; the load is written in
// requests of 2 000 series, and the store has settled before the queries.
func BenchmarkQueryOneOf1M(b *testing.B) {
	const (
		n    = 1_000_000
		jobs = 1000
	)
	be := schematest.Backends()[0]
	ctx := context.Background()
	st := be.Store(b)
	d, err := db.Open(ctx, db.Options{Store: st, Settings: be.Settings})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	end := time.Now().Truncate(time.Minute)
	ts := end.Add(-time.Minute).UnixMilli()
	lbls := func(i int) labels.Labels {
		return labels.FromStrings("__name__", "bench_huge", "instance", fmt.Sprintf("node-%07d:9100", i),
			"job", fmt.Sprintf("job-%04d", i/(n/jobs)), "shard", fmt.Sprintf("s-%04d", i%(n/jobs)))
	}
	start := time.Now()
	var req write.Request
	for i := range n {
		req.Series = append(req.Series, write.Series{Labels: lbls(i), Samples: []cellenc.Sample{{T: ts, V: float64(i)}}})
		if len(req.Series) == loadBatchSeries || i == n-1 {
			mustWrite(b, d, &req)
			req.Series = req.Series[:0]
		}
	}
	b.Logf("loaded %d series in %s", n, time.Since(start).Round(time.Second))
	settle(b)
	eng := benchEngine()
	qs := `{job="job-0042", shard="s-0007"}`
	var res promql.Vector
	run(b, func() {
		withQuery(b, ctx, eng, d, qs, end, end, 0, func(v parser.Value) { res = v.(promql.Vector) })
	})
	want := 42*(n/jobs) + 7
	if len(res) != 1 || !labels.Equal(res[0].Metric, lbls(want)) || res[0].F != float64(want) {
		b.Fatalf("%s = %v, want %s => %d", qs, res, lbls(want), want)
	}
}
