package opentsdb

// Table-driven tests of each semantic against hand-computed values, most of
// them from OpenTSDB 2.4.1's own unit tests (test/core/*.java, cited per case).

import (
	"math"
	"slices"
	"testing"
	"time"
)

func mustAgg(t *testing.T, name string) *Aggregator {
	t.Helper()
	a, ok := LookupAggregator(name)
	if !ok {
		t.Fatalf("no aggregator %q", name)
	}
	return a
}

func TestAggregatorsReduceAsOpenTSDB(t *testing.T) {
	oneToThousand := make([]float64, 1000)
	for i := range oneToThousand {
		oneToThousand[i] = float64(i + 1)
	}
	zeroTo9999 := make([]float64, 10000)
	for i := range zeroTo9999 {
		zeroTo9999[i] = float64(i)
	}
	halves := []float64{0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5}
	nan := math.NaN()
	cases := []struct {
		name string
		agg  string
		vs   []float64
		want float64
	}{
		// TestAggregators.testPercentiles: 1..1000, its doubles within 1.0 of
		// 500, 750, ...; Commons Math's LEGACY estimate exactly.
		{"p50 of 1..1000 is 500.5 (TestAggregators.testPercentiles)", "p50", oneToThousand, 500.5},
		{"p75 of 1..1000", "p75", oneToThousand, 750.75},
		{"p90 of 1..1000", "p90", oneToThousand, 900.9},
		{"p95 of 1..1000", "p95", oneToThousand, 950.95},
		{"p99 of 1..1000", "p99", oneToThousand, 990.99},
		{"p999 of 1..1000", "p999", oneToThousand, 999.999},
		{"ep99r7 of doubles is p99 (runDouble ignores the estimation)", "ep99r7", oneToThousand, 990.99},
		{"p50 of two values interpolates between them", "p50", []float64{1, 0}, 0.5},
		{"first of 0.5..9.5 is 0.5 (TestAggregators.testFirst)", "first", halves, 0.5},
		{"last of 0.5..9.5 is 9.5 (TestAggregators.testLast)", "last", halves, 9.5},
		// TestAggregators.testStdDev*.
		{"dev of 0..9999 is numpy's 2886.75 (testStdDevKnownValues)", "dev", zeroTo9999, 2886.751331514372},
		{"dev of 3,3,3 is 0 (testStdDevNoDeviation)", "dev", []float64{3, 3, 3}, 0},
		{"dev of 1,2 is 0.5 (testStdDevFewDataInputs)", "dev", []float64{1, 2}, 0.5},
		{"dev of one value is 0", "dev", []float64{7}, 0},
		// TestAggregators.testMedian.
		{"median of 5,2,-1,400,3 is 3 (testMedian)", "median", []float64{5, 2, -1, 400, 3}, 3},
		{"median of 5,2,-1,400,3,-42 is 3 (testMedian)", "median", []float64{5, 2, -1, 400, 3, -42}, 3},
		{"sum skips NaN", "sum", []float64{1, nan, 2.5}, 3.5},
		{"sum of only NaN is NaN", "sum", []float64{nan, nan}, nan},
		{"avg skips NaN", "avg", []float64{1, nan, 2}, 1.5},
		{"min skips NaN", "min", []float64{nan, 3, -1}, -1},
		{"max skips NaN", "max", []float64{nan, 3, -1}, 3},
		{"count counts values that are not NaN", "count", []float64{0, nan, 5}, 2},
		{"count of nothing is 0", "count", nil, 0},
		{"squareSum", "squareSum", []float64{2, 3}, 13},
		{"first", "first", []float64{4, 5, 6}, 4},
		{"last", "last", []float64{4, 5, 6}, 6},
		{"diff is last minus first", "diff", []float64{4, 5, 9}, 5},
		{"mult", "mult", []float64{2, 3, 4}, 24},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustAgg(t, c.agg).Run(c.vs)
			if !sameFloat(got, c.want) && math.Abs(got-c.want) > 1e-9*math.Abs(c.want) {
				t.Fatalf("%s(%v...) = %v, want %v", c.agg, c.vs[:min(len(c.vs), 5)], got, c.want)
			}
		})
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func samePoints(a, b []Point) bool {
	return slices.EqualFunc(a, b, func(x, y Point) bool { return x.T == y.T && sameFloat(x.V, y.V) })
}

