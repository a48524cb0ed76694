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
	// runLong reduces integer values in integer arithmetic, as OpenTSDB's
	// runLong does: what a group of integer series aggregates to.
	runLong func(vs []int64) int64
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
		return &Aggregator{name, LERP, runSum, longSum}, true
	case "pfsum":
		return &Aggregator{name, PREV, runSum, longSum}, true
	case "zimsum":
		return &Aggregator{name, ZIM, runSum, longSum}, true
	case "squareSum":
		return &Aggregator{name, ZIM, runSquareSum, longSquareSum}, true
	case "min":
		return &Aggregator{name, LERP, runMin, longMin}, true
	case "mimmin":
		return &Aggregator{name, MAX, runMin, longMin}, true
	case "max":
		return &Aggregator{name, LERP, runMax, longMax}, true
	case "mimmax":
		return &Aggregator{name, MIN, runMax, longMax}, true
	case "avg":
		return &Aggregator{name, LERP, runAvg, longAvg}, true
	case "median":
		return &Aggregator{name, LERP, runMedian, longMedian}, true
	case "none":
		return &Aggregator{name, ZIM, runNone, longFirst}, true
	case "mult":
		return &Aggregator{name, LERP, runMult, longMult}, true
	case "dev":
		return &Aggregator{name, LERP, runDev, longDev}, true
	case "diff":
		return &Aggregator{name, LERP, runDiff, longDiff}, true
	case "count":
		return &Aggregator{name, ZIM, runCount, longCount}, true
	case "first":
		return &Aggregator{name, ZIM, runFirst, longFirst}, true
	case "last":
		return &Aggregator{name, ZIM, runLast, longLast}, true
	}
	if p, ok := percentiles[name]; ok {
		// PercentileAgg.runDouble ignores the estimation type (ep*r3 and
		// ep*r7 are p* for doubles); only runLong uses it.
		return &Aggregator{name, LERP, func(vs []float64) float64 { return runPercentile(p.p, vs) },
			func(vs []int64) int64 { return longPercentile(p, vs) }}, true
	}
	return nil, false
}

// percentile is a PercentileAgg: the percentile and Commons Math's estimation.
type percentile struct {
	p   float64
	est estimation
}

// estimation is Commons Math 3's Percentile.EstimationType that OpenTSDB uses.
type estimation int

const (
	estLegacy estimation = iota // the default, p*
	estR3                       // ep*r3
	estR7                       // ep*r7
)

var percentiles = map[string]percentile{
	"p999": {99.9, estLegacy}, "p99": {99, estLegacy}, "p95": {95, estLegacy}, "p90": {90, estLegacy},
	"p75": {75, estLegacy}, "p50": {50, estLegacy},
	"ep999r3": {99.9, estR3}, "ep99r3": {99, estR3}, "ep95r3": {95, estR3}, "ep90r3": {90, estR3},
	"ep75r3": {75, estR3}, "ep50r3": {50, estR3},
	"ep999r7": {99.9, estR7}, "ep99r7": {99, estR7}, "ep95r7": {95, estR7}, "ep90r7": {90, estR7},
	"ep75r7": {75, estR7}, "ep50r7": {50, estR7},
}

// nonNaNSum sums f(v) over the values that are not NaN, and counts them.
func nonNaNSum(vs []float64, f func(float64) float64) (sum float64, n int) {
	for _, v := range vs {
		if !math.IsNaN(v) {
			sum += f(v)
			n++
		}
	}
	return sum, n
}

func identity(v float64) float64 { return v }

func runSum(vs []float64) float64 {
	sum, n := nonNaNSum(vs, identity)
	if n == 0 {
		return math.NaN()
	}
	return sum
}

