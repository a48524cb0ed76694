package db_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"github.com/hbtsdb/hbtsdb/write"
)

// The rollup tests compare PromQL answers served from rollups with the answers
// from raw data, through the real engine, on random series shaped like what
// Prometheus scrapes: counters with resets, gauges with NaNs, gaps ended by
// stale markers, samples exactly on window edges.

var (
	rollupDay0   = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) // the data's first day
	rollupNow    = rollupDay0.Add(84 * time.Hour)
	rollupWindow = 30 * time.Hour // how much data there is
)

// The rollups compaction writes in rollupDB: none (no compaction), the store's,
// or the 5m one only, as a store that had the 1h resolution added after its
// data was compacted.
var (
	notCompacted     []schema.Rollup
	compactedAll     = schema.DefaultRollups()
	compactedFiveMin = schema.DefaultRollups()[:1]
)

// rollupDB opens a DB with the default rollups (5m, 1h) over random series.
// With compactWith not nil, every bucket is then compacted (chunks and the
// rollup cells of compactWith), and late samples are written into some
// compacted buckets afterwards, so that reads meet rollup cells, chunks, and
// buckets whose rollup is out of date.
func rollupDB(t *testing.T, b schematest.Backend, seed uint64, compactWith []schema.Rollup) *db.DB {
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
	writeRollupSeries(t, d, seed)
	if compactWith != nil {
		c, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: compactWith,
			Now: func() time.Time { return rollupNow }})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := c.Compact(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if stats.Rows == 0 {
			t.Fatal("nothing compacted")
		}
		// Late samples into compacted buckets: their rollup cells are out of
		// date until the next pass, which reads must not show.
		var late write.Request
		for i := range 6 {
			lbls := labels.FromStrings("__name__", "x", "job", fmt.Sprintf("j%d", i%2), "instance", fmt.Sprintf("h%d", i),
				"kind", []string{"counter", "counter", "gauge", "gauge", "constant", "sparse"}[i])
			late.Series = append(late.Series, write.Series{Labels: lbls, Samples: []cellenc.Sample{
				{T: rollupDay0.Add(10*time.Hour + 7*time.Second).UnixMilli(), V: 1e6},
				{T: rollupDay0.Add(20 * time.Hour).UnixMilli(), V: -1e6}, // on a window edge
			}})
		}
		if _, err := d.Write(context.Background(), &late); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// writeRollupSeries writes 6 series of rollupWindow from rollupDay0.
func writeRollupSeries(t *testing.T, d *db.DB, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	start := rollupDay0.UnixMilli()
	end := start + rollupWindow.Milliseconds()
	stale := math.Float64frombits(value.StaleNaN)
	kinds := []string{"counter", "counter", "gauge", "gauge", "constant", "sparse"}
	var req write.Request
	for i, kind := range kinds {
		lbls := labels.FromStrings("__name__", "x", "job", fmt.Sprintf("j%d", i%2), "instance", fmt.Sprintf("h%d", i), "kind", kind)
		var (
			ss  []cellenc.Sample
			v   float64
			gap int64
		)
		for ts := start; ts < end; {
			switch {
			case ts < gap:
			case rng.IntN(400) == 0: // a gap of up to 40 minutes, ended by a stale marker
				ss = append(ss, cellenc.Sample{T: ts, V: stale})
				gap = ts + int64(rng.IntN(40*60))*1000
			default:
				switch kind {
				case "counter":
					if rng.IntN(300) == 0 {
						v = float64(rng.IntN(5))
					} else {
						v += float64(rng.IntN(100))
					}
				case "gauge":
					v = rng.NormFloat64() * 100
					if rng.IntN(200) == 0 {
						v = math.NaN()
					}
				case "constant":
					v = 42
				case "sparse":
					v = float64(rng.IntN(3))
				}
				ss = append(ss, cellenc.Sample{T: ts, V: v})
			}
			step := int64(15_000)
			if kind == "sparse" {
				step = 5 * 60_000 // exactly on the 5m window edges
			} else if rng.IntN(10) == 0 {
				step += int64(rng.IntN(2000)) - 1000 // jitter
			}
			ts += step
		}
		req.Series = append(req.Series, write.Series{Labels: lbls, Samples: ss})
	}
	if _, err := d.Write(context.Background(), &req); err != nil {
		t.Fatal(err)
	}
}

// rollupQueries are the expressions compared; those with a "rollup" flag must
// be served from a rollup at a 1h step (5m for the 5m ones).
var rollupQueries = []struct {
	expr   string
	rollup bool // at aligned steps of 5m or more and ranges of whole windows
	// instant: served from a rollup as an instant query too (its range spans
	// more than Options.RollupMinBuckets buckets; shorter ones read raw data).
	instant bool
}{
	{"max_over_time(x[6h])", true, true},
	{"last_over_time(x[1d])", true, true},
	{"x", true, false},
	{"sum by (job) (x)", true, false},
	{"timestamp(x)", true, false},
	{"max_over_time(x[1h])", true, false},
	{"min_over_time(x[1h])", true, false},
	{"max_over_time(x[2h])", true, false},
	{"last_over_time(x[1h])", true, false},
	{"present_over_time(x[1h])", true, false},
	{"x offset 1h", true, false},
	{"max_over_time(x[1h] offset 1h)", true, false},
	{"sum(max_over_time(x[1h]))", true, false},
	// Computed by the store from the windows (query/rangefunc.go).
	{"rate(x[5m])", true, false},
	{"increase(x[1h])", true, false},
	{"rate(x[1d])", true, true},
	{"delta(x[2h])", true, false},
	{"irate(x[1h])", true, false},
	{"idelta(x[1h])", true, false},
	{"changes(x[1h])", true, false},
	{"resets(x[1h])", true, false},
	{"count_over_time(x[1h])", true, false},
	{"sum by (job) (rate(x[1h] offset 1h))", true, false},
	{"increase(x[1h]) / 3600 - rate(x[1h])", true, false},
	{`rate({__name__=~"x"}[1h])`, false, false}, // one metric name is what rollups serve
	{"rate(x[61m])", false, false},
	{"stddev_over_time(x[1h])", false, false},
	{"avg_over_time(x[1h])", false, false},
	{"x offset 7m", false, false},
	{"max_over_time(x[1h:5m])", false, false},
	{"max_over_time(x[61m])", false, false},
}

// execPromQL runs expr on d over [start, end] at step (an instant query when
// step is 0) with the resolution res, under ctx (which may carry
// query.WithReadStats), telling the read path the query's shape as the HTTP
// API does. The result is valid until done is called.
func execPromQL(ctx context.Context, t testing.TB, d *db.DB, expr string, start, end time.Time, step time.Duration, res query.Resolution) (r *promql.Result, done func()) {
	t.Helper()
	eng := query.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: parser.NewParser(parser.Options{})})
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatal(err)
	}
	ctx = query.WithResolution(query.WithPromQL(ctx, parsed, start, end, step), res)
	var q promql.Query
	if step == 0 {
		q, err = eng.NewInstantQuery(ctx, d, nil, expr, start)
	} else {
		q, err = eng.NewRangeQuery(ctx, d, nil, expr, start, end, step)
	}
	if err != nil {
		t.Fatal(err)
	}
	r = q.Exec(ctx)
	if r.Err != nil {
		q.Close()
		t.Fatalf("%s: %v", expr, r.Err)
	}
	return r, q.Close
}

