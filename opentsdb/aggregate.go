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
//   - When every current and next value of the group is an integer (raw
//     samples with integral values, neither downsampled nor turned into
//     rates), the step is computed in int64 arithmetic (runLong, integer
//     interpolation); otherwise in doubles (runDouble).
//   - With rate, each series' first rate (RateSpan's rate from (0, 0)) is
//     loaded as its current value but its timestamp is never emitted; a
//     series takes part with its latest rate at or before x, without
//     interpolation, and with that first rate even at timestamps before it;
//     a series with a single rate takes no part.
//
// raw says the points are stored samples, whose integral values are
// OpenTSDB's integers (see isInteger). The second result says which points are
// integers (nil when none is), which OpenTSDB writes without a fraction.
func aggregate(series [][]Point, startTime, endTime int64, agg *Aggregator, isRate, raw bool) ([]Point, []bool) {
	n := len(series)
	type slot struct {
		t     int64
		v     float64
		set   bool
		isInt bool
	}
	cur := make([]slot, n)
	nxt := make([]slot, n)
	ended := make([]bool, n)
	pos := make([]int, n)
	point := func(p Point) slot { return slot{p.T, p.V, true, raw && isInteger(p.V)} }
	moveToNext := func(i int) {
		cur[i] = nxt[i]
		if pos[i] < len(series[i]) {
			nxt[i] = point(series[i][pos[i]])
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
		nxt[i] = point(pts[k])
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
	var ints []bool
	vals := make([]float64, 0, n)
	longs := make([]int64, 0, n)
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
			return out, ints
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
		// isInteger(): no current or next value is a double (AggregationIterator
		// checks both halves of its timestamps for FLAG_FLOAT).
		integers := !isRate
		for i := 0; i < n && integers; i++ {
			integers = (!cur[i].set || cur[i].isInt) && (ended[i] || nxt[i].isInt)
		}
		if integers {
			longs = longs[:0]
			for i := 0; i < n; i++ {
				if cur[i].set {
					longs = append(longs, longAt(x, i == current, cur[i].t, int64(cur[i].v), nxt[i].t, int64(nxt[i].v), ended[i], agg.Interp))
				}
			}
			if ints == nil {
				ints = make([]bool, len(out), len(out)+1)
			}
			out = append(out, Point{x, float64(agg.runLong(longs))})
			ints = append(ints, true)
			continue
		}
		vals = vals[:0]
		for i := 0; i < n; i++ {
			if !cur[i].set {
				continue
			}
			vals = append(vals, valueAt(x, i == current, isRate, cur[i].t, cur[i].v, nxt[i].t, nxt[i].v, ended[i], agg.Interp))
		}
		out = append(out, Point{x, agg.Run(vals)})
		if ints != nil {
			ints = append(ints, false)
		}
	}
}

// isInteger reports whether a stored sample is one of OpenTSDB's integers:
// hbtsdb keeps every value as a double, so a value is taken for the integer
// OpenTSDB would have stored when it is integral and fits a long (a float
// sent as "2.0" is an integer here; see the package doc).
func isInteger(v float64) bool {
	return v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64
}

// longAt is AggregationIterator.nextLongValue: series i's value at x in
// integer arithmetic, given its current point (x0, y0) and next (x1, y1).
func longAt(x int64, isCurrent bool, x0, y0, x1, y1 int64, ended bool, interp Interpolation) int64 {
	if isCurrent || x == x0 {
		return y0
	}
	if ended {
		// The next slot of a series that ended holds its last value at
		// TIME_MASK.
		x1, y1 = math.MaxInt64, y0
	}
	if x == x1 {
		return y1
	}
	switch interp {
	case ZIM:
		return 0
	case MAX:
		return math.MaxInt64
	case MIN:
		return math.MinInt64
	case PREV:
		return y0
	}
	return y0 + (x-x0)*(y1-y0)/(x1-x0)
}

// valueAt is AggregationIterator.nextDoubleValue: series i's value at x given
// its current point (x0, y0) and next point (x1, y1).
func valueAt(x int64, isCurrent, isRate bool, x0 int64, y0 float64, x1 int64, y1 float64, ended bool, interp Interpolation) float64 {
	if isCurrent || isRate || x == x0 {
		return y0
	}
	if ended {
		// A series that ended keeps taking part while the iterator has not
		// cleared it (next() clears from the previous current series on); its
		// next slot holds its last value at TIME_MASK.
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
