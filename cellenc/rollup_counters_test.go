package cellenc_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// randomCounterSeries returns ascending samples in [from, to) that stress the
// counter fields: runs of equal values, +0 after -0, NaNs in a row (no change)
// and after numbers (a change), ±Inf, resets to a smaller value or to the
// same, stale markers between samples, at gaps from 1 ms to past a window.
func randomCounterSeries(r *rand.Rand, from, to int64) []cellenc.Sample {
	var out []cellenc.Sample
	t := from + r.Int64N(300_000)
	v := float64(r.IntN(10))
	steps := []int64{1, 15_000, 15_000, 15_000, 60_000, 299_999, 300_000, 300_001}
	for t < to {
		switch k := r.IntN(20); {
		case k < 4: // the same value again
		case k == 4:
			v = math.NaN()
		case k == 5:
			v = nanPayload
		case k == 6:
			v = math.Copysign(0, float64(r.IntN(2)*2-1))
		case k == 7:
			v = math.Inf(r.IntN(2)*2 - 1)
		case k == 8:
			out = append(out, cellenc.Sample{T: t, V: staleNaN})
			t += steps[r.IntN(len(steps))]
			continue
		case k <= 10:
			v = float64(r.IntN(5)) // a reset, or not
		default:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = 0
			}
			v += float64(r.IntN(3)) + float64(r.IntN(2))*0.5
		}
		out = append(out, cellenc.Sample{T: t, V: v})
		t += steps[r.IntN(len(steps))]
	}
	return out
}

func TestAggregateWindowsCountersMatchBruteForce(t *testing.T) {
	r := newRand()
	const from = int64(1_700_000_000_000 / 86_400_000 * 86_400_000)
	windows, changes, resets := 0, 0, 0
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
		for i := range 300 {
			for _, w := range aggregateAsBruteForce(t, randomCounterSeries(r, from, from+3*3_600_000), res, i) {
				windows++
				changes += int(w.Changes)
				resets += len(w.ResetValues)
			}
		}
	}
	if changes < windows || resets < windows/10 {
		t.Fatalf("%d windows with %d changes and %d resets: the series do not exercise the counter fields", windows, changes, resets)
	}
}

