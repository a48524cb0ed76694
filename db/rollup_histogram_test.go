package db_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// The rollup rule for native histograms (query/resolution.go): a histogram
// series never gets another answer from a rollup than from raw data. Instant
// selectors, last_over_time and present_over_time are served from the
// windows' last histograms; sum_over_time, max_over_time and min_over_time
// of a series with histograms read raw data.

// histogramRollupDB opens a DB with the default rollups over series of native
// histograms (integer counters with resets, float gauges, custom buckets, a
// series that turns from floats to histograms and back), with gaps ended by
// stale markers of both kinds; compacted (chunks and rollups) when compacted.
func histogramRollupDB(t *testing.T, b schematest.Backend, compacted bool) *db.DB {
	t.Helper()
	st := b.Store(t)
	d, err := db.Open(context.Background(), db.Options{
		Store: st, Settings: b.Settings, Now: func() time.Time { return rollupNow },
		Rollups: schema.DefaultRollups(), RawRetention: schema.DefaultRawRetention,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	writeHistogramSeries(t, d)
	if compacted {
		c, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: schema.DefaultRollups(),
			Now: func() time.Time { return rollupNow }})
		if err != nil {
			t.Fatal(err)
		}
		if stats, err := c.Compact(context.Background()); err != nil || stats.Rows == 0 {
			t.Fatalf("compact: %+v, %v", stats, err)
		}
	}
	return d
}

// writeHistogramSeries writes the series of histogramRollupDB: rollupWindow
// from rollupDay0.
func writeHistogramSeries(t *testing.T, d *db.DB) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 1))
	start := rollupDay0.UnixMilli()
	end := start + rollupWindow.Milliseconds()
	stale := math.Float64frombits(value.StaleNaN)
	var req write.Request
	for i, kind := range []string{"int", "float", "nhcb", "mixed"} {
		s := write.Series{Labels: labels.FromStrings("__name__", "h", "instance", fmt.Sprintf("h%d", i), "kind", kind)}
		var (
			n   int64
			gap int64
		)
		for ts := start; ts < end; ts += 15_000 + int64(rng.IntN(3))*1000 {
			switch {
			case ts < gap:
				continue
			case rng.IntN(500) == 0: // a gap, ended by a stale marker of either kind
				if rng.IntN(2) == 0 {
					s.Samples = append(s.Samples, cellenc.Sample{T: ts, V: stale})
				} else {
					s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, H: &histogram.Histogram{Sum: stale}})
				}
				gap = ts + int64(rng.IntN(40*60))*1000
				continue
			}
			n++
			if rng.IntN(700) == 0 {
				n = 0 // a counter reset
			}
			switch kind {
			case "int":
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, H: tsdbutil.GenerateTestHistogram(n)})
			case "float":
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, FH: tsdbutil.GenerateTestGaugeFloatHistogram(int64(rng.IntN(50)))})
			case "nhcb":
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, H: tsdbutil.GenerateTestCustomBucketsHistogram(n)})
			case "mixed":
				if (ts-start)/(7*3_600_000)%2 == 0 {
					s.Samples = append(s.Samples, cellenc.Sample{T: ts, V: float64(n)})
				} else {
					s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, H: tsdbutil.GenerateTestHistogram(n)})
				}
			}
		}
		req.Series = append(req.Series, s)
	}
	if res, err := d.Write(context.Background(), &req); err != nil || len(res.Rejected) > 0 {
		t.Fatalf("write: %v %+v", err, res.Rejected)
	}
}

// runPromQLHistograms is runPromQL keeping histogram points too, rendered
// with their bits: "t=float" and "t=histogram" per point, one line per series.
func runPromQLHistograms(t *testing.T, d *db.DB, expr string, start, end time.Time, step time.Duration, res query.Resolution) (string, []string) {
	t.Helper()
	r, done := execPromQL(context.Background(), t, d, expr, start, end, step, res)
	defer done()
	warnings, infos := r.Warnings.AsStrings(expr, 0, 0)
	fh := func(h *histogram.FloatHistogram) string {
		c := h.Copy().Compact(0)
		c.CounterResetHint = 0
		return fmt.Sprintf("%s/%x/%x", c.String(), math.Float64bits(c.Sum), math.Float64bits(c.Count))
	}
	var out string
	switch v := r.Value.(type) {
	case promql.Matrix:
		for _, s := range v {
			out += s.Metric.String() + ":"
			for _, p := range s.Floats {
				out += fmt.Sprintf(" %d=%x", p.T, math.Float64bits(p.F))
			}
			for _, p := range s.Histograms {
				out += fmt.Sprintf(" %d=%s", p.T, fh(p.H))
			}
			out += "\n"
		}
	case promql.Vector:
		for _, s := range v {
			if s.H != nil {
				out += fmt.Sprintf("%s: %d=%s\n", s.Metric, s.T, fh(s.H))
			} else {
				out += fmt.Sprintf("%s: %d=%x\n", s.Metric, s.T, math.Float64bits(s.F))
			}
		}
	}
	return out, append(warnings, infos...)
}