func runSquareSum(vs []float64) float64 {
	sum, n := nonNaNSum(vs, func(v float64) float64 { return v * v })
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
	sum, n := nonNaNSum(vs, identity)
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
// (LEGACY) estimation, which OpenTSDB's PercentileAgg.runDouble uses, over the
// values that are not NaN.
func runPercentile(p float64, vs []float64) float64 {
	s := notNaN(vs)
	if len(s) == 0 {
		return math.NaN()
	}
	sort.Float64s(s)
	return estimate(s, legacyIndex(p, len(s)))
}

// legacyIndex is EstimationType.LEGACY.index: the 1-based position p(n+1)/100.
func legacyIndex(p float64, n int) float64 {
	q := p / 100
	switch q {
	case 0:
		return 0
	case 1:
		return float64(n)
	}
	return q * float64(n+1)
}

// estimate is EstimationType.estimate over sorted values: the value at the
// 1-based position pos, linearly interpolated between its neighbours and
// clamped to the first and last value.
func estimate(s []float64, pos float64) float64 {
	n := len(s)
	if n == 1 {
		return s[0]
	}
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

// longPercentile is PercentileAgg.runLong: the estimation the aggregator
// names (LEGACY, R_3 or R_7) over the values as doubles, truncated.
func longPercentile(p percentile, vs []int64) int64 {
	n := len(vs)
	s := make([]float64, n)
	for i, v := range vs {
		s[i] = float64(v)
	}
	sort.Float64s(s)
	if n == 0 {
		return 0 // Percentile.evaluate of no values is NaN; (long) NaN is 0
	}
	q := p.p / 100
	var pos float64
	switch p.est {
	case estR3: // index: 0 up to 0.5/n, else rint(n·q)
		if q <= 0.5/float64(n) {
			pos = 0
		} else {
			pos = math.RoundToEven(float64(n) * q)
		}
	case estR7: // index: 1 + (n-1)·q
		switch q {
		case 0:
			pos = 0
		case 1:
			pos = float64(n)
		default:
			pos = 1 + float64(n-1)*q
		}
	default:
		pos = legacyIndex(p.p, n)
	}
	return javaLong(estimate(s, pos))
}

// javaLong is Java's (long) cast of a double: toward zero, NaN 0, saturating.
func javaLong(v float64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

// The integer reductions of Aggregators.java's runLong: every value counts
// (an integer is never NaN), in int64 arithmetic that wraps as Java's long.

func longSum(vs []int64) int64 {
	var r int64
	for _, v := range vs {
		r += v
	}
	return r
}

func longSquareSum(vs []int64) int64 {
	var r int64
	for _, v := range vs {
		r += v * v
	}
	return r
}

func longMin(vs []int64) int64 {
	m := vs[0]
	for _, v := range vs[1:] {
		m = min(m, v)
	}
	return m
}

func longMax(vs []int64) int64 {
	m := vs[0]
	for _, v := range vs[1:] {
		m = max(m, v)
	}
	return m
}

// longAvg truncates toward zero, as Java's long division.
func longAvg(vs []int64) int64 { return longSum(vs) / int64(len(vs)) }

func longMedian(vs []int64) int64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

func longMult(vs []int64) int64 {
	r := vs[0]
	for _, v := range vs[1:] {
		r *= v
	}
	return r
}

// longDev is StdDev.runLong: Welford's method in doubles, truncated.
func longDev(vs []int64) int64 {
	if len(vs) == 1 {
		return 0
	}
	oldMean := float64(vs[0])
	n := 2.0
	m2 := 0.0
	for _, v := range vs[1:] {
		x := float64(v)
		newMean := oldMean + (x-oldMean)/n
		m2 += (x - oldMean) * (x - newMean)
		oldMean = newMean
		n++
	}
	return javaLong(math.Sqrt(m2 / (n - 1)))
}

func longDiff(vs []int64) int64 {
	if len(vs) == 1 {
		return 0
	}
	return vs[len(vs)-1] - vs[0]
}

func longCount(vs []int64) int64 { return int64(len(vs)) }

func longFirst(vs []int64) int64 { return vs[0] }

func longLast(vs []int64) int64 { return vs[len(vs)-1] }

func notNaN(vs []float64) []float64 {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	return s
}