// TestMergeCountersCases: the counter fields of merged parts, each split of a
// window where one part has no float sample or only one, or the boundary is
// or is not a change or a reset, are the whole window's, and merging reads its
// parts without writing to them.
func TestMergeCountersCases(t *testing.T) {
	const m = 60_000
	agg := func(s ...cellenc.Sample) cellenc.RollupWindow {
		return cellenc.AggregateWindows(s, nil, time.Minute)[0]
	}
	for _, tc := range []struct {
		name string
		a, b []cellenc.Sample
	}{
		{"stale only, then one sample", []cellenc.Sample{{T: 1, V: staleNaN}}, []cellenc.Sample{{T: 2, V: 5}}},
		{"stale only, then two", []cellenc.Sample{{T: 1, V: staleNaN}}, []cellenc.Sample{{T: 2, V: 5}, {T: 3, V: 1}}},
		{"one sample, then stale only", []cellenc.Sample{{T: 1, V: 5}}, []cellenc.Sample{{T: 2, V: staleNaN}}},
		{"two samples, then stale only", []cellenc.Sample{{T: 1, V: 5}, {T: 2, V: 4}}, []cellenc.Sample{{T: 3, V: staleNaN}}},
		{"one and one: a reset at the boundary", []cellenc.Sample{{T: 1, V: 5}}, []cellenc.Sample{{T: 2, V: 1}}},
		{"resets on both sides and at the boundary", []cellenc.Sample{{T: 1, V: 5}, {T: 2, V: 3}, {T: 3, V: 9}},
			[]cellenc.Sample{{T: 4, V: 2}, {T: 5, V: 1}, {T: m, V: 1}}},
		{"no change at the boundary", []cellenc.Sample{{T: 1, V: 1}, {T: 2, V: 2}}, []cellenc.Sample{{T: 3, V: 2}, {T: 4, V: 2}}},
		{"NaN then NaN: no change", []cellenc.Sample{{T: 1, V: math.NaN()}}, []cellenc.Sample{{T: 2, V: nanPayload}}},
		{"number then NaN: a change, no reset", []cellenc.Sample{{T: 1, V: 7}}, []cellenc.Sample{{T: 2, V: nanPayload}, {T: 3, V: 1}}},
		{"-0 then +0: no change", []cellenc.Sample{{T: 1, V: negZero}}, []cellenc.Sample{{T: 2, V: 0}}},
		{"+Inf then a number: a reset of +Inf", []cellenc.Sample{{T: 1, V: math.Inf(1)}}, []cellenc.Sample{{T: 2, V: 3}}},
	} {
		all := append(slices.Clone(tc.a), tc.b...)
		a, b := agg(tc.a...), agg(tc.b...)
		aBefore, bBefore := fmtWindow(a), fmtWindow(b)
		checkMerged(t, tc.name, a.Merge(b), agg(all...), all, 2)
		if fmtWindow(a) != aBefore || fmtWindow(b) != bBefore {
			t.Errorf("%s: merging changed its parts: %s %s, were %s %s", tc.name, fmtWindow(a), fmtWindow(b), aBefore, bBefore)
		}
	}
	// Two merges of one part make two windows: neither writes into the
	// part's ResetValues, even when it has room to grow.
	a := agg(cellenc.Sample{T: 1, V: 5}, cellenc.Sample{T: 2, V: 3})
	a.ResetValues = append(make([]float64, 0, 8), a.ResetValues...)
	m1 := a.Merge(agg(cellenc.Sample{T: 3, V: 1}))                             // resets 5, then 3 at the boundary
	m2 := a.Merge(agg(cellenc.Sample{T: 3, V: 4}, cellenc.Sample{T: 4, V: 2})) // resets 5, then 4
	if !slices.Equal(m1.ResetValues, []float64{5, 3}) || !slices.Equal(m2.ResetValues, []float64{5, 4}) || !slices.Equal(a.ResetValues, []float64{5}) {
		t.Errorf("two merges of a part: resets %v and %v, the part's %v; want [5 3], [5 4], [5]", m1.ResetValues, m2.ResetValues, a.ResetValues)
	}
}

// TestMergeWithoutCounters: a part without counter fields (decoded from a cell
// written before them) makes a merged window without them, whatever the other
// part; Resets is then merged as before them.
func TestMergeWithoutCounters(t *testing.T) {
	agg := func(s ...cellenc.Sample) cellenc.RollupWindow {
		return cellenc.AggregateWindows(s, nil, time.Minute)[0]
	}
	for _, tc := range []struct {
		name string
		a, b []cellenc.Sample
	}{
		{"samples on both sides", []cellenc.Sample{{T: 1, V: 5}, {T: 2, V: 3}}, []cellenc.Sample{{T: 3, V: 1}, {T: 4, V: 2}}},
		{"stale only, then samples", []cellenc.Sample{{T: 1, V: staleNaN}}, []cellenc.Sample{{T: 3, V: 1}, {T: 4, V: 0}}},
		{"samples, then stale only", []cellenc.Sample{{T: 1, V: 5}, {T: 2, V: 3}}, []cellenc.Sample{{T: 3, V: staleNaN}}},
	} {
		all := append(slices.Clone(tc.a), tc.b...)
		whole := withoutCounters(agg(all...))
		for _, legacyFirst := range []bool{true, false} {
			a, b := agg(tc.a...), agg(tc.b...)
			if legacyFirst {
				a = withoutCounters(a)
			} else {
				b = withoutCounters(b)
			}
			checkMerged(t, fmt.Sprintf("%s, legacy first %t", tc.name, legacyFirst), a.Merge(b), whole, all, 2)
		}
	}
}

