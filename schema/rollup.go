package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/kahansum"
)

// Rollups: downsampled series, one table per resolution (RollupTable), each with
// the resolution's retention as its TTL.
//
//	table     = "rollup-" + resolution, e.g. rollup-5m, rollup-1h
//	row       = DataRowKey with BucketStart = the UTC day (RollupRowSpan) that holds
//	            the data bucket: one row per (series, day)
//	family    = FamilyRollup
//	qualifier = offset(4)  big-endian uint32, ms from the row's day to the start of
//	                       the data bucket the cell summarises
//	value     = the bucket's windows, EncodeRollupWindows
//	timestamp = the data bucket's last millisecond (as chunk cells), so a bucket
//	            rolled up again (late samples) rewrites the cell in place and the
//	            TTL expires it once every sample it summarises expired
//
// Why one table per resolution and not one family per resolution in one table:
// the resolution list is configurable, and gohbase (like the HBase shell's
// create) can create tables but cannot add a family to an existing one (no
// ModifyTable), so adding a resolution is creating its table.
//
// Windows are aligned to the epoch and closed on the right, as PromQL's ranges
// are since Prometheus 3: the window ending at E holds the samples with
// E-resolution < t <= E. So a range query whose evaluation times are window ends
// and whose range is a whole number of windows selects exactly whole windows.
//
// A data bucket holds whole windows when the resolution divides the bucket width,
// or a part of one window when the bucket width divides the resolution
// (ValidateRollups allows only these); readers merge the parts of a window from
// consecutive buckets with RollupWindow.Merge.

// FamilyRollup is the one family of every rollup table.
const FamilyRollup = "a"

// RollupRowSpan is the time span of one rollup row: a UTC day, as the index's.
const RollupRowSpan = 24 * time.Hour

// MaxRollups bounds the length of the resolution list.
const MaxRollups = 8

// Rollup is one resolution of downsampled data and how long it is kept.
type Rollup struct {
	// Resolution is the window width: a whole number of minutes that divides 24h.
	Resolution time.Duration
	// Retention is the TTL of the rollup table: whole seconds, 0 keeps it forever.
	Retention time.Duration
}

// DefaultRollups is the default resolution list, "5m:90d,1h:5y".
func DefaultRollups() []Rollup {
	return []Rollup{{5 * time.Minute, 90 * 24 * time.Hour}, {time.Hour, 5 * 365 * 24 * time.Hour}}
}

// DefaultRollupsString is DefaultRollups as ParseRollups reads it.
const DefaultRollupsString = "5m:90d,1h:5y"

// RollupTable is the logical name of the table of a resolution, "rollup-5m".
func RollupTable(resolution time.Duration) string {
	return "rollup-" + model.Duration(resolution).String()
}

// ParseRollupTable returns the resolution of a rollup table's logical name
// (RollupTable), and false for any other name.
func ParseRollupTable(name string) (time.Duration, bool) {
	suffix, ok := strings.CutPrefix(name, "rollup-")
	if !ok {
		return 0, false
	}
	d, err := model.ParseDuration(suffix)
	if err != nil || d <= 0 || RollupTable(time.Duration(d)) != name {
		return 0, false
	}
	return time.Duration(d), true
}

// Void rollup cells. A compactor whose resolution list lacks a resolution
// whose table the store still has (removed from the list, or a process with
// another list compacting the same store) cannot rewrite that table's cell of
// a bucket it compacts, and the cell would then summarise fewer samples than
// the bucket holds once the compactor deletes the bucket's raw cells. So it
// replaces the cell, by check-and-put on the value it read, with a void one:
// a value of 0x00 (which no EncodeRollupWindows value starts with: it counts
// at least one window) and 8 bytes that make each void write unique, so that
// another compactor's check-and-put expecting the value it read before this
// write fails even if that was a void one too. Readers treat a void cell as
// no cell: the bucket is summarised from its data row while raw data is kept.

// AppendVoidRollupValue appends the value of a void rollup cell carrying
// nonce.
func AppendVoidRollupValue(dst []byte, nonce uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 0), nonce)
}

