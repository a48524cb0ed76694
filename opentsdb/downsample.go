package opentsdb

import "math"

// Point is one sample: T in milliseconds since the epoch, V its value.
type Point struct {
	T int64
	V float64
}

// FillPolicy is what a downsampler emits for an interval without samples
// (OpenTSDB's FillPolicy; "scalar" is not supported).
type FillPolicy int

// The fill policies of OpenTSDB 2.4.1.
const (
	// FillNone emits nothing: the aggregation interpolates across the gap.
	FillNone FillPolicy = iota
	// FillNaN emits NaN, written "NaN" in the answer.
	FillNaN
	// FillNull emits NaN, written null in the answer.
	FillNull
	// FillZero emits 0.
	FillZero
)

var fillNames = map[string]FillPolicy{"none": FillNone, "nan": FillNaN, "null": FillNull, "zero": FillZero}

// Downsample is a parsed downsampling specifier such as "1m-avg-zero".
type Downsample struct {
	// Interval is the interval's width in milliseconds; 0 with All.
	Interval int64
	// All is the "0all" interval: one value for the whole query range.
	All bool
	// Agg reduces one interval's values.
	Agg *Aggregator
	// Fill is what an interval without samples gives.
	Fill FillPolicy
}

// align is Downsampler.alignTimestamp: t rounded down to the interval.
func (d *Downsample) align(t int64) int64 { return t - t%d.Interval }

// downsample is OpenTSDB's Downsampler (fill policy none) or
// FillingDownsampler (the others) over one series' points, as
// Span.downsampler builds it and AggregationIterator seeks it: startTime and
// endTime (ms) are the span group's bounds (the scanned range), queryStart and
// queryEnd (ms) the query's, which only the "all" interval uses.
//
// Intervals are epoch-aligned: [k·Interval, (k+1)·Interval), each reported at
// its start. The seek to startTime skips samples before the first interval
// that starts at or after it (ValuesInInterval.seekInterval). A filling
// downsampler emits every interval start in [align(startTime),
// align(endTime)), the missing ones filled.
func (d *Downsample) downsample(pts []Point, startTime, endTime, queryStart, queryEnd int64) []Point {
	if d.All {
		var vs []float64
		for _, p := range pts {
			if p.T < queryStart {
				continue
			}
			if p.T >= queryEnd {
				break
			}
			vs = append(vs, p.V)
		}
		if len(vs) == 0 {
			return nil
		}
		return []Point{{queryStart, d.Agg.Run(vs)}}
	}
	seek := d.align(startTime + d.Interval - 1)
	i := 0
	for i < len(pts) && pts[i].T < seek {
		i++
	}
	pts = pts[i:]
	// The data's intervals, in order.
	var data []Point
	for i := 0; i < len(pts); {
		bucket := d.align(pts[i].T)
		j := i
		vs := make([]float64, 0, 8)
		for j < len(pts) && d.align(pts[j].T) == bucket {
			vs = append(vs, pts[j].V)
			j++
		}
		data = append(data, Point{bucket, d.Agg.Run(vs)})
		i = j
	}
	if d.Fill == FillNone {
		return data
	}
	var out []Point
	k := 0
	for ts, end := d.align(startTime), d.align(endTime); ts < end; ts += d.Interval {
		for k < len(data) && data[k].T < ts {
			k++ // FillingDownsampler skips intervals before its own
		}
		if k < len(data) && data[k].T == ts {
			out = append(out, data[k])
			k++
			continue
		}
		v := math.NaN()
		if d.Fill == FillZero {
			v = 0
		}
		out = append(out, Point{ts, v})
	}
	return out
}
