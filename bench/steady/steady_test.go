package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// envSteadyBin names a tsdb binary for TestSteadyStateCostsStayFlatAsTheStoreAges
// to run instead of building ./cmd/tsdb of the working tree (e.g. one built
// from an older commit, to see the test fail on it).
const envSteadyBin = "TSDB_TEST_STEADY_BIN"

// costGrowthFactor bounds how much more a unit of work may cost the store in
// the last part of the short steady run than in the first: compacting a row
// (the cells and keys the compaction's reads return and step over, per row
// compacted, the rounds that compact nothing included) and answering a query
// (per sample in the query's reach). Flat work is 1.0 give or take a few
// percent (the rounds per cycle vary by one or two); work that grows with what
// the store holds — a round that scans every raw cell or tombstone ever
// written — is ≥ 2 by the fourth bucket (fresh cells of ~1.25 buckets plus
// the tombstones of every bucket compacted before: 1.75 buckets' worth in the
// first cycle, 4.75 in the fourth).
const costGrowthFactor = 1.5

// shortRunConfig is the short steady run of make test: 200 series at 1 s
// (60 samples per row), one-minute buckets compacted 10 s after their end,
// rounds every 5 s, the three queries every 2 s, a snapshot every second, no
// profiles and no VictoriaMetrics. It runs until 4 buckets after the first
// have been compacted: about five minutes, however busy the machine (it waits
// on compaction's progress, and fails only when there was none for 10
// minutes).
func shortRunConfig() runConfig {
	c := defaultRunConfig()
	c.load = rwload.Load{Hosts: 10, SeriesPerHost: 20, Samples: 2, Interval: time.Second, Senders: 2, RequestSize: 2000}
	c.duration, c.untilBuckets, c.stall = 0, 4, 10*time.Minute
	c.grace, c.compactEvery = 10*time.Second, 5*time.Second
	c.queryRange, c.queryStep, c.queryEvery = 10*time.Minute, 15*time.Second, 2*time.Second
	c.scrapeEvery, c.profileEvery, c.parts = time.Second, 0, 4
	c.drain, c.settle, c.stopLimit = 0, 5*time.Second, 2*time.Minute
	return c
}

var (
	tsdbOnce sync.Once
	tsdbBin  string
	tsdbErr  error
)

// testTSDB is the tsdb the test runs: $TSDB_TEST_STEADY_BIN, or a release
// build of ./cmd/tsdb (without -race: the figures are a release build's),
// built once per test process.
func testTSDB(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(envSteadyBin); bin != "" {
		return bin
	}
	tsdbOnce.Do(func() {
		ctx := context.Background()
		root, err := server.ModuleRoot(ctx)
		if err != nil {
			tsdbErr = err
			return
		}
		dir, err := os.MkdirTemp("", "hbtsdb-steady-bin-")
		if err != nil {
			tsdbErr = err
			return
		}
		tsdbBin = filepath.Join(dir, "tsdb")
		tsdbErr = server.BuildTSDB(ctx, slog.New(slog.NewTextHandler(os.Stderr, nil)), root, tsdbBin)
	})
	if tsdbErr != nil {
		t.Fatalf("build tsdb: %v", tsdbErr)
	}
	return tsdbBin
}

// TestSteadyStateCostsStayFlatAsTheStoreAges is a short bench/steady run on
// both backends: tsdb serve with compaction on and one-minute buckets
// under a real-time remote-write load and queries all along, until four
// buckets have been compacted after the first. It fails when a unit of work
// costs the store more than costGrowthFactor times as much at the end as at
// the start: compacting a row (first cycle against the last: cycles), or
// answering a query (first half of the cycles against the second). It counts
// work, never time: latencies and CPU are logged, not asserted.
func TestSteadyStateCostsStayFlatAsTheStoreAges(t *testing.T) {
	if testing.Short() {
		t.Skip("the short steady state takes about five minutes")
	}
	bin := testTSDB(t)
	c := shortRunConfig()
	for _, backend := range backendOrder {
		t.Run(backend, func(t *testing.T) {
			spec := backendSpec{name: backend, dir: t.TempDir()}
			args := c.tsdbArgs()
			if backend == "hbase" {
				zk := hbasetest.ZooKeeper(t)
				spec.hbase, spec.tablePrefix = &hbaserun.Instance{ZK: zk}, hbasetest.UniquePrefix("steady")
				t.Cleanup(func() { hbasestore.DropPrefix(t, zk, spec.tablePrefix) })
				spec.kind = server.TSDBHBase("tsdb (HBase)", "tsdb-hbase", bin, zk, args)
			} else {
				spec.kind = server.TSDBEmbedded("tsdb (embedded)", "tsdb", bin, args)
			}
			t.Parallel()
			log := slog.New(slog.NewTextHandler(t.Output(), nil))
			res, err := runBackend(t.Context(), log, c, spec)
			if err != nil {
				t.Fatal(err)
			}
			checkSteadyRun(t, res)
		})
	}
}

// compactionKeySlack is how many more keys per compacted row the embedded
// store may step over at the end of a short run than costGrowthFactor allows,
// a bounded cost rather than growth: a read steps over up to 8 keys before
// it seeks (kv/embedded/read.go, maxSkipNexts), and a compacted row's reads of
// the rollup day rows its bucket's cells go into (two resolutions) and of the
// row itself meet more of them as the day rows fill during the run's first
// buckets. With raw cells in Pebble the row's 60 raw keys hid it; with them
// in the head the whole count is about a dozen keys, and these 3 × 8 show.
// The growth the test exists for, a round that reads every raw cell or
// tombstone ever written, is hundreds of keys per row by the fourth bucket.
const compactionKeySlack = 3 * 8