// runPromQL evaluates expr on d over [start, end] at step (0: instant at
// start), with the resolution res, telling the read path the query's shape as
// the HTTP API does.
func runPromQL(t testing.TB, d *db.DB, expr string, start, end time.Time, step time.Duration, res query.Resolution) (promql.Matrix, []string) {
	t.Helper()
	r, done := execPromQL(context.Background(), t, d, expr, start, end, step, res)
	defer done()
	_, infos := r.Warnings.AsStrings(expr, 0, 0)
	return matrixOf(r.Value), infos
}

// matrixOf copies a result's value as a matrix (the engine reuses the
// result's memory after Close).
func matrixOf(val parser.Value) promql.Matrix {
	var m promql.Matrix
	switch v := val.(type) {
	case promql.Matrix:
		for _, s := range v {
			m = append(m, promql.Series{Metric: s.Metric.Copy(), Floats: append([]promql.FPoint(nil), s.Floats...)})
		}
	case promql.Vector:
		for _, s := range v {
			m = append(m, promql.Series{Metric: s.Metric.Copy(), Floats: []promql.FPoint{{T: s.T, F: s.F}}})
		}
	case promql.Scalar:
		m = promql.Matrix{{Floats: []promql.FPoint{{T: v.T, F: v.V}}}}
	}
	return m
}