// withoutCounters is w as decoded from a cell written before the counter part.
func withoutCounters(w cellenc.RollupWindow) cellenc.RollupWindow {
	w.HasCounters, w.Changes, w.ResetValues, w.PrevT, w.PrevV = false, 0, nil, 0, 0
	return w
}

func TestRollupCountersRoundTripBitExact(t *testing.T) {
	const bucket = int64(1_700_000_000_000 / 3_600_000 * 3_600_000)
	const m5 = int64(300_000)
	at := func(w, off int64) int64 { return bucket + w*m5 + off }
	fs := []cellenc.Sample{
		// Window 1: one sample, a NaN with a payload.
		{T: at(0, 1), V: nanPayload},
		// Window 2: two samples, -0 then a reset to -1.
		{T: at(1, 1), V: negZero}, {T: at(1, 15_001), V: -1},
		// Window 3: histograms only (below). Window 4: stale only.
		{T: at(3, 10), V: staleNaN},
		// Window 5: NaN payloads, ±Inf, -0, resets, repeats, a stale marker
		// between samples and one at the end.
		{T: at(4, 1), V: math.Inf(1)}, {T: at(4, 2), V: nanPayload}, {T: at(4, 3), V: math.NaN()},
		{T: at(4, 4), V: 3}, {T: at(4, 5), V: staleNaN}, {T: at(4, 6), V: 3}, {T: at(4, 7), V: negZero},
		{T: at(4, 8), V: 0}, {T: at(4, 9), V: math.Inf(-1)}, {T: at(4, 10), V: 1e300}, {T: at(4, 11), V: -math.MaxFloat64},
		{T: at(4, 12), V: staleNaN},
		// Window 6: two samples, no change. Window 7: three, PrevT not FirstT.
		{T: at(5, 100), V: 7}, {T: at(5, m5), V: 7},
		{T: at(6, 1), V: 1}, {T: at(6, 2), V: 2}, {T: at(6, 3), V: 3},
	}
	hs := []cellenc.HistogramSample{
		{T: at(2, 5), H: tsdbutil.GenerateTestHistogram(1)},
		{T: at(2, 6), FH: tsdbutil.GenerateTestCustomBucketsFloatHistogram(2)},
		{T: at(4, 13), H: tsdbutil.GenerateTestHistogram(3)}, // after window 5's stale marker
	}
	ws := cellenc.AggregateWindows(fs, hs, 5*time.Minute)
	if len(ws) != 7 || ws[2].Count != 0 || ws[2].Histograms != 2 || ws[3].Count != 0 || !ws[3].HasStale() || ws[1].Count != 2 || ws[0].Count != 1 {
		t.Fatalf("the windows are not the ones meant: %s", fmtWindows(ws))
	}
	for _, w := range ws {
		if !w.HasCounters {
			t.Fatalf("window without counter fields: %s", fmtWindow(w))
		}
	}
	roundTrip(t, bucket, 5*time.Minute, ws)
	for i := range ws {
		roundTrip(t, bucket, 5*time.Minute, ws[i:i+1])
	}

	r := newRand()
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		for range 200 {
			roundTrip(t, bucket, res, cellenc.AggregateWindows(randomCounterSeries(r, bucket, bucket+3_600_000), nil, res))
		}
	}
}

