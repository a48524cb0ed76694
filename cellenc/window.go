package cellenc

import (
	"math"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/kahansum"
)

// Rollup windows: what a rollup keeps of the samples of one series in one
// window of a resolution, and their arithmetic (aggregating samples into
// windows, merging the parts of a window); rollupcell.go holds their codec, and
// schema/rollup.go the resolution list and where a bucket's cell lies.
//
// Windows are aligned to the epoch and closed on the right, as PromQL's ranges
// are since Prometheus 3: the window ending at E holds the samples with
// E-resolution < t <= E. So a range query whose evaluation times are window ends
// and whose range is a whole number of windows selects exactly whole windows.
//
// A data bucket holds whole windows when the resolution divides the bucket width,
// or a part of one window when the bucket width divides the resolution
// (schema.ValidateRollups allows only these); readers merge the parts of a window
// from consecutive buckets with RollupWindow.Merge.

// RollupWindow is what a rollup keeps of the samples of one series in one
// window (End-resolution, End], or in the part of it one data bucket holds.
// Stale markers are not samples here (PromQL's range functions skip them); a
// stale marker after the window's last sample is kept as StaleT, so that an
// instant selector at the window end sees the series as stale, as it would raw.
//
// Native histogram samples are kept as their count and the window's last one
// (Histograms, LastH): what an instant selector and last_over_time or
// present_over_time need to answer as from raw data. The float fields
// summarise the float samples only; a histogram stale marker (Sum =
// value.StaleNaN) is a stale marker like a float one, and StaleT is after the
// last sample of either kind. Nothing else of histograms is kept: the query
// layer reads raw data for the other functions of a series whose windows hold
// histograms (query/resolution.go).
//
// The counter fields (HasCounters to PrevV) keep, of the float samples, what
// rate, increase and delta, irate and idelta, changes and resets need beyond
// the other fields to answer over whole windows as the engine does over the
// raw samples, to the bit: the count of changes, each value added at a counter
// reset in order, and the second-to-last sample. Unlike Sum, they merge
// exactly (Merge).
type RollupWindow struct {
	// End is the window's end, ms: a multiple of the resolution.
	End int64
	// Count is the number of samples (stale markers excluded, other NaNs
	// included).
	Count uint64
	// Sum is the samples' sum as sum_over_time computes it (Kahan-compensated).
	Sum float64
	// Min and Max are as min_over_time and max_over_time compute them: a NaN
	// only when every sample is NaN.
	Min, Max float64
	// FirstT/FirstV and LastT/LastV are the first and last samples.
	FirstT, LastT int64
	FirstV, LastV float64
	// Resets is the sum of the sample before each counter reset (a sample
	// smaller than the one before), added in order from +0: the sum of
	// ResetValues when HasCounters. It predates ResetValues and stays for the
	// cells written before them; last - first + Resets is the window's counter
	// increase, though not to the bit as rate and increase add it (they add
	// each reset to last - first in turn: ResetValues).
	Resets float64
	// HasCounters is set when the counter fields below are known: on every
	// window AggregateWindows makes (those of histograms or stale markers only
	// too), and on none decoded from a cell written before them (or merged
	// with such a part), whose counter fields are all zero.
	HasCounters bool
	// Changes is the number of float samples after the first that differ from
	// the one before, as changes() counts them: cur != prev && !(both NaN),
	// so -0 after +0 is no change. At most Count-1.
	Changes uint64
	// ResetValues are, in order, the samples before each counter reset (a
	// sample smaller than the one before: cur < prev), which rate and
	// increase add to last - first one by one; nil when there is none. A
	// reset is a change, so there are at most Changes of them, and none is a
	// NaN or -Inf.
	ResetValues []float64
	// PrevT/PrevV is the second-to-last float sample, what irate and idelta
	// need with the last; both zero when Count < 2.
	PrevT int64
	PrevV float64
	// Integers is set when every float sample is a finite integer (-0
	// included): the window's Sum is then exact as long as the samples'
	// magnitudes add up to at most 2^53, and so is any sum of such windows —
	// the condition under which sum_over_time from windows is raw data's to
	// the bit (SumsExact).
	Integers bool
	// StaleT is the timestamp of a stale marker after the last sample of
	// either kind (or the window's last stale marker when it has no sample);
	// -1 when the window ends with a sample or has no stale marker.
	StaleT int64
	// Histograms is the number of native histogram samples (stale markers
	// excluded).
	Histograms uint64
	// LastH is the last histogram sample (not a stale marker); its H and FH
	// are nil when Histograms is 0.
	LastH HistogramSample
}

