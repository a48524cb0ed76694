package query

import (
	"context"
	"fmt"
)

// fetcher reads the samples of a list of series in order, at most
// Options.Concurrency series ahead of its consumer: that many scans run at
// once, and memory holds at most that many series' windows, whatever the
// number of series. It starts on the first call of next.
type fetcher struct {
	r          *Reader
	ctx        context.Context
	cancel     context.CancelFunc
	series     []series
	mint, maxt int64
	plan       rollupPlan
	slots      []chan fetched // series i arrives on slots[i % len(slots)]
	tokens     chan struct{}  // one per series read and not yet consumed
	started    bool
	pos        int // series consumed so far
	samples    int // samples handed out so far
}

type fetched struct {
	rows []bucketSamples
	err  error
}

// newFetcher reads ss under ctx, as plan says (raw data, or a rollup); cancel (of ctx, which may carry the Select's
// Options.Timeout) is called when the fetcher ends or is closed.
func newFetcher(ctx context.Context, cancelParent context.CancelFunc, r *Reader, ss []series, mint, maxt int64, plan rollupPlan) *fetcher {
	ctx, cancelCtx := context.WithCancel(ctx)
	cancel := func() { cancelCtx(); cancelParent() }
	k := min(r.opts.Concurrency, max(len(ss), 1))
	f := &fetcher{r: r, ctx: ctx, cancel: cancel, series: ss, mint: mint, maxt: maxt, plan: plan,
		slots: make([]chan fetched, k), tokens: make(chan struct{}, k)}
	for i := range f.slots {
		f.slots[i] = make(chan fetched, 1)
	}
	return f
}

// run starts one read per series, in order, each once a token is free.
func (f *fetcher) run() {
	for i := range f.series {
		select {
		case f.tokens <- struct{}{}:
		case <-f.ctx.Done():
			return
		}
		go func(i int) {
			rows, err := f.r.readPlanned(f.ctx, &f.series[i], f.mint, f.maxt, f.plan)
			f.slots[i%len(f.slots)] <- fetched{rows, err}
		}(i)
	}
}

// next returns the next series and its rows, false at the end or on error
// (then the error).
func (f *fetcher) next() (*series, []bucketSamples, bool, error) {
	if f.pos >= len(f.series) {
		f.cancel()
		return nil, nil, false, nil
	}
	if !f.started {
		f.started = true
		go f.run()
	}
	var res fetched
	select {
	case res = <-f.slots[f.pos%len(f.slots)]:
	case <-f.ctx.Done():
		return nil, nil, false, fmt.Errorf("query: %w", f.ctx.Err())
	}
	<-f.tokens
	s := &f.series[f.pos]
	f.pos++
	if res.err != nil {
		f.cancel()
		return nil, nil, false, res.err
	}
	for _, b := range res.rows {
		f.samples += len(b.samples)
	}
	if maxSamples := f.r.opts.MaxSamples; maxSamples > 0 && f.samples > maxSamples {
		f.cancel()
		return nil, nil, false, fmt.Errorf("query: more than %d samples in %d series: %w", maxSamples, f.pos, ErrTooManySamples)
	}
	return s, res.rows, true, nil
}

// nextWithSamples is next, skipping the series without a sample in the range (a
// series indexed on a day of the range may have none in it).
func (f *fetcher) nextWithSamples() (*series, []bucketSamples, bool, error) {
	for {
		ser, rows, ok, err := f.next()
		if !ok || len(rows) > 0 {
			return ser, rows, ok, err
		}
	}
}

// close stops the reads in flight.
func (f *fetcher) close() { f.cancel() }
