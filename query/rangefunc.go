package query

import (
	"math"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// Range functions computed from rollup windows, as the engine computes them
// from raw samples.
//
// For a range (t-rng, t] that is a whole number of windows of a rollup, the
// windows ending in it hold exactly the samples the engine's range selection
// gives the function (stale markers are no samples for either), in order.
// Each function below is a transcription of Prometheus' (promql/functions.go,
// v0.316.0) for float samples without start timestamps, reading from the
// windows what it reads from the samples: the count, the first and last
// samples, the second-to-last one (irate, idelta), the samples before each
// counter reset in order (rate and increase add them one by one, so their
// sum rounds as raw data's does), and the number of changes. Every float
// operation is the engine's, in the engine's order, so the result is the
// engine's to the bit; the differential test (db/rollup_diff_test.go)
// checks that against the engine on raw data.

// funcNeedsCounters reports whether fn reads the counter fields of windows
// (cellenc.RollupWindow.HasCounters).
func funcNeedsCounters(fn string) bool {
	switch fn {
	case "rate", "increase", "irate", "idelta", "changes", "resets":
		return true
	}
	return false
}

// rollupFuncs are the range functions a rollup computes for the engine.
var rollupFuncs = map[string]bool{
	"rate": true, "increase": true, "delta": true, "irate": true, "idelta": true,
	"changes": true, "resets": true, "count_over_time": true,
}

// evalWindows computes fn over the windows ws (ascending, all ending in
// (t-rng, t]) for the range (t-rng, t], rng in ms; false when the engine
// gives no value (too few samples).
func evalWindows(fn string, ws []cellenc.RollupWindow, t, rng int64) (float64, bool) {
	switch fn {
	case "count_over_time":
		var n uint64
		for _, w := range ws {
			n += w.Count + w.Histograms
		}
		return float64(n), n > 0
	case "rate":
		return extrapolatedRate(ws, t-rng, t, rng, true, true)
	case "increase":
		return extrapolatedRate(ws, t-rng, t, rng, true, false)
	case "delta":
		return extrapolatedRate(ws, t-rng, t, rng, false, false)
	case "irate":
		return instantValue(ws, true)
	case "idelta":
		return instantValue(ws, false)
	case "changes":
		return countPairs(ws, func(w cellenc.RollupWindow) uint64 { return w.Changes }, isChange)
	case "resets":
		return countPairs(ws, func(w cellenc.RollupWindow) uint64 { return uint64(len(w.ResetValues)) }, isReset)
	}
	return 0, false
}

// isChange is changes()'s test of a sample against the one before.
func isChange(prev, cur float64) bool { return cur != prev && !(math.IsNaN(cur) && math.IsNaN(prev)) }

// isReset is resets()'s (and rate's) test of a sample against the one before.
func isReset(prev, cur float64) bool { return cur < prev }

// countPairs counts, as changes() and resets() do, the pairs of consecutive
// samples that pass test: per window its own count (inside), and the pairs
// across window boundaries.
func countPairs(ws []cellenc.RollupWindow, inside func(cellenc.RollupWindow) uint64, test func(prev, cur float64) bool) (float64, bool) {
	var (
		n    uint64
		seen bool
		prev float64
	)
	for _, w := range ws {
		if w.Count == 0 {
			continue
		}
		if seen && test(prev, w.FirstV) {
			n++
		}
		n += inside(w)
		prev, seen = w.LastV, true
	}
	return float64(n), seen
}

// extrapolatedRate is the engine's extrapolatedRate for float samples
// without start timestamps, over (rangeStart, rangeEnd], rng ms long.
func extrapolatedRate(ws []cellenc.RollupWindow, rangeStart, rangeEnd, rng int64, isCounter, isRate bool) (float64, bool) {
	first, last := -1, -1
	var count uint64
	for i, w := range ws {
		if w.Count > 0 {
			count += w.Count
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if count < 2 {
		return 0, false
	}
	numSamplesMinusOne := int(count - 1)
	firstT, lastT := ws[first].FirstT, ws[last].LastT
	firstV := ws[first].FirstV
	resultFloat := ws[last].LastV - firstV
	if isCounter {
		// The samples before each reset, in the order of the samples.
		for i := first; i <= last; i++ {
			w := ws[i]
			if w.Count == 0 {
				continue
			}
			if i > first {
				if prev := ws[prevWithSamples(ws, i)]; w.FirstV < prev.LastV {
					resultFloat += prev.LastV
				}
			}
			for _, v := range w.ResetValues {
				resultFloat += v
			}
		}
	}

	durationToStart := float64(firstT-rangeStart) / 1000
	durationToEnd := float64(rangeEnd-lastT) / 1000

	sampledInterval := float64(lastT-firstT) / 1000
	var averageDurationBetweenSamples float64
	if numSamplesMinusOne > 0 {
		averageDurationBetweenSamples = sampledInterval / float64(numSamplesMinusOne)
	}
	extrapolationThreshold := averageDurationBetweenSamples * 1.1

	if durationToStart >= extrapolationThreshold {
		durationToStart = averageDurationBetweenSamples / 2
	}
	if isCounter {
		durationToZero := durationToStart
		if resultFloat > 0 && firstV >= 0 {
			durationToZero = sampledInterval * (firstV / resultFloat)
		}
		if durationToZero < durationToStart {
			durationToStart = durationToZero
		}
	}
	if durationToEnd >= extrapolationThreshold {
		durationToEnd = averageDurationBetweenSamples / 2
	}

	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if isRate {
		factor /= (time.Duration(rng) * time.Millisecond).Seconds()
	}
	resultFloat *= factor
	return resultFloat, true
}

// prevWithSamples returns the index of the last window before i with float
// samples (there is one: i is after the first).
func prevWithSamples(ws []cellenc.RollupWindow, i int) int {
	for i--; ws[i].Count == 0; i-- {
	}
	return i
}

// instantValue is the engine's instantValue (irate, idelta) for float
// samples without start timestamps: from the last two samples.
func instantValue(ws []cellenc.RollupWindow, isRate bool) (float64, bool) {
	last := -1
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].Count > 0 {
			last = i
			break
		}
	}
	if last < 0 {
		return 0, false
	}
	w := ws[last]
	t1, v1 := w.LastT, w.LastV
	var (
		t0 int64
		v0 float64
	)
	switch {
	case w.Count >= 2:
		t0, v0 = w.PrevT, w.PrevV
	case last > 0 && slicesHaveSamples(ws[:last]):
		p := ws[prevWithSamples(ws, last)]
		t0, v0 = p.LastT, p.LastV
	default:
		return 0, false
	}
	sampledInterval := t1 - t0
	if sampledInterval == 0 {
		return 0, false
	}
	result := v1
	if !isRate || !(v1 < v0) {
		result = v1 - v0
	}
	if isRate {
		result /= float64(sampledInterval) / 1000
	}
	return result, true
}

// slicesHaveSamples reports whether some window of ws has float samples.
func slicesHaveSamples(ws []cellenc.RollupWindow) bool {
	for _, w := range ws {
		if w.Count > 0 {
			return true
		}
	}
	return false
}
