package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// runConfig is the shape of one steady run of one tsdb.
type runConfig struct {
	load rwload.Load // Samples is not used: the load runs in real time
	// duration is how long the load runs. With 0, it runs until untilBuckets
	// buckets after the first have been compacted (the short test: it waits on
	// progress, not on the clock), or fails once compaction made no progress
	// for stall.
	duration     time.Duration
	untilBuckets int
	stall        time.Duration

	bucketWidth  time.Duration // --schema.bucket-width
	grace        time.Duration // --compact.grace
	compactEvery time.Duration // --compact.interval

	queryRange, queryStep, queryEvery time.Duration
	scrapeEvery                       time.Duration
	// profileEvery is the length of each of the back-to-back CPU profiles; 0
	// takes none (no CPU split).
	profileEvery time.Duration
	// parts is how many parts of the run the report has (10: tenths).
	parts int
	// drain bounds the wait, after the load, for compaction to compact the
	// last bucket; settle the wait for the processes to go idle then;
	// stopLimit the wait for tsdb to exit after SIGTERM.
	drain, settle, stopLimit time.Duration
}

// runResult is everything one run measured.
type runResult struct {
	backend   string
	cfg       runConfig
	start     time.Time // the load's start
	loadEnd   time.Time
	snapshots []snapshot // every scrapeEvery, from before the load until tsdb was idle
	queries   []queryResult
	profiles  []cpuSplit
	// steps skipped because the load fell behind; requests retried (429/5xx).
	skipped, retried int64

	// After the load: whether compaction caught up with the last bucket
	// (drained) and tsdb (and the JVM) went idle, and their CPU then, counted
	// from just before the load.
	drained, idle             bool
	idleCPU, jvmIdleCPU       time.Duration
	cpu0, jvmCPU0             time.Duration
	drainTook                 time.Duration
	vm                        *vmResult // nil without VictoriaMetrics
	shutdown                  time.Duration
	shutdownErr               error
	diskAfterStop             int64
	acked                     int64 // samples tsdb acknowledged
	hbase                     bool
	jvmMeasured, diskMeasured bool
}

// vmResult is VictoriaMetrics' side of the run: the same load, its CPU from
// before the load until it went idle after it.
type vmResult struct {
	name    string
	acked   int64
	cpu     time.Duration
	idle    bool
	disk    int64 // its data directory after a graceful stop
	retried int64
}

// backendSpec is the tsdb a run measures: its kind (embedded or HBase), the
// HBase under it, and VictoriaMetrics beside it.
type backendSpec struct {
	name        string // embedded, hbase
	kind        server.Kind
	tablePrefix string             // HBase tables of this run
	hbase       *hbaserun.Instance // nil on the embedded store
	vm          *server.Kind       // nil: no VictoriaMetrics beside tsdb
	dir         string             // the run's directory: data, logs
}

// tsdbArgs are the flags of every tsdb serve of a steady run, before the
// user's: one-minute buckets, the run's grace and interval, profiles.
func (c runConfig) tsdbArgs() []string {
	return []string{
		"--schema.bucket-width=" + c.bucketWidth.String(),
		"--compact.grace=" + c.grace.String(),
		"--compact.interval=" + c.compactEvery.String(),
		"--web.enable-pprof",
	}
}

