package compact

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// testRollups are the resolutions of the tests' stores and compactions: the
// defaults' 5m and 1h, kept forever (the fixtures' samples are older than a
// retention would keep).
var testRollups = []schema.Rollup{{Resolution: 5 * time.Minute}, {Resolution: time.Hour}}

// seriesKey returns the data key of series ls (BucketStart unset), read from
// its data rows: the fixtures give every series a (host, metric) of its own.
func (f *fixture) seriesKey(t *testing.T, ls labels.Labels) schema.DataKey {
	t.Helper()
	host, metric := schema.HostOf(ls, f.settings.HostLabels), ls.Get(labels.MetricName)
	salt := schema.Salt(host, f.settings.Salts)
	prefix := schema.HostMetricPrefix(nil, salt, host, metric)
	sc := f.st.Scan(context.Background(), schema.TableData, prefix, kv.PrefixEnd(prefix), kv.Families(schema.FamilyTags))
	defer sc.Close()
	var k schema.DataKey
	for sc.Next() {
		got, err := schema.ParseDataRowKey(sc.Row().Key)
		if err != nil {
			t.Fatal(err)
		}
		if k.SeriesID != 0 && got.SeriesID != k.SeriesID {
			t.Fatalf("two series under %q/%q: %d and %d", host, metric, k.SeriesID, got.SeriesID)
		}
		k = got
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if k.SeriesID == 0 {
		t.Fatalf("no data row of %s", ls)
	}
	k.BucketStart = 0
	return k
}

// samples returns every series' samples as the reader sees them.
func (f *fixture) samples(t *testing.T) [][]cellenc.Sample {
	t.Helper()
	out := make([][]cellenc.Sample, len(f.series))
	for i, ls := range f.series {
		got, err := f.r.Samples(context.Background(), ls, 0, kv.MaxTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = got
	}
	return out
}

// cutoff is the compaction cutoff at the fixture's clock with the tests'
// grace of 10 minutes.
func (f *fixture) cutoff() int64 {
	return schema.BucketStart(f.now.Add(-10*time.Minute).UnixMilli(), f.settings.BucketWidth)
}

// fmtFloat renders f exactly (its bits), or "NaN" for every NaN when loose.
func fmtFloat(f float64, loose bool) string {
	if loose && math.IsNaN(f) {
		return "NaN"
	}
	return fmt.Sprintf("%x", math.Float64bits(f))
}

// fmtWindows renders windows field by field, floats by their bits (any NaN
// as "NaN" when loose), so that two renderings are equal exactly when the
// windows are.
func fmtWindows(ws []cellenc.RollupWindow, loose bool) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "[end=%d n=%d sum=%s min=%s max=%s first=%d/%s last=%d/%s resets=%s stale=%d]",
			w.End, w.Count, fmtFloat(w.Sum, loose), fmtFloat(w.Min, loose), fmtFloat(w.Max, loose),
			w.FirstT, fmtFloat(w.FirstV, loose), w.LastT, fmtFloat(w.LastV, loose), fmtFloat(w.Resets, loose), w.StaleT)
	}
	return b.String()
}

// cellName names a rollup cell: table, row and qualifier.
func cellName(table string, row, qualifier []byte) string {
	return fmt.Sprintf("%s %q %x", table, row, qualifier)
}

// wantRollups returns the rollup cells that compaction must have written for
// the series' samples (samples[i] are f.series[i]'s): for every resolution and
// every sealed bucket with a sample (stale markers included), the cell named
// by the series' key with the bucket's day, holding cellenc.AggregateWindows of
// the bucket's samples at the bucket's last millisecond.
func (f *fixture) wantRollups(t *testing.T, rollups []schema.Rollup, samples [][]cellenc.Sample) map[string]string {
	t.Helper()
	width, cutoff := f.settings.BucketWidth, f.cutoff()
	want := map[string]string{}
	for i, ls := range f.series {
		key := f.seriesKey(t, ls)
		byBucket := map[int64][]cellenc.Sample{}
		for _, s := range samples[i] {
			b := schema.BucketStart(s.T, width)
			byBucket[b] = append(byBucket[b], s)
		}
		for b, bs := range byBucket {
			if b+width.Milliseconds() > cutoff {
				continue
			}
			k := key
			k.BucketStart = schema.RollupRowStart(b)
			for _, r := range rollups {
				name := cellName(schema.RollupTable(r.Resolution), schema.DataRowKey(nil, k), schema.AppendRollupQualifier(nil, b))
				want[name] = fmt.Sprintf("ts=%d %s", b+width.Milliseconds()-1, fmtWindows(cellenc.AggregateWindows(bs, nil, r.Resolution), false))
			}
		}
	}
	return want
}