// IsVoidRollupValue reports whether a rollup cell's value is void.
func IsVoidRollupValue(v []byte) bool { return len(v) > 0 && v[0] == 0 }

// ParseRollups parses a resolution list: comma-separated resolution:retention
// pairs in Prometheus' duration syntax, e.g. "5m:90d,1h:5y"; a retention of 0
// keeps a resolution forever; "" or "none" is no rollups. The list is sorted by
// resolution; ValidateRollups checks it against a bucket width.
func ParseRollups(s string) ([]Rollup, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []Rollup
	for _, part := range strings.Split(s, ",") {
		res, ret, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("schema: rollup %q is not resolution:retention (as in %q)", part, DefaultRollupsString)
		}
		r, err := model.ParseDuration(res)
		if err != nil {
			return nil, fmt.Errorf("schema: rollup %q: resolution: %w", part, err)
		}
		var t model.Duration
		if ret != "0" {
			if t, err = model.ParseDuration(ret); err != nil {
				return nil, fmt.Errorf("schema: rollup %q: retention: %w", part, err)
			}
		}
		out = append(out, Rollup{Resolution: time.Duration(r), Retention: time.Duration(t)})
	}
	slices.SortFunc(out, func(a, b Rollup) int { return int(a.Resolution - b.Resolution) })
	return out, nil
}

// FormatRollups writes a resolution list as ParseRollups reads it; "none" for
// no rollups.
func FormatRollups(rs []Rollup) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		ret := "0"
		if r.Retention > 0 {
			ret = model.Duration(r.Retention).String()
		}
		parts[i] = model.Duration(r.Resolution).String() + ":" + ret
	}
	return strings.Join(parts, ",")
}

// ValidateRollups reports what is wrong with a resolution list for a store of
// the given bucket width (0: not checked against one): each resolution a whole number of minutes that divides
// 24h and either divides the bucket width or is a multiple of it, resolutions
// ascending and distinct, retentions whole seconds and not negative, at most
// MaxRollups of them.
func ValidateRollups(rs []Rollup, bucketWidth time.Duration) error {
	var errs []error
	if len(rs) > MaxRollups {
		errs = append(errs, fmt.Errorf("schema: %d rollups, more than %d", len(rs), MaxRollups))
	}
	for i, r := range rs {
		switch {
		case r.Resolution < time.Minute || r.Resolution%time.Minute != 0 || (24*time.Hour)%r.Resolution != 0:
			errs = append(errs, fmt.Errorf("schema: rollup resolution %s must be a whole number of minutes that divides 24h", model.Duration(r.Resolution)))
		case bucketWidth > 0 && bucketWidth%r.Resolution != 0 && r.Resolution%bucketWidth != 0:
			errs = append(errs, fmt.Errorf("schema: rollup resolution %s must divide the bucket width %s or be a multiple of it", model.Duration(r.Resolution), model.Duration(bucketWidth)))
		}
		if r.Retention < 0 || r.Retention%time.Second != 0 {
			errs = append(errs, fmt.Errorf("schema: rollup %s: retention %s is negative or not a whole number of seconds", model.Duration(r.Resolution), r.Retention))
		}
		if i > 0 && r.Resolution <= rs[i-1].Resolution {
			errs = append(errs, fmt.Errorf("schema: rollup resolutions must be ascending and distinct, %s after %s", model.Duration(r.Resolution), model.Duration(rs[i-1].Resolution)))
		}
	}
	return errors.Join(errs...)
}

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

// Flags of an encoded window. The derived flags say that a field equals
// another to the bit and is not written; the encoder sets each one exactly when
// that holds (min and max are compared with FirstV first), so a value decodes
// only from the bytes EncodeRollupWindows writes for it.
const (
	windowHasStale = 1 << iota
	windowHasSamples
	windowMinIsFirst
	windowMaxIsFirst
	windowMinIsLast
	windowMaxIsLast
	windowNoResets // Resets is +0
	windowSumIsFirst
)

// rollupState is what the windows of a cell are coded relative to: the
// previous window's fields (zero before the first).
type rollupState struct {
	end                       int64
	count                     uint64
	firstOff, lastOff         int64
	lastV, min, max, sum, res float64
}

