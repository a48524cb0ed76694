package compact

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// ErrLeaseLost: a worker no longer holds the lease of a salt (it expired by the
// worker's clock, a renewal failed, or another worker took it over), so it
// stopped working on that salt. The next round tries again.
var ErrLeaseLost = errors.New("lease lost")

// releaseTimeout bounds the release of a lease once its work is done, also when
// the work ended because the worker is stopping (its context is cancelled then):
// a released lease lets another worker take the salt at once rather than after
// the TTL.
const releaseTimeout = 5 * time.Second

// leaser takes, renews and releases the leases of one job for one owner; the
// cells are laid out in schema/lease.go. Every write is a check-and-put on the
// exact value read (or last written), so of two workers that race for one salt
// exactly one wins, and a worker that lost its lease can never write it again.
type leaser struct {
	st    kv.Store
	job   string
	owner string
	ttl   time.Duration
	now   func() time.Time
}

// lease is a lease the leaser's owner holds on one salt. Its methods are safe
// for concurrent use (a Compactor deletes with several calls at once).
type lease struct {
	l    *leaser
	salt byte
	row  []byte

	mu     sync.Mutex
	value  []byte // the cell's value, as this lease last wrote it
	ts     int64  // its cell timestamp, ms
	expiry int64  // ms, by this process's clock
	lost   error  // why the lease is no longer held; nil while it is
}

// margin is how long before its expiry, by its own clock, a holder stops
// working: the allowance for the clocks of two workers disagreeing (another
// worker decides that the lease expired by its own clock). Leases are safe
// while the workers' clocks differ by less than TTL/4 (15s at the default TTL).
func (l *leaser) margin() int64 { return l.ttl.Milliseconds() / 4 }

// acquire takes the lease of salt for ttl. It returns the held lease, or nil and
// the lease that another owner holds (a zero Lease when another worker won a race
// for it just now). The cell is read first:
//
//   - absent: check-and-put with an absent expected value;
//   - held by another owner and not expired by this process's clock: not taken;
//   - expired or released, or held by this owner: check-and-put with the exact
//     value read as the expected value (for this owner's, that renews it).
//
// The new cell's timestamp is max(now, old timestamp + 1): the meta family keeps
// one version, and a put older than the cell it replaces (the old holder's clock
// ran ahead) would be stored but never read.
func (l *leaser) acquire(ctx context.Context, salt byte) (*lease, schema.Lease, error) {
	row := schema.LeaseRow(nil, l.job, salt)
	r, err := l.st.Get(ctx, schema.TableMeta, row, kv.Families(schema.FamilyMeta))
	if err != nil {
		return nil, schema.Lease{}, fmt.Errorf("compact: read the lease of salt %d: %w", salt, err)
	}
	now := l.now().UnixMilli()
	var expected []byte
	ts := now
	for _, c := range r.Cells {
		if c.Family != schema.FamilyMeta || string(c.Qualifier) != schema.QualifierLease || len(c.Value) == 0 {
			continue
		}
		old, err := schema.ParseLeaseValue(c.Value)
		if err != nil {
			return nil, schema.Lease{}, fmt.Errorf("compact: lease of salt %d (row %q): %w", salt, row, err)
		}
		if old.Owner != l.owner && !old.ExpiredAt(now) {
			return nil, old, nil
		}
		expected, ts = c.Value, max(now, c.Timestamp+1)
	}
	h := &lease{l: l, salt: salt, row: row}
	won, err := h.put(ctx, expected, schema.Lease{Owner: l.owner, Expiry: now + l.ttl.Milliseconds()}, ts)
	if err != nil {
		return nil, schema.Lease{}, fmt.Errorf("compact: take the lease of salt %d: %w", salt, err)
	}
	if !won {
		return nil, schema.Lease{}, nil
	}
	return h, schema.Lease{}, nil
}

// put writes v at ts if the cell still holds expected, and remembers it if so.
// The caller holds h.mu or owns h alone.
func (h *lease) put(ctx context.Context, expected []byte, v schema.Lease, ts int64) (bool, error) {
	value, err := schema.AppendLeaseValue(nil, v)
	if err != nil {
		return false, err
	}
	won, err := h.l.st.CheckAndPut(ctx, schema.TableMeta, expected,
		kv.Put(h.row, schema.FamilyMeta, []byte(schema.QualifierLease), ts, value))
	if err != nil || !won {
		return false, err
	}
	h.value, h.ts, h.expiry = value, ts, v.Expiry
	return true, nil
}

// check reports whether the lease is still held, renewing it when half of the
// TTL is gone, and returns how long work may go on before the next check: until
// the lease's expiry less the clock margin. Once it fails it always fails, with
// an error wrapping ErrLeaseLost: the lease expired by this process's clock, or
// the renewal was refused (another owner holds the cell) or failed (the store
// did not answer: whether it was applied is unknown, so the holder stops).
func (h *lease) check(ctx context.Context) (time.Duration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return 0, h.lost
	}
	now := h.l.now().UnixMilli()
	end := h.expiry - h.l.margin()
	if now >= end {
		h.lost = fmt.Errorf("%w: salt %d: the lease ran out at %s (its expiry %s less the %s clock margin) before it was renewed",
			ErrLeaseLost, h.salt, time.UnixMilli(end).UTC().Format(time.RFC3339Nano),
			time.UnixMilli(h.expiry).UTC().Format(time.RFC3339Nano), time.Duration(h.l.margin())*time.Millisecond)
		return 0, h.lost
	}
	if h.expiry-now <= h.l.ttl.Milliseconds()/2 {
		won, err := h.put(ctx, h.value, schema.Lease{Owner: h.l.owner, Expiry: now + h.l.ttl.Milliseconds()}, max(now, h.ts+1))
		switch {
		case err != nil:
			h.lost = fmt.Errorf("%w: salt %d: renewal failed: %w", ErrLeaseLost, h.salt, err)
			return 0, h.lost
		case !won:
			h.lost = fmt.Errorf("%w: salt %d: renewal refused: the lease cell no longer holds this worker's value (taken over after it expired?)",
				ErrLeaseLost, h.salt)
			return 0, h.lost
		}
		end = h.expiry - h.l.margin()
	}
	return time.Duration(end-now) * time.Millisecond, nil
}