// rollupCell is one decoded rollup cell.
type rollupCell struct {
	key         schema.DataKey // BucketStart: the row's day
	bucketStart int64
	ts          int64
	windows     []cellenc.RollupWindow
	void        bool // a void cell (cellenc.IsVoidRollupValue): no windows
}

// rollupCells reads every cell of the rollup tables of rollups, decoded, by
// resolution, in the tables' order (series, then day, then bucket).
func (f *fixture) rollupCells(t *testing.T, rollups []schema.Rollup) map[time.Duration][]rollupCell {
	t.Helper()
	out := map[time.Duration][]rollupCell{}
	for _, r := range rollups {
		sc := f.st.Scan(context.Background(), schema.RollupTable(r.Resolution), nil, nil)
		for sc.Next() {
			row := sc.Row()
			k, err := schema.ParseDataRowKey(row.Key)
			if err != nil {
				t.Fatal(err)
			}
			if k.BucketStart != schema.RollupRowStart(k.BucketStart) {
				t.Errorf("rollup row %q starts at %d, not at a day", row.Key, k.BucketStart)
			}
			for _, c := range row.Cells {
				if c.Family != schema.FamilyRollup {
					t.Errorf("rollup row %q has a cell of family %q", row.Key, c.Family)
				}
				b, err := schema.DecodeRollupQualifier(c.Qualifier, k.BucketStart)
				if err != nil {
					t.Fatal(err)
				}
				if cellenc.IsVoidRollupValue(c.Value) {
					if len(c.Value) != 9 {
						t.Errorf("void rollup cell %s of %d bytes, want 9", cellName(schema.RollupTable(r.Resolution), row.Key, c.Qualifier), len(c.Value))
					}
					out[r.Resolution] = append(out[r.Resolution], rollupCell{key: k, bucketStart: b, ts: c.Timestamp, void: true})
					continue
				}
				ws, err := cellenc.DecodeRollupWindows(nil, c.Value, b, r.Resolution)
				if err != nil {
					t.Fatalf("rollup cell %s: %v", cellName(schema.RollupTable(r.Resolution), row.Key, c.Qualifier), err)
				}
				out[r.Resolution] = append(out[r.Resolution], rollupCell{key: k, bucketStart: b, ts: c.Timestamp, windows: ws})
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		sc.Close()
	}
	return out
}

// gotRollups renders the rollup tables' cells as wantRollups does.
func (f *fixture) gotRollups(t *testing.T, rollups []schema.Rollup) map[string]string {
	t.Helper()
	got := map[string]string{}
	for res, cells := range f.rollupCells(t, rollups) {
		for _, c := range cells {
			name := cellName(schema.RollupTable(res), schema.DataRowKey(nil, c.key), schema.AppendRollupQualifier(nil, c.bucketStart))
			if _, dup := got[name]; dup {
				t.Errorf("rollup cell %s read twice", name)
			}
			got[name] = fmt.Sprintf("ts=%d %s", c.ts, fmtWindows(c.windows, false))
			if c.void {
				got[name] = fmt.Sprintf("ts=%d void", c.ts)
			}
		}
	}
	return got
}

// checkRollups fails the test unless the rollup tables hold exactly the cells
// wantRollups gives for samples: no cell missing, none extra, each equal to
// the bit.
func (f *fixture) checkRollups(t *testing.T, rollups []schema.Rollup, samples [][]cellenc.Sample) {
	t.Helper()
	want, got := f.wantRollups(t, rollups, samples), f.gotRollups(t, rollups)
	if len(want) == 0 {
		t.Fatal("no rollup cell expected: the test checks nothing")
	}
	bad := 0
	for _, name := range slices.Sorted(maps.Keys(want)) {
		switch g, ok := got[name]; {
		case !ok:
			t.Errorf("rollup cell %s missing; want %s", name, want[name])
			bad++
		case g != want[name]:
			t.Errorf("rollup cell %s:\ngot  %s\nwant %s", name, g, want[name])
			bad++
		}
		if bad >= 5 {
			t.Fatalf("more cells differ; %d expected, %d read", len(want), len(got))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("rollup cell %s not expected: %s", name, got[name])
		}
	}
}

// checkMerges fails the test unless, for each resolution and series, the
// windows of its rollup cells merged (cellenc.RollupWindow.Merge, in bucket
// order, the parts of one window from consecutive buckets) are
// cellenc.AggregateWindows of the series' sealed samples: what a reader of the
// rollups gets is the whole window. Floats compare by their bits, any NaN
// equal to any other (a merged sum is a plain sum of compensated sums: the
// tests' values are integers, so both are exact).
func (f *fixture) checkMerges(t *testing.T, rollups []schema.Rollup, samples [][]cellenc.Sample) (split int) {
	t.Helper()
	cutoff := f.cutoff()
	cells := f.rollupCells(t, rollups)
	for i, ls := range f.series {
		key := f.seriesKey(t, ls)
		var sealed []cellenc.Sample
		for _, s := range samples[i] {
			if s.T < cutoff {
				sealed = append(sealed, s)
			}
		}
		for _, r := range rollups {
			// Days come newest first in the table (^dayStart in the key): put
			// the series' cells in time order.
			var own []rollupCell
			for _, c := range cells[r.Resolution] {
				if c.key.SeriesID == key.SeriesID {
					own = append(own, c)
				}
			}
			slices.SortFunc(own, func(a, b rollupCell) int { return cmp.Compare(a.bucketStart, b.bucketStart) })
			var merged []cellenc.RollupWindow
			for _, c := range own {
				for _, w := range c.windows {
					if n := len(merged); n > 0 && merged[n-1].End == w.End {
						merged[n-1] = merged[n-1].Merge(w)
						split++
						continue
					}
					merged = append(merged, w)
				}
			}
			want := cellenc.AggregateWindows(sealed, nil, r.Resolution)
			if g, w := fmtWindows(merged, true), fmtWindows(want, true); g != w {
				t.Errorf("%s at %s: merged rollup windows\n%s\nwant the whole windows\n%s", ls, r.Resolution, g, w)
			}
		}
	}
	return split
}

// randomSamples are a series' samples from from to to, about every 15s with a
// jitter: integer values (a counter that resets now and then, or a gauge),
// NaNs, infinities (gauges), stale markers, gaps of 10 to 70 minutes (after a
// stale marker, sometimes with a lone stale marker in the gap).
func randomSamples(rng *rand.Rand, from, to int64, counter bool) []cellenc.Sample {
	stale := math.Float64frombits(value.StaleNaN)
	var out []cellenc.Sample
	v := float64(rng.IntN(1000))
	for t := from + rng.Int64N(15_000); t < to; t += 14_000 + rng.Int64N(2_001) {
		switch p := rng.IntN(200); {
		case p < 3:
			out = append(out, cellenc.Sample{T: t, V: stale})
			t += (10 + rng.Int64N(60)) * 60_000
			if rng.IntN(3) == 0 && t < to {
				out = append(out, cellenc.Sample{T: t, V: stale}) // alone in its windows
				t += (10 + rng.Int64N(30)) * 60_000
			}
		case p < 7:
			out = append(out, cellenc.Sample{T: t, V: stale})
		case p < 11:
			out = append(out, cellenc.Sample{T: t, V: math.NaN()})
		case p < 13 && !counter:
			out = append(out, cellenc.Sample{T: t, V: math.Inf(1 - 2*rng.IntN(2))})
		default:
			switch {
			case !counter:
				v = float64(rng.IntN(2001) - 1000)
			case rng.IntN(60) == 0:
				v = float64(rng.IntN(10)) // a reset
			default:
				v += float64(rng.IntN(100))
			}
			out = append(out, cellenc.Sample{T: t, V: v})
		}
	}
	return out
}

// newRandomFixture is a store of the backend with the given bucket width and
// the tests' rollup tables, holding random series (randomSamples) of six hosts
// from day0-2h (the day before) to day0+3h20m, one of them with no sample from
// day0+1h to day0+2h, and one at whole 15s steps (so on window and bucket
// boundaries). It returns the samples written.
func newRandomFixture(t *testing.T, b schematest.Backend, width time.Duration, seed uint64) (*fixture, [][]cellenc.Sample) {
	t.Helper()
	b.Settings.BucketWidth = width
	b.TableOptions.RawRetention = 0
	b.TableOptions.Rollups = testRollups
	f := openFixture(t, b.Store(t), b.Settings)
	rng := rand.New(rand.NewPCG(seed, 1))
	var all [][]cellenc.Sample
	req := write.Request{}
	for i := range 6 {
		host := fmt.Sprintf("r%d", i)
		counter := i%2 == 0
		name := "g"
		if counter {
			name = "c_total"
		}
		ls := labels.FromStrings("__name__", name, "host", host)
		samples := randomSamples(rng, day0-2*hour, day0+3*hour+20*60_000, counter)
		if i == 3 {
			// A bucket (an hour) without a sample: no row, so no rollup cell.
			samples = slices.DeleteFunc(samples, func(s cellenc.Sample) bool { return s.T >= day0+hour && s.T < day0+2*hour })
		}
		if i == 5 {
			// On the boundaries: a sample at every bucket start, which belongs to
			// the window that ends there (windows are closed on the right).
			samples = samples[:0]
			for ts := day0 - 2*hour; ts < day0+3*hour+20*60_000; ts += 15_000 {
				samples = append(samples, cellenc.Sample{T: ts, V: float64(ts/15_000%97) - 40})
			}
		}
		f.series = append(f.series, ls)
		all = append(all, samples)
		req.Series = append(req.Series, write.Series{Labels: ls, Samples: samples})
	}
	f.write(t, req)
	return f, all
}

// Compaction writes, for every resolution, one rollup cell per sealed bucket
// that decodes to exactly cellenc.AggregateWindows of the bucket's samples;
// merged across buckets, the cells' windows are the whole windows (with 30m
// buckets an hour is two cells); a second pass writes nothing; the watermark
// of every salt is the cutoff.
func TestCompactionWritesRollups(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, width := range []time.Duration{time.Hour, 30 * time.Minute} {
			t.Run(fmt.Sprintf("%s/%s", b.Name, width), func(t *testing.T) {
				f, samples := newRandomFixture(t, b, width, 42)
				before := f.dump(t)
				st, err := f.compactor(t, Options{Rollups: testRollups, BatchRows: 7}).Compact(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				want := f.wantRollups(t, testRollups, samples)
				if st.RollupCells != len(want) || st.RollupCells != 2*st.Rows || st.Skipped != 0 || st.RawCells != st.Samples {
					t.Errorf("Stats = %+v, want %d rollup cells, two per row", st, len(want))
				}
				f.checkRollups(t, testRollups, samples)
				split := f.checkMerges(t, testRollups, samples)
				if width == 30*time.Minute && split < 20 {
					t.Errorf("%d windows split over two cells; want most hours' windows of 1h in two halves", split)
				}
				if after := f.dump(t); after != before {
					t.Errorf("samples changed by compaction:\nbefore %s\nafter  %s", before, after)
				}

				// The data covers what the test means to: counter resets, NaN
				// and infinite samples, windows that hold only a stale marker
				// or end with one, buckets without a sample.
				var resets, nan, inf, staleOnly, staleEnd int
				for _, cells := range f.rollupCells(t, testRollups) {
					for _, c := range cells {
						for _, w := range c.windows {
							switch {
							case w.Count == 0:
								staleOnly++
							case w.HasStale():
								staleEnd++
							}
							if w.Resets > 0 {
								resets++
							}
							if math.IsNaN(w.Sum) {
								nan++
							}
							if math.IsInf(w.Sum, 0) {
								inf++
							}
						}
					}
				}
				if resets == 0 || nan == 0 || inf == 0 || staleOnly == 0 || staleEnd == 0 || len(want) >= 2*6*5*int(time.Hour/width) {
					t.Errorf("the random data lacks a case: %d windows with resets, %d NaN, %d Inf, %d stale only, %d ending stale; %d cells",
						resets, nan, inf, staleOnly, staleEnd, len(want))
				}

				if st, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background()); err != nil || st != (Stats{}) {
					t.Errorf("a second pass = %+v, %v; want nothing to do", st, err)
				}
				f.checkRollups(t, testRollups, samples)
				f.checkWatermarks(t, f.allWatermarks(f.cutoff()))
			})
		}
	}
}

// allWatermarks is every salt's watermark at ms.
func (f *fixture) allWatermarks(ms int64) map[byte]int64 {
	out := map[byte]int64{}
	for salt := range f.settings.Salts {
		out[byte(salt)] = ms
	}
	return out
}

// checkWatermarks fails the test unless the store's watermarks are want.
func (f *fixture) checkWatermarks(t *testing.T, want map[byte]int64) {
	t.Helper()
	got, err := f.compactor(t, Options{}).Watermarks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("watermarks = %v, want %v", got, want)
	}
}

