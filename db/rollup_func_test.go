package db_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// TestRangeFunctionsFromRollups: rate, increase, delta, irate, idelta,
// changes, resets and count_over_time at aligned steps over whole windows
// are computed by the store from a compacted store's rollup windows (query/rollupfunc.go): raw data's answer to the bit and raw data's
// annotations (the engine's "might not be a counter" info of rate over a
// gauge, at the same position), having read rollup cells only; over native
// histograms (but count_over_time) the query runs again as written, from raw
// data, and says nothing of rollups.
func TestRangeFunctionsFromRollups(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d := funcDB(t, b)
		start, end := rollupDay0.Add(3*time.Hour), rollupDay0.Add(24*time.Hour)
		served := "PromQL info: served from the 1h rollup (the same answer as from raw data)"
		served5m := "PromQL info: served from the 5m rollup (the same answer as from raw data)"
		cases := []struct {
			expr   string
			step   time.Duration
			rollup string // the info of the rollup that serves it, "" for raw data
		}{
			{"rate(c_total[1h])", time.Hour, served},
			{"increase(c_total[3h])", time.Hour, served},
			{"delta(g[1h])", time.Hour, served},
			{"irate(c_total[1h])", time.Hour, served},
			{"idelta(g[2h])", time.Hour, served},
			{"changes(g[1h])", time.Hour, served},
			{"resets(c_total[2h])", time.Hour, served},
			{"count_over_time(g[1h])", time.Hour, served},
			{"rate(g[1h])", time.Hour, served}, // with the engine's info that g might not be a counter
			{"increase(c_total[1d])", time.Hour, served},
			{"rate(c_total[5m])", 5 * time.Minute, served5m},
			{"changes(c_total[10m] offset 5m)", 5 * time.Minute, served5m},
			{"sum(rate(c_total[1h])) / sum(irate(g[1h]))", time.Hour, served},
			{"count_over_time(h[1h])", time.Hour, served},
			{"rate(h[1h])", time.Hour, ""},
			{"changes(h[1h])", time.Hour, ""},
			{"rate(c_total[1h])", 15 * time.Minute, served5m},
			{"rate(c_total[1h])", 7 * time.Minute, ""},
		}
		for _, tc := range cases {
			raw, rawDone := execPromQL(context.Background(), t, d, tc.expr, start, end, tc.step, query.ResolutionRaw)
			want := matrixOf(raw.Value)
			_, rawInfos := raw.Warnings.AsStrings(tc.expr, 0, 0)
			rawDone()
			ctx, read := query.WithReadStats(context.Background())
			r, done := execPromQL(ctx, t, d, tc.expr, start, end, tc.step, query.ResolutionAuto)
			got := matrixOf(r.Value)
			_, infos := r.Warnings.AsStrings(tc.expr, 0, 0)
			done()
			if len(want) == 0 {
				t.Errorf("%s at step %s: no data", tc.expr, tc.step)
			}
			if err := sameMatrix(want, got); err != nil {
				t.Errorf("%s at step %s: %v", tc.expr, tc.step, err)
			}
			wantInfos := slices.Clone(rawInfos)
			if tc.rollup != "" {
				wantInfos = append(wantInfos, tc.rollup)
			}
			slices.Sort(wantInfos)
			slices.Sort(infos)
			if !slices.Equal(infos, wantInfos) {
				t.Errorf("%s at step %s: infos %q, want %q", tc.expr, tc.step, infos, wantInfos)
			}
			switch {
			case tc.rollup != "" && (read.FuncSeries() == 0 || read.RollupCells() == 0 || read.RawCells()+read.ChunkCells() != 0):
				t.Errorf("%s at step %s: computed from %d series' windows, read %d rollup, %d raw and %d chunk cells; want rollup cells only",
					tc.expr, tc.step, read.FuncSeries(), read.RollupCells(), read.RawCells(), read.ChunkCells())
			case tc.rollup == "" && (read.FuncSeries() != 0 || read.RollupCells() != 0 || read.ChunkCells() == 0):
				t.Errorf("%s at step %s: computed from %d series' windows, read %d rollup, %d raw and %d chunk cells; want raw data only",
					tc.expr, tc.step, read.FuncSeries(), read.RollupCells(), read.RawCells(), read.ChunkCells())
			}
		}
	})
}

