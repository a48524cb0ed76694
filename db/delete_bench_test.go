package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkDelete measures what a delete costs on compacted data (chunks and
// 5m/1h rollups, the production layout of openSizeStore: 16 salts on HBase):
//
//   - series-day: one series' whole day, 5 760 samples at 15 s (24 chunks
//     rewritten empty, 48 rollup cells voided);
//   - 10k-series: one hour of 10 000 series, 120 samples each at 30 s
//     (10 000 chunks, 20 000 rollup cells).
//
// Each iteration writes and compacts its own series first (not timed), then
// deletes them. It reports ms/delete and cpu-ms/delete (this process' CPU:
// the HBase server's is not in it).
//
//	go test -run '^$' -bench BenchmarkDelete -benchtime 3x ./db/
//	TSDB_TEST_HBASE_ZK=127.0.0.1:27735 go test -run '^$' -bench BenchmarkDelete -benchtime 3x ./db/
func BenchmarkDelete(b *testing.B) {
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := day0.Add(48 * time.Hour)
	for _, be := range schematest.Backends() {
		for _, tc := range []struct {
			name   string
			series int
			span   time.Duration
			step   int64 // ms
		}{
			{"series-day", 1, 24 * time.Hour, 15_000},
			{"10k-series", 10_000, time.Hour, 30_000},
		} {
			b.Run(be.Name+"/"+tc.name, func(b *testing.B) {
				if !be.Available() {
					b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
				}
				ctx := context.Background()
				ss := openSizeStore(b, be.Name)
				d, err := db.Open(ctx, db.Options{Store: ss.Store, Settings: ss.settings, Now: func() time.Time { return now },
					Rollups: schema.DefaultRollups(), RawRetention: schema.DefaultRawRetention})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { d.Close() })
				c, err := compact.NewCompactor(ss.Store, ss.settings, compact.Options{Rollups: schema.DefaultRollups(),
					Now: func() time.Time { return now }})
				if err != nil {
					b.Fatal(err)
				}
				var wall, cpu time.Duration
				var st compact.DeleteStats
				b.ResetTimer()
				for iter := range b.N {
					b.StopTimer()
					job := fmt.Sprintf("bench%d", iter)
					for lo := 0; lo < tc.series; lo += 100 {
						var req write.Request
						for s := lo; s < min(lo+100, tc.series); s++ {
							ws := write.Series{Labels: labels.FromStrings("__name__", "x", "instance", fmt.Sprintf("h%d", s), "job", job)}
							for ts := day0.UnixMilli(); ts < day0.Add(tc.span).UnixMilli(); ts += tc.step {
								ws.Samples = append(ws.Samples, cellenc.Sample{T: ts, V: float64(ts % 1000)})
							}
							req.Series = append(req.Series, ws)
						}
						if _, err := d.Write(ctx, &req); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := c.Compact(ctx); err != nil {
						b.Fatal(err)
					}
					cpu0, wall0 := processCPU(b), time.Now()
					b.StartTimer()
					st, err = d.Delete(ctx, db.DeleteRequest{
						MatcherSets: [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "job", job)}},
						Mint:        day0.UnixMilli(), Maxt: day0.Add(tc.span).UnixMilli()},
						compact.DeleteOptions{Owner: "bench"})
					b.StopTimer()
					wall += time.Since(wall0)
					cpu += processCPU(b) - cpu0
					if err != nil {
						b.Fatal(err)
					}
					if want := tc.series * int(tc.span.Milliseconds()/tc.step); st.Series != tc.series || st.Samples != want {
						b.Fatalf("deleted %+v, want %d series and %d samples", st, tc.series, want)
					}
				}
				b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms/delete")
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/delete")
				b.ReportMetric(float64(st.Rows), "rows")
				b.ReportMetric(float64(st.Samples), "samples")
				b.ReportMetric(float64(st.RollupCells), "rollup-cells")
			})
		}
	}
}