// sameMatrix reports the first difference between two answers, bit for bit
// (NaN equals NaN).
func sameMatrix(want, got promql.Matrix) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d series, want %d", len(got), len(want))
	}
	for i := range want {
		if !labels.Equal(want[i].Metric, got[i].Metric) {
			return fmt.Errorf("series %d is %s, want %s", i, got[i].Metric, want[i].Metric)
		}
		w, g := want[i].Floats, got[i].Floats
		if len(w) != len(g) {
			return fmt.Errorf("%s: %d points, want %d", want[i].Metric, len(g), len(w))
		}
		for j := range w {
			same := math.Float64bits(w[j].F) == math.Float64bits(g[j].F) || (math.IsNaN(w[j].F) && math.IsNaN(g[j].F))
			if w[j].T != g[j].T || !same {
				return fmt.Errorf("%s: point %d is %v@%d, want %v@%d", want[i].Metric, j, g[j].F, g[j].T, w[j].F, w[j].T)
			}
		}
	}
	return nil
}

func servedFromRollup(infos []string) bool {
	for _, s := range infos {
		if strings.Contains(s, "rollup") {
			return true
		}
	}
	return false
}

// TestRollupsAnswerAsRaw runs every rollupQueries expression at aligned and
// unaligned steps, range and instant, from rollups (auto) and from raw data:
// the answers must be the same to the bit, and the aligned ones must have been
// served from a rollup (the info annotation says so).
func TestRollupsAnswerAsRaw(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		for name, compactWith := range map[string][]schema.Rollup{"raw-cells": notCompacted, "compacted": compactedAll} {
			t.Run(name, func(t *testing.T) {
				steps := []stepOver{{time.Hour, 0}, {5 * time.Minute, 0}, {15 * time.Second, 0}, {7 * time.Minute, 0}, {0, 0}}
				if raceEnabled {
					// -race is ~10x slower: the 5m step over the last 4
					// hours only (the 15s step over the last hour), so that
					// 5m windows are compared with raw data in make test
					// too.
					steps = []stepOver{{time.Hour, 0}, {5 * time.Minute, 4 * time.Hour}, {15 * time.Second, time.Hour}, {7 * time.Minute, 0}, {0, 0}}
				}
				testRollupsAnswerAsRaw(t, rollupDB(t, b, 1, compactWith), steps, compactWith != nil)
			})
		}
		// The 1h rollup is what this store lacks for old buckets: 1h steps.
		t.Run("compacted-before-1h-was-added", func(t *testing.T) {
			testRollupsAnswerAsRaw(t, rollupDB(t, b, 1, compactedFiveMin), []stepOver{{time.Hour, 0}}, false)
		})
	})
}

// stepOver is a query step and the span the queries at that step cover,
// ending with the data (0: from rollupDay0+3h).
type stepOver struct {
	step, span time.Duration
}

// testRollupsAnswerAsRaw runs every rollupQueries expression at the steps
// from rollups (auto) and from raw data: the same answers to the bit, served
// from a rollup exactly where one can serve them. With compacted, a query
// served from a rollup must have read rollup cells (query.ReadStats): the
// plan chosen is not enough, the cells must be there.
func testRollupsAnswerAsRaw(t *testing.T, d *db.DB, steps []stepOver, compacted bool) {
	end := rollupDay0.Add(rollupWindow)
	for _, so := range steps {
		step := so.step
		start := rollupDay0.Add(3 * time.Hour)
		if so.span > 0 {
			start = end.Add(-so.span)
		}
		for _, tc := range rollupQueries {
			qStart := start
			if step == 7*time.Minute {
				qStart = start.Add(time.Minute) // unaligned start too
			}
			qEnd := end
			if step == 0 {
				qEnd = qStart
			}
			want, rawInfos := runPromQL(t, d, tc.expr, qStart, qEnd, step, query.ResolutionRaw)
			ctx, read := query.WithReadStats(context.Background())
			r, done := execPromQL(ctx, t, d, tc.expr, qStart, qEnd, step, query.ResolutionAuto)
			got := matrixOf(r.Value)
			_, infos := r.Warnings.AsStrings(tc.expr, 0, 0)
			done()
			if err := sameMatrix(want, got); err != nil {
				t.Errorf("%s at step %s: %v (infos %q)", tc.expr, step, err, infos)
			}
			if servedFromRollup(rawInfos) {
				t.Errorf("%s at step %s: resolution=raw says %q", tc.expr, step, rawInfos)
			}
			wantRollup := tc.rollup && (step == time.Hour || step == 5*time.Minute)
			if step == 0 {
				wantRollup = tc.instant
			}
			if wantRollup != servedFromRollup(infos) {
				t.Errorf("%s at step %s: served from a rollup = %v, want %v (infos %q)", tc.expr, step, servedFromRollup(infos), wantRollup, infos)
			}
			if compacted && wantRollup && read.RollupCells() == 0 {
				t.Errorf("%s at step %s: served from a rollup, but no rollup cell was read (%d raw, %d chunk cells)", tc.expr, step, read.RawCells(), read.ChunkCells())
			}
			if !wantRollup && read.RollupCells() != 0 {
				t.Errorf("%s at step %s: read from raw data, but %d rollup cells were read", tc.expr, step, read.RollupCells())
			}
			if len(want) == 0 {
				t.Errorf("%s at step %s: no data", tc.expr, step)
			}
		}
	}
}

