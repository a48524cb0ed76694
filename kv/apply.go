package kv

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/internal/optcheck"
)

// Defaults of ApplyOptions: what the writer and the compactor ran with before
// they shared these options.
const (
	// DefaultApplyBatch keeps one Apply small enough for one HBase multi
	// round trip per region server (kv/hbase cuts it further into SendBatch
	// calls of Options.MaxBatchCalls) and large enough that a typical remote
	// write request is one Apply.
	DefaultApplyBatch = 10_000
	// DefaultApplyConcurrency is how many Applies of one operation are in
	// flight at once.
	DefaultApplyConcurrency = 4
)

// ApplyOptions bound the Applies of one operation (a write request, a
// compaction batch): how many mutations one Apply carries and how many run at
// once. Zero values take the defaults in brackets.
type ApplyOptions struct {
	// MaxBatch is the most mutations one Apply carries [10,000]; more are cut
	// into several Applies.
	MaxBatch int
	// Concurrency is how many Applies (and other writes of the operation, see
	// Writes.Go) run at once [4].
	Concurrency int
}

// Validate refuses a negative MaxBatch or Concurrency (0 means the default).
// field names the options in the errors, package prefix included
// ("write: Options.Apply"), so that they read
// "write: Options.Apply.MaxBatch must not be negative (0 means the default, 10000), got -1".
func (o ApplyOptions) Validate(field string) error {
	return errors.Join(
		optcheck.NotNegative(field+".MaxBatch", o.MaxBatch, optcheck.Default(DefaultApplyBatch)),
		optcheck.NotNegative(field+".Concurrency", o.Concurrency, optcheck.Default(DefaultApplyConcurrency)),
	)
}

// WithDefaults returns o with the defaults in place of its zero fields (and of
// negative ones, which Validate refuses).
func (o ApplyOptions) WithDefaults() ApplyOptions {
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultApplyBatch
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultApplyConcurrency
	}
	return o
}

// Writes holds the writes of one operation, run together by Run: Applies of
// mutations cut into batches of at most ApplyOptions.MaxBatch (Apply), and
// other writes (Go), at most ApplyOptions.Concurrency at once; the first to
// fail cancels the others. Build it on one goroutine, then Run it once.
//
// The batches of one Apply, and the writes, may land in any order: a caller
// whose writes must be ordered (a mark after the cells it marks) runs them as
// two Writes, one after the other.
type Writes struct {
	st   Store
	opts ApplyOptions
	jobs []func(ctx context.Context) error
}

// NewWrites returns an empty set of writes to st, bounded by opts (zero fields
// take the defaults).
func NewWrites(st Store, opts ApplyOptions) *Writes {
	return &Writes{st: st, opts: opts.WithDefaults()}
}

// Apply adds the Applies of muts to table: one per batch of at most MaxBatch
// mutations, in order. what says what the mutations are, for errors: a batch
// that fails returns "<what>: <err>" when muts is one batch, and
// "<what>: batch i of n (mutations a to b): <err>" when it was cut (a and b
// index muts, so a kv.BatchError's indexes, which count from the batch's
// first mutation, can be placed). No mutations add nothing.
func (w *Writes) Apply(table string, muts []Mutation, what string) {
	size := w.opts.MaxBatch
	n := (len(muts) + size - 1) / size
	for i := range n {
		first := i * size
		batch := muts[first:min(first+size, len(muts))]
		w.jobs = append(w.jobs, func(ctx context.Context) error {
			err := w.st.Apply(ctx, table, batch)
			switch {
			case err == nil:
				return nil
			case n == 1:
				return fmt.Errorf("%s: %w", what, err)
			default:
				return fmt.Errorf("%s: batch %d of %d (mutations %d to %d): %w", what, i+1, n, first, first+len(batch)-1, err)
			}
		})
	}
}

// Go adds a write that is not an Apply of mutations at hand (another
// package's, such as index.Postings.Write). job is given the context that Run
// cancels on the first error, and its error is returned as it is: job wraps it
// with what it was doing.
func (w *Writes) Go(job func(ctx context.Context) error) {
	w.jobs = append(w.jobs, job)
}

// Run runs the writes added, at most ApplyOptions.Concurrency at once, and
// returns once all are done, with the first error. Every write runs under a
// context that is cancelled as soon as one fails (its cause is that error) or
// ctx is done, so the others stop early; a write not started by then is not
// sent to the store at all. A single write runs on the calling goroutine; no
// writes return nil at once.
func (w *Writes) Run(ctx context.Context) error {
	switch len(w.jobs) {
	case 0:
		return nil
	case 1:
		return w.jobs[0](ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(w.opts.Concurrency)
	for _, job := range w.jobs {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				// Only the first error is returned: when another write failed,
				// this one is dropped; when ctx is done, it says so.
				return fmt.Errorf("kv: write not started: %w", err)
			}
			return job(gctx)
		})
	}
	return g.Wait()
}

// ApplyBatches applies muts to table of st in Applies of at most
// opts.MaxBatch mutations, at most opts.Concurrency at once; the first error
// cancels the Applies in flight, leaves those not started unstarted and is
// returned, naming the batch when there were several (see Writes.Apply). On
// error the caller must assume none of muts is stored (kv.Store.Apply). No
// mutations return nil at once.
func ApplyBatches(ctx context.Context, st Store, table string, muts []Mutation, opts ApplyOptions) error {
	if len(muts) == 0 {
		return nil
	}
	w := NewWrites(st, opts)
	w.Apply(table, muts, fmt.Sprintf("kv: apply %d mutations to %s", len(muts), table))
	return w.Run(ctx)
}
