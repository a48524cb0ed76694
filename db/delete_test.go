package db_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// The delete tests write three series of 15 s samples over six hours (two of
// metric x, one of y), compact part of it into chunks and rollups, delete a
// range of one series that crosses a compacted bucket, a wholly deleted
// compacted bucket and a raw one, and check that exactly those samples are
// gone, on both backends.

var (
	delDay0  = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	delNow   = delDay0.Add(7 * time.Hour) // the writers' clock
	delStart = delDay0.Add(2*time.Hour + 30*time.Minute)
	delEnd   = delDay0.Add(4*time.Hour + 30*time.Minute)
	delH0    = labels.FromStrings("__name__", "x", "instance", "h0", "job", "j")
	delH1    = labels.FromStrings("__name__", "x", "instance", "h1", "job", "j")
	delY     = labels.FromStrings("__name__", "y", "instance", "h0", "job", "j")
)

// delSamples are the samples of series i: every 15 s over six hours from
// delDay0, values distinct per series.
func delSamples(i int) []cellenc.Sample {
	var ss []cellenc.Sample
	for ts := delDay0.UnixMilli(); ts < delDay0.Add(6*time.Hour).UnixMilli(); ts += 15_000 {
		ss = append(ss, cellenc.Sample{T: ts, V: float64(i*1_000_000) + float64(ts-delDay0.UnixMilli())/1000})
	}
	return ss
}

// failingStore fails every Apply on the data table while failData is set: a
// delete that stops there, as a crash after the rollups and chunks were
// rewritten would.
type failingStore struct {
	kv.Store
	failData  atomic.Bool
	failIndex atomic.Bool // every Apply on the index table fails
}

func (f *failingStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	if table == schema.TableData && f.failData.Load() || table == schema.TableIndex && f.failIndex.Load() {
		return fmt.Errorf("injected: %w", kv.ErrUnavailable)
	}
	return f.Store.Apply(ctx, table, muts)
}

// delGenerationRefresh is the delete tests' index.PostingsOptions.GenerationRefresh:
// a delete that removes postings waits twice this (the failingStore is not
// kv.Exclusive, so on both backends).
const delGenerationRefresh = 50 * time.Millisecond

// openDeleteDB opens a DB over st as deleteDB does: one more process on the
// same store.
func openDeleteDB(t *testing.T, st kv.Store, settings schema.Settings) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: settings, Now: func() time.Time { return delNow },
		Rollups: schema.DefaultRollups(), RawRetention: schema.DefaultRawRetention,
		Postings: index.PostingsOptions{GenerationRefresh: delGenerationRefresh}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// deleteDB opens a DB over b with the three series written, exemplars at
// 1h and 2h45m of delH0, and the buckets ending by compactUntil compacted (none
// when zero).
func deleteDB(t *testing.T, b schematest.Backend, compactUntil time.Duration) (*db.DB, *failingStore) {
	t.Helper()
	st := &failingStore{Store: b.Store(t)}
	d := openDeleteDB(t, st, b.Settings)
	req := write.Request{Series: []write.Series{
		{Labels: delH0, Samples: delSamples(0), Exemplars: []exemplar.Exemplar{
			{Labels: labels.FromStrings("trace_id", "in"), Value: 1, Ts: delDay0.Add(2*time.Hour + 45*time.Minute).UnixMilli(), HasTs: true},
			{Labels: labels.FromStrings("trace_id", "out"), Value: 2, Ts: delDay0.Add(time.Hour).UnixMilli(), HasTs: true},
		}},
		{Labels: delH1, Samples: delSamples(1)},
		{Labels: delY, Samples: delSamples(2)},
	}}
	if _, err := d.Write(context.Background(), &req); err != nil {
		t.Fatal(err)
	}
	if compactUntil > 0 {
		c, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: schema.DefaultRollups(),
			Now: func() time.Time { return delDay0.Add(compactUntil + compact.DefaultGrace) }})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := c.Compact(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := 3 * int(compactUntil/time.Hour); stats.Rows != want {
			t.Fatalf("compacted %d rows, want %d", stats.Rows, want)
		}
	}
	return d, st
}

func deleteOpts(owner string) compact.DeleteOptions {
	return compact.DeleteOptions{Owner: owner, LeaseTTL: 10 * time.Second}
}

func deleteH0(t *testing.T, d *db.DB, opts compact.DeleteOptions) (compact.DeleteStats, error) {
	t.Helper()
	return d.Delete(context.Background(), db.DeleteRequest{
		MatcherSets: [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"),
			labels.MustNewMatcher(labels.MatchEqual, "instance", "h0")}},
		Mint: delStart.UnixMilli(), Maxt: delEnd.UnixMilli()}, opts)
}

