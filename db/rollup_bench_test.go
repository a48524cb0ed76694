package db_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkRollupQuery30d: 30-day Grafana panels at a 1h step and a 7-day
// one at a 5m step, from rollups (auto) and from raw data, on compacted data
// (10 series × 30 days at 15 s, 1.7 M samples, counters and gauges;
// TSDB_BENCH_ROLLUP_SERIES=1000 for 1 000 series):
//
//	go test -run '^$' -bench BenchmarkRollupQuery30d -benchtime 10x ./db/
//	TSDB_TEST_HBASE_ZK=127.0.0.1:29983 go test -run '^$' -bench BenchmarkRollupQuery30d -benchtime 10x ./db/
//
// It reports ms/query and the points the answer holds. rate and increase
// are computed by the store from the windows when served from a rollup
// (query/rollupfunc.go).
func BenchmarkRollupQuery30d(b *testing.B) {
	const days = 30
	series := 10
	if v := os.Getenv("TSDB_BENCH_ROLLUP_SERIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("TSDB_BENCH_ROLLUP_SERIES=%q is not a number of series", v)
		}
		series = n
	}
	day0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now := day0.Add(days*24*time.Hour + 3*time.Hour)
	for _, be := range schematest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			if !be.Available() {
				b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
			}
			ctx := context.Background()
			// The production layout (16 salts on HBase), measured as
			// BytesPerSample measures: so the store can be compacted too.
			ss := openSizeStore(b, be.Name)
			st, settings := ss.Store, ss.settings
			d, err := db.Open(ctx, db.Options{Store: st, Settings: settings, Now: func() time.Time { return now },
				Rollups: schema.DefaultRollups(), RawRetention: schema.DefaultRawRetention})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			loadStart := time.Now()
			rng := rand.New(rand.NewPCG(1, 2))
			vals := make([]float64, series)
			for day := range days {
				// A day of all series, in requests of at most 100 series.
				for lo := 0; lo < series; lo += 100 {
					var req write.Request
					for s := lo; s < min(lo+100, series); s++ {
						kind := []string{"counter", "gauge"}[s%2]
						ws := write.Series{Labels: labels.FromStrings("__name__", "x", "instance", fmt.Sprintf("h%d", s),
							"job", fmt.Sprintf("j%d", s%10), "kind", kind)}
						for i := range 5760 {
							if kind == "counter" {
								vals[s] += float64(rng.IntN(100))
							} else {
								vals[s] = float64(rng.IntN(1000)) / 10
							}
							ws.Samples = append(ws.Samples, cellenc.Sample{T: day0.Add(time.Duration(day)*24*time.Hour).UnixMilli() + int64(i)*15_000, V: vals[s]})
						}
						req.Series = append(req.Series, ws)
					}
					if _, err := d.Write(ctx, &req); err != nil {
						b.Fatal(err)
					}
				}
				if series >= 100 {
					b.Logf("loaded day %d of %d (%s)", day+1, days, time.Since(loadStart).Round(time.Second))
				}
			}
			c, err := compact.NewCompactor(st, settings, compact.Options{Rollups: schema.DefaultRollups(), Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			stats, err := c.Compact(ctx)
			if err != nil {
				b.Fatal(err)
			}
			// The store's own compaction, as time does (Pebble's; HBase's flush
			// and major compaction), so the deleted raw cells' tombstones are
			// gone, as they are for data older than a few days.
			if _, _, _, err := ss.measure(ctx); err != nil {
				b.Fatal(err)
			}
			b.Logf("loaded and compacted %d samples in %s", stats.Samples, time.Since(loadStart).Round(time.Second))
			end := day0.Add(days * 24 * time.Hour)
			panels := []struct {
				expr  string
				start time.Time
				step  time.Duration
			}{
				{"x", day0.Add(24 * time.Hour), time.Hour},
				{"max_over_time(x[1h])", day0.Add(24 * time.Hour), time.Hour},
				{"sum by (job) (rate(x[1h]))", day0.Add(24 * time.Hour), time.Hour},
				{"increase(x[1d])", day0.Add(24 * time.Hour), time.Hour},
				{"rate(x[5m])", end.Add(-7 * 24 * time.Hour), 5 * time.Minute},
			}
			for _, p := range panels {
				for _, res := range []query.Resolution{query.ResolutionRaw, query.ResolutionAuto} {
					b.Run(fmt.Sprintf("%s/step=%s/%s", p.expr, p.step, res), func(b *testing.B) {
						points := 0
						var infos []string
						for b.Loop() {
							var m promql.Matrix
							m, infos = runPromQL(b, d, p.expr, p.start, end, p.step, res)
							points = 0
							for _, s := range m {
								points += len(s.Floats)
							}
						}
						b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
						b.ReportMetric(float64(points), "points")
						b.Logf("%s, resolution=%s: %q", p.expr, res, infos)
					})
				}
			}
		})
	}
}
