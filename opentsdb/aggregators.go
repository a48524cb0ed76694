package opentsdb

import (
	"math"
	"slices"
	"sort"
)

// Interpolation is what an aggregator takes for a series that has no sample
// at a timestamp another series has (OpenTSDB's Aggregators.Interpolation).
type Interpolation int

// The interpolations of OpenTSDB 2.4.1's Aggregators.java.
const (
	// LERP interpolates linearly between the series' samples around the
	// timestamp.
	LERP Interpolation = iota
	// ZIM takes zero.
	ZIM
	// MAX takes the largest float64 (Double.MAX_VALUE), so that it never wins a min.
	MAX
	// MIN takes the most negative float64 (-Double.MAX_VALUE), so that it never wins a max.
	MIN
	// PREV takes the series' previous sample.
	PREV
)

// Aggregator reduces the values of several series at one timestamp, or the
// values of one series in one downsampling interval, to one value.
type Aggregator struct {
	// Name is the aggregator's name in a query ("sum", "p99", ...).
	Name string
	// Interp is how a series without a sample at a timestamp takes part.
	Interp Interpolation
	// run reduces the values; it sees NaN as OpenTSDB's runDouble does.
	run func(vs []float64) float64
}

// Run reduces vs to one value, as OpenTSDB's Aggregator.runDouble: NaN values
// are skipped, and no value (or only NaN) gives NaN (count: 0).
func (a *Aggregator) Run(vs []float64) float64 { return a.run(vs) }

// aggregators are OpenTSDB 2.4.1's (Aggregators.java), by name.
var aggregatorNames = []string{
	"sum", "min", "max", "avg", "none", "median", "mult", "dev", "diff", "count", "zimsum",
	"mimmin", "mimmax", "first", "last", "pfsum", "squareSum",
	"p999", "p99", "p95", "p90", "p75", "p50",
	"ep999r3", "ep99r3", "ep95r3", "ep90r3", "ep75r3", "ep50r3",
	"ep999r7", "ep99r7", "ep95r7", "ep90r7", "ep75r7", "ep50r7",
}

// AggregatorNames lists every aggregator LookupAggregator knows, sorted, as
// OpenTSDB's /api/aggregators answers them.
func AggregatorNames() []string {
	names := slices.Clone(aggregatorNames)
	sort.Strings(names)
	return names
}

// LookupAggregator returns the aggregator of that name (case-sensitive, as
// OpenTSDB's), or false.
func LookupAggregator(name string) (*Aggregator, bool) {
	switch name {
	case "sum":
		return &Aggregator{name, LERP, runSum}, true
	case "pfsum":
		return &Aggregator{name, PREV, runSum}, true
	case "zimsum":
		return &Aggregator{name, ZIM, runSum}, true
	case "squareSum":
		return &Aggregator{name, ZIM, runSquareSum}, true
	case "min":
		return &Aggregator{name, LERP, runMin}, true
	case "mimmin":
		return &Aggregator{name, MAX, runMin}, true
	case "max":
		return &Aggregator{name, LERP, runMax}, true
	case "mimmax":
		return &Aggregator{name, MIN, runMax}, true
	case "avg":
		return &Aggregator{name, LERP, runAvg}, true
	case "median":
		return &Aggregator{name, LERP, runMedian}, true
	case "none":
		return &Aggregator{name, ZIM, runNone}, true
	case "mult":
		return &Aggregator{name, LERP, runMult}, true
	case "dev":
		return &Aggregator{name, LERP, runDev}, true
	case "diff":
		return &Aggregator{name, LERP, runDiff}, true
	case "count":
		return &Aggregator{name, ZIM, runCount}, true
	case "first":
		return &Aggregator{name, ZIM, runFirst}, true
	case "last":
		return &Aggregator{name, ZIM, runLast}, true
	}
	if p, ok := percentiles[name]; ok {
		// PercentileAgg.runDouble ignores the estimation type (only runLong
		// uses it), and every hbtsdb value is a double: ep*r3 and ep*r7 are
		// p* here as they are in OpenTSDB for doubles.
		return &Aggregator{name, LERP, func(vs []float64) float64 { return runPercentile(p, vs) }}, true
	}
	return nil, false
}