// checkDeleted checks that exactly delH0's samples in [delStart, delEnd] are
// gone, that the neighbours kept all of theirs, and that rollups answer as
// raw data.
func checkDeleted(t *testing.T, d *db.DB) {
	t.Helper()
	want := slices.DeleteFunc(delSamples(0), func(s cellenc.Sample) bool {
		return s.T >= delStart.UnixMilli() && s.T <= delEnd.UnixMilli()
	})
	if got := samples(t, d, delH0); !slices.Equal(got, want) {
		t.Errorf("h0: %d samples, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	for i, ls := range []labels.Labels{delH1, delY} {
		if got, want := samples(t, d, ls), delSamples(i+1); !slices.Equal(got, want) {
			t.Errorf("%s: %d samples, want %d", ls, len(got), len(want))
		}
	}
	// count_over_time over the hours: (2h, 3h] keeps 2h00m15s..2h29m45s,
	// (3h, 4h] nothing, (4h, 5h] 4h30m15s..5h.
	counts, _ := runPromQL(t, d, `count_over_time(x{instance="h0"}[1h])`, delDay0.Add(3*time.Hour), delDay0.Add(5*time.Hour), time.Hour, query.ResolutionAuto)
	if len(counts) != 1 || len(counts[0].Floats) != 2 || counts[0].Floats[0].F != 119 || counts[0].Floats[1].F != 120 {
		t.Errorf("count_over_time(x{instance=\"h0\"}[1h]) at 3h, 4h, 5h: %v, want 119 at 3h, none at 4h, 120 at 5h", counts)
	}
	for _, expr := range []string{"x", "max_over_time(x[1h])", "min_over_time(x[1h])", "count_over_time(x[1h])",
		"rate(x[5m])", "increase(x[1h])", "last_over_time(x[1h])", "sum by (instance) (rate(x[1h]))"} {
		for _, step := range []time.Duration{time.Hour, 5 * time.Minute} {
			start, end := delDay0.Add(time.Hour), delDay0.Add(6*time.Hour)
			raw, _ := runPromQL(t, d, expr, start, end, step, query.ResolutionRaw)
			ctx, read := query.WithReadStats(context.Background())
			r, done := execPromQL(ctx, t, d, expr, start, end, step, query.ResolutionAuto)
			got := matrixOf(r.Value)
			_, infos := r.Warnings.AsStrings(expr, 0, 0)
			done()
			if err := sameMatrix(raw, got); err != nil {
				t.Errorf("%s at step %s: rollups differ from raw data: %v", expr, step, err)
			}
			if !servedFromRollup(infos) || read.RollupCells() == 0 {
				t.Errorf("%s at step %s: not served from rollups (infos %q, %d rollup cells read): the comparison proves nothing",
					expr, step, infos, read.RollupCells())
			}
		}
	}
	eq, err := d.Reader().ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(delDay0.UnixMilli(), delDay0.Add(6*time.Hour).UnixMilli(), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "x")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Exemplars) != 1 || res[0].Exemplars[0].Labels.Get("trace_id") != "out" {
		t.Errorf("exemplars after the delete: %v, want only trace_id=out", res)
	}
}

func firstDiff(a, b []cellenc.Sample) int64 {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i].T
		}
	}
	return -1
}

func TestDeleteRemovesExactlyTheRange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d, st := deleteDB(t, b, 4*time.Hour) // buckets 0-3 compacted, 4-5 raw
		dry := deleteOpts("dry")
		dry.DryRun = true
		// 2h30m..4h30m at 15 s: 481 samples, in buckets 2 (chunk), 3 (chunk,
		// all of it) and 4 (121 raw cells); the chunks of 2 and 3 rewritten,
		// their 5m and 1h rollup cells too.
		want := compact.DeleteStats{Series: 1, Rows: 3, Samples: 481, RawCells: 121, Chunks: 2,
			RollupCells: 4, Exemplars: 1}
		got, err := deleteH0(t, d, dry)
		if err != nil || got != want {
			t.Fatalf("dry run: %+v, %v; want %+v", got, err, want)
		}
		if n := len(samples(t, d, delH0)); n != 1440 {
			t.Fatalf("a dry run removed samples: %d left of 1440", n)
		}
		got, err = deleteH0(t, d, deleteOpts("deleter"))
		if err != nil || got != want {
			t.Fatalf("delete: %+v, %v; want %+v", got, err, want)
		}
		checkDeleted(t, d)
		// Again: nothing left to remove.
		got, err = deleteH0(t, d, deleteOpts("deleter"))
		if want := (compact.DeleteStats{}); err != nil || got != want {
			t.Fatalf("second delete: %+v, %v; want %+v", got, err, want)
		}
		// Compaction of the rest leaves it so.
		c, err := compact.NewCompactor(st, b.Settings, compact.Options{Rollups: schema.DefaultRollups(),
			Now: func() time.Time { return delNow.Add(compact.DefaultGrace) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkDeleted(t, d)
		// A sample written into the emptied bucket 3 afterwards is kept, and
		// compaction folds it into the bucket's empty chunk cell.
		late := cellenc.Sample{T: delDay0.Add(3*time.Hour + 20*time.Minute + 7*time.Second).UnixMilli(), V: -7}
		if _, err := d.Write(context.Background(), &write.Request{Series: []write.Series{{Labels: delH0, Samples: []cellenc.Sample{late}}}}); err != nil {
			t.Fatal(err)
		}
		if stats, err := c.Compact(context.Background()); err != nil || stats.Rows != 1 || stats.Conflicts != 0 {
			t.Fatalf("compaction of the late sample: %+v, %v; want 1 row", stats, err)
		}
		after := samples(t, d, delH0)
		if i := slices.IndexFunc(after, func(s cellenc.Sample) bool { return s.T == late.T }); i < 0 || after[i] != late || len(after) != 1440-481+1 {
			t.Errorf("after a late sample into the emptied bucket: %d samples (want %d), the late one at %d", len(after), 1440-481+1, i)
		}
		counts, _ := runPromQL(t, d, `count_over_time(x{instance="h0"}[1h])`, delDay0.Add(4*time.Hour), delDay0.Add(4*time.Hour), time.Hour, query.ResolutionAuto)
		if len(counts) != 1 || len(counts[0].Floats) != 1 || counts[0].Floats[0].F != 1 {
			t.Errorf("count_over_time over the emptied bucket with its late sample: %v, want 1", counts)
		}
	})
}

