package cellenc_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

const chunkBucket = 7_200_000 // a bucket start (2h), width 1h

// mixedRow builds a data row of bucket chunkBucket from chunk cells (one per
// element of cells) and raw cells holding raw and rawH.
func mixedRow(t *testing.T, cells []kv.Cell, raw []cellenc.Sample, rawH []cellenc.HistogramSample) kv.Row {
	t.Helper()
	for _, s := range raw {
		q, err := schema.AppendRawQualifier(nil, s.T-chunkBucket, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cells = append(cells, kv.Cell{Family: schema.FamilyRaw, Qualifier: q, Timestamp: s.T, Value: cellenc.AppendSampleValue(nil, s)})
	}
	for _, h := range rawH {
		q, err := schema.AppendRawQualifier(nil, h.T-chunkBucket, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cells = append(cells, kv.Cell{Family: schema.FamilyRaw, Qualifier: q, Timestamp: h.T, Value: cellenc.AppendHistogramSampleValue(nil, h)})
	}
	key := schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 7, BucketStart: chunkBucket})
	return kv.Row{Key: key, Cells: cells}
}

func bucketCell(t *testing.T, fs []cellenc.Sample, hs []cellenc.HistogramSample) kv.Cell {
	t.Helper()
	c, err := cellenc.BucketCell(fs, hs, chunkBucket, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// at returns the timestamp of the i-th sample of a 15 s scrape in chunkBucket.
func at(i int) int64 { return chunkBucket + int64(i)*15_000 }

func intH(ts []int64, st int64, gen func(int64) *histogram.Histogram) []cellenc.HistogramSample {
	out := make([]cellenc.HistogramSample, len(ts))
	for i, t := range ts {
		out[i] = cellenc.HistogramSample{T: t, ST: st, H: gen(int64(i))}
	}
	return out
}

func floatH(ts []int64, st int64, gen func(int64) *histogram.FloatHistogram) []cellenc.HistogramSample {
	out := make([]cellenc.HistogramSample, len(ts))
	for i, t := range ts {
		out[i] = cellenc.HistogramSample{T: t, ST: st, FH: gen(int64(i))}
	}
	return out
}

func times(from, to int) []int64 {
	var ts []int64
	for i := from; i < to; i++ {
		ts = append(ts, at(i))
	}
	return ts
}

// SameSamples reports how got differs from want as Prometheus' chunks give
// samples back (chunk.go): floats, timestamps and start timestamps bit for
// bit; histograms with every count and sum bit for bit once empty buckets are
// dropped (histogram.Compact(0)), the counter-reset hint left out (see
// TestBucketCellCounterResetHints), a stale marker histogram by its Sum.
func sameSamples(wantF, gotF []cellenc.Sample, wantH, gotH []cellenc.HistogramSample) error {
	if len(wantF) != len(gotF) {
		return fmt.Errorf("%d floats, want %d", len(gotF), len(wantF))
	}
	for i := range wantF {
		w, g := wantF[i], gotF[i]
		if w.T != g.T || w.ST != g.ST || math.Float64bits(w.V) != math.Float64bits(g.V) {
			return fmt.Errorf("float %d = %+v, want %+v", i, g, w)
		}
	}
	if len(wantH) != len(gotH) {
		return fmt.Errorf("%d histograms, want %d", len(gotH), len(wantH))
	}
	for i := range wantH {
		if err := sameHistogram(wantH[i], gotH[i]); err != nil {
			return fmt.Errorf("histogram %d: %w", i, err)
		}
	}
	return nil
}

func sameHistogram(w, g cellenc.HistogramSample) error {
	if w.T != g.T || w.ST != g.ST || (w.H == nil) != (g.H == nil) || (w.FH == nil) != (g.FH == nil) {
		return fmt.Errorf("T %d ST %d int %v, want T %d ST %d int %v", g.T, g.ST, g.H != nil, w.T, w.ST, w.H != nil)
	}
	if w.H != nil {
		if value.IsStaleNaN(w.H.Sum) {
			if math.Float64bits(g.H.Sum) != value.StaleNaN {
				return fmt.Errorf("stale marker came back as %v", g.H)
			}
			return nil
		}
		a, b := w.H.Copy().Compact(0), g.H.Copy().Compact(0)
		a.CounterResetHint, b.CounterResetHint = 0, 0
		if !a.Equals(b) {
			return fmt.Errorf("%v, want %v", g.H, w.H)
		}
		return nil
	}
	if value.IsStaleNaN(w.FH.Sum) {
		if math.Float64bits(g.FH.Sum) != value.StaleNaN {
			return fmt.Errorf("stale marker came back as %v", g.FH)
		}
		return nil
	}
	a, b := w.FH.Copy().Compact(0), g.FH.Copy().Compact(0)
	a.CounterResetHint, b.CounterResetHint = 0, 0
	if !a.Equals(b) {
		return fmt.Errorf("%v, want %v", g.FH, w.FH)
	}
	return nil
}

func concatH(parts ...[]cellenc.HistogramSample) []cellenc.HistogramSample {
	var out []cellenc.HistogramSample
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestBucketCellRoundTrips: a bucket's samples of every kind come back from
// its chunk cell, in the encodings chunk.go says.
func TestBucketCellRoundTrips(t *testing.T) {
	staleF := math.Float64frombits(value.StaleNaN)
	staleH := cellenc.HistogramSample{T: at(20), H: &histogram.Histogram{Sum: staleF}}
	staleFH := cellenc.HistogramSample{T: at(20), FH: &histogram.FloatHistogram{Sum: staleF}}
	resetAt := func(gen func(int64) *histogram.Histogram) func(int64) *histogram.Histogram {
		return func(i int64) *histogram.Histogram { return gen(i % 10) } // a reset every 10 samples
	}
	for _, tc := range []struct {
		name      string
		fs        []cellenc.Sample
		hs        []cellenc.HistogramSample
		wantEnc   byte
		wantParts []chunkenc.Encoding // of an EncChunks cell
	}{
		{name: "int histograms", hs: intH(times(0, 240), 0, tsdbutil.GenerateTestHistogram), wantEnc: byte(chunkenc.EncHistogram)},
		{name: "float histograms", hs: floatH(times(0, 240), 0, tsdbutil.GenerateTestFloatHistogram), wantEnc: byte(chunkenc.EncFloatHistogram)},
		{name: "custom buckets (NHCB)", hs: intH(times(0, 240), 0, tsdbutil.GenerateTestCustomBucketsHistogram), wantEnc: byte(chunkenc.EncHistogram)},
		{name: "float custom buckets", hs: floatH(times(0, 50), 0, tsdbutil.GenerateTestCustomBucketsFloatHistogram), wantEnc: byte(chunkenc.EncFloatHistogram)},
		{name: "gauge histograms", hs: intH(times(0, 50), 0, tsdbutil.GenerateTestGaugeHistogram), wantEnc: byte(chunkenc.EncHistogram)},
		{name: "gauge float histograms", hs: floatH(times(0, 50), 0, tsdbutil.GenerateTestGaugeFloatHistogram), wantEnc: byte(chunkenc.EncFloatHistogram)},
		{name: "int histograms with ST", hs: intH(times(0, 240), chunkBucket-1000, tsdbutil.GenerateTestHistogram), wantEnc: byte(chunkenc.EncHistogramST)},
		{name: "float histograms with ST", hs: floatH(times(0, 240), chunkBucket-1000, tsdbutil.GenerateTestFloatHistogram), wantEnc: byte(chunkenc.EncFloatHistogramST)},
		{
			name: "some histograms with ST, some without",
			hs: func() []cellenc.HistogramSample {
				hs := intH(times(0, 12), 0, tsdbutil.GenerateTestHistogram)
				for i := 5; i < 10; i++ {
					hs[i].ST = 42
				}
				return hs
			}(),
			wantEnc: byte(chunkenc.EncHistogramST),
		},
		{
			// Buckets appear and disappear: the appender recodes the chunk
			// (new buckets) and widens the later histograms (missing ones).
			name:    "changing bucket layouts",
			hs:      layouts(),
			wantEnc: byte(chunkenc.EncHistogram),
		},
		{
			name:      "counter resets cut chunks",
			hs:        intH(times(0, 25), 0, resetAt(tsdbutil.GenerateTestHistogram)),
			wantEnc:   cellenc.EncChunks,
			wantParts: []chunkenc.Encoding{chunkenc.EncHistogram, chunkenc.EncHistogram, chunkenc.EncHistogram},
		},
		{
			name:      "stale marker histogram",
			hs:        concatH(intH(times(0, 20), 0, tsdbutil.GenerateTestHistogram), []cellenc.HistogramSample{staleH}),
			wantEnc:   byte(chunkenc.EncHistogram),
			wantParts: nil,
		},
		{
			name:    "stale marker float histogram",
			hs:      concatH(floatH(times(0, 20), 0, tsdbutil.GenerateTestFloatHistogram), []cellenc.HistogramSample{staleFH}),
			wantEnc: byte(chunkenc.EncFloatHistogram),
		},
		{
			name:    "floats with ST",
			fs:      []cellenc.Sample{{T: at(0), V: 1, ST: 5}, {T: at(1), V: 2, ST: 5}, {T: at(2), V: 0.5, ST: at(2) - 1}, {T: at(3), V: staleF}, {T: at(4), V: 3}},
			wantEnc: byte(chunkenc.EncXOR2),
		},
		{
			name: "floats then histograms then floats",
			fs:   []cellenc.Sample{{T: at(0), V: math.Pi}, {T: at(1), V: 2}, {T: at(30), V: 3.25}, {T: at(31), V: staleF}},
			hs: concatH(intH(times(2, 20), 0, tsdbutil.GenerateTestHistogram),
				floatH(times(20, 30), 0, tsdbutil.GenerateTestFloatHistogram)),
			wantEnc: cellenc.EncChunks,
			wantParts: []chunkenc.Encoding{chunkenc.EncXOR, chunkenc.EncHistogram,
				chunkenc.EncFloatHistogram, chunkenc.EncXOR},
		},
		{
			name:      "floats with ST and histograms with ST",
			fs:        []cellenc.Sample{{T: at(0), V: 1, ST: 1}, {T: at(10), V: 2, ST: 1}},
			hs:        intH(times(1, 10), 1, tsdbutil.GenerateTestHistogram),
			wantEnc:   cellenc.EncChunks,
			wantParts: []chunkenc.Encoding{chunkenc.EncXOR2, chunkenc.EncHistogramST, chunkenc.EncXOR2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cloneH(tc.hs)
			c := bucketCell(t, tc.fs, tc.hs)
			if c.Family != schema.FamilyChunk || !bytes.Equal(c.Qualifier, []byte{0, 0, 0, 0}) || c.Timestamp != chunkBucket+3_600_000-1 {
				t.Errorf("cell at %s:%x@%d, want c:00000000@%d", c.Family, c.Qualifier, c.Timestamp, chunkBucket+3_600_000-1)
			}
			if c.Value[0] != tc.wantEnc {
				t.Errorf("encoding %#x, want %#x", c.Value[0], tc.wantEnc)
			}
			if err := sameSamples(nil, nil, in, tc.hs); err != nil {
				t.Errorf("BucketCell changed its input: %v", err)
			}
			rs, err := cellenc.DecodeDataRow(mixedRow(t, []kv.Cell{c}, nil, nil), time.Hour, 0, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameSamples(tc.fs, rs.Samples, tc.hs, rs.Histograms); err != nil {
				t.Fatal(err)
			}
			if tc.wantEnc == cellenc.EncChunks {
				var got []chunkenc.Encoding
				for _, chk := range rs.Chunks {
					got = append(got, chk.Encoding())
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.wantParts) {
					t.Errorf("chunks %v, want %v", got, tc.wantParts)
				}
			}
		})
	}
}

// layouts are growing histograms whose populated buckets change: the second
// adds a bucket, the third lacks an empty one, the fourth adds two.
func layouts() []cellenc.HistogramSample {
	mk := func(i int, spans []histogram.Span, deltas []int64) cellenc.HistogramSample {
		var count, abs int64
		for _, d := range deltas {
			abs += d
			count += abs
		}
		return cellenc.HistogramSample{T: at(i), H: &histogram.Histogram{Schema: 1, Count: uint64(count), Sum: float64(count),
			PositiveSpans: spans, PositiveBuckets: deltas}}
	}
	return []cellenc.HistogramSample{
		mk(0, []histogram.Span{{Offset: 0, Length: 2}}, []int64{1, -1}),
		mk(1, []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 1}}, []int64{2, -2, 1}),
		mk(2, []histogram.Span{{Offset: 0, Length: 1}, {Offset: 2, Length: 1}}, []int64{3, 0}),
		mk(3, []histogram.Span{{Offset: -1, Length: 1}, {Offset: 0, Length: 2}, {Offset: 1, Length: 1}}, []int64{1, 2, 0, 1}),
	}
}

func cloneH(hs []cellenc.HistogramSample) []cellenc.HistogramSample {
	out := make([]cellenc.HistogramSample, len(hs))
	for i, h := range hs {
		out[i] = h
		if h.H != nil {
			out[i].H = h.H.Copy()
		} else {
			out[i].FH = h.FH.Copy()
		}
	}
	return out
}

// TestBucketCellCounterResetHints: what the hints come back as (chunk.go): the
// chunk's header for its first sample, NotCounterReset after it; a reset
// (detected or hinted) starts a chunk.
func TestBucketCellCounterResetHints(t *testing.T) {
	gen := tsdbutil.GenerateTestHistogram
	hint := func(h *histogram.Histogram, c histogram.CounterResetHint) *histogram.Histogram {
		h.CounterResetHint = c
		return h
	}
	hs := []cellenc.HistogramSample{
		{T: at(0), H: hint(gen(1), histogram.UnknownCounterReset)},
		{T: at(1), H: hint(gen(2), histogram.UnknownCounterReset)},
		{T: at(2), H: hint(gen(0), histogram.UnknownCounterReset)}, // a reset
		{T: at(3), H: hint(gen(1), histogram.NotCounterReset)},
		{T: at(4), H: hint(gen(2), histogram.CounterReset)}, // hinted, honoured
		{T: at(5), H: hint(gen(3), histogram.UnknownCounterReset)},
	}
	want := []histogram.CounterResetHint{histogram.UnknownCounterReset, histogram.NotCounterReset,
		histogram.CounterReset, histogram.NotCounterReset, histogram.CounterReset, histogram.NotCounterReset}
	rs, err := cellenc.DecodeDataRow(mixedRow(t, []kv.Cell{bucketCell(t, nil, hs)}, nil, nil), time.Hour, 0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameSamples(nil, rs.Samples, hs, rs.Histograms); err != nil {
		t.Fatal(err)
	}
	for i, h := range rs.Histograms {
		if h.H.CounterResetHint != want[i] {
			t.Errorf("histogram %d: hint %d, want %d", i, h.H.CounterResetHint, want[i])
		}
	}
	if len(rs.Chunks) != 3 {
		t.Errorf("%d chunks, want 3 (cut at both resets)", len(rs.Chunks))
	}
}

// TestDecodeDataRowMergesKinds: raw cells win over chunk samples at equal
// timestamps whatever the kinds; one sample per timestamp; Chunks only when
// the row is exactly its chunk cell.
func TestDecodeDataRowMergesKinds(t *testing.T) {
	gen := tsdbutil.GenerateTestHistogram
	fgen := tsdbutil.GenerateTestFloatHistogram
	chunkF := []cellenc.Sample{{T: at(0), V: math.Pi}, {T: at(1), V: math.E}, {T: at(5), V: math.Sqrt2}}
	chunkH := []cellenc.HistogramSample{{T: at(2), H: gen(2)}, {T: at(3), H: gen(3)}, {T: at(4), H: gen(4)}}
	cell := bucketCell(t, chunkF, chunkH)
	for _, tc := range []struct {
		name       string
		raw        []cellenc.Sample
		rawH       []cellenc.HistogramSample
		mint, maxt int64
		wantF      []cellenc.Sample
		wantH      []cellenc.HistogramSample
		wantChunks int
	}{
		{name: "chunk only", mint: 0, maxt: math.MaxInt64, wantF: chunkF, wantH: chunkH, wantChunks: 3},
		{name: "chunk cut by the range", mint: at(1), maxt: at(3), wantF: chunkF[1:2], wantH: chunkH[:2]},
		{
			name: "a raw float replaces a chunk histogram, a raw histogram a chunk float",
			raw:  []cellenc.Sample{{T: at(3), V: 33}}, rawH: []cellenc.HistogramSample{{T: at(1), FH: fgen(9)}},
			mint: 0, maxt: math.MaxInt64,
			wantF: []cellenc.Sample{{T: at(0), V: math.Pi}, {T: at(3), V: 33}, {T: at(5), V: math.Sqrt2}},
			wantH: []cellenc.HistogramSample{{T: at(1), FH: fgen(9)}, chunkH[0], chunkH[2]},
		},
		{
			name: "late samples of both kinds after the chunk",
			raw:  []cellenc.Sample{{T: at(7), V: 7, ST: 3}}, rawH: []cellenc.HistogramSample{{T: at(6), H: gen(6), ST: 4}},
			mint: 0, maxt: math.MaxInt64,
			wantF: append(append([]cellenc.Sample(nil), chunkF...), cellenc.Sample{T: at(7), V: 7, ST: 3}),
			wantH: append(append([]cellenc.HistogramSample(nil), chunkH...), cellenc.HistogramSample{T: at(6), H: gen(6), ST: 4}),
		},
		{
			name: "raw outside the range keeps the chunks whole",
			raw:  []cellenc.Sample{{T: at(7), V: 7}}, mint: 0, maxt: at(6),
			wantF: chunkF, wantH: chunkH, wantChunks: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := cellenc.DecodeDataRow(mixedRow(t, []kv.Cell{cell}, tc.raw, tc.rawH), time.Hour, tc.mint, tc.maxt)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameSamples(tc.wantF, rs.Samples, tc.wantH, rs.Histograms); err != nil {
				t.Fatal(err)
			}
			if len(rs.Chunks) != tc.wantChunks || rs.Chunk != nil {
				t.Errorf("%d chunks handed out (Chunk %v), want %d (Chunk nil)", len(rs.Chunks), rs.Chunk, tc.wantChunks)
			}
		})
	}
	t.Run("a later chunk cell wins over an earlier one, whatever the kinds", func(t *testing.T) {
		// Two cells (an older layout, or a rewrite in progress): the second,
		// at qualifier offset 0 as well, comes later in the row.
		second := bucketCell(t, []cellenc.Sample{{T: at(2), V: 22}}, []cellenc.HistogramSample{{T: at(0), FH: fgen(1)}})
		rs, err := cellenc.DecodeDataRow(mixedRow(t, []kv.Cell{cell, second}, nil, nil), time.Hour, 0, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		wantF := []cellenc.Sample{{T: at(1), V: math.E}, {T: at(2), V: 22}, {T: at(5), V: math.Sqrt2}}
		wantH := []cellenc.HistogramSample{{T: at(0), FH: fgen(1)}, chunkH[1], chunkH[2]}
		if err := sameSamples(wantF, rs.Samples, wantH, rs.Histograms); err != nil {
			t.Fatal(err)
		}
		if rs.Chunks != nil {
			t.Errorf("chunks handed out for a row of two chunk cells")
		}
	})
}

// TestBucketCellFloatsUnchanged: a bucket of floats without start timestamps
// is the one XOR or decimal chunk it was before histograms, and is handed out.
func TestBucketCellFloatsUnchanged(t *testing.T) {
	fs := []cellenc.Sample{{T: at(0), V: math.Pi}, {T: at(1), V: math.E}}
	c := bucketCell(t, fs, nil)
	chk := chunkenc.NewXORChunk()
	app, _ := chk.Appender()
	for _, s := range fs {
		app.Append(0, s.T, s.V)
	}
	if want := append([]byte{byte(chunkenc.EncXOR)}, chk.Bytes()...); !bytes.Equal(c.Value, want) {
		t.Fatalf("value %x, want %x", c.Value, want)
	}
	rs, err := cellenc.DecodeDataRow(mixedRow(t, []kv.Cell{c}, nil, nil), time.Hour, 0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Chunk == nil || len(rs.Chunks) != 1 || rs.Chunk.Encoding() != chunkenc.EncXOR {
		t.Errorf("Chunk %v, Chunks %v, want the XOR chunk", rs.Chunk, rs.Chunks)
	}
}

func TestBucketCellRefuses(t *testing.T) {
	gen := tsdbutil.GenerateTestHistogram
	for _, tc := range []struct {
		name    string
		fs      []cellenc.Sample
		hs      []cellenc.HistogramSample
		wantErr string
	}{
		{"nothing", nil, nil, "cellenc: a chunk of no samples: invalid argument"},
		{"a float and a histogram at one timestamp", []cellenc.Sample{{T: at(1)}}, []cellenc.HistogramSample{{T: at(1), H: gen(1)}},
			"cellenc: a float and a histogram sample at 7215000: invalid argument"},
		{"histograms not ascending", nil, []cellenc.HistogramSample{{T: at(2), H: gen(1)}, {T: at(1), H: gen(1)}},
			"cellenc: chunk histogram samples not ascending at 7215000: invalid argument"},
		{"histogram outside the bucket", nil, []cellenc.HistogramSample{{T: chunkBucket + 3_600_000, H: gen(1)}},
			"cellenc: histogram sample at 10800000 is not in bucket 7200000: invalid argument"},
		{"both kinds in one histogram sample", nil, []cellenc.HistogramSample{{T: at(1), H: gen(1), FH: gen(1).ToFloat(nil)}},
			"cellenc: histogram sample at 7215000 holds not exactly one of an integer and a float histogram: invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cellenc.BucketCell(tc.fs, tc.hs, chunkBucket, time.Hour)
			if !errors.Is(err, kv.ErrInvalidArgument) || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q wrapping kv.ErrInvalidArgument", err, tc.wantErr)
			}
		})
	}
}

func TestDecodeChunkCellRefuses(t *testing.T) {
	gen := tsdbutil.GenerateTestHistogram
	h := bucketCell(t, nil, intH(times(0, 3), 0, gen)).Value
	f := bucketCell(t, []cellenc.Sample{{T: at(5), V: 1.5}}, nil).Value
	multi := func(parts ...[]byte) []byte {
		out := []byte{cellenc.EncChunks}
		for _, p := range parts {
			out = append(out, p[0])
			out = append(out, byte(len(p)-1)) // short test chunks: a one-byte uvarint
			out = append(out, p[1:]...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		value   []byte
		wantErr string
	}{
		{"unknown encoding", []byte{9, 0, 0}, "cellenc: chunk encoding 9 is unknown: malformed"},
		{"one chunk in a multi-chunk cell", multi(h), "cellenc: multi-chunk cell of 1 chunks: malformed"},
		{"chunks not ascending", multi(f, h), "cellenc: chunk 1 of a multi-chunk cell: cellenc: histogram chunk: sample at 7200000 after one at 7275000: malformed"},
		{"a length past the end", append(multi(h, f), byte(chunkenc.EncXOR), 9), "cellenc: chunk 2 of a multi-chunk cell: bad length: malformed"},
		{"an empty chunk", multi(h, []byte{byte(chunkenc.EncXOR), 0, 0}), "cellenc: chunk 1 of a multi-chunk cell: cellenc: XOR chunk of no samples: malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cellenc.DecodeChunkCellSamples(cellenc.ChunkCellSamples{}, tc.value, 0, math.MaxInt64)
			if !errors.Is(err, schema.ErrMalformed) || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q wrapping ErrMalformed", err, tc.wantErr)
			}
		})
	}
}