// checkGrowth fails t when cost b at the end of the run is more than
// costGrowthFactor × a + slack, cost a at its start.
func checkGrowth(t *testing.T, what string, a, b, slack float64) {
	t.Helper()
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
	case math.IsNaN(a) || math.IsNaN(b) || a == 0:
		t.Errorf("%s: %g at first, %g at last: want both measured (reads are counted by the pprof label "+
			"hbtsdb_job of their context: compaction, query)", what, a, b)
	case b > costGrowthFactor*a+slack:
		t.Errorf("%s grew %.2f× as the store aged: %.2f at first, %.2f at last (bound: %.1f× + %g)",
			what, b/a, a, b, costGrowthFactor, slack)
	default:
		t.Logf("%s: %.2f at first, %.2f at last (%.2f×, bound %.1f× + %g)", what, a, b, b/a, costGrowthFactor, slack)
	}
}

// checkSteadyRun checks a short run's figures: the load and the queries went
// through, and the work per row and per sample did not grow beyond
// costGrowthFactor.
func checkSteadyRun(t *testing.T, res *runResult) {
	t.Helper()
	cs := cycles(res)
	t.Logf("%s: %d samples acknowledged (%d requests retried), %d queries, SIGTERM to exit %s (%v)\n%s",
		res.backend, res.acked, res.retried, len(res.queries), res.shutdown.Round(time.Millisecond), res.shutdownErr,
		renderCycles(res, cs))
	if len(cs) < res.cfg.untilBuckets {
		t.Fatalf("%d complete compaction cycles, want %d", len(cs), res.cfg.untilBuckets)
	}
	for _, q := range res.queries {
		if q.err != nil {
			t.Errorf("a query failed: %v", q.err)
			break
		}
	}
	first, last := cs[0], cs[len(cs)-1]
	check := func(what string, a, b float64) { checkGrowth(t, what, a, b, 0) }
	cells0, keys0 := first.compactionCost()
	cells1, keys1 := last.compactionCost()
	check("cells compaction read per compacted row", cells0, cells1)
	if res.backend == "embedded" {
		checkGrowth(t, "keys compaction stepped over per compacted row", keys0, keys1, compactionKeySlack)
	}
	bounds := cycleBounds(res)
	mid := len(bounds) / 2
	early, late := between(res, bounds[0], bounds[mid]), between(res, bounds[mid], bounds[len(bounds)-1])
	for _, half := range []part{early, late} {
		if half.queriesInReach == 0 {
			t.Fatalf("no query answered between %s and %s", half.from.Format(time.TimeOnly), half.to.Format(time.TimeOnly))
		}
	}
	qCells0, qKeys0 := early.queryCost()
	qCells1, qKeys1 := late.queryCost()
	check("cells the queries read per sample in reach", qCells0, qCells1)
	if res.backend == "embedded" {
		check("keys the queries stepped over per sample in reach", qKeys0, qKeys1)
	}
	for qi, sq := range steadyQueries {
		var lastOK *queryResult
		for i := range late.queries[qi] {
			if late.queries[qi][i].err == nil {
				lastOK = &late.queries[qi][i]
			}
		}
		want := sq.wantSeries(res.cfg.load.Hosts)
		switch {
		case lastOK == nil:
			t.Errorf("%s: no answer in the second half of the run", sq.expr)
		case lastOK.ans.Series != want:
			t.Errorf("%s: the last answer has %d series, want %d", sq.expr, lastOK.ans.Series, want)
		}
	}
}

// The figures a short test compares come from the snapshots: cycle k holds
// what was read between the snapshots at which k and k+1 buckets' rows were
// compacted, and the queries answered then.
func TestCyclesFollowCompactionsProgressNotTheClock(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	series := 4
	r := &runResult{cfg: runConfig{load: rwload.Load{Hosts: 2, SeriesPerHost: 2}}, start: t0}
	// rows compacted and compaction keys read at each snapshot: bucket 0 at
	// the second snapshot, buckets 1 and 2 together at the fourth (a lagging
	// round), bucket 3 at the sixth.
	for i, rows := range []int{0, 4, 4, 12, 12, 16, 16} {
		keys := float64(100 * i * i)
		r.snapshots = append(r.snapshots, snapshot{at: t0.Add(time.Duration(i) * 20 * time.Second), metrics: serverMetrics{
			rows: float64(rows), read: map[string]readWork{"compaction": {keys: keys, cells: float64(rows * 3)}}}})
	}
	r.queries = []queryResult{
		{at: t0.Add(30 * time.Second), inReach: 10},
		{at: t0.Add(70 * time.Second), inReach: 20},
		{at: t0.Add(90 * time.Second), inReach: 40, err: fmt.Errorf("failed")},
	}
	if got, want := cycleBounds(r), []int{1, 3, 3, 5}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cycleBounds = %v, want %v", got, want)
	}
	cs := cycles(r)
	if len(cs) != 2 {
		t.Fatalf("%d cycles, want 2 (buckets 1 and 2 in one)", len(cs))
	}
	if cs[0].rows != float64(2*series) || cs[1].rows != float64(series) {
		t.Errorf("cycle rows %g and %g, want %d and %d", cs[0].rows, cs[1].rows, 2*series, series)
	}
	if _, keys := cs[0].compactionCost(); keys != (900-100)/8.0 {
		t.Errorf("cycle 1: %g keys per row, want %g", keys, (900-100)/8.0)
	}
	if cs[0].queriesInReach != 10 || cs[1].queriesInReach != 20 {
		t.Errorf("samples in reach of the answered queries: %d and %d, want 10 and 20 (a failed query counts none)",
			cs[0].queriesInReach, cs[1].queriesInReach)
	}
}