// runBackend runs the steady load against one tsdb (and VictoriaMetrics
// beside it), measuring all along, then lets compaction catch up, waits for
// the processes to go idle and stops tsdb with SIGTERM.
func runBackend(ctx context.Context, log *slog.Logger, c runConfig, b backendSpec) (res *runResult, err error) {
	log = log.With("backend", b.name)
	res = &runResult{backend: b.name, cfg: c, hbase: b.hbase != nil}
	dataDir := filepath.Join(b.dir, "data")
	tsdb, err := b.kind.Start(ctx, dataDir, b.tablePrefix, filepath.Join(b.dir, "tsdb.log"), 3*time.Minute)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			tsdb.Stop()
		}
	}()
	log.Info("tsdb started", "pid", tsdb.Pid(), "url", tsdb.Base, "log", filepath.Join(b.dir, "tsdb.log"))
	var vm *server.Running
	if b.vm != nil {
		if vm, err = b.vm.Start(ctx, filepath.Join(b.dir, "vm-data"), "", filepath.Join(b.dir, "vm.log"), time.Minute); err != nil {
			return nil, err
		}
		defer func() {
			if vm != nil {
				vm.Stop()
			}
		}()
	}
	jvmPid := 0
	if b.hbase != nil && b.hbase.Measured() {
		if jvmPid, err = b.hbase.JVMPid(); err != nil {
			return nil, err
		}
		res.jvmMeasured = true
	}
	res.diskMeasured = b.hbase == nil || b.hbase.Measured()
	disk := func() (int64, error) {
		if b.hbase == nil {
			return proc.DirBytes(dataDir)
		}
		if !b.hbase.Measured() {
			return 0, nil
		}
		tables, err := hbaserun.TablesWithPrefix(b.hbase.RootDir(), b.tablePrefix)
		if err != nil {
			return 0, err
		}
		return hbaserun.TableBytes(b.hbase.RootDir(), tables)
	}

	urls := map[string]string{"tsdb": tsdb.Base + "/api/v1/write"}
	names := []string{"tsdb"}
	if vm != nil {
		urls["vm"] = vm.Base + "/api/v1/write"
		names = append(names, "vm")
	}
	rt := newRealTimeLoad(c.load, log, urls, names...)
	client := &http.Client{Timeout: time.Minute}
	sc := &scraper{log: log, client: client, tsdb: tsdb, jvmPid: jvmPid, vm: vm, rt: rt, disk: disk}
	first, err := sc.take(ctx)
	if err != nil {
		return nil, err
	}
	res.cpu0, res.jvmCPU0 = first.tsdbCPU, first.jvmCPU

	// The load, the queries and the profiles run until loadCtx ends; the
	// scraper until the processes are idle.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	scrapeCtx, stopScrape := context.WithCancel(ctx)
	defer stopScrape()
	q := &querier{base: tsdb.Base, client: &http.Client{Timeout: 5 * time.Minute}, rt: rt, hosts: c.load.Hosts,
		rangeOf: c.queryRange, step: c.queryStep, every: c.queryEvery, bucket: c.bucketWidth, resolution: "raw"}
	var pr *profiler
	if c.profileEvery > 0 {
		pr = &profiler{base: tsdb.Base, every: c.profileEvery, log: log,
			client: &http.Client{Timeout: c.profileEvery + time.Minute}}
	}
	var wg sync.WaitGroup
	loadErr := make(chan error, 1)
	res.start = time.Now()
	wg.Go(func() { loadErr <- rt.run(loadCtx) })
	wg.Go(func() { q.run(loadCtx) })
	if pr != nil {
		wg.Go(func() { pr.run(loadCtx) })
	}
	scrapeDone := make(chan struct{})
	go func() {
		defer close(scrapeDone)
		sc.run(scrapeCtx, c.scrapeEvery)
	}()

	runErr := waitForEndOfLoad(loadCtx, log, c, res.start, sc, rt, q, tsdb, loadErr)
	res.loadEnd = time.Now()
	stopLoad()
	wg.Wait()
	if runErr != nil {
		stopScrape()
		<-scrapeDone
		return nil, runErr
	}
	log.Info("load ended", "took", res.loadEnd.Sub(res.start).Round(time.Second), "samples", rt.targets[0].acked.Load())

	// Compaction catches up with the last bucket, then the processes go idle.
	res.drained, res.drainTook = drain(ctx, log, c, sc, rt.lastStep())
	if vm != nil {
		if err := vm.FlushData(ctx); err != nil {
			return nil, err
		}
	}
	idle, settled, err := proc.Settle(ctx, tsdb.Pid(), c.settle)
	if err != nil {
		return nil, err
	}
	res.idleCPU, res.idle = idle, settled
	if jvmPid != 0 {
		if res.jvmIdleCPU, _, err = proc.Settle(ctx, jvmPid, c.settle); err != nil {
			return nil, err
		}
	}
	if vm != nil {
		res.vm = &vmResult{name: b.vm.Name, acked: rt.targets[1].acked.Load(), retried: rt.targets[1].retried.Load()}
		vmIdle, vmSettled, err := proc.Settle(ctx, vm.Pid(), c.settle)
		if err != nil {
			return nil, err
		}
		res.vm.cpu, res.vm.idle = vmIdle-first.vmCPU, vmSettled
	}
	last, err := sc.take(ctx)
	if err != nil {
		return nil, err
	}
	stopScrape()
	<-scrapeDone
	res.snapshots = append(append([]snapshot{first}, sc.snapshot()...), last)
	res.queries = q.snapshot()
	if pr != nil {
		res.profiles = pr.snapshot()
	}
	res.acked, res.retried, res.skipped = rt.targets[0].acked.Load(), rt.targets[0].retried.Load(), rt.skipped.Load()

	stopped = true
	res.shutdown, res.shutdownErr = tsdb.StopWithin(c.stopLimit)
	log.Info("tsdb stopped", "sigterm_to_exit", res.shutdown.Round(time.Millisecond), "err", res.shutdownErr)
	if res.diskAfterStop, err = disk(); err != nil {
		return nil, err
	}
	if vm != nil {
		err := vm.Stop()
		vm = nil
		if err != nil {
			return nil, err
		}
		if res.vm.disk, err = proc.DirBytes(filepath.Join(b.dir, "vm-data")); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// waitForEndOfLoad returns when the load has run its course: c.duration, or,
// with none, untilBuckets buckets after the first compacted (failing when
// compaction made no progress for c.stall). It logs a progress line every
// minute.
func waitForEndOfLoad(ctx context.Context, log *slog.Logger, c runConfig, start time.Time, sc *scraper,
	rt *realTimeLoad, q *querier, tsdb *server.Running, loadErr <-chan error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLog, lastRows, lastProgress := start, -1.0, start
	series := float64(c.load.Series())
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-loadErr:
			if err == nil {
				err = errors.New("the load stopped on its own")
			}
			return fmt.Errorf("load: %w", err)
		case <-tsdb.Exited():
			return fmt.Errorf("tsdb exited during the run (log in %s)", filepath.Dir(tsdb.Dir))
		case <-tick.C:
		}
		now := time.Now()
		s, ok := sc.latest()
		if ok && s.metrics.rows != lastRows {
			lastRows, lastProgress = s.metrics.rows, now
		}
		if now.Sub(lastLog) >= time.Minute {
			lastLog = now
			logProgress(log, start, s, q)
		}
		switch {
		case c.duration > 0:
			if now.Sub(start) >= c.duration {
				return nil
			}
		case ok && s.metrics.rows >= series*float64(c.untilBuckets+1):
			return nil
		case now.Sub(lastProgress) > c.stall:
			return fmt.Errorf("compaction made no progress for %s (%.0f rows compacted, want %.0f)", c.stall,
				lastRows, series*float64(c.untilBuckets+1))
		}
	}
}