const base = int64(1356998400000) // OpenTSDB's tests' BASE_TIME

func TestAggregationInterpolatesAsOpenTSDB(t *testing.T) {
	// TestAggregationIterator's DATA_POINTS_1 and DATA_POINTS_2.
	a := []Point{{base, 40}, {base + 10000, 50}, {base + 30000, 70}}
	b := []Point{{base + 10000, 37}, {base + 20000, 48}}
	cases := []struct {
		name string
		agg  string
		want []Point
	}{
		{"sum interpolates a's 60 at 20s and leaves b out before its first and after its last point (testAggregate_doubleSpans)",
			"sum", []Point{{base, 40}, {base + 10000, 87}, {base + 20000, 108}, {base + 30000, 70}}},
		{"pfsum takes a's previous 50 at 20s (pfsum, with a's 50 kept)",
			"pfsum", []Point{{base, 40}, {base + 10000, 87}, {base + 20000, 98}, {base + 30000, 70}}},
		{"zimsum takes 0 for a at 20s", "zimsum", []Point{{base, 40}, {base + 10000, 87}, {base + 20000, 48}, {base + 30000, 70}}},
		{"avg", "avg", []Point{{base, 40}, {base + 10000, 43.5}, {base + 20000, 54}, {base + 30000, 70}}},
		{"min", "min", []Point{{base, 40}, {base + 10000, 37}, {base + 20000, 48}, {base + 30000, 70}}},
		{"max", "max", []Point{{base, 40}, {base + 10000, 50}, {base + 20000, 60}, {base + 30000, 70}}},
		{"count counts a's zero-interpolated 20s", "count", []Point{{base, 1}, {base + 10000, 2}, {base + 20000, 2}, {base + 30000, 1}}},
		{"mimmax ignores a's -MAX at 20s", "mimmax", []Point{{base, 40}, {base + 10000, 50}, {base + 20000, 48}, {base + 30000, 70}}},
		{"mimmin ignores a's MAX at 20s", "mimmin", []Point{{base, 40}, {base + 10000, 37}, {base + 20000, 48}, {base + 30000, 70}}},
		{"dev", "dev", []Point{{base, 0}, {base + 10000, 6.5}, {base + 20000, 6}, {base + 30000, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := points(aggregate([][]Point{a, b}, base, base+100000, mustAgg(t, c.agg), false, false))
			if !samePoints(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	t.Run("pfsum as OpenTSDB's test has it: a without its 10s point (pfsum)", func(t *testing.T) {
		a := []Point{{base, 40}, {base + 30000, 70}}
		got := points(aggregate([][]Point{a, b}, base, base+100000, mustAgg(t, "pfsum"), false, false))
		want := []Point{{base, 40}, {base + 10000, 77}, {base + 20000, 88}, {base + 30000, 70}}
		if !samePoints(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("points before start and after end are left out (testAggregate_seek)", func(t *testing.T) {
		got := points(aggregate([][]Point{a, b}, base+10000, base+20000, mustAgg(t, "sum"), false, false))
		want := []Point{{base + 10000, 87}, {base + 20000, 108}}
		if !samePoints(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("seven series of 5s data, 10s-avg from base+1s: the first interval is dropped (testAggregate_manySpansWithDownsampling)", func(t *testing.T) {
		data := []Point{{base, 1}, {base + 7000, 1}, {base + 10000, 1}, {base + 15000, 1}, {base + 20000, 1}, {base + 25000, 1},
			{base + 30000, 1}, {base + 35000, 1}, {base + 40000, 1}, {base + 45000, 1}, {base + 50000, 1}}
		ds := &Downsample{Interval: 10000, Agg: mustAgg(t, "avg")}
		series := make([][]Point, 7)
		for i := range series {
			series[i] = ds.downsample(data, base+1000, base+100000, 0, 0)
		}
		got := points(aggregate(series, base+1000, base+100000, mustAgg(t, "sum"), false, false))
		want := []Point{{base + 10000, 7}, {base + 20000, 7}, {base + 30000, 7}, {base + 40000, 7}, {base + 50000, 7}}
		if !samePoints(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

func TestRateAsOpenTSDB(t *testing.T) {
	// TestRateSpan's DATA_POINTS.
	data := []Point{{1356998400000, 40}, {1356998400000 + 2000000, 50}, {1357002000000, 40},
		{1357002000000 + 5000, 50}, {1357005600000, 40}, {1357005600000 + 2000000, 50}}
	counter := DefaultRateOptions()
	counter.Counter, counter.CounterMax = true, 70
	withReset := counter
	withReset.ResetValue = 1
	drop := DefaultRateOptions()
	drop.Counter, drop.DropResets = true, true
	cases := []struct {
		name string
		pts  []Point
		opts RateOptions
		want []Point
	}{
		{"rates from (0, 0), then between points (testNext_iterateAll)", data, DefaultRateOptions(), []Point{
			{1356998400000, 40.0 / 1356998400}, {1356998400000 + 2000000, 10.0 / 2000.0},
			{1357002000000, -10.0 / (1357002000 - 1356998400 - 2000)}, {1357002000000 + 5000, 10.0 / 5.0},
			{1357005600000, -10.0 / (1357005600 - 1357002005)}, {1357005600000 + 2000000, 10.0 / 2000.0}}},
		{"a counter's drops wrap through counterMax 70 (testNext_counter)", data, counter, []Point{
			{1356998400000, 40.0 / 1356998400}, {1356998400000 + 2000000, 10.0 / 2000.0},
			{1357002000000, (40.0 + 20) / 1600.0}, {1357002000000 + 5000, 10.0 / 5.0},
			{1357005600000, (40.0 + 20) / 3595}, {1357005600000 + 2000000, 10.0 / 2000.0}}},
		{"a rate over the reset value is 0 (testNext_counterWithResetValue)",
			[]Point{{1356998400000, 40}, {1356998401000, 50}, {1356998402000, 40}}, withReset,
			[]Point{{1356998400000, 40 / 1356998400.0}, {1356998401000, 10}, {1356998402000, 0}}},
		{"dropResets drops the rate across a drop and goes on from the point after it",
			[]Point{{1000, 10}, {2000, 20}, {3000, 5}, {5000, 9}}, drop,
			[]Point{{1000, 10}, {2000, 10}, {5000, 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rate(c.pts, c.opts, false)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i].T != c.want[i].T || math.Abs(got[i].V-c.want[i].V) > 1e-7 {
					t.Fatalf("rate %d: got %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
	t.Run("aggregation emits no timestamp of a series' first rate, and uses it before the second", func(t *testing.T) {
		a := rate([]Point{{10000, 10}, {20000, 30}, {30000, 40}}, DefaultRateOptions(), false) // 1@10, 2@20, 1@30
		b := rate([]Point{{25000, 50}, {35000, 60}}, DefaultRateOptions(), false)              // 2@25, 1@35
		got := points(aggregate([][]Point{a, b}, 0, 100000, mustAgg(t, "sum"), true, false))
		want := []Point{{20000, 2 + 2}, {30000, 1 + 2}, {35000, 1}}
		if !samePoints(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

func TestDownsampleAsOpenTSDB(t *testing.T) {
	// TestFillingDownsampler.testNaNMissingInterval's data.
	const bt = int64(500)
	var data []Point
	for _, k := range []int64{4, 5, 7, 12, 15, 24, 25, 26, 27} {
		data = append(data, Point{bt + 25*k, 1})
	}
	nan := math.NaN()
	steps := func(vs ...float64) []Point {
		var out []Point
		for i, v := range vs {
			out = append(out, Point{bt + int64(i)*100, v})
		}
		return out
	}
	cases := []struct {
		name string
		spec string
		want []Point
	}{
		{"100ms-sum-nan fills NaN (testNaNMissingInterval)", "100ms-sum-nan", steps(nan, 3, nan, 2, nan, nan, 4, nan, nan)},
		{"100ms-sum-null fills NaN, written null", "100ms-sum-null", steps(nan, 3, nan, 2, nan, nan, 4, nan, nan)},
		{"100ms-sum-zero fills 0 (testZeroMissingInterval)", "100ms-sum-zero", steps(0, 3, 0, 2, 0, 0, 4, 0, 0)},
		{"100ms-sum skips empty intervals", "100ms-sum", []Point{{600, 3}, {800, 2}, {1100, 4}}},
		{"100ms-count", "100ms-count", []Point{{600, 3}, {800, 2}, {1100, 4}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds, err := ParseDownsample(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := ds.downsample(data, bt, bt+36*25, 0, 0)
			if !samePoints(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	t.Run("0all-sum sums [queryStart, queryEnd) at queryStart (testDownsampler_allFilterOnQuery)", func(t *testing.T) {
		ds, err := ParseDownsample("0all-sum")
		if err != nil {
			t.Fatal(err)
		}
		got := ds.downsample(data, 0, 10000, 600, 1100)
		if want := []Point{{600, 5}}; !samePoints(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// points is aggregate's points without their integer marks.
func points(p []Point, _ []bool) []Point { return p }

func TestIntegersAggregateAsOpenTSDBsLongs(t *testing.T) {
	// Stored samples with integral values are OpenTSDB's longs.
	a := []Point{{base, 40}, {base + 10000, 50}, {base + 30000, 71}}
	b := []Point{{base + 10000, 37}, {base + 20000, 48}}
	cases := []struct {
		agg  string
		want []Point
	}{
		{"avg", []Point{{base, 40}, {base + 10000, 43}, {base + 20000, 54}, {base + 30000, 71}}}, // (50+37)/2 truncated; a's 60.5 at 20s is 60
		{"sum", []Point{{base, 40}, {base + 10000, 87}, {base + 20000, 108}, {base + 30000, 71}}},
		{"dev", []Point{{base, 0}, {base + 10000, 6}, {base + 20000, 6}, {base + 30000, 0}}}, // sqrt(42.25) truncated
		{"ep50r3", []Point{{base, 40}, {base + 10000, 37}, {base + 20000, 48}, {base + 30000, 71}}},
		{"ep50r7", []Point{{base, 40}, {base + 10000, 43}, {base + 20000, 54}, {base + 30000, 71}}},
	}
	for _, c := range cases {
		t.Run(c.agg, func(t *testing.T) {
			got, ints := aggregate([][]Point{a, b}, base, base+100000, mustAgg(t, c.agg), false, true)
			if !samePoints(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i, isInt := range ints {
				if !isInt {
					t.Fatalf("point %d is not an integer: %v", i, ints)
				}
			}
		})
	}
	t.Run("one double among the current and next values makes the step a double", func(t *testing.T) {
		// At base b's next value 37.5 is a double; at +20s b's 48 is current
		// and its next slot empty, so the step is integers again (a's 60.5
		// interpolated in longs is 60).
		b := []Point{{base + 10000, 37.5}, {base + 20000, 48}}
		got, ints := aggregate([][]Point{a, b}, base, base+100000, mustAgg(t, "avg"), false, true)
		want := []Point{{base, 40}, {base + 10000, 43.75}, {base + 20000, 54}, {base + 30000, 71}}
		if !samePoints(got, want) || !slices.Equal(ints, []bool{false, false, true, true}) {
			t.Fatalf("got %v %v, want %v, integers from +20s on", got, ints, want)
		}
	})
}

func TestParseTimeSaysWhatTagsParseLongSays(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	for in, want := range map[string]string{
		"yesterday":            "Invalid time: yesterday. Invalid character 'y' in yesterday",
		"12345678901234567890": "Invalid time: 12345678901234567890. Value too long: 12345678901234567890",
		"9999999999999999999":  "Invalid time: 9999999999999999999. Overflow in 9999999999999999999",
	} {
		_, err := ParseTime(in, now)
		if err == nil || err.Error() != want {
			t.Errorf("ParseTime(%q) = %v, want %q", in, err, want)
		}
	}
}
