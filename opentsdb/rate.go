package opentsdb

import "math"

// RateOptions are OpenTSDB's rateOptions.
type RateOptions struct {
	// Counter treats the series as a monotonic counter: a drop is a reset.
	Counter bool `json:"counter"`
	// CounterMax is the value a counter wraps at [math.MaxInt64].
	CounterMax int64 `json:"counterMax"`
	// ResetValue, when positive, turns a rate above it after a reset into 0.
	ResetValue int64 `json:"resetValue"`
	// DropResets drops the rate across a reset instead of computing it.
	DropResets bool `json:"dropResets"`
}

// DefaultRateOptions are OpenTSDB's defaults: not a counter, CounterMax
// Long.MAX_VALUE, no reset value.
func DefaultRateOptions() RateOptions { return RateOptions{CounterMax: math.MaxInt64} }

// rate is OpenTSDB's RateSpan over one series' points: per-second rates at
// each point's timestamp. Like RateSpan it starts from a previous point of
// (0, 0), so the first point's rate is its value over its timestamp in
// seconds; AggregationIterator keeps that first rate out of the timestamps it
// emits (see aggregate). A counter's drop is wrapped through CounterMax, or
// dropped with DropResets (the next rate is then taken from the point after
// the drop). raw says the points are stored samples: between two integers
// (isInteger) the differences are taken in int64 arithmetic, as RateSpan
// takes them between two longs.
func rate(pts []Point, o RateOptions, raw bool) []Point {
	out := make([]Point, 0, len(pts))
	prev, prevInt := Point{}, true // RateSpan's first previous point is the long 0 at 0
	for _, p := range pts {
		pInt := raw && isInteger(p.V)
		if p.T <= prev.T {
			// RateSpan throws IllegalStateException; only a point at time 0 can
			// get here, as the points are sorted and unique.
			prev, prevInt = p, pInt
			continue
		}
		dt := float64(p.T-prev.T) / 1000
		longs := prevInt && pInt
		var diff float64
		if longs {
			diff = float64(int64(p.V) - int64(prev.V))
		} else {
			diff = p.V - prev.V
		}
		if o.Counter && diff < 0 {
			if o.DropResets {
				prev, prevInt = p, pInt
				continue
			}
			if longs {
				diff = float64(o.CounterMax - int64(prev.V) + int64(p.V))
			} else {
				diff = float64(o.CounterMax) - prev.V + p.V
			}
			r := diff / dt
			if o.ResetValue > 0 && r > float64(o.ResetValue) {
				r = 0
			}
			out = append(out, Point{p.T, r})
		} else {
			out = append(out, Point{p.T, diff / dt})
		}
		prev, prevInt = p, pInt
	}
	return out
}
