package compact

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of WorkerOptions.
const (
	DefaultInterval         = 5 * time.Minute
	DefaultLeaseTTL         = time.Minute
	DefaultProgressInterval = time.Minute
	// MinLeaseTTL is the shortest lease a worker takes: it renews at half of
	// it and stops a quarter before its end, in whole milliseconds.
	MinLeaseTTL = time.Second
)

// WorkerOptions tune a Worker. Zero values take the defaults in brackets; Owner
// is required.
type WorkerOptions struct {
	// Interval is the time from the start of one round to the start of the
	// next [5m]; a round that takes longer is followed by the next at once.
	Interval time.Duration
	// LeaseTTL is how long a lease on a salt lasts unless renewed [1m]. A holder
	// renews it when half of it is gone and stops working a quarter of it before
	// its end, so the clocks of the workers must agree to within LeaseTTL/4. A
	// worker that dies holds its salts until their leases expire.
	LeaseTTL time.Duration
	// Owner names this worker in its leases: unique among every worker of the
	// store, e.g. host name, process ID and a random part (schema.ValidLeaseOwner:
	// printable ASCII, no spaces).
	Owner string
	// Compact are the options of the Compactor of each salt; its Now and Logger
	// default to the worker's.
	Compact Options
	// ProgressInterval is how often a long round logs its progress [1m].
	ProgressInterval time.Duration
	// Logger receives a line per round, progress lines during long rounds and a
	// line per salt that failed [slog.Default()].
	Logger *slog.Logger
	// Now is the clock of the leases and of the round statistics [time.Now].
	Now func() time.Time
	// Registerer, when not nil, receives the worker's metrics
	// (hbtsdb_compaction_*, see workerMetrics). One Registerer takes one Worker.
	Registerer prometheus.Registerer

	// onLease, set by tests only, is called with "acquired" once a lease is
	// taken and "releasing" before it is released.
	onLease func(event string, salt byte)
	// afterRound, set by tests only, is called by Run after each round.
	afterRound func(RoundStats, error)
}

// Validate refuses options that mean nothing: negative durations, a lease too
// short to renew, a missing or unusable Owner, invalid Compact options.
func (o WorkerOptions) Validate() error {
	var errs []error
	errs = append(errs, optcheck.NotNegative("compact: WorkerOptions.Interval", o.Interval, optcheck.Default(DefaultInterval)))
	if o.LeaseTTL < 0 || o.LeaseTTL > 0 && o.LeaseTTL < MinLeaseTTL {
		errs = append(errs, fmt.Errorf("compact: WorkerOptions.LeaseTTL must be at least %s (0 means the default, %s), got %s", MinLeaseTTL, DefaultLeaseTTL, o.LeaseTTL))
	}
	errs = append(errs, optcheck.NotNegative("compact: WorkerOptions.ProgressInterval", o.ProgressInterval, optcheck.Default(DefaultProgressInterval)))
	if err := schema.ValidLeaseOwner(o.Owner); err != nil {
		errs = append(errs, fmt.Errorf("compact: WorkerOptions.Owner: %w", err))
	}
	if err := o.Compact.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Compact.Now == nil {
		o.Compact.Now = o.Now
	}
	if o.Compact.Logger == nil {
		o.Compact.Logger = o.Logger
	}
	return o
}

// Worker compacts a store in rounds, sharing the salts with the other workers of
// the store (in this process or others) through leases in the meta table; see
// the package doc. A Worker runs one round at a time.
type Worker struct {
	st       kv.Store
	settings schema.Settings
	opts     WorkerOptions
	leaser   *leaser
	// first is the salt each round starts at, derived from the owner, so that
	// workers that start together begin on different salts.
	first   int
	metrics *workerMetrics // nil without WorkerOptions.Registerer
}