// TestRollupSumExact: sum_over_time served from rollups (the info says "the
// same answer") is raw data's to the bit, on both backends: the rollup_test
// series at aligned steps, whatever their values.
func TestRollupSumExact(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d := rollupDB(t, b, 2, compactedAll)
		start, end := rollupDay0.Add(3*time.Hour), rollupDay0.Add(rollupWindow)
		for _, step := range []time.Duration{time.Hour, 5 * time.Minute} {
			for _, expr := range []string{"sum_over_time(x[1h])", "sum_over_time(x[3h])", `sum_over_time(x{kind!="gauge"}[1h])`} {
				want, _ := runPromQL(t, d, expr, start, end, step, query.ResolutionRaw)
				got, infos := runPromQL(t, d, expr, start, end, step, query.ResolutionAuto)
				if !servedFromRollup(infos) {
					t.Errorf("%s at step %s: not served from a rollup (infos %q)", expr, step, infos)
				}
				if err := sameMatrix(want, got); err != nil {
					t.Errorf("%s at step %s: %v", expr, step, err)
				}
			}
		}
	})
}

// TestRollupSumsOnlyWhenExact: window sums are added instead of samples
// only for series whose samples are integers summing exactly
// (cellenc.SumsExact); a series of 1e9, 0.1 and, an hour later, -1e9
// (0.10000002384185791 from window sums) or of 1e308s that cancel (+Inf) is
// read from raw data, and the answer is raw data's to the bit. The read
// counts say which tables answered.
func TestRollupSumsOnlyWhenExact(t *testing.T) {
	at := func(d time.Duration) int64 { return rollupDay0.Add(d).UnixMilli() }
	series := map[string][]cellenc.Sample{
		"integers": nil,
		"tenth":    {{T: at(10 * time.Minute), V: 1e9}, {T: at(20 * time.Minute), V: 0.1}, {T: at(70 * time.Minute), V: -1e9}},
		"huge":     {{T: at(10 * time.Minute), V: -1e308}, {T: at(70 * time.Minute), V: 1e308}, {T: at(80 * time.Minute), V: 1e308}, {T: at(90 * time.Minute), V: -1e308}},
	}
	for i := range 6 * 60 {
		series["integers"] = append(series["integers"], cellenc.Sample{T: at(time.Duration(i+1) * time.Minute), V: float64(i % 17)})
	}
	clock, d := expiringDB(t, func(d *db.DB) {
		var req write.Request
		for name, samples := range series {
			req.Series = append(req.Series, write.Series{Labels: labels.FromStrings("__name__", "s", "name", name), Samples: samples})
		}
		if _, err := d.Write(context.Background(), &req); err != nil {
			t.Fatal(err)
		}
	})
	start, end := rollupDay0.Add(2*time.Hour), rollupDay0.Add(6*time.Hour)
	for name, want := range map[string]float64{"integers": 0, "tenth": 0.1, "huge": 0} {
		expr := fmt.Sprintf(`sum_over_time(s{name=%q}[2h])`, name)
		raw, _ := runPromQL(t, d, expr, start, end, time.Hour, query.ResolutionRaw)
		ctx, read := query.WithReadStats(context.Background())
		r, done := execPromQL(ctx, t, d, expr, start, end, time.Hour, query.ResolutionAuto)
		_, infos := r.Warnings.AsStrings(expr, 0, 0)
		got := r.Value.(promql.Matrix)
		if err := sameMatrix(raw, got); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
		if want := "PromQL info: served from the 1h rollup (the same answer as from raw data)"; len(infos) != 1 || infos[0] != want {
			t.Errorf("%s: infos %q, want %q", expr, infos, want)
		}
		if name == "integers" {
			if read.RollupCells() == 0 || read.RawCells()+read.ChunkCells() != 0 {
				t.Errorf("%s read %d rollup, %d raw and %d chunk cells; want rollup cells only", expr, read.RollupCells(), read.RawCells(), read.ChunkCells())
			}
		} else {
			if read.ChunkCells() == 0 {
				t.Errorf("%s read %d rollup, %d raw and %d chunk cells; want raw data's chunks", expr, read.RollupCells(), read.RawCells(), read.ChunkCells())
			}
			// At 2h the range holds every sample: raw data's sum.
			if len(got) != 1 || got[0].Floats[0].F != want {
				t.Errorf("%s at 2h = %v, want %v", expr, got, want)
			}
		}
		done()
	}

	// Once raw data before 3h has expired, only the windows hold the first
	// hours: integers still give raw data's answer, other sums say that theirs
	// may differ.
	before, _ := runPromQL(t, d, `sum_over_time(s{name="integers"}[2h])`, start, end, time.Hour, query.ResolutionRaw)
	clock.Store(rollupDay0.Add(72*time.Hour + 3*time.Hour).UnixMilli())
	got, infos := runPromQL(t, d, `sum_over_time(s{name="integers"}[2h])`, start, end, time.Hour, query.ResolutionAuto)
	if err := sameMatrix(before, got); err != nil {
		t.Errorf("integers after raw expiry: %v", err)
	}
	if want := "PromQL info: served from the 1h rollup (the same answer as from raw data)"; len(infos) != 1 || infos[0] != want {
		t.Errorf("integers after raw expiry: infos %q, want %q", infos, want)
	}
	got, infos = runPromQL(t, d, `sum_over_time(s{name="tenth"}[2h])`, start, end, time.Hour, query.ResolutionAuto)
	if want := "PromQL info: served from the 1h rollup where raw samples have expired, for series whose sums are not exact in floats " +
		"(window sums round differently from sample sums): the answer may differ from raw data's"; len(infos) != 1 || infos[0] != want {
		t.Errorf("tenth after raw expiry: infos %q, want %q", infos, want)
	}
	if len(got) != 1 || got[0].Floats[0].F != 0.10000002384185791 {
		t.Errorf("tenth after raw expiry at 2h = %v, want the windows' 0.10000002384185791", got)
	}
}