// EncodeRollupWindows appends the value of a rollup cell holding ws (ascending
// by End, each End a multiple of res within [bucketStart,
// bucketStart+max(width, resolution)]) to dst:
//
//	uvarint  number of windows
//	per window:
//	  uvarint  End-bucketStart for the first window, (End-prevEnd)/res-1 after
//	  byte     flags (windowHasStale, ..., windowSumIsFirst)
//	  with samples:
//	    varint   Count-prevCount, firstOff-prevFirstOff, lastOff-prevLastOff
//	             (firstOff = FirstT-(End-res), lastOff = End-LastT: the scrape
//	             phase, constant for regular scrapes)
//	    floats   FirstV ^ prev LastV, LastV ^ FirstV, then unless derived:
//	             Min ^ prev Min, Max ^ prev Max, Sum ^ prev Sum, Resets ^ prev
//	             Resets (appendXORFloat)
//	  stale:   uvarint End-StaleT
//	then the integer part (in a cell without the counter part, only when
//	some window holds only integers, Integers):
//	  uvarint  0 (which no histogram part starts with)
//	  bytes    a bitmap of the windows, ceil(windows/8) bytes, bit i%8 of
//	           byte i/8 set when window i has Integers (maybe none)
//	then the histogram part (in a cell without the counter part, only when
//	some window holds histograms, Histograms > 0):
//	  uvarint  number of such windows (maybe 0)
//	  per such window, ascending:
//	    uvarint  its index among the windows minus the previous such
//	             window's index plus one (the first: its index)
//	    uvarint  Histograms
//	    uvarint  End-LastH.T
//	    uvarint  length of LastH's value, then the value as a raw cell holds
//	             it (AppendHistogramSampleValue, start timestamp included)
//	then the counter part, when there are windows and every one has
//	HasCounters (rollup_counters.go):
//	  byte     1, the part's version
//	  per window with float samples (Count > 0), in window order:
//	    uvarint  Count-1-Changes (0 for a counter growing at every scrape)
//	    uvarint  len(ResetValues), then each reset value XORed with the one
//	             before it, the first with FirstV
//	    with Count >= 2:
//	      varint   LastT-PrevT minus that of the previous window with
//	               Count >= 2 in the cell (0 before the first): 0, one
//	               byte, for regular scrapes
//	      float    PrevV ^ LastV
//
// A window of histograms only has flags 0 (or windowHasStale). The parts
// after the windows were added one at a time, and a cell in any earlier
// layout still decodes, to the fields known when it was written: without the
// integer part with Integers false (its sums are not known to be exact, and
// sum_over_time reads raw data), without the counter part with HasCounters
// false. A cell with the counter part has the other two even when empty (an
// all-zero bitmap, a histogram count of 0), which no earlier cell has, so no
// layout reads as another. Windows of which some lack HasCounters (decoded
// from an earlier cell, or merged with a part of one) are written without the
// counter part, as such a cell was: none has counter fields then. A reader
// older than a part refuses a cell with it (trailing bytes).
//
// Bytes a window (TestRollupCellSizes: 15 s scrapes, 1h buckets; the 1h
// figures are one window a cell, so the cell's overhead is the window's),
// without and then with the counter part: a counter growing by integers
// 16.6 then 22.9 at 5m, 29.3 then 39.3 at 1h; a counter of float seconds
// 27.1 then 37.5 at 5m, 38 then 53.8 at 1h; a constant gauge 9.1 then 13.4
// at 5m, 22 then 31 at 1h.
func EncodeRollupWindows(dst []byte, bucketStart int64, res time.Duration, ws []RollupWindow) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ws)))
	var p rollupState
	r := res.Milliseconds()
	for i, w := range ws {
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(w.End-bucketStart))
		} else {
			dst = binary.AppendUvarint(dst, uint64((w.End-p.end)/r-1))
		}
		p.end = w.End
		flags := windowFlags(w)
		dst = append(dst, flags)
		if w.Count > 0 {
			firstOff, lastOff := w.FirstT-(w.End-r), w.End-w.LastT
			dst = binary.AppendVarint(dst, int64(w.Count-p.count))
			dst = binary.AppendVarint(dst, firstOff-p.firstOff)
			dst = binary.AppendVarint(dst, lastOff-p.lastOff)
			p.count, p.firstOff, p.lastOff = w.Count, firstOff, lastOff
			dst = appendXORFloat(dst, p.lastV, w.FirstV)
			dst = appendXORFloat(dst, w.FirstV, w.LastV)
			p.lastV = w.LastV
			if flags&(windowMinIsFirst|windowMinIsLast) == 0 {
				dst = appendXORFloat(dst, p.min, w.Min)
			}
			if flags&(windowMaxIsFirst|windowMaxIsLast) == 0 {
				dst = appendXORFloat(dst, p.max, w.Max)
			}
			if flags&windowSumIsFirst == 0 {
				dst = appendXORFloat(dst, p.sum, w.Sum)
			}
			if flags&windowNoResets == 0 {
				dst = appendXORFloat(dst, p.res, w.Resets)
			}
			p.min, p.max, p.sum, p.res = w.Min, w.Max, w.Sum, w.Resets
		}
		if w.HasStale() {
			dst = binary.AppendUvarint(dst, uint64(w.End-w.StaleT))
		}
	}
	counters := len(ws) > 0 && !slices.ContainsFunc(ws, func(w RollupWindow) bool { return !w.HasCounters })
	dst = appendIntegerBitmap(dst, ws, counters)
	dst = appendHistogramWindows(dst, ws, counters)
	if counters {
		dst = appendRollupCounters(dst, ws)
	}
	return dst
}