// HasStale reports whether the window ends with a stale marker.
func (w RollupWindow) HasStale() bool { return w.StaleT >= 0 }

// WindowEnd returns the end of the window of resolution res that holds
// timestamp t: the smallest multiple of res that is >= t.
func WindowEnd(t int64, res time.Duration) int64 {
	r := res.Milliseconds()
	e := t / r * r
	if e < t {
		e += r
	}
	return e
}

// AggregateWindows folds ascending float and histogram samples (one per
// timestamp across both, stale markers included) into windows of resolution
// res, ascending by End; windows without a sample or stale marker are absent.
func AggregateWindows(samples []Sample, histograms []HistogramSample, res time.Duration) []RollupWindow {
	var (
		out  []RollupWindow
		cur  RollupWindow
		c    float64 // Kahan compensation of cur.Sum
		open bool
	)
	flush := func() {
		if !open {
			return
		}
		if cur.Count > 0 && !math.IsInf(cur.Sum, 0) {
			cur.Sum += c
		}
		out = append(out, cur)
	}
	start := func(t int64) {
		if end := WindowEnd(t, res); !open || end != cur.End {
			flush()
			cur, c, open = RollupWindow{End: end, StaleT: -1, HasCounters: true}, 0, true
		}
	}
	j := 0
	for _, s := range samples {
		for ; j < len(histograms) && histograms[j].T < s.T; j++ {
			start(histograms[j].T)
			cur.addHistogram(histograms[j])
		}
		start(s.T)
		if value.IsStaleNaN(s.V) {
			cur.StaleT = s.T
			continue
		}
		cur.StaleT = -1
		if cur.Count == 0 {
			cur.FirstT, cur.FirstV, cur.Min, cur.Max = s.T, s.V, s.V, s.V
			cur.Integers = isInteger(s.V)
		} else {
			cur.Integers = cur.Integers && isInteger(s.V)
			if s.V > cur.Max || math.IsNaN(cur.Max) {
				cur.Max = s.V
			}
			if s.V < cur.Min || math.IsNaN(cur.Min) {
				cur.Min = s.V
			}
			if s.V < cur.LastV {
				cur.Resets += cur.LastV
				cur.ResetValues = append(cur.ResetValues, cur.LastV)
			}
			if isChange(cur.LastV, s.V) {
				cur.Changes++
			}
			cur.PrevT, cur.PrevV = cur.LastT, cur.LastV
		}
		cur.Sum, c = kahansum.Inc(s.V, cur.Sum, c)
		cur.LastT, cur.LastV = s.T, s.V
		cur.Count++
	}
	for ; j < len(histograms); j++ {
		start(histograms[j].T)
		cur.addHistogram(histograms[j])
	}
	flush()
	return out
}

// isInteger reports whether v is a finite integer.
func isInteger(v float64) bool { return v == math.Trunc(v) && !math.IsInf(v, 0) }

// maxExactSum is the largest magnitude up to which every integer is a float64:
// integers whose magnitudes add up to at most this are summed exactly, in any
// order and grouping, Kahan-compensated or not.
const maxExactSum = 1 << 53

// SumsExact reports whether the float sums of ws are exact: every window with
// float samples holds only integers (Integers), and the samples' magnitudes,
// bounded by Count × max(|Min|, |Max|) per window, add up to at most 2^53.
// Then sum_over_time over any whole windows of ws gives, from the windows'
// sums, the very float raw data's samples give: both sums are the exact one.
func SumsExact(ws []RollupWindow) bool {
	bound := 0.0
	for _, w := range ws {
		if w.Count == 0 {
			continue
		}
		if !w.Integers {
			return false
		}
		bound += float64(w.Count) * max(math.Abs(w.Min), math.Abs(w.Max))
		if bound > maxExactSum/2 { // float rounding of the bound itself: a margin
			return false
		}
	}
	return true
}

// IsStaleHistogram reports whether h is a stale marker: a histogram whose Sum
// is value.StaleNaN.
func IsStaleHistogram(h HistogramSample) bool {
	if h.H != nil {
		return value.IsStaleNaN(h.H.Sum)
	}
	return h.FH != nil && value.IsStaleNaN(h.FH.Sum)
}

func (w *RollupWindow) addHistogram(h HistogramSample) {
	if IsStaleHistogram(h) {
		w.StaleT = h.T
		return
	}
	w.StaleT = -1
	w.Histograms++
	w.LastH = h
}