func TestDeleteInterruptedIsFinishedByRunningItAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d, st := deleteDB(t, b, 4*time.Hour)
		st.failData.Store(true)
		_, err := deleteH0(t, d, deleteOpts("deleter"))
		if !errors.Is(err, kv.ErrUnavailable) {
			t.Fatalf("delete with the data table failing: %v, want kv.ErrUnavailable", err)
		}
		st.failData.Store(false)
		got, err := deleteH0(t, d, deleteOpts("deleter"))
		// The rollups and chunks were rewritten by the first run: what is
		// left is bucket 4's raw cells.
		want := compact.DeleteStats{Series: 1, Rows: 1, Samples: 121, RawCells: 121, Exemplars: 1}
		if err != nil || got != want {
			t.Fatalf("delete run again: %+v, %v; want %+v", got, err, want)
		}
		checkDeleted(t, d)
	})
}

func TestDeleteWhileCompacting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d, st := deleteDB(t, b, 0) // all raw; the worker compacts while the delete runs
		w, err := compact.NewWorker(st, b.Settings, compact.WorkerOptions{Owner: "worker", LeaseTTL: 10 * time.Second,
			Compact: compact.Options{Rollups: schema.DefaultRollups(), BatchRows: 2,
				Now: func() time.Time { return delNow.Add(compact.DefaultGrace) }}})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg     sync.WaitGroup
			stop   atomic.Bool
			rounds atomic.Int64
		)
		wg.Go(func() {
			for !stop.Load() {
				if _, err := w.RunOnce(context.Background()); err != nil {
					t.Errorf("compaction round: %v", err)
					return
				}
				rounds.Add(1)
			}
		})
		got, err := deleteH0(t, d, deleteOpts("deleter"))
		stop.Store(true)
		wg.Wait()
		if err != nil || got.Samples != 481 || got.Series != 1 || got.Rows != 3 {
			t.Fatalf("delete: %+v, %v; want 481 samples of 3 rows of 1 series", got, err)
		}
		if _, err := w.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkDeleted(t, d)
	})
}

// A delete over all time finds the series' rows by scanning (the range spans
// more buckets than are named one by one) and empties them.
func TestDeleteWholeSeries(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d, _ := deleteDB(t, b, 4*time.Hour)
		got, err := d.Delete(context.Background(), db.DeleteRequest{
			MatcherSets: [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "__name__", "y")}},
			Mint:        0, Maxt: kv.MaxTimestamp}, deleteOpts("deleter"))
		// Six buckets of 240 samples: four compacted (their chunks emptied,
		// their 5m and 1h rollup cells voided), two raw.
		// And y's one day in the tag index.
		want := compact.DeleteStats{Series: 1, Rows: 6, Samples: 1440, RawCells: 480, Chunks: 4, RollupCells: 8, Unindexed: 1}
		if err != nil || got != want {
			t.Fatalf("delete: %+v, %v; want %+v", got, err, want)
		}
		if n := len(samples(t, d, delY)); n != 0 {
			t.Errorf("y: %d samples left", n)
		}
		for i, ls := range []labels.Labels{delH0, delH1} {
			if got, want := samples(t, d, ls), delSamples(i); !slices.Equal(got, want) {
				t.Errorf("%s: %d samples, want %d", ls, len(got), len(want))
			}
		}
		for _, expr := range []string{"y", "max_over_time(y[1h])", "count_over_time(y[1h])", "rate(y[5m])"} {
			if m, _ := runPromQL(t, d, expr, delDay0, delDay0.Add(6*time.Hour), time.Hour, query.ResolutionAuto); len(m) != 0 {
				t.Errorf("%s after deleting y: %v, want nothing", expr, m)
			}
		}
	})
}
