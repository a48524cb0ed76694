package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// Benchmarks of PromQL over db.DB, the real engine on each backend:
//
//	go test -run '^$' -bench BenchmarkQuery -benchtime 20x ./db/
//	TSDB_TEST_HBASE_ZK=127.0.0.1:22331 go test -run '^$' -bench BenchmarkQuery -benchtime 20x ./db/
//
// range-1k-series: `sum by (job) (rate(bench_requests_total[5m]))` over 1 h at a 15 s
// step (241 steps) on 1 000 counters scraped every 15 s (1 h 10 m of data, 280
// samples each, spread over 10 jobs). instant-1-of-100k: an instant query that
// selects 1 series out of 100 000 by two matchers, `{job="job-042", shard="s-0007"}`
// (each alone selects 1 000 and 100 series). The data is loaded once per backend
// per benchmark process (the outer b.Run), and the load time is reported
// (load-s); the benchmarks report ms/query, and the series and samples each query
// touched.

const (
	benchStep       = 15 * time.Second
	rangeSeries     = 1000
	rangeJobs       = 10
	bigSeries       = 100_000
	bigJobs         = 100
	loadBatchSeries = 2000
)

func BenchmarkQuery(b *testing.B) {
	for _, be := range schematest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			if !be.Available() {
				b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
			}
			ctx := context.Background()
			end := time.Now().Truncate(time.Minute)
			d, err := db.Open(ctx, db.Options{Store: be.Store(b), Settings: be.Settings, Write: write.Options{Limits: write.DefaultLimits()}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			eng := benchEngine()

			rangeLoad := loadRangeSeries(b, d, end)
			b.Run("range-1k-series", func(b *testing.B) {
				qs := `sum by (job) (rate(bench_requests_total[5m]))`
				var res promql.Matrix
				run(b, func() {
					withQuery(b, ctx, eng, d, qs, end.Add(-time.Hour), end, benchStep, func(v parser.Value) { res = v.(promql.Matrix) })
				})
				if len(res) != rangeJobs || len(res[0].Floats) != 241 {
					b.Fatalf("%s: %d series (want %d), %d points (want 241)", qs, len(res), rangeJobs, len(res[0].Floats))
				}
				// Every counter grows by its index+1 per 15 s: job j sums series
				// j, j+10, ... (100 of them).
				want := 0.0
				for i := 0; i < rangeSeries; i += rangeJobs {
					want += float64(i+1) / benchStep.Seconds()
				}
				if got := res[0].Floats[120].F; !closeRel(got, want) {
					b.Fatalf("%s{%s} = %v, want %v", qs, res[0].Metric, got, want)
				}
				b.ReportMetric(rangeLoad.Seconds(), "load-s")
				b.ReportMetric(float64(rangeSeries), "series")
				b.ReportMetric(float64(rangeSeries*(65*60/15+1)), "samples-stored")
			})

			bigLoad := loadBigSeries(b, d, end)
			b.Run("instant-1-of-100k", func(b *testing.B) {
				qs := `{job="job-042", shard="s-0007"}`
				var res promql.Vector
				run(b, func() {
					withQuery(b, ctx, eng, d, qs, end, end, 0, func(v parser.Value) { res = v.(promql.Vector) })
				})
				want := bigLabels(42*(bigSeries/bigJobs) + 7)
				if len(res) != 1 || !labels.Equal(res[0].Metric, want) || res[0].F != 42007 {
					b.Fatalf("%s = %v, want %s => 42007", qs, res, want)
				}
				b.ReportMetric(bigLoad.Seconds(), "load-s")
				b.ReportMetric(bigSeries, "series-stored")
			})
		})
	}
}

// run times fn b.N times and reports ms/query, and the process' CPU time per
// query (cpu-ms/query: user + system, every goroutine, the store's included),
// which a busy machine disturbs less than the wall time.
func run(b *testing.B, fn func()) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), processCPU(b)
	for range b.N {
		fn()
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/query")
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/query")
}

func closeRel(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(a, b, -a, -b)
}