// legacyCells are rollup cells written by EncodeRollupWindows before the
// counter part (commit a888d85), of legacyFixtureSeries(integers, histograms)
// at 5m in the bucket legacyBucket: one in each layout of that time.
var legacyCells = []struct {
	integers, histograms bool
	hex                  string
}{
	{false, false, "03e0a712662802aeea01024025126bc0034086980066010000037fb6c0037fbf4012fde000661500c0fc15120f80121820120798"},
	{true, false, "03e0a712662802aeea01024024126a80034086480066010000037fbe80027fb712fca800661500c0fc15120f801218401206400007"},
	{false, true, "03e0a712661c02aeea0102402512624003407890006603b0ea01000012146012fe680000030006c7df022b0100023f50624dd2f1a9fc13a5014074b333333333330200020202020002020204240201000424020100000007afea012b0100023f50624dd2f1a9fc28e20240866ccccccccccc02000202020200020202044e020100044e020100000008b7f30b2b0100023f50624dd2f1a9fc31b303408b999999999999020002020202000202020460020100046002010000"},
	{true, true, "03e0a712661c02aeea01024024116303407820006603b0ea010000111412fee800000003030006c7df022b0100023f50624dd2f1a9fc13a5014074b333333333330200020202020002020204240201000424020100000007afea012b0100023f50624dd2f1a9fc28e20240866ccccccccccc02000202020200020202044e020100044e020100000008b7f30b2b0100023f50624dd2f1a9fc31b303408b999999999999020002020202000202020460020100046002010000"},
}

const legacyBucket = int64(1_700_000_000_000 / 3_600_000 * 3_600_000)

// legacyFixtureSeries is 12 minutes of 15 s samples from legacyBucket+1: a
// counter with a reset and a stale marker, of integers or not; with
// histograms, every third sample and the last window's all are histograms.
// (The code that made legacyCells; keep it as it is.)
func legacyFixtureSeries(integers, histograms bool) ([]cellenc.Sample, []cellenc.HistogramSample) {
	var (
		fs []cellenc.Sample
		hs []cellenc.HistogramSample
	)
	c := 10.0
	for i := range 48 {
		t := legacyBucket + 1 + int64(i)*15_000
		switch {
		case histograms && (i%3 == 2 || i >= 40):
			hs = append(hs, cellenc.HistogramSample{T: t, H: tsdbutil.GenerateTestHistogram(int64(i))})
			continue
		case i == 30:
			fs = append(fs, cellenc.Sample{T: t, V: staleNaN})
			continue
		case i == 20:
			c = 1
		case i%7 == 0:
		default:
			c += 3
		}
		v := c
		if !integers {
			v += 0.5
		}
		fs = append(fs, cellenc.Sample{T: t, V: v})
	}
	return fs, hs
}

// TestLegacyRollupCellsDecode: a cell in each layout written before the counter
// part decodes to the windows it was written from, every field as before and
// HasCounters false (its counter fields zero), and those windows encode to the
// same bytes again.
func TestLegacyRollupCellsDecode(t *testing.T) {
	const res = 5 * time.Minute
	for _, c := range legacyCells {
		name := fmt.Sprintf("integers %t, histograms %t", c.integers, c.histograms)
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		fs, hs := legacyFixtureSeries(c.integers, c.histograms)
		want := cellenc.AggregateWindows(fs, hs, res)
		got, err := cellenc.DecodeRollupWindows(nil, b, legacyBucket, res)
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %s, %v; want %d windows", name, fmtWindows(got), err, len(want))
		}
		for i := range want {
			if !sameWindow(got[i], withoutCounters(want[i])) {
				t.Errorf("%s: window %d = %s\nwant %s", name, i, fmtWindow(got[i]), fmtWindow(withoutCounters(want[i])))
			}
		}
		if enc := cellenc.EncodeRollupWindows(nil, legacyBucket, res, got); hex.EncodeToString(enc) != c.hex {
			t.Errorf("%s: the decoded windows encode as %x, not as they were", name, enc)
		}
		// The same windows with counter fields round-trip with them.
		roundTrip(t, legacyBucket, res, want)
	}
	// Windows of which only some have counter fields (parts merged with an old
	// cell's) are written as before the counter part: none has them then.
	fs, hs := legacyFixtureSeries(true, true)
	mixed := cellenc.AggregateWindows(fs, hs, res)
	mixed[1] = withoutCounters(mixed[1])
	if enc := cellenc.EncodeRollupWindows(nil, legacyBucket, res, mixed); hex.EncodeToString(enc) != legacyCells[3].hex {
		t.Errorf("windows with and without counter fields encode as %x, want the old layout %s", enc, legacyCells[3].hex)
	}
}

