package opentsdb

import "math"

// aggregate is OpenTSDB's AggregationIterator over the series of one group
// (each already downsampled and turned into rates as asked), kept step for
// step so that its answers are OpenTSDB's, quirks included:
//
//   - The timestamps emitted are the union of the series' timestamps in
//     [startTime, endTime].
//   - At a timestamp x, a series takes part from its first point to its last
//     (never before, never after: no extrapolation); between two of its
//     points it takes the aggregator's interpolation of them (LERP: linear,
//     ZIM: 0, MAX/MIN: ±Double.MAX_VALUE, PREV: the earlier point).
//   - With rate, each series' first rate (RateSpan's rate from (0, 0)) is
//     loaded as its current value but its timestamp is never emitted; a
//     series takes part with its latest rate at or before x, without
//     interpolation, and with that first rate even at timestamps before it;
//     a series with a single rate takes no part.
func aggregate(series [][]Point, startTime, endTime int64, agg *Aggregator, isRate bool) []Point {
	n := len(series)
	type slot struct {
		t   int64
		v   float64
		set bool
	}
	cur := make([]slot, n)
	nxt := make([]slot, n)
	ended := make([]bool, n)
	pos := make([]int, n)
	moveToNext := func(i int) {
		cur[i] = slot{nxt[i].t, nxt[i].v, true}
		if pos[i] < len(series[i]) {
			p := series[i][pos[i]]
			nxt[i] = slot{p.T, p.V, true}
			pos[i]++
		} else {
			ended[i] = true
		}
	}
	for i, pts := range series {
		k := 0
		for k < len(pts) && pts[k].T < startTime {
			k++
		}
		if k == len(pts) {
			ended[i] = true
			continue
		}
		nxt[i] = slot{pts[k].T, pts[k].V, true}
		pos[i] = k + 1
		if isRate {
			if pos[i] < len(pts) {
				moveToNext(i)
			} else {
				ended[i] = true
			}
		}
	}
	var out []Point
	vals := make([]float64, 0, n)
	current := 0
	for {
		// next(): the current values of series that ended are cleared, from
		// the previous current series on, as AggregationIterator.next does.
		for i := current; i < n; i++ {
			if ended[i] {
				cur[i].set = false
			}
		}
		current = -1
		minTS := int64(math.MaxInt64)
		multiple := false
		for i := 0; i < n; i++ {
			if ended[i] || nxt[i].t > endTime {
				continue
			}
			if nxt[i].t < minTS {
				minTS, current, multiple = nxt[i].t, i, false
			} else if nxt[i].t == minTS {
				multiple = true
			}
		}
		if current < 0 {
			return out
		}
		moveToNext(current)
		if multiple {
			for i := current + 1; i < n; i++ {
				if !ended[i] && nxt[i].t == minTS {
					moveToNext(i)
				}
			}
		}
		x := cur[current].t
		vals = vals[:0]
		for i := 0; i < n; i++ {
			if !cur[i].set {
				continue
			}
			vals = append(vals, valueAt(x, i == current, isRate, cur[i].t, cur[i].v, nxt[i].t, nxt[i].v, ended[i], agg.Interp))
		}
		out = append(out, Point{x, agg.Run(vals)})
	}
}

// valueAt is AggregationIterator.nextDoubleValue: series i's value at x given
// its current point (x0, y0) and next point (x1, y1).
func valueAt(x int64, isCurrent, isRate bool, x0 int64, y0 float64, x1 int64, y1 float64, ended bool, interp Interpolation) float64 {
	if isCurrent || isRate || x == x0 {
		return y0
	}
	if ended {
		// Unreachable: a series that ended was cleared above unless it ended at
		// x. OpenTSDB's next timestamp is then Long.MAX_VALUE.
		x1, y1 = math.MaxInt64, y0
	}
	if x == x1 {
		return y1
	}
	switch interp {
	case ZIM:
		return 0
	case MAX:
		return math.MaxFloat64
	case MIN:
		return -math.MaxFloat64
	case PREV:
		return y0
	}
	return y0 + float64(x-x0)*(y1-y0)/float64(x1-x0)
}
