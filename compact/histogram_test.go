package compact

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// rowData are the samples of one data row, of both kinds.
type rowData struct {
	fs []cellenc.Sample
	hs []cellenc.HistogramSample
}

// histogramSeries are the series of the histogram fixture, by host: for
// every bucket from day0 on (sealed or not), the samples of one bucket at 15 s.
var histogramSeries = map[string]func(bucket int64) rowData{
	"int": func(b int64) rowData { return rowData{hs: genH(b, 0, 240, 0, tsdbutil.GenerateTestHistogram)} },
	"int-resets": func(b int64) rowData {
		return rowData{hs: genH(b, 0, 240, 0, func(i int64) *histogram.Histogram { return tsdbutil.GenerateTestHistogram(i % 37) })}
	},
	"gauge": func(b int64) rowData { return rowData{hs: genH(b, 0, 240, 0, tsdbutil.GenerateTestGaugeHistogram)} },
	"float": func(b int64) rowData { return rowData{hs: genFH(b, 0, 240, 0, tsdbutil.GenerateTestFloatHistogram)} },
	"nhcb": func(b int64) rowData {
		return rowData{hs: genH(b, 0, 240, 0, tsdbutil.GenerateTestCustomBucketsHistogram)}
	},
	"st-hist": func(b int64) rowData {
		return rowData{hs: genH(b, 0, 240, b-3_600_000, tsdbutil.GenerateTestHistogram)}
	},
	"st-float": func(b int64) rowData {
		var fs []cellenc.Sample
		for i := range 240 {
			fs = append(fs, cellenc.Sample{T: b + int64(i)*15_000, V: float64(i) * 0.1, ST: b - 1000})
		}
		fs[7].V = math.Float64frombits(value.StaleNaN)
		return rowData{fs: fs}
	},
	"mixed": func(b int64) rowData {
		// floats, int histograms, a stale marker, float histograms, floats
		var d rowData
		for i := range 20 {
			d.fs = append(d.fs, cellenc.Sample{T: b + int64(i)*15_000, V: math.Pi * float64(i)})
		}
		d.hs = genH(b, 20, 100, 0, tsdbutil.GenerateTestHistogram)
		d.fs = append(d.fs, cellenc.Sample{T: b + 100*15_000, V: math.Float64frombits(value.StaleNaN)})
		d.hs = append(d.hs, genFH(b, 101, 200, 0, tsdbutil.GenerateTestFloatHistogram)...)
		d.hs = append(d.hs, cellenc.HistogramSample{T: b + 200*15_000, FH: &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN)}})
		for i := 201; i < 240; i++ {
			d.fs = append(d.fs, cellenc.Sample{T: b + int64(i)*15_000, V: float64(i)})
		}
		return d
	},
}

func genH(b int64, from, to int, st int64, gen func(int64) *histogram.Histogram) []cellenc.HistogramSample {
	var out []cellenc.HistogramSample
	for i := from; i < to; i++ {
		out = append(out, cellenc.HistogramSample{T: b + int64(i)*15_000, ST: st, H: gen(int64(i))})
	}
	return out
}

func genFH(b int64, from, to int, st int64, gen func(int64) *histogram.FloatHistogram) []cellenc.HistogramSample {
	var out []cellenc.HistogramSample
	for i := from; i < to; i++ {
		out = append(out, cellenc.HistogramSample{T: b + int64(i)*15_000, ST: st, FH: gen(int64(i))})
	}
	return out
}

// histogramKey is the data row key of the series of host in bucket b.
func (f *fixture) histogramKey(host string, b int64) []byte {
	return schema.DataRowKey(nil, schema.DataKey{Salt: schema.Salt(host, f.settings.Salts), Host: host, Metric: "h", SeriesID: 1, BucketStart: b})
}