// The rollup row key of a data row is schema.DataRowKey of the same series
// with the bucket's UTC day as its bucket start.
func TestRollupRowKey(t *testing.T) {
	for _, bucket := range []int64{day0, day0 + 23*hour, day0 - 1, day0 + 30*60_000, 0} {
		start := schema.BucketStart(bucket, 30*time.Minute)
		k := schema.DataKey{Salt: 3, Host: "h\x00x", Metric: "m", SeriesID: 77, BucketStart: start}
		data := schema.DataRowKey(nil, k)
		k.BucketStart = schema.RollupRowStart(start)
		if got, want := rollupRowKey(data, start), schema.DataRowKey(nil, k); string(got) != string(want) {
			t.Errorf("rollupRowKey(%q, %d) = %q, want %q", data, start, got, want)
		}
		if got := rollupRowKey(data, start); &got[0] == &data[0] {
			t.Errorf("rollupRowKey shares the data key's array")
		}
	}
}

// The watermark of a salt is the greatest cutoff a completed pass recorded: a
// pass with an earlier clock (another worker's) does not lower it, a later one
// raises it.
func TestWatermarksOnlyGrow(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f, _ := newSaltedFixture(t, b, 1, 2)
			f.checkWatermarks(t, map[byte]int64{})
			if _, err := f.compactor(t, Options{}).Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.checkWatermarks(t, map[byte]int64{0: day0 + 3*hour, 1: day0 + 3*hour})

			now := f.now
			f.now = now.Add(-2 * time.Hour)
			if _, err := f.compactor(t, Options{}).CompactSalt(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			f.checkWatermarks(t, map[byte]int64{0: day0 + 3*hour, 1: day0 + 3*hour})

			f.now = now.Add(time.Hour)
			if _, err := f.compactor(t, Options{}).CompactSalt(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			f.checkWatermarks(t, map[byte]int64{0: day0 + 3*hour, 1: day0 + 4*hour})
		})
	}
}