// Merge returns the window of w followed by the later part n of the same
// window (from the next data bucket).
func (w RollupWindow) Merge(n RollupWindow) RollupWindow {
	out := w.mergeFloats(n)
	out.Histograms = w.Histograms + n.Histograms
	out.LastH = w.LastH
	if n.Histograms > 0 {
		out.LastH = n.LastH
	}
	switch {
	case n.HasStale():
		out.StaleT = n.StaleT
	case n.Count > 0 || n.Histograms > 0:
		out.StaleT = -1
	default:
		out.StaleT = w.StaleT
	}
	return out
}

// mergeFloats merges the float fields of w and n, the counter fields
// included (StaleT and the histogram fields are Merge's).
func (w RollupWindow) mergeFloats(n RollupWindow) RollupWindow {
	var out RollupWindow
	switch {
	case w.Count == 0:
		out = n
	case n.Count == 0:
		out = w
	default:
		out = w
		out.Count += n.Count
		out.Sum += n.Sum
		if n.Max > out.Max || math.IsNaN(out.Max) {
			out.Max = n.Max
		}
		if n.Min < out.Min || math.IsNaN(out.Min) {
			out.Min = n.Min
		}
		out.Integers = w.Integers && n.Integers
		out.Resets += n.Resets
		if n.FirstV < w.LastV {
			out.Resets += w.LastV
		}
		out.LastT, out.LastV = n.LastT, n.LastV
	}
	out.mergeCounters(w, n)
	return out
}

// mergeCounters sets the counter fields of out, the merge of w and the later
// part n: known only when both parts know them (all zero otherwise). Each
// field is then the whole window's to the bit, and so is Resets, added again
// in order from the merged ResetValues. A part without float samples
// contributes no change, reset or sample.
func (out *RollupWindow) mergeCounters(w, n RollupWindow) {
	out.HasCounters = w.HasCounters && n.HasCounters
	out.Changes, out.ResetValues, out.PrevT, out.PrevV = 0, nil, 0, 0
	if !out.HasCounters {
		return
	}
	out.Changes = w.Changes + n.Changes
	boundaryReset := false
	if w.Count > 0 && n.Count > 0 {
		if isChange(w.LastV, n.FirstV) {
			out.Changes++
		}
		boundaryReset = n.FirstV < w.LastV
	}
	if k := len(w.ResetValues) + len(n.ResetValues); k > 0 || boundaryReset {
		// A new slice: appending to a part's could overwrite another window's.
		rs := make([]float64, 0, k+1)
		rs = append(rs, w.ResetValues...)
		if boundaryReset {
			rs = append(rs, w.LastV)
		}
		out.ResetValues = append(rs, n.ResetValues...)
	}
	out.Resets = sumResets(out.ResetValues)
	switch {
	case n.Count >= 2:
		out.PrevT, out.PrevV = n.PrevT, n.PrevV
	case n.Count == 1 && w.Count >= 1:
		out.PrevT, out.PrevV = w.LastT, w.LastV
	default: // n has no float sample, or w none before n's only one
		out.PrevT, out.PrevV = w.PrevT, w.PrevV
	}
}

// countersConsistent reports whether the counter fields of w, a window with
// float samples, hold what they must of the samples its other fields keep:
// a reset value is neither NaN nor -Inf (nothing is smaller), the values add
// up to Resets, and a reset is a change; the last two samples' change or
// reset is counted, the latter with PrevV as the last reset value; and a
// window of two samples has exactly their change and reset.
func countersConsistent(w RollupWindow) bool {
	for _, v := range w.ResetValues {
		if math.IsNaN(v) || math.IsInf(v, -1) {
			return false
		}
	}
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	resets := uint64(len(w.ResetValues))
	switch {
	case !same(w.Resets, sumResets(w.ResetValues)) || resets > w.Changes:
		return false
	case w.Count < 2:
		return true
	case isChange(w.PrevV, w.LastV) && w.Changes == 0:
		return false
	case w.LastV < w.PrevV && (resets == 0 || !same(w.ResetValues[resets-1], w.PrevV)):
		return false
	case w.Count == 2:
		return w.Changes == b2u(isChange(w.FirstV, w.LastV)) && resets == b2u(w.LastV < w.FirstV)
	}
	return true
}

// isChange reports whether cur after prev is a change as PromQL's changes()
// counts one: the values differ and are not both NaN.
func isChange(prev, cur float64) bool {
	return cur != prev && !(math.IsNaN(cur) && math.IsNaN(prev))
}

// sumResets adds reset values in order from +0, as AggregateWindows adds them
// into Resets.
func sumResets(vs []float64) float64 {
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
