package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
)

// maxBehind is how far the load may fall behind the clock (a server that takes
// longer than the scrape interval to acknowledge a step): beyond it, the steps in
// between are skipped, as a Prometheus whose queue is full drops samples, so that
// the load stays current.
const maxBehind = time.Minute

// target is one server the load goes to.
type target struct {
	name string
	url  string // its remote-write endpoint
	// steps carries the encoded steps to the target's worker, in order.
	steps chan encodedStep
	// acked is the samples the target acknowledged (2xx); retried the requests
	// it answered 429 or 5xx, which were sent again.
	acked, retried atomic.Int64
}

// encodedStep is one step of the load: every series' sample at ts, as request
// bodies per sender.
type encodedStep struct {
	ts      int64
	bodies  [][][]byte
	samples int
}

// realTimeLoad sends the load as a scraping Prometheus does: at every interval,
// one sample of every series at the current time, each sender's requests in
// order, to every target (tsdb, and VictoriaMetrics beside it).
type realTimeLoad struct {
	load    rwload.Load
	client  *http.Client
	targets []*target
	log     *slog.Logger

	mu sync.Mutex
	// ackedSteps are the timestamps of the steps the first target (tsdb)
	// acknowledged whole, in increasing order.
	ackedSteps []int64
	skipped    atomic.Int64 // steps skipped because the load fell behind
}

func newRealTimeLoad(l rwload.Load, log *slog.Logger, urls map[string]string, names ...string) *realTimeLoad {
	rt := &realTimeLoad{load: l, log: log, client: &http.Client{
		Timeout:   5 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: l.Senders + 1, DisableCompression: true},
	}}
	for _, name := range names {
		rt.targets = append(rt.targets, &target{name: name, url: urls[name], steps: make(chan encodedStep, 4)})
	}
	return rt
}

// run sends steps until ctx is done, then waits for the steps under way to be
// acknowledged (or given up at ctx's end). It fails on an answer that is not
// to be retried (4xx but 429): the load or the server is broken.
func (rt *realTimeLoad) run(ctx context.Context) error {
	defer rt.client.CloseIdleConnections()
	g, gctx := errgroup.WithContext(ctx)
	for i, t := range rt.targets {
		g.Go(func() error { return rt.work(gctx, t, i == 0) })
	}
	g.Go(func() error {
		defer func() {
			for _, t := range rt.targets {
				close(t.steps)
			}
		}()
		return rt.generate(gctx)
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// generate encodes a step at every interval of the clock and hands it to every
// target's worker.
func (rt *realTimeLoad) generate(ctx context.Context) error {
	stepper := rt.load.NewStepper()
	interval := rt.load.Interval
	next := time.Now().Truncate(interval).Add(interval)
	for {
		if wait := time.Until(next); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		} else if -wait > maxBehind {
			now := time.Now().Truncate(interval)
			skipped := int64(now.Sub(next) / interval)
			rt.skipped.Add(skipped)
			rt.log.Warn("the load fell behind the clock; steps skipped", "behind", -wait, "skipped", skipped)
			next = now
		}
		st := encodedStep{ts: next.UnixMilli(), bodies: make([][][]byte, rt.load.Senders)}
		emit := func(sender int, wr *prompb.WriteRequest) error {
			body, err := rt.load.EncodeRequest(wr)
			if err != nil {
				return err
			}
			st.bodies[sender] = append(st.bodies[sender], body)
			st.samples += len(wr.Timeseries)
			return nil
		}
		if err := stepper.Step(st.ts, emit); err != nil {
			return err
		}
		if err := stepper.Flush(emit); err != nil {
			return err
		}
		for _, t := range rt.targets {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case t.steps <- st:
			}
		}
		next = next.Add(interval)
	}
}

// work sends a target its steps in order, each sender's requests in parallel,
// retrying 429 and 5xx answers with backoff as Prometheus does. first marks
// the target whose acknowledged steps are recorded (tsdb).
func (rt *realTimeLoad) work(ctx context.Context, t *target, first bool) error {
	for st := range t.steps {
		g, gctx := errgroup.WithContext(ctx)
		for sender, bodies := range st.bodies {
			g.Go(func() error {
				for i, body := range bodies {
					if err := rt.post(gctx, t, body); err != nil {
						return fmt.Errorf("%s: step %d, sender %d, request %d: %w", t.name, st.ts, sender, i, err)
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		t.acked.Add(int64(st.samples))
		if first {
			rt.mu.Lock()
			rt.ackedSteps = append(rt.ackedSteps, st.ts)
			rt.mu.Unlock()
		}
	}
	return nil
}

// post sends one request until it is acknowledged, retrying 429 and 5xx
// answers and failed connections with backoff (100 ms doubling to 5 s).
func (rt *realTimeLoad) post(ctx context.Context, t *target, body []byte) error {
	backoff := 100 * time.Millisecond
	for {
		err := rwload.Post(ctx, rt.client, t.url, body, rt.load.V2)
		var se *rwload.StatusError
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &se) && !se.Retriable():
			return err
		}
		t.retried.Add(1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// stepsIn is the number of steps acknowledged whole by the first target with
// timestamps in [from, to] (ms).
func (rt *realTimeLoad) stepsIn(from, to int64) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	lo, _ := slices.BinarySearch(rt.ackedSteps, from)
	hi, found := slices.BinarySearch(rt.ackedSteps, to)
	if found {
		hi++
	}
	return max(0, hi-lo)
}

// lastStep is the timestamp of the newest step the first target acknowledged,
// 0 before the first.
func (rt *realTimeLoad) lastStep() int64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.ackedSteps) == 0 {
		return 0
	}
	return rt.ackedSteps[len(rt.ackedSteps)-1]
}