func TestRollupOptionsValidate(t *testing.T) {
	err := Options{Rollups: []schema.Rollup{{Resolution: 7 * time.Minute}}}.Validate()
	want := "compact: Options.Rollups 7m:0: schema: rollup resolution 7m must be a whole number of minutes that divides 24h"
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %s", err, want)
	}
	settings := schema.DefaultEmbeddedSettings()
	settings.BucketWidth = 30 * time.Minute
	_, err = NewCompactor(nil, settings, Options{Rollups: []schema.Rollup{{Resolution: 45 * time.Minute}}})
	want = "compact: Options.Rollups 45m:0: schema: rollup resolution 45m must divide the bucket width 30m or be a multiple of it"
	if err == nil || err.Error() != want {
		t.Errorf("NewCompactor = %v, want %s", err, want)
	}
	_, err = NewWorker(nil, settings, WorkerOptions{Owner: "w", Compact: Options{Rollups: []schema.Rollup{{Resolution: 45 * time.Minute}}}})
	if err == nil || err.Error() != "compact: WorkerOptions.Compact: "+want {
		t.Errorf("NewWorker = %v, want WorkerOptions.Compact: %s", err, want)
	}
	if _, err := NewCompactor(nil, settings, Options{Rollups: testRollups}); err != nil {
		t.Errorf("NewCompactor with 5m and 1h rollups of 30m buckets: %v", err)
	}
}