// putRaw writes d as raw cells of the row of host in bucket b, as a writer
// does (schema/late.go): on time, each cell at its sample's timestamp with
// the row's on-time pending mark, or late, each cell at the bucket's last
// millisecond with a late mark of its own.
func (f *fixture) putRaw(t *testing.T, host string, b int64, d rowData, late bool) {
	t.Helper()
	key := f.histogramKey(host, b)
	var muts []kv.Mutation
	width := f.settings.BucketWidth
	cellTS := func(ts int64) int64 {
		if late {
			return schema.LateCellTimestamp(b, width)
		}
		return ts
	}
	for _, s := range d.fs {
		q, err := schema.AppendRawQualifier(nil, s.T-b, width)
		if err != nil {
			t.Fatal(err)
		}
		muts = append(muts, kv.Put(key, schema.FamilyRaw, q, cellTS(s.T), cellenc.AppendSampleValue(nil, s)))
	}
	for _, h := range d.hs {
		q, err := schema.AppendRawQualifier(nil, h.T-b, width)
		if err != nil {
			t.Fatal(err)
		}
		muts = append(muts, kv.Put(key, schema.FamilyRaw, q, cellTS(h.T), cellenc.AppendHistogramSampleValue(nil, h)))
	}
	if err := f.st.Apply(context.Background(), schema.TableData, muts); err != nil {
		t.Fatal(err)
	}
	mark, err := schema.PendingRowKey(nil, key, late)
	if err != nil {
		t.Fatal(err)
	}
	q := schema.PendingOnTimeQualifier
	if late {
		q = schema.AppendPendingLateQualifier(nil, uint64(len(muts))<<32|uint64(b/1000))
	}
	if err := f.st.Apply(context.Background(), schema.TablePending, []kv.Mutation{
		kv.Put(mark, schema.FamilyPending, q, schema.PendingMarkTimestamp(b, width), nil),
	}); err != nil {
		t.Fatal(err)
	}
}