// release ends the lease: a check-and-put of an expired value (expiry 0, this
// owner still named) on the value this lease last wrote, so that any worker may
// take the salt at once. Releasing a lease already lost does nothing; after
// release the lease is lost. It runs even when ctx is cancelled (bounded by
// releaseTimeout), as a worker that stops should not keep others waiting a TTL.
func (h *lease) release(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return nil
	}
	h.lost = fmt.Errorf("%w: salt %d: released", ErrLeaseLost, h.salt)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	won, err := h.put(ctx, h.value, schema.Lease{Owner: h.l.owner}, max(h.l.now().UnixMilli(), h.ts+1))
	switch {
	case err != nil:
		return fmt.Errorf("compact: release the lease of salt %d: %w", h.salt, err)
	case !won:
		return fmt.Errorf("compact: release the lease of salt %d: %w: another worker took it over", h.salt, ErrLeaseLost)
	}
	return nil
}

// keepTick is how often, at most, the keeper of a lease checks it: often
// enough that a renewal due at half the TTL is done well before the holder
// stops at three quarters of it.
func (l *leaser) keepTick() time.Duration { return max(l.ttl/16, time.Millisecond) }

// keep keeps the lease while its holder works, however long one call takes:
// a goroutine checks it every keepTick (renewing it when due, see check)
// until the returned stop is called. The returned context is cancelled, with
// the lease's error (wrapping ErrLeaseLost) as its cause, as soon as the lease
// is lost, so that the holder's calls end. stop waits for the goroutine.
//
// The lease only keeps workers from doing the same work twice: what a
// Compactor writes is fenced by check-and-put on what it read (compact.go),
// so a holder whose call outlives its lease cannot undo another's work.
func (h *lease) keep(ctx context.Context) (context.Context, func()) {
	kctx, cancel := context.WithCancelCause(ctx)
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(h.l.keepTick())
		defer t.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-kctx.Done():
				return
			case <-t.C:
				if _, err := h.check(kctx); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return kctx, func() {
		close(stopped)
		<-done
		cancel(nil)
	}
}

// guardedStore is the store as the Compactor of a lease holder sees it: each
// call checks the lease first (renewing it when due) and fails with
// ErrLeaseLost once the lease is lost; a call that ended because its context
// was cancelled by the lease's keeper (keep) says so.
type guardedStore struct {
	kv.Store
	lease *lease
}

// begin checks the lease before a call.
func (g *guardedStore) begin(ctx context.Context) error {
	_, err := g.lease.check(ctx)
	return err
}

// end names a call's error ErrLeaseLost when the lease was lost during it.
func (g *guardedStore) end(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrLeaseLost) {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrLeaseLost) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}

func (g *guardedStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	if err := g.begin(ctx); err != nil {
		return err
	}
	return g.end(ctx, g.Store.Apply(ctx, table, muts))
}

func (g *guardedStore) Get(ctx context.Context, table string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	if err := g.begin(ctx); err != nil {
		return kv.Row{}, err
	}
	r, err := g.Store.Get(ctx, table, row, opts...)
	return r, g.end(ctx, err)
}

func (g *guardedStore) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	if err := g.begin(ctx); err != nil {
		return nil, err
	}
	rs, err := g.Store.GetRows(ctx, table, rows, opts...)
	return rs, g.end(ctx, err)
}

func (g *guardedStore) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	if err := g.begin(ctx); err != nil {
		return errScanner{err}
	}
	return &guardedScanner{Scanner: g.Store.Scan(ctx, table, start, stop, opts...), g: g, ctx: ctx}
}

func (g *guardedStore) Increment(ctx context.Context, table string, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	if err := g.begin(ctx); err != nil {
		return 0, err
	}
	n, err := g.Store.Increment(ctx, table, row, family, qualifier, delta)
	return n, g.end(ctx, err)
}

func (g *guardedStore) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	if err := g.begin(ctx); err != nil {
		return false, err
	}
	won, err := g.Store.CheckAndPut(ctx, table, expected, put)
	return won, g.end(ctx, err)
}

// guardedScanner is a scan of a guardedStore.
type guardedScanner struct {
	kv.Scanner
	g   *guardedStore
	ctx context.Context
}

func (s *guardedScanner) Err() error { return s.g.end(s.ctx, s.Scanner.Err()) }

// errScanner is a scan that failed before it began.
type errScanner struct{ err error }

func (errScanner) Next() bool   { return false }
func (errScanner) Row() kv.Row  { return kv.Row{} }
func (s errScanner) Err() error { return s.err }
func (errScanner) Close() error { return nil }