// TestRollupResolutionRemovedAndAddedBack: a bucket compacted again (late
// samples) by a compactor whose list lacks a resolution the store has must
// not leave that resolution's cell of fewer samples behind: it is made void, and a process with the resolution back in its list
// summarises the bucket from its data row (max 1000, not the stale 1). The
// same holds for two processes compacting one store with different lists.
func TestRollupResolutionRemovedAndAddedBack(t *testing.T) {
	now := func() time.Time { return rollupDay0.Add(9 * time.Hour) }
	st, settings, tables, d := clockedDB(t, now, schema.DefaultTableOptions().RawRetention)
	m := labels.FromStrings("__name__", "m", "instance", "h")
	write1 := func(samples ...cellenc.Sample) {
		t.Helper()
		if _, err := d.Write(context.Background(), &write.Request{Series: []write.Series{{Labels: m, Samples: samples}}}); err != nil {
			t.Fatal(err)
		}
	}
	compact := func(rollups []schema.Rollup) {
		t.Helper()
		c, err := compact.NewCompactor(st, settings, compact.Options{Rollups: rollups, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if stats, err := c.Compact(context.Background()); err != nil || stats.Rows == 0 {
			t.Fatalf("compact with %s: %+v, %v", schema.FormatRollups(rollups), stats, err)
		}
	}
	var samples []cellenc.Sample
	for at := rollupDay0.Add(time.Minute); !at.After(rollupDay0.Add(3 * time.Hour)); at = at.Add(time.Minute) {
		samples = append(samples, cellenc.Sample{T: at.UnixMilli(), V: 1})
	}
	write1(samples...)
	compact(tables.Rollups)
	// The 1h resolution removed: a late 1000 in the first hour, compacted
	// without it.
	write1(cellenc.Sample{T: rollupDay0.Add(30 * time.Minute).UnixMilli(), V: 1000})
	compact([]schema.Rollup{{Resolution: 5 * time.Minute, Retention: 90 * 24 * time.Hour}})

	// Back with the default list.
	const expr = "max_over_time(m[1h])"
	start, end := rollupDay0.Add(time.Hour), rollupDay0.Add(3*time.Hour)
	raw, _ := runPromQL(t, d, expr, start, end, time.Hour, query.ResolutionRaw)
	got, infos := runPromQL(t, d, expr, start, end, time.Hour, query.ResolutionAuto)
	if err := sameMatrix(raw, got); err != nil {
		t.Errorf("%s: %v (infos %q)", expr, err, infos)
	}
	if len(got) != 1 || got[0].Floats[0].F != 1000 {
		t.Errorf("%s at 1h = %v, want 1000", expr, got)
	}
	if want := "PromQL info: served from the 1h rollup (the same answer as from raw data)"; len(infos) != 1 || infos[0] != want {
		t.Errorf("infos %q, want %q", infos, want)
	}
}

// TestThanosCases are the ways Thanos' downsampling got answers wrong, each
// run from rollups (auto) and from raw data on compacted data: the answers must
// be the same, served from a rollup where one can give it and from raw data
// where none can.
func TestThanosCases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d := rollupDB(t, b, 3, compactedAll)
		for _, tc := range []struct {
			name, expr string
			start, end time.Time
			step       time.Duration
			fromRollup bool
		}{
			// Thanos: sum(x) on auto-downsampled data was inflated by the
			// number of raw samples per window.
			{"sum-at-1h-step-not-inflated", "sum(x)", rollupDay0.Add(2 * time.Hour), rollupDay0.Add(rollupWindow), time.Hour, true},
			// Thanos: rate(x[5m]) over 5m-resolution data returned nothing.
			// Here the store computes it from the 5m windows, with raw
			// data's answer.
			{"rate-5m-at-5m-step-not-empty", "rate(x[5m])", rollupDay0.Add(2 * time.Hour), rollupDay0.Add(rollupWindow), 5 * time.Minute, true},
			// Thanos: instant queries on downsampled data failed.
			{"instant-query-on-rollup", "max_over_time(x[1d])", rollupDay0.Add(28 * time.Hour), rollupDay0.Add(28 * time.Hour), 0, true},
			// Thanos: stddev_over_time and others read count and sum and
			// returned the average. Here they read raw data.
			{"stddev-reads-raw", "stddev_over_time(x[1h])", rollupDay0.Add(2 * time.Hour), rollupDay0.Add(rollupWindow), time.Hour, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				want, _ := runPromQL(t, d, tc.expr, tc.start, tc.end, tc.step, query.ResolutionRaw)
				got, infos := runPromQL(t, d, tc.expr, tc.start, tc.end, tc.step, query.ResolutionAuto)
				if err := sameMatrix(want, got); err != nil {
					t.Errorf("%s: %v", tc.expr, err)
				}
				if len(want) == 0 {
					t.Errorf("%s: no data", tc.expr)
				}
				if servedFromRollup(infos) != tc.fromRollup {
					t.Errorf("%s: served from a rollup = %v, want %v (infos %q)", tc.expr, servedFromRollup(infos), tc.fromRollup, infos)
				}
			})
		}
	})
}