// readRow reads the row of host in bucket b through cellenc.DecodeDataRow, and
// counts its cells of each family.
func (f *fixture) readRow(t *testing.T, host string, b int64) (rowData, int, int) {
	t.Helper()
	rows, err := f.st.GetRows(context.Background(), schema.TableData, [][]byte{f.histogramKey(host, b)}, kv.Families(schema.FamilyChunk, schema.FamilyRaw))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cellenc.DecodeDataRow(rows[0], f.settings.BucketWidth, 0, kv.MaxTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	return rowData{fs: rs.Samples, hs: rs.Histograms}, rs.RawCells, rs.ChunkCells
}

// sameRow reports how got differs from want as Prometheus' chunks give
// samples back (cellenc/chunk.go): floats, timestamps and start timestamps bit
// for bit; histograms with every count and sum bit for bit once empty buckets
// are dropped, the counter-reset hint left out, a stale marker by its Sum.
func sameRow(want, got rowData) error {
	if len(want.fs) != len(got.fs) || len(want.hs) != len(got.hs) {
		return fmt.Errorf("%d floats and %d histograms, want %d and %d", len(got.fs), len(got.hs), len(want.fs), len(want.hs))
	}
	for i, w := range want.fs {
		g := got.fs[i]
		if w.T != g.T || w.ST != g.ST || math.Float64bits(w.V) != math.Float64bits(g.V) {
			return fmt.Errorf("float %d = %+v, want %+v", i, g, w)
		}
	}
	for i, w := range want.hs {
		g := got.hs[i]
		if w.T != g.T || w.ST != g.ST || (w.H == nil) != (g.H == nil) {
			return fmt.Errorf("histogram %d at %d (ST %d, int %v), want at %d (ST %d, int %v)", i, g.T, g.ST, g.H != nil, w.T, w.ST, w.H != nil)
		}
		wf, gf := w.FH, g.FH
		if w.H != nil {
			wf, gf = w.H.ToFloat(nil), g.H.ToFloat(nil)
		}
		if value.IsStaleNaN(wf.Sum) {
			if math.Float64bits(gf.Sum) != value.StaleNaN {
				return fmt.Errorf("histogram %d: stale marker came back as %v", i, gf)
			}
			continue
		}
		wc, gc := wf.Copy().Compact(0), gf.Copy().Compact(0)
		wc.CounterResetHint, gc.CounterResetHint = 0, 0
		if !wc.Equals(gc) {
			return fmt.Errorf("histogram %d at %d: %v, want %v", i, w.T, gf, wf)
		}
	}
	return nil
}

// TestCompactHistogramsAndStartTimestamps: buckets of every kind of sample are
// compacted into one chunk cell each, their raw cells deleted, and read back
// as they were written, on both backends; a bucket compacted again with late
// samples of the other kind holds them, one chunk cell still, and nothing of
// the old layout wins over them.
func TestCompactHistogramsAndStartTimestamps(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			b.TableOptions.RawRetention = 0
			b.TableOptions.Rollups = testRollups
			f := openFixture(t, b.Store(t), b.Settings)
			buckets := []int64{day0, day0 + hour, day0 + 2*hour}
			want := map[string]rowData{}
			for host, gen := range histogramSeries {
				for _, bucket := range buckets {
					d := gen(bucket)
					f.putRaw(t, host, bucket, d, false)
					want[fmt.Sprint(host, bucket)] = d
				}
			}
			check := func(when string, wantRaw int) {
				t.Helper()
				for host := range histogramSeries {
					for _, bucket := range buckets {
						got, raw, chunks := f.readRow(t, host, bucket)
						if err := sameRow(want[fmt.Sprint(host, bucket)], got); err != nil {
							t.Errorf("%s: %s bucket %d: %v", when, host, bucket, err)
						}
						if wantRaw >= 0 && (raw != wantRaw || chunks != 1) {
							t.Errorf("%s: %s bucket %d: %d raw and %d chunk cells, want %d and 1", when, host, bucket, raw, chunks, wantRaw)
						}
					}
				}
			}
			check("before compaction", -1)
			c := f.compactor(t, Options{Rollups: testRollups})
			st, err := c.Compact(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n := len(histogramSeries) * len(buckets)
			if st.Rows != n || st.Samples != n*240 || st.RawCells != n*240 {
				t.Errorf("Stats = %+v, want %d rows of 240 samples", st, n)
			}
			check("after compaction", 0)
			// The rollup cells hold the windows of the samples written, both
			// kinds: the histograms' count and last one.
			cells := f.rollupCells(t, testRollups)
			for _, r := range testRollups {
				if len(cells[r.Resolution]) != n {
					t.Errorf("%d rollup cells of %s, want %d", len(cells[r.Resolution]), r.Resolution, n)
				}
				for _, c := range cells[r.Resolution] {
					d := want[fmt.Sprint(c.key.Host, c.bucketStart)]
					wantW := cellenc.EncodeRollupWindows(nil, c.bucketStart, r.Resolution, cellenc.AggregateWindows(d.fs, d.hs, r.Resolution))
					if got := cellenc.EncodeRollupWindows(nil, c.bucketStart, r.Resolution, c.windows); !bytes.Equal(got, wantW) {
						t.Errorf("rollup %s of %s bucket %d: %x, want %x", r.Resolution, c.key.Host, c.bucketStart, got, wantW)
					}
					if histograms := len(d.hs) > 0 && !(len(d.hs) == 1 && cellenc.IsStaleHistogram(d.hs[0])); histograms != hasHistogramWindow(c.windows) {
						t.Errorf("rollup %s of %s bucket %d: windows with histograms %v, want %v", r.Resolution, c.key.Host, c.bucketStart, !histograms, histograms)
					}
				}
			}

			// Late samples of the other kind into bucket day0+1h, between the
			// 15 s samples, written as late cells (schema/late.go; schema's
			// tests cover a raw sample replacing a chunk's of the other kind).
			b1 := day0 + hour
			off := func(hs []cellenc.HistogramSample) []cellenc.HistogramSample {
				for i := range hs {
					hs[i].T += 7_000
				}
				return hs
			}
			late := map[string]rowData{
				"int":      {fs: []cellenc.Sample{{T: b1 + 22_000, V: 1.5}, {T: b1 + 7_000, V: 2.5, ST: 5}}},
				"float":    {hs: off(genH(b1, 3, 5, 0, tsdbutil.GenerateTestCustomBucketsHistogram))},
				"st-float": {hs: off(genFH(b1, 10, 12, 77, tsdbutil.GenerateTestFloatHistogram))},
				"mixed": {
					fs: []cellenc.Sample{{T: b1 + 50*15_000 + 7_000, V: -1}},
					hs: off(genH(b1, 5, 6, 0, tsdbutil.GenerateTestHistogram)),
				},
			}
			for host, d := range late {
				f.putRaw(t, host, b1, d, true)
				key := fmt.Sprint(host, b1)
				want[key] = mergeRow(want[key], d)
			}
			check("with late samples", -1)
			st, err = f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Rows != len(late) {
				t.Errorf("the second pass rewrote %d rows, want %d", st.Rows, len(late))
			}
			check("after compacting the late samples", 0)
		})
	}
}

func hasHistogramWindow(ws []cellenc.RollupWindow) bool {
	for _, w := range ws {
		if w.Histograms > 0 {
			return true
		}
	}
	return false
}

// mergeRow is d with late's samples, which replace d's of their timestamps
// whatever the kinds.
func mergeRow(d, late rowData) rowData {
	at := map[int64]bool{}
	for _, s := range late.fs {
		at[s.T] = true
	}
	for _, h := range late.hs {
		at[h.T] = true
	}
	var out rowData
	for _, s := range d.fs {
		if !at[s.T] {
			out.fs = append(out.fs, s)
		}
	}
	for _, h := range d.hs {
		if !at[h.T] {
			out.hs = append(out.hs, h)
		}
	}
	out.fs = append(out.fs, late.fs...)
	out.hs = append(out.hs, late.hs...)
	slices.SortFunc(out.fs, func(a, b cellenc.Sample) int { return cmp.Compare(a.T, b.T) })
	slices.SortFunc(out.hs, func(a, b cellenc.HistogramSample) int { return cmp.Compare(a.T, b.T) })
	return out
}
