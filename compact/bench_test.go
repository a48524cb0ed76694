package compact

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// BenchmarkCompact measures one compaction pass over a backlog of sealed
// buckets, without rollups and with the default resolutions (5m and 1h): the
// pass's samples/s (on the embedded store, with Pebble compacted before it) and,
// on the embedded store, what the rollup tables take on disk per sample once
// Pebble compacted them (rollup-B/sample; chunk
// compaction's own bytes/sample is db's BenchmarkBytesPerSample).
//
//	go test -run '^$' -bench Compact -benchtime 1x ./compact/
//	TSDB_BENCH_SERIES=1000 TSDB_BENCH_HOURS=24 go test -run '^$' -bench Compact -benchtime 1x -timeout 1h ./compact/
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh status) go test -run '^$' -bench Compact/hbase -benchtime 1x ./compact/
//
// The data: TSDB_BENCH_SERIES series [200], 20 to a host, scraped every 15s for
// TSDB_BENCH_HOURS hours [6] from midnight UTC; half of them counters (integer
// increments, a reset now and then), half gauges (values of a few significant
// digits), written through write.Writer in requests of 2000 samples.
func BenchmarkCompact(b *testing.B) {
	series, hours := benchEnv(b, "TSDB_BENCH_SERIES", 200), benchEnv(b, "TSDB_BENCH_HOURS", 6)
	for _, be := range schematest.Backends() {
		for _, rollups := range [][]schema.Rollup{nil, testRollups} {
			name := be.Name + "/rollups=" + schema.FormatRollups(rollups)
			b.Run(name, func(b *testing.B) {
				if !be.Available() {
					b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
				}
				var (
					st      Stats
					elapsed time.Duration
					bytes   int64
				)
				for range b.N {
					b.StopTimer()
					f, samples := benchFixture(b, be, series, hours)
					c, err := NewCompactor(f.st, f.settings, Options{Rollups: rollups, Now: func() time.Time { return time.UnixMilli(day0 + 48*hour) }})
					if err != nil {
						b.Fatal(err)
					}
					if es, ok := f.st.(*embedded.Store); ok {
						// Settle the ingest's background compactions first, so
						// they do not run during the pass.
						if err := es.Compact(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					start := time.Now()
					st, err = c.Compact(context.Background())
					elapsed = time.Since(start)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					if st.Samples != samples || st.RollupCells != len(rollups)*st.Rows {
						b.Fatalf("compacted %+v, want all %d samples and %d rollup cells a row", st, samples, len(rollups))
					}
					if es, ok := f.st.(*embedded.Store); ok && len(rollups) > 0 {
						ctx := context.Background()
						if err := es.Compact(ctx); err != nil {
							b.Fatal(err)
						}
						u, err := es.DiskUsage(ctx)
						if err != nil {
							b.Fatal(err)
						}
						bytes = 0
						for _, r := range rollups {
							n := u.Tables[schema.RollupTable(r.Resolution)]
							bytes += n
							b.ReportMetric(float64(n)/float64(samples), schema.RollupTable(r.Resolution)+"-B/sample")
						}
					}
				}
				b.ReportMetric(float64(st.Samples)/elapsed.Seconds(), "samples/s")
				b.ReportMetric(float64(st.Rows)/elapsed.Seconds(), "rows/s")
				if bytes > 0 {
					b.ReportMetric(float64(bytes)/float64(st.Samples), "rollup-B/sample")
				}
				b.Logf("%s: %d series x %dh: %+v in %s", name, series, hours, st, elapsed.Round(time.Millisecond))
			})
		}
	}
}

func benchEnv(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// benchFixture is a fresh store of the backend (tables kept forever, the
// tests' rollup tables) holding series x hours of samples from day0; it
// returns the number of samples written.
func benchFixture(b *testing.B, be schematest.Backend, series, hours int) (*fixture, int) {
	b.Helper()
	be.TableOptions.RawRetention = 0
	be.TableOptions.Rollups = testRollups
	st := be.Store(b)
	f := openFixture(b, st, be.Settings)
	rng := rand.New(rand.NewPCG(1, 2))
	steps := hours * int(time.Hour/(15*time.Second))
	written := 0
	req := write.Request{}
	flush := func() {
		res, err := f.w.Write(context.Background(), &req)
		if err != nil || len(res.Rejected) > 0 {
			b.Fatalf("write: %v %+v", err, res.Rejected)
		}
		req = write.Request{}
	}
	for i := range series {
		ls := labels.FromStrings("__name__", fmt.Sprintf("m%d_total", i%20), "host", fmt.Sprintf("h%d", i/20), "job", "node")
		samples := make([]cellenc.Sample, 0, steps)
		v := float64(rng.IntN(1000))
		for s := range steps {
			if i%2 == 0 {
				if rng.IntN(5000) == 0 {
					v = 0
				} else {
					v += float64(rng.IntN(1000))
				}
			} else {
				v = float64(rng.IntN(100000)) / 100
			}
			samples = append(samples, cellenc.Sample{T: day0 + int64(s)*15_000 + int64(i%20)*100, V: v})
		}
		for len(samples) > 0 {
			n := min(len(samples), 2000)
			req.Series = append(req.Series, write.Series{Labels: ls, Samples: samples[:n]})
			samples = samples[n:]
			written += n
			flush()
		}
	}
	return f, written
}