// TestEncodeRollupCountersLayout pins the counter part's bytes: a change of
// the layout breaks stored rollups.
func TestEncodeRollupCountersLayout(t *testing.T) {
	const res = 5 * time.Minute
	w := cellenc.RollupWindow{End: 300_000, Count: 2, Sum: 3, Min: 1, Max: 2, FirstT: 1000, FirstV: 1, LastT: 300_000, LastV: 2, StaleT: -1,
		HasCounters: true, Changes: 1, PrevT: 1000, PrevV: 1}
	windowsPart := []byte{0x01, 0xe0, 0xa7, 0x12, 0x66, 0x04, 0xd0, 0x0f, 0x00, 0x02, 0x3f, 0xf0, 0x02, 0x7f, 0xf0, 0x02, 0x40, 0x08}
	got := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{w})
	want := append(slices.Clone(windowsPart),
		0x00, 0x00, // integer part: no window of integers
		0x00,             // histogram part: no window with histograms
		0x01,             // counter part, version 1
		0x00,             // Count-1-Changes = 0
		0x00,             // no reset
		0xf0, 0xbf, 0x24, // LastT-PrevT = 299000 minus 0, zigzag
		0x02, 0x7f, 0xf0, // PrevV 1 ^ LastV 2
	)
	if !slices.Equal(got, want) {
		t.Fatalf("EncodeRollupWindows = % x\nwant                 % x", got, want)
	}
	// Four windows: w; a counter with a reset scraped at the same interval
	// (LastT-PrevT as w's: one byte); a window of integers with one sample
	// and histograms; a stale one (no float sample, no counter fields).
	w2 := cellenc.RollupWindow{End: 600_000, Count: 3, Sum: 5, Min: 0.5, Max: 2.5, FirstT: 300_001, FirstV: 2.5, LastT: 600_000, LastV: 2,
		Resets: 2.5, StaleT: -1, HasCounters: true, Changes: 2, ResetValues: []float64{2.5}, PrevT: 301_000, PrevV: 0.5}
	w3 := cellenc.RollupWindow{End: 900_000, Count: 1, Sum: 4, Min: 4, Max: 4, FirstT: 600_001, FirstV: 4, LastT: 600_001, LastV: 4, StaleT: -1,
		Integers: true, HasCounters: true, Histograms: 1, LastH: cellenc.HistogramSample{T: 600_002, H: tsdbutil.GenerateTestHistogram(1)}}
	w4 := cellenc.RollupWindow{End: 1_200_000, StaleT: 900_001, HasCounters: true}
	got = cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{w, w2, w3, w4})
	// The same windows without counter fields are written in the old
	// layout, which has the integer part (00 04: window 2) and the histogram
	// part here; with them, the counter part follows.
	old := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{withoutCounters(w), withoutCounters(w2), withoutCounters(w3), withoutCounters(w4)})
	counters := []byte{
		0x01,                                           // version 1
		0x00, 0x00, 0xf0, 0xbf, 0x24, 0x02, 0x7f, 0xf0, // w as above
		0x00,       // w2: Count-1-Changes = 0
		0x01, 0x00, // one reset: 2.5 ^ FirstV 2.5
		0x00,             // LastT-PrevT = 299000 minus w's 299000
		0x02, 0x7f, 0xe0, // PrevV 0.5 (0x3fe0...) ^ LastV 2 (0x4000...)
		0x00, 0x00, // w3: no change, no reset, one sample
	}
	if !slices.Equal(got, append(slices.Clone(old), counters...)) {
		t.Fatalf("EncodeRollupWindows of 4 windows = % x\nwant the old layout % x then % x", got, old, counters)
	}
	roundTrip(t, 0, res, []cellenc.RollupWindow{w, w2, w3, w4})
}

