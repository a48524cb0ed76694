package query

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"go.uber.org/goleak"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// blockingStore is a real store whose data-table scans, after the first pass
// ones, wait for their context to end: they stand for reads in flight that
// only cancellation can stop. Each such scan reports on started when it begins
// to wait and on ended the context's error when it stops waiting, then runs
// for real under the ended context (and so fails as the store fails it).
type blockingStore struct {
	kv.Store
	pass    atomic.Int64
	started chan struct{}
	ended   chan error
}

func newBlockingStore(st kv.Store, pass int64) *blockingStore {
	s := &blockingStore{Store: st, started: make(chan struct{}, 64), ended: make(chan error, 64)}
	s.pass.Store(pass)
	return s
}

func (s *blockingStore) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	if table != schema.TableData || s.pass.Add(-1) >= 0 {
		return s.Store.Scan(ctx, table, start, stop, opts...)
	}
	s.started <- struct{}{}
	<-ctx.Done()
	s.ended <- ctx.Err()
	return s.Store.Scan(ctx, table, start, stop, opts...)
}

// GetRows blocks as Scan does: batched data reads (fetch.go) come this way.
func (s *blockingStore) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	if table != schema.TableData || s.pass.Add(-1) >= 0 {
		return s.Store.GetRows(ctx, table, rows, opts...)
	}
	s.started <- struct{}{}
	<-ctx.Done()
	s.ended <- ctx.Err()
	return s.Store.GetRows(ctx, table, rows, opts...)
}

// awaitStarted waits until n scans are blocked.
func (s *blockingStore) awaitStarted(n int) {
	for range n {
		<-s.started
	}
}

// checkEnded waits until n blocked scans have ended and checks that each saw
// the context end with want.
func (s *blockingStore) checkEnded(t *testing.T, n int, want error) {
	t.Helper()
	for i := range n {
		if err := <-s.ended; !errors.Is(err, want) {
			t.Errorf("blocked scan %d ended with %v, want %v", i, err, want)
		}
	}
}

// fetchFixture writes four series of one host and metric, cpu="0".."3", one
// sample each, and returns the store and its settings.
func fetchFixture(t *testing.T, b schematest.Backend) (kv.Store, schema.Settings) {
	t.Helper()
	b.TableOptions.RawRetention = 0
	st := b.Store(t)
	w, err := write.New(st, b.Settings, nil, nil, write.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var req write.Request
	for i := range 4 {
		req.Series = append(req.Series, write.Series{
			Labels:  labels.FromStrings("__name__", "cpu", "host", "h1", "cpu", fmt.Sprint(i)),
			Samples: []cellenc.Sample{{T: int64(1000 + i), V: float64(i)}},
		})
	}
	if res, err := w.Write(context.Background(), &req); err != nil || res.SamplesWritten != 4 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	return st, b.Settings
}

var cpuMatcher = labels.MustNewMatcher(labels.MatchEqual, "__name__", "cpu")

// TestFetcherStopsItsReads checks that when the consumer of a series set stops
// early — the querier closed, the Select's context cancelled, or simply no
// more Next after some series — every read in flight observes the cancellation
// and no goroutine of the fetcher is left. The tests are not parallel: each
// checks that the goroutines are those from before its Select.
func TestFetcherStopsItsReads(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			st, settings := fetchFixture(t, b)
			setup := func(t *testing.T, concurrency int, pass int64) (*blockingStore, storage.Querier) {
				t.Helper()
				bs := newBlockingStore(st, pass)
				r := NewReader(bs, settings, nil, nil).WithOptions(Options{Concurrency: concurrency, Plan: PlanIndex})
				q, err := r.Querier(0, 10_000)
				if err != nil {
					t.Fatal(err)
				}
				return bs, q
			}

			t.Run("closing the querier while the consumer waits ends every read in flight", func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				bs, q := setup(t, 2, 0)
				ss := q.Select(context.Background(), true, nil, cpuMatcher)
				next := make(chan bool)
				go func() { next <- ss.Next() }()
				bs.awaitStarted(2) // Concurrency reads, none further ahead
				q.Close()
				if <-next {
					t.Fatal("Next = true after Close")
				}
				if err := ss.Err(); !errors.Is(err, context.Canceled) {
					t.Errorf("Err = %v, want context.Canceled", err)
				}
				bs.checkEnded(t, 2, context.Canceled)
			})

			t.Run("cancelling the Select's context ends every read in flight", func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				bs, q := setup(t, 3, 0)
				defer q.Close()
				ctx, cancel := context.WithCancel(context.Background())
				ss := q.Select(ctx, true, nil, cpuMatcher)
				next := make(chan bool)
				go func() { next <- ss.Next() }()
				bs.awaitStarted(3)
				cancel()
				if <-next {
					t.Fatal("Next = true after cancel")
				}
				if err := ss.Err(); !errors.Is(err, context.Canceled) {
					t.Errorf("Err = %v, want context.Canceled", err)
				}
				bs.checkEnded(t, 3, context.Canceled)
			})

			t.Run("a consumer that stops after the first series and closes leaves no read behind", func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				bs, q := setup(t, 1, 1)
				ss := q.Select(context.Background(), true, nil, cpuMatcher)
				if !ss.Next() {
					t.Fatalf("Next = false, Err = %v", ss.Err())
				}
				if got := ss.At().Labels().Get("cpu"); got != "0" {
					t.Errorf("first series has cpu=%q, want 0", got)
				}
				bs.awaitStarted(1) // the second series, read ahead
				q.Close()
				bs.checkEnded(t, 1, context.Canceled)
			})

			t.Run("the chunk querier's series set stops the same way", func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				bs := newBlockingStore(st, 0)
				r := NewReader(bs, settings, nil, nil).WithOptions(Options{Concurrency: 2, Plan: PlanIndex})
				q, err := r.ChunkQuerier(0, 10_000)
				if err != nil {
					t.Fatal(err)
				}
				ss := q.Select(context.Background(), true, nil, cpuMatcher)
				next := make(chan bool)
				go func() { next <- ss.Next() }()
				bs.awaitStarted(2)
				q.Close()
				if <-next {
					t.Fatal("Next = true after Close")
				}
				if err := ss.Err(); !errors.Is(err, context.Canceled) {
					t.Errorf("Err = %v, want context.Canceled", err)
				}
				bs.checkEnded(t, 2, context.Canceled)
			})
		})
	}
}

