package cellenc_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/kahansum"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

var (
	staleNaN = math.Float64frombits(value.StaleNaN)
	negZero  = math.Copysign(0, -1)
	// nanPayload is a quiet NaN with a payload that is neither Go's NaN nor a
	// stale marker: rollups must keep it to the bit.
	nanPayload = math.Float64frombits(0x7ff8_0000_dead_beef)
)

// sameFloat reports whether a and b have the same bits.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// sameWindow reports whether a and b are equal to the bit, NaN payloads and the
// sign of zero included.
func sameWindow(a, b cellenc.RollupWindow) bool {
	return a.End == b.End && a.Count == b.Count && a.FirstT == b.FirstT && a.LastT == b.LastT && a.StaleT == b.StaleT &&
		sameFloat(a.Sum, b.Sum) && sameFloat(a.Min, b.Min) && sameFloat(a.Max, b.Max) &&
		sameFloat(a.FirstV, b.FirstV) && sameFloat(a.LastV, b.LastV) && sameFloat(a.Resets, b.Resets) &&
		a.Histograms == b.Histograms && sameLastH(a.LastH, b.LastH) && a.Integers == b.Integers &&
		a.HasCounters == b.HasCounters && a.Changes == b.Changes && slices.EqualFunc(a.ResetValues, b.ResetValues, sameFloat) &&
		a.PrevT == b.PrevT && sameFloat(a.PrevV, b.PrevV)
}

// sameLastH compares two windows' last histograms by their raw cell values
// (every field, bit for bit).
func sameLastH(a, b cellenc.HistogramSample) bool {
	if a.H == nil && a.FH == nil || b.H == nil && b.FH == nil {
		return a.H == nil && a.FH == nil && b.H == nil && b.FH == nil
	}
	return a.T == b.T && bytes.Equal(cellenc.AppendHistogramSampleValue(nil, a), cellenc.AppendHistogramSampleValue(nil, b))
}

// sameAggregate is sameWindow for two computations of a window: Sum and
// Resets are sums, and which NaN payload a sum of two NaNs carries depends on
// the order of the operands, which the Go compiler may swap (it does with
// -race), so those two only need to be NaN on both sides.
func sameAggregate(a, b cellenc.RollupWindow) bool {
	sameSum := func(x, y float64) bool { return sameFloat(x, y) || math.IsNaN(x) && math.IsNaN(y) }
	a2, b2 := a, b
	if sameSum(a.Sum, b.Sum) {
		a2.Sum, b2.Sum = 0, 0
	}
	if sameSum(a.Resets, b.Resets) {
		a2.Resets, b2.Resets = 0, 0
	}
	return sameWindow(a2, b2)
}

// fmtWindow writes w with its floats as bits, so that a failure shows payloads.
func fmtWindow(w cellenc.RollupWindow) string {
	f := func(v float64) string { return fmt.Sprintf("%v(%#x)", v, math.Float64bits(v)) }
	h := ""
	if w.Histograms > 0 {
		h = fmt.Sprintf(" Histograms:%d LastH:%d=%x", w.Histograms, w.LastH.T, cellenc.AppendHistogramSampleValue(nil, w.LastH))
	}
	c := ""
	if w.HasCounters {
		rs := make([]string, len(w.ResetValues))
		for i, v := range w.ResetValues {
			rs[i] = f(v)
		}
		c = fmt.Sprintf(" Changes:%d ResetValues:[%s] Prev:%d=%s", w.Changes, strings.Join(rs, " "), w.PrevT, f(w.PrevV))
	} else if w.Changes != 0 || w.ResetValues != nil || w.PrevT != 0 || w.PrevV != 0 {
		c = fmt.Sprintf(" no counters but Changes:%d ResetValues:%v Prev:%d=%s", w.Changes, w.ResetValues, w.PrevT, f(w.PrevV))
	}
	return fmt.Sprintf("{End:%d Count:%d Sum:%s Min:%s Max:%s First:%d=%s Last:%d=%s Resets:%s StaleT:%d Integers:%t%s%s}",
		w.End, w.Count, f(w.Sum), f(w.Min), f(w.Max), w.FirstT, f(w.FirstV), w.LastT, f(w.LastV), f(w.Resets), w.StaleT, w.Integers, c, h)
}