// expiringDB opens a db.DB on an embedded store whose clock (56h after
// rollupDay0 until the caller moves it) drives the TTLs, with a raw retention
// of 3 days and the default rollups, writes into it with write, and compacts
// every bucket (rollups included).
// clockedDB returns an embedded store whose clock (and TTLs) is now, with the
// default schema but for the raw retention, and a DB on it.
func clockedDB(t *testing.T, now func() time.Time, rawRetention time.Duration) (kv.Store, schema.Settings, schema.TableOptions, *db.DB) {
	t.Helper()
	st, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1, Clock: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	settings := schema.DefaultEmbeddedSettings()
	tables := schema.DefaultTableOptions()
	tables.Salts = settings.Salts
	tables.RawRetention = rawRetention
	schematest.CreateWith(t, st, settings, tables)
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: settings, Now: now,
		Rollups: tables.Rollups, RawRetention: tables.RawRetention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return st, settings, tables, d
}

func expiringDB(t *testing.T, write func(*db.DB)) (*atomic.Int64, *db.DB) {
	t.Helper()
	var clock atomic.Int64
	clock.Store(rollupDay0.Add(56 * time.Hour).UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	st, settings, tables, d := clockedDB(t, now, 72*time.Hour)
	write(d)
	c, err := compact.NewCompactor(st, settings, compact.Options{Rollups: tables.Rollups, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &clock, d
}

// TestRetentionServedFromRollups: once raw data has expired (the store's TTL,
// on an embedded store with a fake clock), raw reads lose it, and queries over
// that range are served from the rollups: at aligned steps with the very answer
// raw data gave before it expired, elsewhere from the finest rollup, with an
// info saying that raw samples expired.
func TestRetentionServedFromRollups(t *testing.T) {
	clock, d := expiringDB(t, func(d *db.DB) { writeRollupSeries(t, d, 4) })

	start, end := rollupDay0.Add(2*time.Hour), rollupDay0.Add(rollupWindow)
	const aligned = "max_over_time(x[1h])"
	before, _ := runPromQL(t, d, aligned, start, end, time.Hour, query.ResolutionRaw)

	// 100h after the data's start, raw samples before 28h have expired.
	clock.Store(rollupDay0.Add(100 * time.Hour).UnixMilli())
	expired := rollupDay0.Add(28 * time.Hour).UnixMilli()
	raw, _ := runPromQL(t, d, aligned, start, end, time.Hour, query.ResolutionRaw)
	for _, s := range raw {
		if s.Floats[0].T < expired {
			t.Fatalf("raw data of %s still read at %d after it expired", s.Metric, s.Floats[0].T)
		}
	}
	after, infos := runPromQL(t, d, aligned, start, end, time.Hour, query.ResolutionAuto)
	if err := sameMatrix(before, after); err != nil {
		t.Errorf("%s after raw expiry: %v", aligned, err)
	}
	if !servedFromRollup(infos) {
		t.Errorf("%s: infos %q, want served from a rollup", aligned, infos)
	}

	// An unaligned query: the expired part from the 5m rollup, said so.
	got, infos := runPromQL(t, d, "x", start, end, 7*time.Minute, query.ResolutionAuto)
	want := "PromQL info: raw samples before 2026-11-27T04:00:00Z have expired (raw retention 3d); the range up to 2026-11-27T04:00:00Z is served from the 5m rollup" +
		", whose windows end at other times than the query's evaluation times: the answer over it may differ from raw data's"
	if len(infos) != 1 || infos[0] != want {
		t.Errorf("infos %q, want %q", infos, want)
	}
	if len(got) == 0 || got[0].Floats[0].T > start.Add(time.Hour).UnixMilli() {
		t.Errorf("the expired part is not served: %v", got)
	}
}

// TestRetentionBoundaryCountsEachSampleOnce: a range that crosses the raw
// retention's expiry point is served from the rollup up to the end of the
// window holding that point, and from raw data after it: the samples of that
// window that raw data still holds are not counted again. A range function
// no rollup answers says that its answer over the expired part differs from
// raw data's.
func TestRetentionBoundaryCountsEachSampleOnce(t *testing.T) {
	m := labels.FromStrings("__name__", "m", "instance", "h")
	clock, d := expiringDB(t, func(d *db.DB) {
		s := write.Series{Labels: m}
		for at := rollupDay0.Add(time.Minute); !at.After(rollupDay0.Add(10 * time.Hour)); at = at.Add(time.Minute) {
			s.Samples = append(s.Samples, cellenc.Sample{T: at.UnixMilli(), V: 1})
		}
		if _, err := d.Write(context.Background(), &write.Request{Series: []write.Series{s}}); err != nil {
			t.Fatal(err)
		}
	})
	// Raw samples up to 2h02m30s have expired: mid-window of (2h00m, 2h05m].
	clock.Store(rollupDay0.Add(72*time.Hour + 2*time.Hour + 150*time.Second).UnixMilli())
	at := rollupDay0.Add(2*time.Hour + 20*time.Minute)
	raw, _ := runPromQL(t, d, "sum_over_time(m[30m])", at, at, 0, query.ResolutionRaw)
	// Compacted, raw data is a chunk per hour that expires whole with its
	// newest sample: 2h00m..2h20m is still there.
	if len(raw) != 1 || raw[0].Floats[0].F != 21 {
		t.Fatalf("raw data answers %v, want 21 (the samples of 2h00m..2h20m)", raw)
	}
	got, infos := runPromQL(t, d, "sum_over_time(m[30m])", at, at, 0, query.ResolutionAuto)
	if len(got) != 1 || got[0].Floats[0].F != 30 {
		t.Errorf("sum_over_time(m[30m]) across the expiry point = %v, want 30 (each sample of 1h51m..2h20m once)", got)
	}
	want := "PromQL info: raw samples before 2026-11-26T02:02:30Z have expired (raw retention 3d); the range up to 2026-11-26T02:05:00Z is served from the 5m rollup"
	if len(infos) != 1 || infos[0] != want {
		t.Errorf("infos %q, want %q", infos, want)
	}
	_, infos = runPromQL(t, d, "count_over_time(m[30m])", at, at, 0, query.ResolutionAuto)
	want = "PromQL info: raw samples before 2026-11-26T02:02:30Z have expired (raw retention 3d); the range up to 2026-11-26T02:05:00Z is served from the 5m rollup" +
		", one sample per window, so count_over_time over it differs from raw data's"
	if len(infos) != 1 || infos[0] != want {
		t.Errorf("count_over_time infos %q, want %q", infos, want)
	}
}

// TestRetentionOnHBase: the same on a real HBase, whose TTL is real time: raw
// data kept 2 minutes, a 1m rollup kept forever, one-minute buckets. Samples
// written 90 s to 5 s ago are compacted (rollups written; the oldest sample has
// 30 s left), then the test waits for HBase to expire the oldest raw samples;
// an aligned query then answers from the rollup what the samples written give,
// and an unaligned one says that raw samples expired.
func TestRetentionOnHBase(t *testing.T) {
	b := schematest.Backends()[1]
	hbasetest.ZooKeeper(t) // skips, or fails under TSDB_TEST_REQUIRE_HBASE=1, without a test HBase
	t.Parallel()
	b.Settings.BucketWidth = time.Minute
	b.TableOptions.RawRetention = 2 * time.Minute
	b.TableOptions.Rollups = []schema.Rollup{{Resolution: time.Minute}}
	st := b.Store(t)
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: b.Settings,
		Rollups: b.TableOptions.Rollups, RawRetention: b.TableOptions.RawRetention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	now := time.Now()
	first := now.Add(-90 * time.Second).UnixMilli()
	s := write.Series{Labels: labels.FromStrings("__name__", "x", "instance", "h")}
	for ts := first; ts < now.Add(-5*time.Second).UnixMilli(); ts += 1000 {
		s.Samples = append(s.Samples, cellenc.Sample{T: ts, V: float64(ts % 7919)})
	}
	if _, err := d.Write(context.Background(), &write.Request{Series: []write.Series{s}}); err != nil {
		t.Fatal(err)
	}
	// Every sample is stored: a compactor whose clock has passed the grace of
	// the newest bucket may seal them all.
	width, grace := b.Settings.BucketWidth, schema.MinGrace(b.Settings.BucketWidth)
	c, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: b.TableOptions.Rollups, Grace: grace,
		Now: func() time.Time { return time.Now().Add(width + grace) }})
	if err != nil {
		t.Fatal(err)
	}
	if stats, err := c.Compact(context.Background()); err != nil || stats.RollupCells == 0 {
		t.Fatalf("compact: %+v, %v", stats, err)
	}
	// Whole minutes around the data, so that the range spans more than
	// RollupMinBuckets buckets.
	start := time.UnixMilli(first).Truncate(time.Minute)
	end := start.Add(3 * time.Minute)
	const aligned = "max_over_time(x[1m])"
	// What raw data answers, computed from the samples written.
	before := promql.Matrix{{Metric: labels.FromStrings("instance", "h")}}
	for at := start; !at.After(end); at = at.Add(time.Minute) {
		found, maxV := false, 0.0
		for _, x := range s.Samples {
			if x.T > at.UnixMilli()-60_000 && x.T <= at.UnixMilli() && (!found || x.V > maxV) {
				found, maxV = true, x.V
			}
		}
		if found {
			before[0].Floats = append(before[0].Floats, promql.FPoint{T: at.UnixMilli(), F: maxV})
		}
	}

	// HBase hides a cell once its timestamp is older than now - TTL: wait for
	// the first sample to go (about 30 s after it was written).
	for {
		got, err := d.Reader().Samples(context.Background(), s.Labels, first, first)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	after, infos := runPromQL(t, d, aligned, start, end, time.Minute, query.ResolutionAuto)
	if err := sameMatrix(before, after); err != nil {
		t.Errorf("%s after raw expiry: %v (infos %q)", aligned, err, infos)
	}
	if !servedFromRollup(infos) {
		t.Errorf("%s after raw expiry: infos %q, want served from the rollup", aligned, infos)
	}
	got, infos := runPromQL(t, d, "x", start.Add(7*time.Second), end, 7*time.Second, query.ResolutionAuto)
	if len(infos) != 1 || !strings.Contains(infos[0], "have expired (raw retention 2m); the range up to ") || !strings.Contains(infos[0], "is served from the 1m rollup") {
		t.Errorf("unaligned query after raw expiry: infos %q", infos)
	}
	// The window holding the expired first sample is served whole from the
	// rollup, which knows its last sample: the first step at or after that
	// sample answers its value.
	var last cellenc.Sample
	for _, x := range s.Samples {
		if x.T <= cellenc.WindowEnd(first, time.Minute) {
			last = x
		}
	}
	step := start.Add(7 * time.Second).UnixMilli()
	for step < last.T {
		step += 7000
	}
	if len(got) != 1 || len(got[0].Floats) == 0 || got[0].Floats[0] != (promql.FPoint{T: step, F: last.V}) {
		t.Errorf("unaligned query after raw expiry: the expired part is not served: %v, want the first point %v @[%d]", got, last.V, step)
	}
}