// TestFetcherTimeout checks that Options.Timeout ends reads that would never
// end otherwise, with errors wrapping context.DeadlineExceeded.
func TestFetcherTimeout(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			st, settings := fetchFixture(t, b)

			t.Run("reads in flight fail when the timeout passes", func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				bs := newBlockingStore(st, 0)
				// The timeout usually leaves the fetcher time to start its reads;
				// on a machine so busy that none started before it, the test
				// still holds: next fails the same way, and no read is left.
				r := NewReader(bs, settings, nil, nil).WithOptions(Options{Concurrency: 2, Timeout: 100 * time.Millisecond, Plan: PlanIndex})
				// The series are selected without the timeout, so that it is the
				// blocked data reads it ends; then the fetcher is set up as Select
				// sets it up.
				ss, err := r.selectSeries(context.Background(), 0, 10_000, 0, []*labels.Matcher{cpuMatcher})
				if err != nil || len(ss) != 4 {
					t.Fatalf("selectSeries = %d series, %v", len(ss), err)
				}
				ctx, cancel := r.withTimeout(context.Background())
				f := newFetcher(ctx, cancel, r, ss, 0, 10_000, rollupPlan{})
				_, _, ok, err := f.next()
				if ok || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("next = %v, %v; want false and an error wrapping context.DeadlineExceeded", ok, err)
				}
				f.close()
				goleak.VerifyNone(t, ignore) // every read has ended
				n := len(bs.started)
				if n > 2 {
					t.Errorf("%d reads were in flight at the timeout, want at most 2 (Concurrency)", n)
				}
				bs.checkEnded(t, n, context.DeadlineExceeded)
			})

			t.Run("a Select past its timeout fails with DeadlineExceeded", func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				// Data reads block until the deadline: whether the index reads
				// finish before it or not, only the timeout can end the Select.
				bs := newBlockingStore(st, 0)
				r := NewReader(bs, settings, nil, nil).WithOptions(Options{Timeout: time.Millisecond, Plan: PlanIndex})
				q, err := r.Querier(0, 10_000)
				if err != nil {
					t.Fatal(err)
				}
				defer q.Close()
				ss := q.Select(context.Background(), true, nil, cpuMatcher)
				for ss.Next() {
					t.Errorf("series %s returned", ss.At().Labels())
				}
				if err := ss.Err(); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Err = %v, want an error wrapping context.DeadlineExceeded", err)
				}
			})
		})
	}
}