func TestDecodeRollupCountersRejectsMalformed(t *testing.T) {
	const res = 5 * time.Minute
	x := schemaXOR
	// cell is a cell of the one window w: its windows part, an integer
	// bitmap of no window, no window with histograms, then the counter part
	// of the given version and bytes.
	cell := func(w cellenc.RollupWindow, version byte, counters ...byte) []byte {
		b := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{withoutCounters(w)})
		return slices.Concat(b, []byte{0x00, 0x00, 0x00, version}, counters)
	}
	// Three samples 1.5, 3.5, 2.5 (a reset of 3.5) at 100, 200, 300 ms:
	// two changes, one reset, the last two 100 ms apart.
	w3 := cellenc.AggregateWindows([]cellenc.Sample{{T: 100, V: 1.5}, {T: 200, V: 3.5}, {T: 300, V: 2.5}}, nil, res)[0]
	fields3 := slices.Concat([]byte{0x00, 0x01}, x(1.5, 3.5), []byte{0xc8, 0x01}, x(2.5, 3.5))
	// Two samples 1.5 then 3.5 at 100 and 300 ms: a change, no reset.
	w2 := cellenc.AggregateWindows([]cellenc.Sample{{T: 100, V: 1.5}, {T: 300, V: 3.5}}, nil, res)[0]
	fields2 := slices.Concat([]byte{0x00, 0x00, 0x90, 0x03}, x(3.5, 1.5))
	valid := cell(w3, 1, fields3...)
	version := len(valid) - len(fields3) - 1 // the offset of the version byte
	for _, c := range []struct {
		w cellenc.RollupWindow
		b []byte
	}{{w3, valid}, {w2, cell(w2, 1, fields2...)}} {
		if enc := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{c.w}); !slices.Equal(enc, c.b) {
			t.Fatalf("test encoding % x, EncodeRollupWindows % x", c.b, enc)
		}
		if _, err := cellenc.DecodeRollupWindows(nil, c.b, 0, res); err != nil {
			t.Fatalf("the valid cell % x: %v", c.b, err)
		}
	}
	// encode writes w3 changed by mutate.
	encode := func(w cellenc.RollupWindow, mutate func(*cellenc.RollupWindow)) []byte {
		w.ResetValues = slices.Clone(w.ResetValues)
		mutate(&w)
		return cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{w})
	}
	oldWindows := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{withoutCounters(w3)})
	oldIntegers := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{
		withoutCounters(cellenc.AggregateWindows([]cellenc.Sample{{T: 100, V: 1}}, nil, res)[0])})
	oldHistograms := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{
		{End: 300_000, StaleT: -1, Histograms: 1, LastH: cellenc.HistogramSample{T: 10, H: tsdbutil.GenerateTestHistogram(1)}}})
	if !slices.Equal(oldIntegers[len(oldIntegers)-2:], []byte{0x00, 0x01}) || oldHistograms[4] != 0x00 || oldHistograms[5] != 0x01 {
		t.Fatalf("not the old layouts meant: % x, % x", oldIntegers, oldHistograms)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"version 0", cell(w3, 0, fields3...), fmt.Sprintf("counter part of version 0 at byte %d", version)},
		{"version 2", cell(w3, 2, fields3...), fmt.Sprintf("counter part of version 2 at byte %d", version)},
		{"no counter fields", cell(w3, 1), fmt.Sprintf("bad varint at byte %d", version+1)},
		{"counter fields cut short", valid[:len(valid)-2], "value ends at byte"},
		{"trailing bytes", append(slices.Clone(valid), 0x00), "1 trailing bytes"},
		{"Changes above Count-1, as the encoder writes it", encode(w3, func(w *cellenc.RollupWindow) { w.Changes = 3 }),
			fmt.Sprintf("bad varint at byte %d", version+1)},
		{"Count-1-Changes above Count-1", cell(w3, 1, 0x03, 0x00, 0xc8, 0x01, 0x00), "3 unchanged samples and 0 resets of 3 samples"},
		{"more resets than Count-1", encode(w3, func(w *cellenc.RollupWindow) { w.ResetValues, w.Resets = []float64{3.5, 3.5, 3.5}, 10.5 }),
			"0 unchanged samples and 3 resets of 3 samples"},
		{"more resets than changes", encode(w3, func(w *cellenc.RollupWindow) { w.Changes, w.ResetValues, w.Resets = 1, []float64{3.5, 3.5}, 7 }),
			"1 unchanged samples and 2 resets of 3 samples"},
		{"a reset value NaN", encode(w3, func(w *cellenc.RollupWindow) { w.ResetValues[0], w.Resets = math.NaN(), math.NaN() }),
			"inconsistent counter fields"},
		{"a reset value -Inf", encode(w3, func(w *cellenc.RollupWindow) { w.ResetValues[0], w.Resets = math.Inf(-1), math.Inf(-1) }),
			"inconsistent counter fields"},
		{"Resets not the sum of the reset values", encode(w3, func(w *cellenc.RollupWindow) { w.ResetValues[0] = 4 }),
			"inconsistent counter fields"},
		{"no change counted between the last two samples", encode(w3, func(w *cellenc.RollupWindow) { w.Changes, w.ResetValues, w.Resets = 0, nil, 0 }),
			"inconsistent counter fields"},
		{"the last two samples' reset not counted", encode(w3, func(w *cellenc.RollupWindow) { w.ResetValues, w.Resets = nil, 0 }),
			"inconsistent counter fields"},
		{"the last reset value not PrevV", encode(w3, func(w *cellenc.RollupWindow) { w.PrevV, w.ResetValues[0], w.Resets = 3, 3.25, 3.25 }),
			"inconsistent counter fields"},
		{"PrevT = LastT", encode(w3, func(w *cellenc.RollupWindow) { w.PrevT = w.LastT }), "second-to-last sample 0 ms before the last"},
		{"PrevT before FirstT", encode(w3, func(w *cellenc.RollupWindow) { w.PrevT = w.FirstT - 1 }), "second-to-last sample 201 ms before the last"},
		{"PrevT after LastT", encode(w3, func(w *cellenc.RollupWindow) { w.PrevT = w.LastT + 1 }), "second-to-last sample -1 ms before the last"},
		{"PrevT not FirstT of two samples", encode(w2, func(w *cellenc.RollupWindow) { w.PrevT = 200 }), "second-to-last sample 100 ms before the last"},
		{"PrevV not FirstV of two samples", encode(w2, func(w *cellenc.RollupWindow) { w.PrevV = 2 }),
			"second-to-last value of the two of the window ending 300000 is not the first"},
		{"PrevV -0 for a FirstV of +0", encode(cellenc.AggregateWindows([]cellenc.Sample{{T: 100, V: 0}, {T: 300, V: 3}}, nil, res)[0],
			func(w *cellenc.RollupWindow) { w.PrevV = negZero }), "second-to-last value of the two"},
		{"a change counted between two equal samples", encode(cellenc.AggregateWindows([]cellenc.Sample{{T: 100, V: 3}, {T: 300, V: 3}}, nil, res)[0],
			func(w *cellenc.RollupWindow) { w.Changes = 1 }), "inconsistent counter fields"},
		{"a reset counted between two growing samples", encode(w2, func(w *cellenc.RollupWindow) { w.ResetValues, w.Resets = []float64{1.5}, 1.5 }),
			"inconsistent counter fields"},
		{"a counter part in a cell of no windows", []byte{0x00, 0x00, 0x00, 0x01}, "counter part of a cell without windows"},
		{"a histogram count of 0 without a counter part", append(slices.Clone(oldIntegers), 0x00), "no window with histograms and no counter part"},
		{"an all-zero bitmap without a counter part", append(slices.Clone(oldWindows), 0x00, 0x00), "empty integer bitmap"},
		{"an all-zero bitmap and histograms without a counter part", slices.Concat(oldHistograms[:5], []byte{0x00, 0x00}, oldHistograms[5:]),
			"empty integer bitmap"},
		{"a counter part without the integer bitmap", append(slices.Clone(oldHistograms), 0x01, 0x00), "2 trailing bytes"},
		{"a counter part without the histogram count", slices.Concat(oldWindows, []byte{0x00, 0x00, 0x01}, fields3), "malformed"},
	} {
		ws, err := cellenc.DecodeRollupWindows(nil, tc.b, 0, res)
		if !errors.Is(err, schema.ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: DecodeRollupWindows(% x) = %s, %v\nwant an error with %q", tc.name, tc.b, fmtWindows(ws), err, tc.msg)
		}
	}
}

