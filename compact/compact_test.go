package compact

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"go.uber.org/goleak"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hour = int64(time.Hour / time.Millisecond)

// day0 is the fixture's first bucket: 2026-11-30 00:00 UTC.
var day0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMilli()

// fixture is a store with a writer and a reader sharing one registry and index,
// holding three series over buckets day0 .. day0+3h (the last one the open bucket
// at the fixture's clock, day0+3h30m, with a grace of 10 minutes).
type fixture struct {
	st       kv.Store
	settings schema.Settings
	w        *write.Writer
	r        *query.Reader
	now      time.Time
	series   []labels.Labels
}

func newFixture(t *testing.T, b schematest.Backend) *fixture {
	t.Helper()
	b.TableOptions.RawRetention = 0 // the fixture's samples are older than any retention would keep
	b.TableOptions.Rollups = testRollups
	st := b.Store(t)
	f := openFixture(t, st, b.Settings)
	f.series = []labels.Labels{
		labels.FromStrings("__name__", "node_cpu_seconds_total", "host", "h1", "cpu", "0", "mode", "idle"),
		labels.FromStrings("__name__", "node_load1", "host", "h2"),
		labels.FromStrings("__name__", "up", "host", "h3", "job", "node"),
	}
	stale := math.Float64frombits(value.StaleNaN)
	req := write.Request{}
	for i, ls := range f.series {
		var samples []cellenc.Sample
		for ts := day0; ts < day0+3*hour+20*60_000; ts += 15_000 {
			v := float64(ts-day0) / 1000 * float64(i+1)
			if i == 2 {
				v = 1
			}
			samples = append(samples, cellenc.Sample{T: ts, V: v})
		}
		samples[100].V = stale // a stale marker keeps its NaN bits through a chunk
		samples[101].V = math.Inf(-1)
		req.Series = append(req.Series, write.Series{Labels: ls, Samples: samples})
	}
	f.writeOnTime(t, req)
	return f
}