// loadRangeSeries writes the range benchmark's 1 000 counters: one sample every
// 15 s for 1 h 5 m up to end, series i growing by i+1 per sample.
func loadRangeSeries(b *testing.B, d *db.DB, end time.Time) time.Duration {
	b.Helper()
	start := time.Now()
	first := end.Add(-65 * time.Minute)
	n := int(65 * time.Minute / benchStep)
	var req write.Request
	for i := range rangeSeries {
		s := write.Series{Labels: labels.FromStrings(
			"__name__", "bench_requests_total",
			"instance", fmt.Sprintf("host-%04d:9100", i),
			"job", fmt.Sprintf("job-%d", i%rangeJobs),
		)}
		for k := range n + 1 {
			s.Samples = append(s.Samples, cellenc.Sample{T: first.Add(time.Duration(k) * benchStep).UnixMilli(), V: float64(k * (i + 1))})
		}
		req.Series = append(req.Series, s)
		if len(req.Series) == 50 || i == rangeSeries-1 {
			mustWrite(b, d, &req)
			req.Series = req.Series[:0]
		}
	}
	took := time.Since(start)
	b.Logf("loaded %d series x %d samples in %s", rangeSeries, n+1, took.Round(time.Millisecond))
	return took
}

// bigLabels are the labels of series i of the 100 000: job picks a block of
// 1 000, shard one of 1 000 values that recur in every job.
func bigLabels(i int) labels.Labels {
	return labels.FromStrings(
		"__name__", "bench_big",
		"instance", fmt.Sprintf("node-%05d:9100", i),
		"job", fmt.Sprintf("job-%03d", i/(bigSeries/bigJobs)),
		"shard", fmt.Sprintf("s-%04d", i%(bigSeries/bigJobs)),
	)
}

// loadBigSeries writes 100 000 series, each one sample a minute before end whose
// value is the series' number.
func loadBigSeries(b *testing.B, d *db.DB, end time.Time) time.Duration {
	b.Helper()
	start := time.Now()
	ts := end.Add(-time.Minute).UnixMilli()
	var req write.Request
	for i := range bigSeries {
		req.Series = append(req.Series, write.Series{Labels: bigLabels(i), Samples: []cellenc.Sample{{T: ts, V: float64(i)}}})
		if len(req.Series) == loadBatchSeries || i == bigSeries-1 {
			mustWrite(b, d, &req)
			req.Series = req.Series[:0]
		}
	}
	took := time.Since(start)
	b.Logf("loaded %d series in %s", bigSeries, took.Round(time.Millisecond))
	return took
}

func mustWrite(b *testing.B, d *db.DB, req *write.Request) {
	b.Helper()
	res, err := d.Write(context.Background(), req)
	if err != nil {
		b.Fatalf("load: %v", err)
	}
	if err := write.RejectionError(res); err != nil {
		b.Fatalf("load: %v", err)
	}
}

// benchEngine is the PromQL engine of the query benchmarks: limits far above
// what they ask, so that only the store's speed shows.
func benchEngine() *query.Engine {
	return query.NewEngine(promql.EngineOpts{
		MaxSamples:           50_000_000,
		Timeout:              5 * time.Minute,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		Parser:               parser.NewParser(parser.Options{}),
	})
}

// withQuery evaluates expr on q — an instant query at end when step is 0, else
// a range query from start to end — fails tb on any error, and hands the result
// to use before the query is closed (the engine reuses its memory after).
func withQuery(tb testing.TB, ctx context.Context, eng promql.QueryEngine, q storage.Queryable, expr string,
	start, end time.Time, step time.Duration, use func(parser.Value)) {
	tb.Helper()
	var (
		qry promql.Query
		err error
	)
	if step == 0 {
		qry, err = eng.NewInstantQuery(ctx, q, nil, expr, end)
	} else {
		qry, err = eng.NewRangeQuery(ctx, q, nil, expr, start, end, step)
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer qry.Close()
	r := qry.Exec(ctx)
	if r.Err != nil {
		tb.Fatalf("%s: %v", expr, r.Err)
	}
	use(r.Value)
}