// schemaXOR is appendXORFloat: f XORed with prev, a byte lead<<4|n and the n
// significant bytes.
func schemaXOR(prev, f float64) []byte {
	x := math.Float64bits(f) ^ math.Float64bits(prev)
	if x == 0 {
		return []byte{0}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], x)
	lead, end := 0, 8
	for b[lead] == 0 {
		lead++
	}
	for b[end-1] == 0 {
		end--
	}
	return append([]byte{byte(lead<<4 | (end - lead))}, b[lead:end]...)
}

// TestRollupCellSizes measures what the counter part costs a day of three
// series scraped every 15 s, each rolled up in 24 cells of 1h buckets: a
// counter growing by a random integer, a counter of float seconds, and a
// constant gauge. The numbers are quoted in EncodeRollupWindows' doc; the
// bounds keep them honest.
func TestRollupCellSizes(t *testing.T) {
	const day = int64(19_000 * 86_400_000)
	r := newRand()
	series := map[string]func(i int) float64{}
	c, s := 0.0, 0.0
	counter := make([]float64, 5760)
	seconds := make([]float64, 5760)
	for i := range counter {
		c += float64(1 + r.IntN(1000))
		s += 0.001 * float64(r.IntN(15_000))
		counter[i], seconds[i] = c, s
	}
	series["integer counter"] = func(i int) float64 { return counter[i] }
	series["float counter"] = func(i int) float64 { return seconds[i] }
	series["constant gauge"] = func(int) float64 { return 42 }
	bounds := map[string]float64{ // the counter part's cost a window at most, bytes
		"integer counter 5m": 7, "integer counter 1h": 11,
		"float counter 5m": 11, "float counter 1h": 17,
		"constant gauge 5m": 5, "constant gauge 1h": 10,
	}
	for _, name := range []string{"integer counter", "float counter", "constant gauge"} {
		for _, res := range []time.Duration{5 * time.Minute, time.Hour} {
			with, without, windows := 0, 0, 0
			for h := range int64(24) {
				bs := day + h*3_600_000
				var in []cellenc.Sample
				for i := range 240 {
					n := int(h)*240 + i
					in = append(in, cellenc.Sample{T: bs + 1 + int64(i)*15_000, V: series[name](n)})
				}
				ws := cellenc.AggregateWindows(in, nil, res)
				windows += len(ws)
				with += len(cellenc.EncodeRollupWindows(nil, bs, res, ws))
				old := make([]cellenc.RollupWindow, len(ws))
				for i, w := range ws {
					old[i] = withoutCounters(w)
				}
				without += len(cellenc.EncodeRollupWindows(nil, bs, res, old))
			}
			perWith, perWithout := float64(with)/float64(windows), float64(without)/float64(windows)
			key := fmt.Sprintf("%s %s", name, map[time.Duration]string{5 * time.Minute: "5m", time.Hour: "1h"}[res])
			t.Logf("%-18s %.2f bytes a window with the counter part, %.2f without (+%.2f)", key, perWith, perWithout, perWith-perWithout)
			if perWith-perWithout > bounds[key] {
				t.Errorf("%s: the counter part costs %.2f bytes a window, more than %g", key, perWith-perWithout, bounds[key])
			}
		}
	}
}
