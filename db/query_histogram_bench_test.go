package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkQueryHistograms runs queries over native histogram series through
// the real PromQL engine, on the embedded store, raw and compacted:
//
//	go test -run '^$' -bench BenchmarkQueryHistograms -benchtime 20x -benchmem ./db/
//
// The load: 100 series × 240 integer counter histograms at 15 s (the hour
// ending at end), schema 3 with 30 buckets in two spans, growing as a counter.
// Select hands out histograms as Prometheus' head would (through its chunk
// encoding and back, query/chunkencode.go asHead, through cellenc.ChunkEncoder), which these numbers
// include. The cases:
//
//	rate-5m        sum(rate(h[5m])), the hour at a 1 m step
//	quantile-5m    histogram_quantile(0.9, sum(rate(h[5m]))), the same
//	one-series     h{series="7"}, instant at end
func BenchmarkQueryHistograms(b *testing.B) {
	const (
		series   = 100
		samples  = 240
		interval = 15 * time.Second
	)
	be := schematest.Backends()[0]
	end := time.Now().Truncate(time.Hour).Add(-time.Hour).Add(30 * time.Minute)
	first := end.Add(-time.Duration(samples-1) * interval)
	for _, layout := range []string{"raw", "compacted"} {
		b.Run(layout, func(b *testing.B) {
			ctx := context.Background()
			st := be.Store(b)
			// The writer's clock follows the load: its samples are on time, as
			// a live Prometheus' are (schema/late.go).
			clock := new(loadClock)
			d, err := db.Open(ctx, db.Options{Store: st, Settings: be.Settings, Write: write.Options{Limits: write.DefaultLimits(), Now: clock.Now}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			for i := range samples {
				clock.ms.Store(first.Add(time.Duration(i) * interval).UnixMilli())
				req := write.Request{}
				for s := range series {
					req.Series = append(req.Series, write.Series{
						Labels:     labels.FromStrings("__name__", "h", "job", "bench", "series", fmt.Sprint(s)),
						Histograms: []cellenc.HistogramSample{{T: first.Add(time.Duration(i) * interval).UnixMilli(), H: benchHistogram(i + s)}},
					})
				}
				mustWrite(b, d, &req)
			}
			if layout == "compacted" {
				compactAll(b, st, be.Settings, end, true)
			}
			settle(b)
			eng := benchEngine()
			for _, c := range []struct {
				name string
				expr string
				step time.Duration
			}{
				{"rate-5m", `sum(rate(h[5m]))`, time.Minute},
				{"quantile-5m", `histogram_quantile(0.9, sum(rate(h[5m])))`, time.Minute},
				{"one-series", `h{series="7"}`, 0},
			} {
				b.Run(c.name, func(b *testing.B) {
					run(b, func() {
						withQuery(b, ctx, eng, d, c.expr, end.Add(-time.Hour), end, c.step, func(v parser.Value) {
							if v.String() == "" {
								b.Fatalf("%s: empty result", c.expr)
							}
						})
					})
				})
			}
		})
	}
}

// benchHistogram is a counter histogram of schema 3 with 30 buckets in two
// spans whose counts grow with i.
func benchHistogram(i int) *histogram.Histogram {
	h := &histogram.Histogram{
		Schema:        3,
		ZeroThreshold: 1e-128,
		ZeroCount:     uint64(i),
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 20}, {Offset: 5, Length: 10}},
	}
	var prev int64
	for k := range 30 {
		c := int64(i + k)
		h.PositiveBuckets = append(h.PositiveBuckets, c-prev)
		prev = c
		h.Count += uint64(c)
	}
	h.Count += h.ZeroCount
	h.Sum = float64(h.Count) * 1.5
	return h
}