// NewWorker returns a worker on st, whose schema was created with settings.
func NewWorker(st kv.Store, settings schema.Settings, opts WorkerOptions) (*Worker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if settings.Salts < 1 || settings.Salts > schema.MaxSalts {
		return nil, fmt.Errorf("compact: %d salts outside [1, %d]: %w", settings.Salts, schema.MaxSalts, kv.ErrInvalidArgument)
	}
	if err := opts.Compact.validateForStore(settings.BucketWidth); err != nil {
		return nil, fmt.Errorf("compact: WorkerOptions.Compact: %w", err)
	}
	opts = opts.withDefaults()
	h := fnv.New32a()
	h.Write([]byte(opts.Owner))
	return &Worker{
		st:       st,
		settings: settings,
		opts:     opts,
		leaser:   &leaser{st: st, job: schema.LeaseJobCompact, owner: opts.Owner, ttl: opts.LeaseTTL, now: opts.Now},
		first:    int(h.Sum32() % uint32(settings.Salts)),
		metrics:  newWorkerMetrics(opts.Registerer),
	}, nil
}

// RoundStats count what one round did.
type RoundStats struct {
	// Stats add up what the Compactors of the salts this worker held did
	// (including the salts that failed part way).
	Stats
	// Salts is how many salts this worker held and compacted to the end.
	Salts int
	// Busy is how many salts another worker held, so this one left them.
	Busy int
	// Failed is how many salts this worker held but could not finish: a store
	// error, or the lease was lost. The next round tries them again.
	Failed int
	// Duration is how long the round took, by WorkerOptions.Now.
	Duration time.Duration
}