func TestHistogramRollupsAnswerAsRaw(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		for _, compacted := range []bool{false, true} {
			t.Run(fmt.Sprintf("compacted=%v", compacted), func(t *testing.T) {
				d := histogramRollupDB(t, b, compacted)
				start, end := rollupDay0.Add(3*time.Hour), rollupDay0.Add(rollupWindow)
				// rollup: whether the Select is served from a rollup at a 1h
				// step ("maybe": planned from one, and the series whose
				// windows hold histograms read raw data, the info
				// annotation saying rollup all the same).
				for _, tc := range []struct {
					expr, rollup string
				}{
					{"h", "yes"},
					{"last_over_time(h[1h])", "yes"},
					{"present_over_time(h[2h])", "yes"},
					{"histogram_count(h)", "yes"},
					{"sum_over_time(h[1h])", "maybe"},
					{"max_over_time(h[1h])", "maybe"},
					{"min_over_time(h[1h])", "maybe"},
					{"rate(h[1h])", "no"},
				} {
					for _, step := range []time.Duration{time.Hour, 5 * time.Minute, 7 * time.Minute, 0} {
						qEnd := end
						if step == 0 {
							qEnd = start
						}
						want, wantNotes := runPromQLHistograms(t, d, tc.expr, start, qEnd, step, query.ResolutionRaw)
						got, notes := runPromQLHistograms(t, d, tc.expr, start, qEnd, step, query.ResolutionAuto)
						if got != want {
							t.Errorf("%s at step %s: from rollups\n%s\nfrom raw data\n%s", tc.expr, step, got, want)
						}
						if want == "" {
							t.Errorf("%s at step %s: no data", tc.expr, step)
						}
						if step == time.Hour && tc.rollup != "maybe" && servedFromRollup(notes) != (tc.rollup == "yes") {
							t.Errorf("%s at step %s: served from a rollup = %v, want %v (annotations %q)", tc.expr, step, servedFromRollup(notes), tc.rollup, notes)
						}
						if len(wantNotes) != len(notes)-boolInt(servedFromRollup(notes)) {
							t.Errorf("%s at step %s: annotations %q, from raw data %q", tc.expr, step, notes, wantNotes)
						}
					}
				}
			})
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHistogramRetentionServedFromRollups: once raw data expired, histogram
// series get from the rollups, at aligned steps, what raw data answered for
// instant selectors and last_over_time (each window's last histogram), and
// nothing of their histograms for sum_over_time (query/resolution.go), whose
// float series keep their float sums.
func TestHistogramRetentionServedFromRollups(t *testing.T) {
	clock, d := expiringDB(t, func(d *db.DB) { writeHistogramSeries(t, d) })
	start, end := rollupDay0.Add(2*time.Hour), rollupDay0.Add(rollupWindow)
	exprs := []string{"h", "last_over_time(h[1h])", "histogram_sum(h)"}
	before := map[string]string{}
	for _, expr := range exprs {
		before[expr], _ = runPromQLHistograms(t, d, expr, start, end, time.Hour, query.ResolutionRaw)
		if strings.Count(before[expr], "\n") != 4 {
			t.Fatalf("%s: want 4 series from raw data, got\n%s", expr, before[expr])
		}
	}
	// 100h after the data's start, raw samples before 28h have expired.
	clock.Store(rollupDay0.Add(100 * time.Hour).UnixMilli())
	for _, expr := range exprs {
		got, notes := runPromQLHistograms(t, d, expr, start, end, time.Hour, query.ResolutionAuto)
		if got != before[expr] {
			t.Errorf("%s after raw expiry:\n%s\nbefore:\n%s", expr, got, before[expr])
		}
		if !servedFromRollup(notes) {
			t.Errorf("%s: annotations %q, want served from a rollup", expr, notes)
		}
	}
	// sum_over_time: before 28h only the float parts of the mixed series.
	got, _ := runPromQLHistograms(t, d, "sum_over_time(h[1h])", start, rollupDay0.Add(27*time.Hour), time.Hour, query.ResolutionAuto)
	if want := "{instance=\"h3\", kind=\"mixed\"}:"; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("sum_over_time(h[1h]) from rollups after raw expiry:\n%s\nwant only the floats of %s", got, want)
	}
}