var percentiles = map[string]float64{
	"p999": 99.9, "p99": 99, "p95": 95, "p90": 90, "p75": 75, "p50": 50,
	"ep999r3": 99.9, "ep99r3": 99, "ep95r3": 95, "ep90r3": 90, "ep75r3": 75, "ep50r3": 50,
	"ep999r7": 99.9, "ep99r7": 99, "ep95r7": 95, "ep90r7": 90, "ep75r7": 75, "ep50r7": 50,
}

func runSum(vs []float64) float64 {
	sum, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum
}

func runSquareSum(vs []float64) float64 {
	sum, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			sum += v * v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum
}

func runMin(vs []float64) float64 {
	m := math.Inf(1)
	for _, v := range vs {
		if !math.IsNaN(v) && v < m {
			m = v
		}
	}
	if math.IsInf(m, 1) {
		return math.NaN()
	}
	return m
}

func runMax(vs []float64) float64 {
	m := math.Inf(-1)
	for _, v := range vs {
		if !math.IsNaN(v) && v > m {
			m = v
		}
	}
	if math.IsInf(m, -1) {
		return math.NaN()
	}
	return m
}

func runAvg(vs []float64) float64 {
	sum, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func runMedian(vs []float64) float64 {
	s := notNaN(vs)
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	return s[len(s)/2]
}

// runNone is the "none" (raw) aggregator: one value, the only one of a
// single-series group.
func runNone(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	return vs[0]
}

func runMult(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	r := vs[0]
	for _, v := range vs[1:] {
		r *= v
	}
	return r
}

// runDev is the sample standard deviation by Welford's method, as
// Aggregators.StdDev.runDouble: one value gives 0.
func runDev(vs []float64) float64 {
	i := 0
	for i < len(vs) && math.IsNaN(vs[i]) {
		i++
	}
	if i == len(vs) {
		return math.NaN()
	}
	oldMean := vs[i]
	if i == len(vs)-1 {
		return 0
	}
	n := 2.0
	m2 := 0.0
	for _, x := range vs[i+1:] {
		if math.IsNaN(x) {
			continue
		}
		newMean := oldMean + (x-oldMean)/n
		m2 += (x - oldMean) * (x - newMean)
		oldMean = newMean
		n++
	}
	if n == 2 {
		return 0
	}
	return math.Sqrt(m2 / (n - 1))
}

// runDiff is the last value minus the first non-NaN one, as Aggregators.Diff.
func runDiff(vs []float64) float64 {
	i := 0
	for i < len(vs) && math.IsNaN(vs[i]) {
		i++
	}
	if i == len(vs) {
		return math.NaN()
	}
	if i == len(vs)-1 {
		return 0
	}
	return vs[len(vs)-1] - vs[i]
}

func runCount(vs []float64) float64 {
	n := 0.0
	for _, v := range vs {
		if !math.IsNaN(v) {
			n++
		}
	}
	return n
}

// runFirst and runLast are Aggregators.First and Last: the first or last
// value handed over, NaN or not.
func runFirst(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	return vs[0]
}

func runLast(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	return vs[len(vs)-1]
}

// runPercentile is Apache Commons Math 3's Percentile with its default
// (LEGACY) estimation, which OpenTSDB's PercentileAgg.runDouble uses: the
// position p(n+1)/100 in the sorted values, linearly interpolated, clamped to
// the first and last value.
func runPercentile(p float64, vs []float64) float64 {
	s := notNaN(vs)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	if n == 1 {
		return s[0]
	}
	pos := p * float64(n+1) / 100
	fpos := math.Floor(pos)
	d := pos - fpos
	if pos < 1 {
		return s[0]
	}
	if pos >= float64(n) {
		return s[n-1]
	}
	lower, upper := s[int(fpos)-1], s[int(fpos)]
	return lower + d*(upper-lower)
}

func notNaN(vs []float64) []float64 {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	return s
}