// funcDB is a compacted store of a day from rollupDay0 at 15 s of: a
// counter c_total with fractional increments, resets (one on a 5m window's
// first sample, one in the middle of a window, two in one window) and a gap;
// a gauge g with NaNs, repeated values and a gap ended by a stale marker; a
// native histogram counter h.
func funcDB(t *testing.T, b schematest.Backend) *db.DB {
	t.Helper()
	st := b.Store(t)
	now := func() time.Time { return rollupDay0.Add(30 * time.Hour) }
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: b.Settings, Now: now,
		Rollups: schema.DefaultRollups(), RawRetention: schema.DefaultRawRetention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	rng := rand.New(rand.NewPCG(21, 3))
	var c, g, h write.Series
	c.Labels = labels.FromStrings("__name__", "c_total", "job", "j")
	g.Labels = labels.FromStrings("__name__", "g", "job", "j")
	h.Labels = labels.FromStrings("__name__", "h", "job", "j")
	day0 := rollupDay0.UnixMilli()
	counter := 0.0
	for i := 1; i <= 24*60*4; i++ {
		ts := day0 + int64(i)*15_000
		switch {
		case i == 5*60*4+1, i == 7*60*4+10, i == 9*60*4+3, i == 9*60*4+7, rng.IntN(700) == 0:
			counter = rng.Float64() * 3 // a reset (5h+15s: the first sample of a window)
		case i > 12*60*4 && i < 12*60*4+100: // a gap of 25 minutes
		default:
			counter += rng.Float64() * 10
		}
		if !(i > 12*60*4 && i < 12*60*4+100) {
			c.Samples = append(c.Samples, cellenc.Sample{T: ts, V: counter})
		}
		switch {
		case i > 15*60*4 && i < 15*60*4+200: // a gap of 50 minutes, ended by a stale marker
			if i == 15*60*4+1 {
				g.Samples = append(g.Samples, cellenc.Sample{T: ts, V: math.Float64frombits(value.StaleNaN)})
			}
		case rng.IntN(150) == 0:
			g.Samples = append(g.Samples, cellenc.Sample{T: ts, V: math.NaN()})
		case rng.IntN(3) == 0 && len(g.Samples) > 0:
			g.Samples = append(g.Samples, cellenc.Sample{T: ts, V: g.Samples[len(g.Samples)-1].V}) // no change
		default:
			g.Samples = append(g.Samples, cellenc.Sample{T: ts, V: math.Round(rng.NormFloat64()*1000) / 7})
		}
		if i%4 == 0 {
			h.Histograms = append(h.Histograms, cellenc.HistogramSample{T: ts, H: tsdbutil.GenerateTestHistogram(int64(i / 4))})
		}
	}
	if _, err := d.Write(context.Background(), &write.Request{Series: []write.Series{c, g, h}}); err != nil {
		t.Fatal(err)
	}
	cp, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: schema.DefaultRollups(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRangeFunctionsWithStartTimestampsReadRaw: windows keep no start
// timestamps, so with the engine using them (--query.use-start-timestamps)
// rate is not computed from windows: raw data answers, and no info says
// otherwise.
func TestRangeFunctionsWithStartTimestampsReadRaw(t *testing.T) {
	b := schematest.Backends()[0]
	d := funcDB(t, b)
	expr := "rate(c_total[1h])"
	start, end := rollupDay0.Add(3*time.Hour), rollupDay0.Add(24*time.Hour)
	for _, useST := range []bool{false, true} {
		eng := query.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
			UseStartTimestamps: useST, Parser: parser.NewParser(parser.Options{})})
		parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, read := query.WithReadStats(query.WithPromQL(context.Background(), parsed, start, end, time.Hour))
		q, err := eng.NewRangeQuery(ctx, d, nil, expr, start, end, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := q.Exec(ctx)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		_, infos := r.Warnings.AsStrings(expr, 0, 0)
		q.Close()
		if got, want := servedFromRollup(infos), !useST; got != want || (read.FuncSeries() > 0) != want {
			t.Errorf("use start timestamps %v: served from a rollup = %v (infos %q), %d series computed from windows; want %v",
				useST, got, infos, read.FuncSeries(), want)
		}
	}
}