// appendHistogramWindows appends the histogram part of a rollup cell: always
// when the cell has the counter part, else only when some window of ws holds
// histograms.
func appendHistogramWindows(dst []byte, ws []RollupWindow, always bool) []byte {
	withH := 0
	for _, w := range ws {
		if w.Histograms > 0 {
			withH++
		}
	}
	if withH == 0 && !always {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(withH))
	next := 0
	for i, w := range ws {
		if w.Histograms == 0 {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(i-next))
		next = i + 1
		dst = binary.AppendUvarint(dst, w.Histograms)
		dst = binary.AppendUvarint(dst, uint64(w.End-w.LastH.T))
		v := AppendHistogramSampleValue(nil, w.LastH)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

// appendIntegerBitmap appends the integer part of a rollup cell: always when
// the cell has the counter part, else only when some window of ws has
// Integers.
func appendIntegerBitmap(dst []byte, ws []RollupWindow, always bool) []byte {
	if !always && !slices.ContainsFunc(ws, func(w RollupWindow) bool { return w.Integers && w.Count > 0 }) {
		return dst
	}
	dst = binary.AppendUvarint(dst, 0)
	bitmap := make([]byte, (len(ws)+7)/8)
	for i, w := range ws {
		if w.Integers && w.Count > 0 {
			bitmap[i/8] |= 1 << (i % 8)
		}
	}
	return append(dst, bitmap...)
}

// windowFlags are the flags EncodeRollupWindows writes for w.
func windowFlags(w RollupWindow) byte {
	var flags byte
	if w.HasStale() {
		flags |= windowHasStale
	}
	if w.Count == 0 {
		return flags
	}
	flags |= windowHasSamples
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	switch {
	case same(w.Min, w.FirstV):
		flags |= windowMinIsFirst
	case same(w.Min, w.LastV):
		flags |= windowMinIsLast
	}
	switch {
	case same(w.Max, w.FirstV):
		flags |= windowMaxIsFirst
	case same(w.Max, w.LastV):
		flags |= windowMaxIsLast
	}
	if math.Float64bits(w.Resets) == 0 {
		flags |= windowNoResets
	}
	if same(w.Sum, w.FirstV) {
		flags |= windowSumIsFirst
	}
	return flags
}

// DecodeRollupWindows decodes a rollup cell's value written by
// EncodeRollupWindows for the same bucketStart and res, appending to dst (whose
// windows it does not look at: the parts of one window in consecutive buckets
// have the same End). It fails, wrapping ErrMalformed, on a value that does
// not decode, or not from bytes EncodeRollupWindows writes (an empty value,
// an overlong varint, a float with a zero byte it would have left out, a flag
// it would have set differently, a layout of parts it never writes), or that
// contradicts itself where that is cheap to tell (a first sample after the
// last, counter fields their samples cannot have: rollupCounters).
func DecodeRollupWindows(dst []RollupWindow, b []byte, bucketStart int64, res time.Duration) ([]RollupWindow, error) {
	d := valueDecoder{b: b}
	n := d.uvarint()
	if d.err != nil {
		return dst, fmt.Errorf("schema: rollup cell of bucket %d: %w", bucketStart, d.err)
	}
	if n > uint64(len(b)) {
		return dst, fmt.Errorf("schema: rollup cell claims %d windows in %d bytes: %w", n, len(b), ErrMalformed)
	}
	var p rollupState
	r := res.Milliseconds()
	for i := range n {
		var w RollupWindow
		if i == 0 {
			w.End = bucketStart + int64(d.uvarint())
		} else {
			k := d.uvarint()
			if k >= uint64(math.MaxInt64/r) || p.end > math.MaxInt64-int64(k+1)*r {
				d.fail("window end out of range")
			}
			w.End = p.end + int64(k+1)*r
		}
		p.end = w.End
		w.StaleT = -1
		flags := d.byte()
		if flags&windowHasSamples != 0 {
			w.Count = p.count + uint64(d.varint())
			firstOff := p.firstOff + d.varint()
			lastOff := p.lastOff + d.varint()
			p.count, p.firstOff, p.lastOff = w.Count, firstOff, lastOff
			w.FirstT, w.LastT = w.End-r+firstOff, w.End-lastOff
			w.FirstV = d.xorFloat(p.lastV)
			w.LastV = d.xorFloat(w.FirstV)
			p.lastV = w.LastV
			switch {
			case flags&windowMinIsFirst != 0:
				w.Min = w.FirstV
			case flags&windowMinIsLast != 0:
				w.Min = w.LastV
			default:
				w.Min = d.xorFloat(p.min)
			}
			switch {
			case flags&windowMaxIsFirst != 0:
				w.Max = w.FirstV
			case flags&windowMaxIsLast != 0:
				w.Max = w.LastV
			default:
				w.Max = d.xorFloat(p.max)
			}
			if flags&windowSumIsFirst != 0 {
				w.Sum = w.FirstV
			} else {
				w.Sum = d.xorFloat(p.sum)
			}
			if flags&windowNoResets == 0 {
				w.Resets = d.xorFloat(p.res)
			}
			p.min, p.max, p.sum, p.res = w.Min, w.Max, w.Sum, w.Resets
		}
		if flags&windowHasStale != 0 {
			w.StaleT = w.End - int64(d.uvarint())
		}
		if d.err != nil {
			return dst, fmt.Errorf("schema: rollup cell of bucket %d: %w", bucketStart, d.err)
		}
		if flags != windowFlags(w) || w.End%r != 0 ||
			(w.Count > 0 && (w.FirstT > w.LastT || w.FirstT <= w.End-r || w.LastT > w.End)) ||
			(flags&windowHasStale != 0 && (!w.HasStale() || w.StaleT <= w.End-r || w.StaleT > w.End || (w.Count > 0 && w.StaleT <= w.LastT))) {
			return dst, fmt.Errorf("schema: rollup cell of bucket %d: inconsistent window ending %d: %w", bucketStart, w.End, ErrMalformed)
		}
		dst = append(dst, w)
	}
	ws := dst[len(dst)-int(n):]
	d.rollupParts(ws, r)
	if d.err != nil {
		return dst, fmt.Errorf("schema: rollup cell of bucket %d: %w", bucketStart, d.err)
	}
	if d.off != len(b) {
		return dst, fmt.Errorf("schema: rollup cell of bucket %d: %d trailing bytes: %w", bucketStart, len(b)-d.off, ErrMalformed)
	}
	for _, w := range ws {
		if w.Count == 0 && w.Histograms == 0 && !w.HasStale() {
			return dst, fmt.Errorf("schema: rollup cell of bucket %d: empty window ending %d: %w", bucketStart, w.End, ErrMalformed)
		}
	}
	return dst, nil
}

// rollupParts reads the parts of a rollup cell after its windows into ws,
// in one of the layouts EncodeRollupWindows writes, refusing any other:
//
//	nothing                            } before the counter part: the
//	integer bitmap, some bit set       } integer part only when a window
//	histograms >= 1                    } has Integers, the histogram part
//	integer bitmap, some bit set,      } only when one has histograms
//	  histograms >= 1                  }
//	integer bitmap, histograms >= 0, counter part
//
// Bytes left over after a layout are trailing bytes, DecodeRollupWindows'
// to refuse.
func (d *valueDecoder) rollupParts(ws []RollupWindow, r int64) {
	bitmap, integers := false, false
	if d.off < len(d.b) && d.b[d.off] == 0 {
		bitmap = true
		integers = d.integerBitmap(ws)
	}
	histograms := -1 // no histogram part
	if d.err == nil && d.off < len(d.b) {
		histograms = d.histogramWindows(ws, r)
	}
	switch {
	case d.err != nil:
	case bitmap && histograms >= 0 && d.off < len(d.b):
		if len(ws) == 0 {
			d.fail("counter part of a cell without windows")
			return
		}
		d.rollupCounters(ws)
	case bitmap && !integers:
		d.fail("empty integer bitmap")
	case histograms == 0:
		d.fail("no window with histograms and no counter part")
	}
}

// integerBitmap reads the integer part of a rollup cell into ws (the leading
// 0 included) and reports whether it has a bit set, refusing a bit of a
// window without float samples or past the last window.
func (d *valueDecoder) integerBitmap(ws []RollupWindow) bool {
	d.off++
	n := (len(ws) + 7) / 8
	if len(d.b)-d.off < n {
		d.fail("short integer bitmap")
		return false
	}
	bitmap := d.b[d.off : d.off+n]
	d.off += n
	any := false
	for i := range n * 8 {
		if bitmap[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		if i >= len(ws) || ws[i].Count == 0 {
			d.fail(fmt.Sprintf("integer bit of window %d, which has no float samples", i))
			return false
		}
		ws[i].Integers, any = true, true
	}
	return any
}

// histogramWindows reads the histogram part of a rollup cell into ws and
// returns the number of windows with histograms it has.
func (d *valueDecoder) histogramWindows(ws []RollupWindow, r int64) int {
	m := d.uvarint()
	if d.err == nil && m > uint64(len(ws)) {
		d.fail(fmt.Sprintf("%d windows with histograms of %d", m, len(ws)))
	}
	next := uint64(0)
	for range m {
		i := next + d.uvarint()
		count := d.uvarint()
		off := d.uvarint()
		l := d.uvarint()
		if d.err != nil {
			return 0
		}
		if i >= uint64(len(ws)) || count == 0 || l > uint64(len(d.b)-d.off) {
			d.fail("bad histogram window")
			return 0
		}
		next = i + 1
		v, err := DecodeSampleValue(d.b[d.off : d.off+int(l)])
		if err != nil || (v.H == nil && v.FH == nil) {
			d.fail(fmt.Sprintf("bad last histogram (%v)", err))
			return 0
		}
		d.off += int(l)
		w := &ws[i]
		h := HistogramSample{T: w.End - int64(off), ST: v.ST, H: v.H, FH: v.FH}
		if IsStaleHistogram(h) || h.T <= w.End-r || h.T > w.End || (w.HasStale() && w.StaleT <= h.T) ||
			(w.Count > 0 && (h.T == w.LastT || h.T == w.FirstT)) {
			d.fail(fmt.Sprintf("inconsistent last histogram at %d of the window ending %d", h.T, w.End))
			return 0
		}
		w.Histograms, w.LastH = count, h
	}
	if d.err != nil {
		return 0
	}
	return int(m)
}

// appendXORFloat appends f XORed with prev: a byte lead<<4|n (lead = the
// leading zero bytes of the XOR, n its significant bytes, 0 when equal) and the
// n significant bytes.
func appendXORFloat(dst []byte, prev, f float64) []byte {
	x := math.Float64bits(f) ^ math.Float64bits(prev)
	if x == 0 {
		return append(dst, 0)
	}
	lead := bits.LeadingZeros64(x) / 8
	trail := bits.TrailingZeros64(x) / 8
	n := 8 - lead - trail
	dst = append(dst, byte(lead<<4|n))
	x >>= 8 * trail
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(x>>(8*i)))
	}
	return dst
}

// valueDecoder reads the varints, bytes and XOR-coded floats of a cell value
// (rollup cells, decimal chunks), refusing what their encoders never write; the
// first error sticks, and later reads return zeros.
type valueDecoder struct {
	b   []byte
	off int
	err error
}

func (d *valueDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	// n > 1 with a last byte of 0 is an overlong encoding, which AppendUvarint
	// never writes.
	if n <= 0 || v > math.MaxInt64/2 || n > 1 && d.b[d.off+n-1] == 0 {
		d.err = fmt.Errorf("bad varint at byte %d: %w", d.off, ErrMalformed)
		return 0
	}
	d.off += n
	return v
}

// varint reads a signed varint, refusing what AppendVarint never writes and
// values beyond ±2^61 (no field of a window needs more).
func (d *valueDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 || v > math.MaxInt64/4 || v < math.MinInt64/4 || n > 1 && d.b[d.off+n-1] == 0 {
		d.err = fmt.Errorf("bad varint at byte %d: %w", d.off, ErrMalformed)
		return 0
	}
	d.off += n
	return v
}

// fail records a malformed value, if nothing did before.
func (d *valueDecoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at byte %d: %w", msg, d.off, ErrMalformed)
	}
}