// logProgress logs one line: the load, compaction and the queries so far.
func logProgress(log *slog.Logger, start time.Time, s snapshot, q *querier) {
	results := q.snapshot()
	failed := 0
	for _, r := range results {
		if r.err != nil {
			failed++
		}
	}
	log.Info("progress", "elapsed", time.Since(start).Round(time.Second), "samples", s.acked,
		"compacted_rows", s.metrics.rows, "rounds", s.metrics.roundsOK, "lag", s.lag(start).Round(time.Second),
		"queries", len(results), "queries_failed", failed,
		"compaction_reads", describeRead(s.metrics.read["compaction"]), "query_reads", describeRead(s.metrics.read["query"]))
}

// drain waits until compaction has compacted the bucket of the last step:
// until two rounds without failure have ended after that bucket was sealed
// (its end plus the grace), the second of which started after it. It gives up
// after c.drain; with none, it does not wait.
func drain(ctx context.Context, log *slog.Logger, c runConfig, sc *scraper, lastStep int64) (bool, time.Duration) {
	if c.drain <= 0 {
		return false, 0
	}
	t0 := time.Now()
	sealed := time.UnixMilli(lastStep).Truncate(c.bucketWidth).Add(c.bucketWidth + c.grace)
	var roundsAtSeal float64 = -1
	for time.Since(t0) < c.drain {
		s, ok := sc.latest()
		if ok && s.at.After(sealed) {
			if roundsAtSeal < 0 {
				roundsAtSeal = s.metrics.roundsOK
			}
			if s.metrics.roundsOK >= roundsAtSeal+2 {
				log.Info("compaction caught up with the last bucket", "took", time.Since(t0).Round(time.Second))
				return true, time.Since(t0)
			}
		}
		select {
		case <-ctx.Done():
			return false, time.Since(t0)
		case <-time.After(time.Second):
		}
	}
	log.Warn("compaction did not catch up with the last bucket", "waited", c.drain)
	return false, time.Since(t0)
}

// scraper takes a snapshot every interval.
type scraper struct {
	log    *slog.Logger
	client *http.Client
	tsdb   *server.Running
	jvmPid int
	vm     *server.Running
	rt     *realTimeLoad
	disk   func() (int64, error)

	mu        sync.Mutex
	snapshots []snapshot
}

func (sc *scraper) run(ctx context.Context, every time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		s, err := sc.take(ctx)
		if err != nil {
			if ctx.Err() == nil {
				sc.log.Warn("snapshot failed", "err", err)
			}
			continue
		}
		sc.mu.Lock()
		sc.snapshots = append(sc.snapshots, s)
		sc.mu.Unlock()
	}
}

// take measures the processes and scrapes tsdb's metrics.
func (sc *scraper) take(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now()}
	var err error
	if s.tsdbCPU, err = proc.CPUTime(sc.tsdb.Pid()); err != nil {
		return s, err
	}
	if sc.jvmPid != 0 {
		if s.jvmCPU, err = proc.CPUTime(sc.jvmPid); err != nil {
			return s, err
		}
	}
	if sc.vm != nil {
		if s.vmCPU, err = proc.CPUTime(sc.vm.Pid()); err != nil {
			return s, err
		}
	}
	s.acked = sc.rt.targets[0].acked.Load()
	if len(sc.rt.targets) > 1 {
		s.vmAcked = sc.rt.targets[1].acked.Load()
	}
	if s.metrics, err = scrapeMetrics(ctx, sc.client, sc.tsdb.Base); err != nil {
		return s, err
	}
	if s.diskBytes, err = sc.disk(); err != nil {
		return s, err
	}
	return s, nil
}

// latest is the newest snapshot, false before the first.
func (sc *scraper) latest() (snapshot, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.snapshots) == 0 {
		return snapshot{}, false
	}
	return sc.snapshots[len(sc.snapshots)-1], true
}

func (sc *scraper) snapshot() []snapshot {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append([]snapshot(nil), sc.snapshots...)
}