func fmtWindows(ws []cellenc.RollupWindow) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmtWindow(w)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestWindowEnd(t *testing.T) {
	const r = 5 * time.Minute
	for _, tc := range []struct{ t, want int64 }{
		{0, 0},
		{1, 300_000},
		{299_999, 300_000},
		{300_000, 300_000}, // closed on the right
		{300_001, 600_000},
		{-1, 0},
		{-299_999, 0},
		{-300_000, -300_000},
		{-300_001, -300_000},
	} {
		if got := cellenc.WindowEnd(tc.t, r); got != tc.want {
			t.Errorf("WindowEnd(%d, 5m) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

// TestSumsExact: a window knows whether its samples are all integers, which
// merging parts keeps, and SumsExact holds exactly when every window is of
// integers and their magnitudes add up to at most 2^53 (with a margin of 2:
// 2^52); the windows' sums then add to the samples' sum whatever the grouping.
func TestSumsExact(t *testing.T) {
	const res = 5 * time.Minute
	at := func(i int) int64 { return int64(i) * 60_000 }
	ints := cellenc.AggregateWindows([]cellenc.Sample{{T: at(1), V: 3}, {T: at(2), V: negZero}, {T: at(6), V: -7}, {T: at(7), V: staleNaN}}, nil, res)
	if len(ints) != 2 || !ints[0].Integers || !ints[1].Integers || !cellenc.SumsExact(ints) {
		t.Errorf("integer windows: %s, SumsExact %t", fmtWindows(ints), cellenc.SumsExact(ints))
	}
	for _, v := range []float64{0.1, math.Inf(1), math.NaN()} {
		ws := cellenc.AggregateWindows([]cellenc.Sample{{T: at(1), V: 3}, {T: at(2), V: v}, {T: at(6), V: 1}}, nil, res)
		if ws[0].Integers || !ws[1].Integers || cellenc.SumsExact(ws) {
			t.Errorf("with %v: %s, SumsExact %t", v, fmtWindows(ws), cellenc.SumsExact(ws))
		}
		if m := ws[1].Merge(ws[0]); m.Integers {
			t.Errorf("merged with %v: Integers", v)
		}
	}
	// Bounds: 2 × 2^50, then 2^50: 1.5 × 2^51, exact.
	big := cellenc.AggregateWindows([]cellenc.Sample{{T: at(1), V: 1 << 50}, {T: at(2), V: 1}, {T: at(6), V: -(1 << 50)}}, nil, res)
	if !big[0].Integers || !big[1].Integers || !cellenc.SumsExact(big) {
		t.Errorf("2^50, 1, -2^50: %s, SumsExact false", fmtWindows(big))
	}
	// And 2^51 more: over 2^52.
	big = append(big, cellenc.AggregateWindows([]cellenc.Sample{{T: at(11), V: 1 << 51}}, nil, res)...)
	if cellenc.SumsExact(big) {
		t.Errorf("2^50, 1, -2^50, 2^51: SumsExact true")
	}
	// A huge float is an integer, its sums are not exact.
	huge := cellenc.AggregateWindows([]cellenc.Sample{{T: at(1), V: 1e300 / 3}}, nil, res)
	if !huge[0].Integers || cellenc.SumsExact(huge) {
		t.Errorf("1e300/3: %s, SumsExact %t", fmtWindows(huge), cellenc.SumsExact(huge))
	}
}

// randomSeries returns ascending samples in [from, to): a counter with resets,
// gaps of every length (within a window, across windows, across many), and now
// and then a NaN (of another payload too), a stale marker (a few in a row
// sometimes), ±Inf, -0 or a negative value.
func randomSeries(r *rand.Rand, from, to int64) []cellenc.Sample {
	var out []cellenc.Sample
	t := from + r.Int64N(600_000)
	if r.IntN(8) == 0 {
		t = from // the bucket's first millisecond
	}
	counter := float64(r.IntN(100))
	steps := []int64{1, 1000, 15_000, 60_000, 299_999, 300_000, 300_001, 3_600_000}
	for t < to {
		var v float64
		switch k := r.IntN(40); {
		case k == 0:
			v = math.NaN()
		case k == 1:
			v = nanPayload
		case k <= 4:
			v = staleNaN
		case k == 5:
			v = math.Inf(1)
		case k == 6:
			v = math.Inf(-1)
		case k == 7:
			v = negZero
		case k == 8:
			v = -counter
		case k <= 11:
			counter = float64(r.IntN(10)) // a counter reset
			v = counter
		default:
			counter += float64(r.IntN(1000)) + r.Float64()
			v = counter
		}
		out = append(out, cellenc.Sample{T: t, V: v})
		t += steps[r.IntN(len(steps))] + r.Int64N(2)*r.Int64N(50_000)
	}
	return out
}

// bruteForceWindows computes the windows of samples by the definitions: group
// by window, then per window what PromQL's range functions compute over the
// window's samples, stale markers excluded: sum_over_time (Kahan, as
// funcSumOverTime), min/max_over_time (compareOverTime: NaN only if every sample
// is NaN), the counter resets as extrapolatedRate adds them, and the stale
// marker that ends the window, if any; and the counter fields, by the code of
// changes() (funcChanges) and of extrapolatedRate's reset loop.
func bruteForceWindows(samples []cellenc.Sample, res time.Duration) []cellenc.RollupWindow {
	r := res.Milliseconds()
	byEnd := map[int64][]cellenc.Sample{}
	var ends []int64
	for _, s := range samples {
		end := (s.T + r - 1) / r * r // t >= 0 here
		if _, ok := byEnd[end]; !ok {
			ends = append(ends, end)
		}
		byEnd[end] = append(byEnd[end], s)
	}
	var out []cellenc.RollupWindow
	for _, end := range ends {
		in := byEnd[end]
		w := cellenc.RollupWindow{End: end, StaleT: -1, HasCounters: true}
		var floats []cellenc.Sample
		for _, s := range in {
			if !value.IsStaleNaN(s.V) {
				floats = append(floats, s)
			}
		}
		if last := in[len(in)-1]; value.IsStaleNaN(last.V) {
			w.StaleT = last.T
		}
		if len(floats) > 0 {
			w.Count = uint64(len(floats))
			var sum, c float64
			for _, f := range floats {
				sum, c = kahansum.Inc(f.V, sum, c)
			}
			if !math.IsInf(sum, 0) {
				sum += c
			}
			w.Sum = sum
			w.Integers = true
			for _, f := range floats {
				w.Integers = w.Integers && f.V == math.Trunc(f.V) && !math.IsInf(f.V, 0)
			}
			w.Min, w.Max = floats[0].V, floats[0].V
			for _, f := range floats {
				if f.V > w.Max || math.IsNaN(w.Max) {
					w.Max = f.V
				}
				if f.V < w.Min || math.IsNaN(w.Min) {
					w.Min = f.V
				}
			}
			prev := floats[0].V
			for _, f := range floats[1:] {
				if f.V < prev {
					w.Resets += prev
					w.ResetValues = append(w.ResetValues, prev)
				}
				if f.V != prev && !(math.IsNaN(f.V) && math.IsNaN(prev)) {
					w.Changes++
				}
				prev = f.V
			}
			if len(floats) >= 2 {
				w.PrevT, w.PrevV = floats[len(floats)-2].T, floats[len(floats)-2].V
			}
			w.FirstT, w.FirstV = floats[0].T, floats[0].V
			w.LastT, w.LastV = floats[len(floats)-1].T, floats[len(floats)-1].V
		}
		out = append(out, w)
	}
	return out
}

// aggregateAsBruteForce returns AggregateWindows' windows of resolution res
// for samples (series i of a test), failing t unless they are
// bruteForceWindows'.
func aggregateAsBruteForce(t *testing.T, samples []cellenc.Sample, res time.Duration, i int) []cellenc.RollupWindow {
	t.Helper()
	got := cellenc.AggregateWindows(samples, nil, res)
	want := bruteForceWindows(samples, res)
	if len(got) != len(want) {
		t.Fatalf("%s series %d: %d windows, want %d", res, i, len(got), len(want))
	}
	for j := range want {
		if !sameAggregate(got[j], want[j]) {
			t.Fatalf("%s series %d window %d:\n got %s\nwant %s", res, i, j, fmtWindow(got[j]), fmtWindow(want[j]))
		}
	}
	return got
}

func TestAggregateWindowsMatchesBruteForce(t *testing.T) {
	r := newRand()
	const from = int64(1_700_000_000_000 / 86_400_000 * 86_400_000)
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		for i := range 300 {
			aggregateAsBruteForce(t, randomSeries(r, from, from+6*3_600_000), res, i)
		}
	}
	if got := cellenc.AggregateWindows(nil, nil, time.Minute); got != nil {
		t.Errorf("AggregateWindows(nil) = %v", got)
	}
}

func TestAggregateWindowsCases(t *testing.T) {
	const m = 60_000
	for _, tc := range []struct {
		name    string
		samples []cellenc.Sample
		want    []cellenc.RollupWindow
	}{
		{"max and min skip NaN", []cellenc.Sample{{T: 1, V: math.NaN()}, {T: 2, V: 5}, {T: 3, V: nanPayload}, {T: 4, V: 3}},
			[]cellenc.RollupWindow{{End: m, Count: 4, Sum: math.NaN(), Min: 3, Max: 5, FirstT: 1, FirstV: math.NaN(), LastT: 4, LastV: 3, StaleT: -1,
				HasCounters: true, Changes: 3, PrevT: 3, PrevV: nanPayload}}},
		{"all NaN: the last NaN, as max_over_time", []cellenc.Sample{{T: 1, V: math.NaN()}, {T: 2, V: nanPayload}},
			[]cellenc.RollupWindow{{End: m, Count: 2, Sum: math.NaN(), Min: nanPayload, Max: nanPayload, FirstT: 1, FirstV: math.NaN(), LastT: 2, LastV: nanPayload, StaleT: -1,
				HasCounters: true, PrevT: 1, PrevV: math.NaN()}}}, // NaN after NaN: no change
		{"only a stale marker", []cellenc.Sample{{T: m + 5, V: staleNaN}},
			[]cellenc.RollupWindow{{End: 2 * m, StaleT: m + 5, HasCounters: true}}},
		{"stale markers in the middle are skipped, the reset counted across them",
			[]cellenc.Sample{{T: 1, V: 10}, {T: 2, V: staleNaN}, {T: 3, V: 4}, {T: m, V: staleNaN}},
			[]cellenc.RollupWindow{{End: m, Count: 2, Sum: 14, Min: 4, Max: 10, FirstT: 1, FirstV: 10, LastT: 3, LastV: 4, Resets: 10, StaleT: m, Integers: true,
				HasCounters: true, Changes: 1, ResetValues: []float64{10}, PrevT: 1, PrevV: 10}}},
		{"a sample after a stale marker clears it", []cellenc.Sample{{T: 1, V: staleNaN}, {T: 2, V: 1}},
			[]cellenc.RollupWindow{{End: m, Count: 1, Sum: 1, Min: 1, Max: 1, FirstT: 2, FirstV: 1, LastT: 2, LastV: 1, StaleT: -1, Integers: true, HasCounters: true}}},
		{"-0 and +0: the first is kept", []cellenc.Sample{{T: 1, V: negZero}, {T: 2, V: 0}},
			[]cellenc.RollupWindow{{End: m, Count: 2, Sum: 0, Min: negZero, Max: negZero, FirstT: 1, FirstV: negZero, LastT: 2, LastV: 0, StaleT: -1, Integers: true,
				HasCounters: true, PrevT: 1, PrevV: negZero}}}, // +0 after -0: no change
		{"Inf in the sum", []cellenc.Sample{{T: 1, V: 1}, {T: 2, V: math.Inf(1)}, {T: m, V: 2}},
			[]cellenc.RollupWindow{{End: m, Count: 3, Sum: math.Inf(1), Min: 1, Max: math.Inf(1), FirstT: 1, FirstV: 1, LastT: m, LastV: 2, Resets: math.Inf(1), StaleT: -1,
				HasCounters: true, Changes: 2, ResetValues: []float64{math.Inf(1)}, PrevT: 2, PrevV: math.Inf(1)}}},
		{"windows are closed on the right, empty ones absent", []cellenc.Sample{{T: 0, V: 1}, {T: 1, V: 2}, {T: 3 * m, V: 3}},
			[]cellenc.RollupWindow{
				{End: 0, Count: 1, Sum: 1, Min: 1, Max: 1, FirstT: 0, FirstV: 1, LastT: 0, LastV: 1, StaleT: -1, Integers: true, HasCounters: true},
				{End: m, Count: 1, Sum: 2, Min: 2, Max: 2, FirstT: 1, FirstV: 2, LastT: 1, LastV: 2, StaleT: -1, Integers: true, HasCounters: true},
				{End: 3 * m, Count: 1, Sum: 3, Min: 3, Max: 3, FirstT: 3 * m, FirstV: 3, LastT: 3 * m, LastV: 3, StaleT: -1, Integers: true, HasCounters: true},
			}},
		{"equal values are no change, a reset to the same value no reset",
			[]cellenc.Sample{{T: 1, V: 2}, {T: 2, V: 2}, {T: 3, V: 5}, {T: 4, V: 1}, {T: 5, V: 1}, {T: 6, V: 0}},
			[]cellenc.RollupWindow{{End: m, Count: 6, Sum: 11, Min: 0, Max: 5, FirstT: 1, FirstV: 2, LastT: 6, LastV: 0, Resets: 6, StaleT: -1, Integers: true,
				HasCounters: true, Changes: 3, ResetValues: []float64{5, 1}, PrevT: 5, PrevV: 1}}},
	} {
		got := cellenc.AggregateWindows(tc.samples, nil, time.Minute)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %s\nwant %s", tc.name, fmtWindows(got), fmtWindows(tc.want))
			continue
		}
		for i := range got {
			if math.IsNaN(got[i].Sum) && math.IsNaN(tc.want[i].Sum) {
				got[i].Sum = tc.want[i].Sum // which NaN depends on the order of the additions
			}
			if !sameWindow(got[i], tc.want[i]) {
				t.Errorf("%s: window %d = %s\nwant %s", tc.name, i, fmtWindow(got[i]), fmtWindow(tc.want[i]))
			}
		}
		if w := got[len(got)-1]; w.HasStale() != (w.StaleT >= 0) {
			t.Errorf("%s: HasStale %v with StaleT %d", tc.name, w.HasStale(), w.StaleT)
		}
	}
}

// Merge tolerances, with u = 2^-53 the unit roundoff of float64. Count, Min,
// Max, the first and last samples and the stale marker of merged parts are
// exact. Sum and Resets are not, and are checked within
//
//	Sum:    |merged - whole| <= 4·p·u·Σ|x|  over the samples x, p the number of
//	        parts merged: each part's Kahan-Neumaier sum is within 2u|S_part|
//	        (+ O(n u²)) of the exact sum, Merge's p-1 additions round by at most
//	        u·Σ|x| each, and the whole's own sum is within 2u|S|.
//	Resets: |merged - whole| <= 2·(k+p)·u·Σ|r|  over the k values r added at
//	        counter resets: merged and whole are plain sums of the same k terms
//	        in two orders, each within (k-1)·u·Σ|r| of the exact sum.
//
// An infinite value must be the same infinity, a NaN a NaN on both sides (its
// payload depends on the order of the additions).
const unitRoundoff = 1.0 / (1 << 53)

// tolerances returns the bounds above for merging p parts of samples.
func tolerances(samples []cellenc.Sample, p int) (sumBound, resetBound float64) {
	var sumScale, resetScale float64
	resets := 0
	var prev *cellenc.Sample
	for i, s := range samples {
		if value.IsStaleNaN(s.V) {
			continue
		}
		sumScale += math.Abs(s.V)
		if prev != nil && s.V < prev.V {
			resetScale += math.Abs(prev.V)
			resets++
		}
		prev = &samples[i]
	}
	return 4 * float64(p) * unitRoundoff * sumScale, 2 * float64(resets+p) * unitRoundoff * resetScale
}

func closeEnough(got, want, bound float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= bound
}

// checkMerged fails t unless merged equals whole: exactly but for Sum, and
// Resets when the windows have no counter fields, which must be within the
// tolerances of merging p parts of samples. (With counter fields, Resets is
// added again in order from the reset values: the whole's to the bit.)
func checkMerged(t *testing.T, what string, merged, whole cellenc.RollupWindow, samples []cellenc.Sample, p int) {
	t.Helper()
	sumBound, resetBound := tolerances(samples, p)
	exact := merged
	exact.Sum = whole.Sum
	if !merged.HasCounters {
		// Merged parts without counter fields add their Resets, not the
		// whole's reset values in order.
		exact.Resets = whole.Resets
	}
	if !sameWindow(exact, whole) || !closeEnough(merged.Sum, whole.Sum, sumBound) || !closeEnough(merged.Resets, whole.Resets, resetBound) {
		t.Fatalf("%s:\n got %s\nwant %s (sum within %g, resets within %g)\nsamples %v", what, fmtWindow(merged), fmtWindow(whole),
			sumBound, resetBound, samples)
	}
}

func TestMergeOfTwoHalvesEqualsTheWhole(t *testing.T) {
	r := newRand()
	const from = int64(1_700_000_000_000 / 86_400_000 * 86_400_000)
	splits := 0
	for _, res := range []time.Duration{5 * time.Minute, time.Hour, 24 * time.Hour} {
		for range 300 {
			samples := randomSeries(r, from, from+res.Milliseconds())
			if len(samples) == 0 {
				continue
			}
			// Keep the first window's samples, at most 100.
			end := cellenc.WindowEnd(samples[0].T, res)
			samples = slices.DeleteFunc(samples, func(s cellenc.Sample) bool { return cellenc.WindowEnd(s.T, res) != end })
			samples = samples[:min(len(samples), 100)]
			whole := cellenc.AggregateWindows(samples, nil, res)
			if len(whole) != 1 {
				t.Fatalf("%d windows from one window's samples", len(whole))
			}
			for k := 1; k < len(samples); k++ {
				a := cellenc.AggregateWindows(samples[:k], nil, res)
				b := cellenc.AggregateWindows(samples[k:], nil, res)
				checkMerged(t, fmt.Sprintf("%s: merge at %d of %d samples", res, k, len(samples)), a[0].Merge(b[0]), whole[0], samples, 2)
				splits++
			}
		}
	}
	if splits < 1000 {
		t.Fatalf("only %d splits tried", splits)
	}
}

func TestMergeCases(t *testing.T) {
	const m = 60_000
	agg := func(s ...cellenc.Sample) cellenc.RollupWindow {
		return cellenc.AggregateWindows(s, nil, time.Minute)[0]
	}
	for _, tc := range []struct {
		name string
		a, b []cellenc.Sample
	}{
		{"stale only, then samples", []cellenc.Sample{{T: 1, V: staleNaN}}, []cellenc.Sample{{T: 2, V: 5}}},
		{"samples, then stale only", []cellenc.Sample{{T: 1, V: 5}}, []cellenc.Sample{{T: 2, V: staleNaN}}},
		{"stale only twice", []cellenc.Sample{{T: 1, V: staleNaN}}, []cellenc.Sample{{T: 2, V: staleNaN}}},
		{"stale ends the first part", []cellenc.Sample{{T: 1, V: 5}, {T: 2, V: staleNaN}}, []cellenc.Sample{{T: 3, V: 1}}},
		{"reset at the boundary", []cellenc.Sample{{T: 1, V: 5}}, []cellenc.Sample{{T: 2, V: 1}, {T: m, V: 3}}},
		{"NaN then numbers", []cellenc.Sample{{T: 1, V: math.NaN()}}, []cellenc.Sample{{T: 2, V: 1}, {T: 3, V: nanPayload}}},
		{"numbers then NaN", []cellenc.Sample{{T: 1, V: 7}}, []cellenc.Sample{{T: 2, V: nanPayload}}},
		{"-0 then +0", []cellenc.Sample{{T: 1, V: negZero}}, []cellenc.Sample{{T: 2, V: 0}}},
	} {
		all := append(slices.Clone(tc.a), tc.b...)
		checkMerged(t, tc.name, agg(tc.a...).Merge(agg(tc.b...)), agg(all...), all, 2)
	}
}
