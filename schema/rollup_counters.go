package schema

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The counter part of a rollup cell holds RollupWindow's counter fields, what
// rate, increase and delta (the engine's extrapolatedRate), irate and idelta
// (instantValue), changes and resets need of a window beyond its other
// fields. It is the cell's last part (EncodeRollupWindows has the layout); a
// cell written before it has none, and its windows decode with HasCounters
// false.

// rollupCountersVersion is the first byte of the counter part: a reader
// refuses a part of another version rather than misread it.
const rollupCountersVersion = 1

// appendRollupCounters appends the counter part of a rollup cell holding ws,
// laid out as EncodeRollupWindows says.
func appendRollupCounters(dst []byte, ws []RollupWindow) []byte {
	dst = append(dst, rollupCountersVersion)
	var prevGap int64
	for _, w := range ws {
		if w.Count == 0 {
			continue
		}
		dst = binary.AppendUvarint(dst, w.Count-1-w.Changes)
		dst = binary.AppendUvarint(dst, uint64(len(w.ResetValues)))
		prev := w.FirstV
		for _, v := range w.ResetValues {
			dst = appendXORFloat(dst, prev, v)
			prev = v
		}
		if w.Count >= 2 {
			gap := w.LastT - w.PrevT
			dst = binary.AppendVarint(dst, gap-prevGap)
			prevGap = gap
			dst = appendXORFloat(dst, w.LastV, w.PrevV)
		}
	}
	return dst
}

// rollupCounters reads the counter part of a rollup cell into ws, whose other
// fields are read, and sets HasCounters on each. It refuses a part
// EncodeRollupWindows would not write for windows AggregateWindows makes: a
// version other than rollupCountersVersion, Changes beyond Count-1, more
// resets than changes, PrevT outside [FirstT, LastT) (FirstT itself when
// Count is 2), PrevV not FirstV's bits when Count is 2, and the counter fields
// that contradict the window's other fields (countersConsistent).
func (d *valueDecoder) rollupCounters(ws []RollupWindow) {
	if v := d.byte(); d.err == nil && v != rollupCountersVersion {
		d.off--
		d.fail(fmt.Sprintf("counter part of version %d", v))
		return
	}
	var prevGap int64
	for i := range ws {
		w := &ws[i]
		w.HasCounters = true
		if w.Count == 0 {
			continue
		}
		unchanged := d.uvarint()
		resets := d.uvarint()
		if d.err != nil {
			return
		}
		if unchanged > w.Count-1 || resets > w.Count-1-unchanged || resets > uint64(len(d.b)-d.off) {
			d.fail(fmt.Sprintf("%d unchanged samples and %d resets of %d samples", unchanged, resets, w.Count))
			return
		}
		w.Changes = w.Count - 1 - unchanged
		if resets > 0 {
			w.ResetValues = make([]float64, resets)
			prev := w.FirstV
			for j := range w.ResetValues {
				w.ResetValues[j] = d.xorFloat(prev)
				prev = w.ResetValues[j]
			}
		}
		if w.Count >= 2 {
			gap := prevGap + d.varint()
			if d.err == nil && (gap <= 0 || gap > w.LastT-w.FirstT || w.Count == 2 && gap != w.LastT-w.FirstT) {
				d.fail(fmt.Sprintf("second-to-last sample %d ms before the last of the window ending %d", gap, w.End))
				return
			}
			prevGap = gap
			w.PrevT = w.LastT - gap
			w.PrevV = d.xorFloat(w.LastV)
			if d.err == nil && w.Count == 2 && math.Float64bits(w.PrevV) != math.Float64bits(w.FirstV) {
				d.fail(fmt.Sprintf("second-to-last value of the two of the window ending %d is not the first", w.End))
			}
		}
		if d.err != nil {
			return
		}
		if !countersConsistent(*w) {
			d.fail(fmt.Sprintf("inconsistent counter fields of the window ending %d", w.End))
			return
		}
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