// openFixture is a fixture on st, without data yet: a writer and a reader that
// share one series registry and tag index, and the clock at day0+3h30m.
func openFixture(t testing.TB, st kv.Store, settings schema.Settings) *fixture {
	t.Helper()
	reg, post := index.NewRegistry(st, index.RegistryOptions{}), index.NewPostings(st, index.PostingsOptions{})
	f := &fixture{st: st, settings: settings, now: time.UnixMilli(day0 + 3*hour + 30*60_000),
		r: query.NewReader(st, settings, reg, post)}
	w, err := write.New(st, settings, reg, post, write.Options{Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	return f
}

func (f *fixture) write(t *testing.T, req write.Request) {
	t.Helper()
	res, err := f.w.Write(context.Background(), &req)
	if err != nil || len(res.Rejected) > 0 {
		t.Fatalf("write: %v %+v", err, res.Rejected)
	}
}

// writeOnTime writes req as its samples arrive when they are fresh: bucket
// after bucket, each with the writer's clock at the bucket's end (no later
// than the fixture's clock), so that every sample is on time (schema/late.go).
func (f *fixture) writeOnTime(t *testing.T, req write.Request) {
	t.Helper()
	width := f.settings.BucketWidth.Milliseconds()
	now := f.now
	defer func() { f.now = now }()
	byBucket := map[int64]*write.Request{}
	var buckets []int64
	for _, s := range req.Series {
		for _, smp := range s.Samples {
			b := schema.BucketStart(smp.T, f.settings.BucketWidth)
			r := byBucket[b]
			if r == nil {
				r = &write.Request{}
				byBucket[b] = r
				buckets = append(buckets, b)
			}
			if n := len(r.Series); n == 0 || !labels.Equal(r.Series[n-1].Labels, s.Labels) {
				r.Series = append(r.Series, write.Series{Labels: s.Labels})
			}
			last := &r.Series[len(r.Series)-1]
			last.Samples = append(last.Samples, smp)
		}
	}
	slices.Sort(buckets)
	for _, b := range buckets {
		f.now = time.UnixMilli(min(b+width, now.UnixMilli()))
		f.write(t, *byBucket[b])
	}
}

func (f *fixture) compactor(t *testing.T, opts Options) *Compactor {
	t.Helper()
	opts.Now = func() time.Time { return f.now }
	if opts.Grace == 0 {
		opts.Grace = 10 * time.Minute
	}
	c, err := NewCompactor(f.st, f.settings, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dump renders every series' samples as "t=bits" so that NaN payloads compare
// exactly, one line per series.
func (f *fixture) dump(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, ls := range f.series {
		got, err := f.r.Samples(context.Background(), ls, 0, kv.MaxTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:", ls)
		for _, s := range got {
			fmt.Fprintf(&b, " %d=%x", s.T, math.Float64bits(s.V))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cells counts the data table's cells by family; only sealed buckets' raw cells
// are named, by bucket.
func (f *fixture) cells(t *testing.T) (raw, chunk int, rawBuckets map[int64]int) {
	t.Helper()
	rawBuckets = map[int64]int{}
	sc := f.st.Scan(context.Background(), schema.TableData, nil, nil, kv.Families(schema.FamilyRaw, schema.FamilyChunk))
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		_, bucket, err := schema.ParseDataRowTail(row.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range row.Cells {
			switch c.Family {
			case schema.FamilyRaw:
				raw++
				rawBuckets[bucket]++
			case schema.FamilyChunk:
				chunk++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return raw, chunk, rawBuckets
}

// rawOf counts the raw cells of the series of metric on host.
func (f *fixture) rawOf(t *testing.T, host, metric string) int {
	t.Helper()
	prefix := schema.HostMetricPrefix(nil, schema.Salt(host, f.settings.Salts), host, metric)
	sc := f.st.Scan(context.Background(), schema.TableData, prefix, kv.PrefixEnd(prefix), kv.Families(schema.FamilyRaw))
	defer sc.Close()
	n := 0
	for sc.Next() {
		n += len(sc.Row().Cells)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCompactSealedBuckets(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b)
			before := f.dump(t)
			c := f.compactor(t, Options{})
			st, err := c.Compact(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// 3 series x 3 sealed buckets of 240 samples; the open bucket
			// (day0+3h, 80 samples each) stays raw. No rollups asked for, but
			// the store has two rollup tables: each compacted bucket's cell in
			// them is made void (18 writes), so that no reader trusts a cell
			// of fewer samples than the bucket holds. What the pass read is
			// what it compacted: the 9 rows' pending marks and raw cells, not
			// the open bucket's.
			if want := (Stats{Rows: 9, Samples: 9 * 240, RawCells: 9 * 240, RollupCells: 18, RowsRead: 9, CellsRead: 9 + 9*240}); st != want {
				t.Errorf("Stats = %+v, want %+v", st, want)
			}
			raw, chunk, buckets := f.cells(t)
			if raw != 3*80 || chunk != 9 || buckets[day0+3*hour] != 3*80 {
				t.Errorf("after compaction: %d raw cells (by bucket %v), %d chunks; want 240 raw, all in the open bucket, and 9 chunks", raw, buckets, chunk)
			}
			if after := f.dump(t); after != before {
				t.Errorf("samples changed by compaction:\nbefore %s\nafter  %s", before, after)
			}
			if st, err := c.Compact(context.Background()); err != nil || st != (Stats{}) {
				t.Errorf("a second pass = %+v, %v; want nothing to do", st, err)
			}
			cells := f.gotRollups(t, testRollups)
			for name, c := range cells {
				if !strings.HasSuffix(c, " void") {
					t.Errorf("rollup cell %s written without Options.Rollups: %s", name, c)
				}
			}
			if len(cells) != 18 {
				t.Errorf("%d void rollup cells, want 18 (9 buckets, 2 tables)", len(cells))
			}
		})
	}
}

// A crash between the steps leaves every sample readable exactly once, and the
// next pass finishes the job, with the same rollup cells; a crash after the
// deletes leaves nothing to do. Only the salts a pass completed have a
// watermark.
func TestCompactionSurvivesACrashAtEveryStep(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, step := range []string{"rollups written", "chunks written", "raw deleted"} {
			t.Run(b.Name+"/"+step, func(t *testing.T) {
				f := newFixture(t, b)
				before, samples := f.dump(t), f.samples(t)
				crash := errors.New("crash")
				c := f.compactor(t, Options{Rollups: testRollups, afterStep: func(s string) error {
					if s == step {
						return crash
					}
					return nil
				}})
				crashed, err := c.Compact(context.Background())
				if !errors.Is(err, crash) {
					t.Fatalf("Compact = %v, want the crash", err)
				}
				if after := f.dump(t); after != before {
					t.Fatalf("samples after a crash at %q:\nbefore %s\nafter  %s", step, before, after)
				}
				crashedRollups := f.gotRollups(t, testRollups)
				if len(crashedRollups) == 0 {
					t.Errorf("no rollup cell written before the crash at %q", step)
				}
				if wm, err := c.Watermarks(context.Background()); err != nil || len(wm) >= f.settings.Salts {
					t.Errorf("watermarks after the crash = %v, %v; want none for the salt that crashed", wm, err)
				}
				st, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				// The crashed pass counts only the batches it finished (a crash
				// after the deletes finished its batch; the salts after it were
				// not reached); the next pass does the rest, and a batch
				// interrupted after its chunks again.
				if crashed.Rows+st.Rows != 9 || crashed.RollupCells+st.RollupCells != 2*9 {
					t.Errorf("rows rewritten: %d by the crashed pass + %d by the next, rollup cells %d + %d; want 9 and 18 in all",
						crashed.Rows, st.Rows, crashed.RollupCells, st.RollupCells)
				}
				if raw, chunk, _ := f.cells(t); raw != 3*80 || chunk != 9 {
					t.Errorf("after the next pass: %d raw cells, %d chunks; want 240 and 9", raw, chunk)
				}
				if after := f.dump(t); after != before {
					t.Errorf("samples after the next pass:\nbefore %s\nafter  %s", before, after)
				}
				f.checkRollups(t, testRollups, samples)
				final := f.gotRollups(t, testRollups)
				for name, cell := range crashedRollups {
					if final[name] != cell {
						t.Errorf("rollup cell %s changed by the next pass:\nafter the crash %s\nafter the pass  %s", name, cell, final[name])
					}
				}
				f.checkWatermarks(t, f.allWatermarks(f.cutoff()))
			})
		}
	}
}

// A late sample into a compacted bucket is visible at once (raw, merged with the
// chunk) and is folded into the chunk by the next pass; one written while the
// bucket is being compacted (between the chunk and the deletes) survives the
// deletes, and its late mark brings it into the same pass's scan of late
// marks, which comes after the on-time ones.
func TestLateSamplesAreMergedAndCompactedAgain(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b)
			ls := f.series[1]
			late := func(ts int64, v float64) write.Request {
				return write.Request{Series: []write.Series{{Labels: ls, Samples: []cellenc.Sample{{T: ts, V: v}}}}}
			}
			// Written while the salt of the series is between its two steps.
			during := day0 + 7_500 // between two 15s samples of bucket day0
			written := false
			c := f.compactor(t, Options{Rollups: testRollups, afterStep: func(s string) error {
				if s == "chunks written" && !written {
					written = true
					f.write(t, late(during, -1))
				}
				return nil
			}})
			if _, err := c.CompactSalt(context.Background(), schema.Salt("h2", f.settings.Salts)); err != nil {
				t.Fatal(err)
			}
			if n := f.rawOf(t, "h2", "node_load1"); n != 80 {
				t.Errorf("%d raw cells of the series after its pass, want the open bucket's 80: the late sample folded in", n)
			}
			// Written after the pass.
			after := day0 + hour + 1
			f.write(t, late(after, -2))

			check := func(when string) {
				t.Helper()
				got, err := f.r.Samples(context.Background(), ls, day0, day0+hour+15_000)
				if err != nil {
					t.Fatal(err)
				}
				var found int
				for _, s := range got {
					if (s.T == during && s.V == -1) || (s.T == after && s.V == -2) {
						found++
					}
				}
				if found != 2 || len(got) != 240+2+2 {
					t.Errorf("%s: %d samples with %d of the 2 late ones; want %d", when, len(got), found, 240+2+2)
				}
			}
			check("before the next pass")
			// The rollups of the bucket of the sample written after the pass lack
			// it so far; every other rollup cell of the series is as it will
			// stay.
			want, got := f.wantRollups(t, testRollups, f.samples(t)), f.gotRollups(t, testRollups)
			key := f.seriesKey(t, ls)
			key.BucketStart = day0
			var stale []string
			for name := range want {
				if got[name] != want[name] && strings.Contains(name, fmt.Sprintf("%q", schema.DataRowKey(nil, key))) {
					stale = append(stale, name)
				}
			}
			slices.Sort(stale)
			var wantStale []string
			for _, r := range testRollups {
				for _, bucket := range []int64{day0 + hour} {
					wantStale = append(wantStale, cellName(schema.RollupTable(r.Resolution), schema.DataRowKey(nil, key), schema.AppendRollupQualifier(nil, bucket)))
				}
			}
			slices.Sort(wantStale)
			if !slices.Equal(stale, wantStale) {
				t.Errorf("rollup cells without the late samples: %q, want %q", stale, wantStale)
			}
			c = f.compactor(t, Options{Rollups: testRollups})
			st, err := c.CompactSalt(context.Background(), schema.Salt("h2", f.settings.Salts))
			if err != nil {
				t.Fatal(err)
			}
			// It reads that row and nothing else: its chunk and late raw cell,
			// its rollup cells (2 resolutions) and its late mark.
			if want := (Stats{Rows: 1, Samples: 240 + 1, RawCells: 1, RollupCells: 2, RowsRead: 1, CellsRead: 2 + 2 + 1}); st != want {
				t.Errorf("the next pass over the series' salt = %+v, want %+v", st, want)
			}
			if _, err := c.Compact(context.Background()); err != nil { // the other salts
				t.Fatal(err)
			}
			check("after the next pass")
			f.checkRollups(t, testRollups, f.samples(t))
			if n := f.rawOf(t, "h2", "node_load1"); n != 80 {
				t.Errorf("%d raw cells of the series after the next pass, want the open bucket's 80", n)
			}
			if raw, chunk, _ := f.cells(t); raw != 3*80 || chunk != 9 {
				t.Errorf("%d raw cells, %d chunks; want 240 and 9", raw, chunk)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{Grace: -time.Second, BatchRows: -1}.Validate()
	want := "compact: Options.Grace must not be negative (0 means the default, 1h0m0s), got -1s\n" +
		"compact: Options.BatchRows must not be negative (0 means the default, 500), got -1"
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %s", err, want)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
}