func (d *valueDecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.err = fmt.Errorf("value ends at byte %d: %w", d.off, ErrMalformed)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *valueDecoder) xorFloat(prev float64) float64 {
	h := d.byte()
	if d.err != nil || h == 0 {
		return prev
	}
	lead, n := int(h>>4), int(h&0x0f)
	if n == 0 || lead+n > 8 || d.off+n > len(d.b) {
		d.err = fmt.Errorf("bad float header %#x at byte %d: %w", h, d.off-1, ErrMalformed)
		return 0
	}
	if sig := d.b[d.off : d.off+n]; sig[0] == 0 || sig[n-1] == 0 {
		// appendXORFloat counts zero bytes at either end in lead or leaves them out.
		d.err = fmt.Errorf("float of bytes %x at byte %d is not canonical: %w", sig, d.off-1, ErrMalformed)
		return 0
	}
	var x uint64
	for _, c := range d.b[d.off : d.off+n] {
		x = x<<8 | uint64(c)
	}
	d.off += n
	x <<= 8 * (8 - lead - n)
	return math.Float64frombits(math.Float64bits(prev) ^ x)
}

// RollupRowStart is the start of the rollup row (the UTC day) holding the data
// bucket that starts at bucketStart.
func RollupRowStart(bucketStart int64) int64 {
	return BucketStart(bucketStart, RollupRowSpan)
}

// AppendRollupQualifier appends the qualifier of the rollup cell of the data
// bucket starting at bucketStart: its offset from the row's day, big-endian
// uint32.
func AppendRollupQualifier(dst []byte, bucketStart int64) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(bucketStart-RollupRowStart(bucketStart)))
}

// DecodeRollupQualifier returns the start of the data bucket a rollup cell of the
// row of day rowStart summarises. It fails, wrapping ErrMalformed, on a
// qualifier that is not 4 bytes or lies outside the day.
func DecodeRollupQualifier(q []byte, rowStart int64) (int64, error) {
	if len(q) != 4 {
		return 0, fmt.Errorf("schema: rollup qualifier of %d bytes, want 4: %w", len(q), ErrMalformed)
	}
	off := int64(binary.BigEndian.Uint32(q))
	if off >= RollupRowSpan.Milliseconds() {
		return 0, fmt.Errorf("schema: rollup qualifier offset %d outside the day: %w", off, ErrMalformed)
	}
	return rowStart + off, nil
}