// Run runs rounds, one every Interval, until ctx is done; it returns once the
// round under way has stopped and released its lease. Failures are logged and
// retried by the next round, never returned.
func (w *Worker) Run(ctx context.Context) {
	for {
		start := w.opts.Now()
		rs, err := w.RunOnce(ctx)
		if w.opts.afterRound != nil {
			w.opts.afterRound(rs, err)
		}
		if ctx.Err() != nil {
			return
		}
		wait := w.opts.Interval - w.opts.Now().Sub(start)
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// RunOnce runs one round: for each salt, take its lease (leaving the salt to
// the worker that holds it), compact its sealed buckets (Compactor.CompactSalt)
// while keeping the lease, and release it. It logs one line for the round, and
// progress lines while a round runs longer than ProgressInterval. The error
// joins the failures of the salts (wrapping ErrLeaseLost for a lost lease) and
// ctx's error when the round was cut short; the statistics count what was done.
func (w *Worker) RunOnce(ctx context.Context) (rs RoundStats, err error) {
	// The round's goroutines, and those they start, carry the pprof label
	// kv.JobLabel=kv.JobCompaction: CPU profiles and the storage read counters
	// (kv/kvmetrics, by job) tell its work from ingest's and the queries'.
	pprof.Do(ctx, pprof.Labels(kv.JobLabel, kv.JobCompaction), func(ctx context.Context) {
		rs, err = w.runOnce(ctx)
	})
	return rs, err
}

func (w *Worker) runOnce(ctx context.Context) (RoundStats, error) {
	start := w.opts.Now()
	n := w.settings.Salts
	prog := &progress{logger: w.opts.Logger, now: w.opts.Now, every: w.opts.ProgressInterval, start: start, last: start, salts: n}
	var (
		rs   RoundStats
		errs []error
	)
	for i := range n {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		salt := byte((w.first + i) % n)
		st, held, err := w.compactSalt(ctx, salt, prog)
		rs.add(st)
		switch {
		case err != nil && ctx.Err() != nil:
			errs = append(errs, err)
		case err != nil:
			rs.Failed++
			errs = append(errs, err)
			w.opts.Logger.Warn("compaction of a salt failed; the next round retries it", "salt", salt, "rows", st.Rows, "err", err)
		case held:
			rs.Salts++
		default:
			rs.Busy++
		}
		prog.saltDone()
	}
	rs.Duration = w.opts.Now().Sub(start)
	attrs := []any{"rows", rs.Rows, "samples", rs.Samples, "raw_cells_deleted", rs.RawCells, "rollup_cells", rs.RollupCells, "skipped", rs.Skipped,
		"conflicts", rs.Conflicts, "rows_read", rs.RowsRead, "cells_read", rs.CellsRead,
		"salts", rs.Salts, "busy", rs.Busy, "failed", rs.Failed, "duration", rs.Duration}
	if secs := rs.Duration.Seconds(); secs > 0 {
		attrs = append(attrs, "rows_per_s", round1(float64(rs.Rows)/secs), "samples_per_s", round1(float64(rs.Samples)/secs))
	}
	if ctx.Err() != nil {
		attrs = append(attrs, "stopped", true)
	} else {
		w.metrics.round(rs, rs.Failed > 0, float64(w.opts.Now().UnixMilli())/1000)
		if w.metrics != nil {
			if wm, err := readWatermarks(ctx, w.st); err == nil {
				w.metrics.watermarks(wm)
			} else {
				w.opts.Logger.Warn("compaction watermarks not read for the metrics", "err", err)
			}
		}
	}
	w.opts.Logger.Info("compaction round", attrs...)
	return rs, errors.Join(errs...)
}

// compactSalt compacts one salt under its lease. held is false when another
// worker holds the lease.
func (w *Worker) compactSalt(ctx context.Context, salt byte, prog *progress) (st Stats, held bool, err error) {
	l, holder, err := w.leaser.acquire(ctx, salt)
	if err != nil {
		return Stats{}, false, err
	}
	if l == nil {
		w.opts.Logger.Debug("salt left to the worker that holds its lease", "salt", salt, "owner", holder.Owner,
			"until", time.UnixMilli(holder.Expiry).UTC())
		return Stats{}, false, nil
	}
	w.hook("acquired", salt)
	defer func() {
		w.hook("releasing", salt)
		if rerr := l.release(ctx); rerr != nil {
			// The work is done (or failed already); the lease only lasts
			// until it expires.
			w.opts.Logger.Warn("lease not released; it expires by itself", "salt", salt, "err", rerr)
		}
	}()
	workCtx, stop := l.keep(ctx)
	defer stop()
	copts := w.opts.Compact
	copts.batchDone = prog.batchDone
	c, err := NewCompactor(&guardedStore{Store: w.st, lease: l}, w.settings, copts)
	if err != nil {
		return Stats{}, true, err
	}
	st, err = c.CompactSalt(workCtx, salt)
	if cause := context.Cause(workCtx); err != nil && ctx.Err() == nil && errors.Is(cause, ErrLeaseLost) && !errors.Is(err, ErrLeaseLost) {
		err = fmt.Errorf("%w (%w)", cause, err)
	}
	return st, true, err
}

// Watermarks returns, per salt, the cutoff up to which a pass over the salt
// last completed, by whichever worker (Compactor.Watermarks).
func (w *Worker) Watermarks(ctx context.Context) (map[byte]int64, error) {
	return readWatermarks(ctx, w.st)
}

func (w *Worker) hook(event string, salt byte) {
	if w.opts.onLease != nil {
		w.opts.onLease(event, salt)
	}
}

// round1 rounds x to one decimal, for rates in logs.
func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// progress logs how far a long round got, at most once per every: rows
// (buckets) read so far and the rollup cells written, the rate, and an estimate
// of the round's rows and of the time left, extrapolated from the salts done
// (salts differ in size, so the estimate is rough).
type progress struct {
	logger *slog.Logger
	now    func() time.Time
	every  time.Duration
	start  time.Time
	salts  int

	mu          sync.Mutex
	last        time.Time
	saltsDone   int
	rows        int
	rollupCells int
}

// batchDone counts what a batch read and wrote; it may log.
func (p *progress) batchDone(st Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows += st.RowsRead
	p.rollupCells += st.RollupCells
	p.maybeLog()
}

// saltDone counts a salt as done (or left to another worker); it may log.
func (p *progress) saltDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.saltsDone++
	if p.saltsDone < p.salts {
		p.maybeLog()
	}
}

func (p *progress) maybeLog() {
	now := p.now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start)
	attrs := []any{"salts_done", p.saltsDone, "salts", p.salts, "rows", p.rows, "rollup_cells", p.rollupCells,
		"elapsed", elapsed.Round(time.Second)}
	if secs := elapsed.Seconds(); secs > 0 {
		attrs = append(attrs, "rows_per_s", round1(float64(p.rows)/secs))
	}
	if p.saltsDone > 0 {
		attrs = append(attrs, "rows_estimated", p.rows*p.salts/p.saltsDone,
			"eta", (elapsed * time.Duration(p.salts-p.saltsDone) / time.Duration(p.saltsDone)).Round(time.Second))
	}
	p.logger.Info("compaction progress", attrs...)
}
