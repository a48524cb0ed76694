package downsample

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
		return nil, schema.Lease{}, fmt.Errorf("downsample: read the lease of salt %d: %w", salt, err)
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
			return nil, schema.Lease{}, fmt.Errorf("downsample: lease of salt %d (row %q): %w", salt, row, err)
		}
		if old.Owner != l.owner && !old.ExpiredAt(now) {
			return nil, old, nil
		}
		expected, ts = c.Value, max(now, c.Timestamp+1)
	}
	h := &lease{l: l, salt: salt, row: row}
	won, err := h.put(ctx, expected, schema.Lease{Owner: l.owner, Expiry: now + l.ttl.Milliseconds()}, ts)
	if err != nil {
		return nil, schema.Lease{}, fmt.Errorf("downsample: take the lease of salt %d: %w", salt, err)
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
		return fmt.Errorf("downsample: release the lease of salt %d: %w", h.salt, err)
	case !won:
		return fmt.Errorf("downsample: release the lease of salt %d: %w: another worker took it over", h.salt, ErrLeaseLost)
	}
	return nil
}

// guardedStore is the store as the Compactor of a lease holder sees it: each
// call checks the lease first (renewing it when due) and fails with
// ErrLeaseLost once the lease is lost, and runs with a deadline at the lease's
// end less the clock margin, so that no call of this holder is still running
// when another worker may take the salt over. (An HBase write already sent when
// its deadline passes may still be applied; the margin is the allowance for it.)
// The Compactor calls the store before every step of every batch, so work stops
// within one call of the lease being lost.
type guardedStore struct {
	kv.Store
	lease *lease
	// rowsRead, if set, is told how many rows each GetRows read: a batch.
	rowsRead func(n int)
}

// begin checks the lease and returns the context of one call.
func (g *guardedStore) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	left, err := g.lease.check(ctx)
	if err != nil {
		return nil, nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, left)
	return callCtx, cancel, nil
}

// end names a call's error ErrLeaseLost when the call outlived the lease.
func (g *guardedStore) end(parent, callCtx context.Context, err error) error {
	if err != nil && parent.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: salt %d: a call outlived the lease: %w", ErrLeaseLost, g.lease.salt, err)
	}
	return err
}

func (g *guardedStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	callCtx, cancel, err := g.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return g.end(ctx, callCtx, g.Store.Apply(callCtx, table, muts))
}

func (g *guardedStore) Get(ctx context.Context, table string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	callCtx, cancel, err := g.begin(ctx)
	if err != nil {
		return kv.Row{}, err
	}
	defer cancel()
	r, err := g.Store.Get(callCtx, table, row, opts...)
	return r, g.end(ctx, callCtx, err)
}

func (g *guardedStore) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	callCtx, cancel, err := g.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rs, err := g.Store.GetRows(callCtx, table, rows, opts...)
	if err == nil && g.rowsRead != nil {
		g.rowsRead(len(rows))
	}
	return rs, g.end(ctx, callCtx, err)
}

func (g *guardedStore) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	callCtx, cancel, err := g.begin(ctx)
	if err != nil {
		return errScanner{err}
	}
	return &guardedScanner{Scanner: g.Store.Scan(callCtx, table, start, stop, opts...), g: g, parent: ctx, ctx: callCtx, cancel: cancel}
}

func (g *guardedStore) Increment(ctx context.Context, table string, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	callCtx, cancel, err := g.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	n, err := g.Store.Increment(callCtx, table, row, family, qualifier, delta)
	return n, g.end(ctx, callCtx, err)
}

func (g *guardedStore) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	callCtx, cancel, err := g.begin(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	won, err := g.Store.CheckAndPut(callCtx, table, expected, put)
	return won, g.end(ctx, callCtx, err)
}

// guardedScanner is a scan of a guardedStore: the whole scan is one call.
type guardedScanner struct {
	kv.Scanner
	g           *guardedStore
	parent, ctx context.Context
	cancel      context.CancelFunc
}

func (s *guardedScanner) Err() error { return s.g.end(s.parent, s.ctx, s.Scanner.Err()) }

func (s *guardedScanner) Close() error {
	err := s.Scanner.Close()
	s.cancel()
	return err
}

// errScanner is a scan that failed before it began.
type errScanner struct{ err error }

func (errScanner) Next() bool   { return false }
func (errScanner) Row() kv.Row  { return kv.Row{} }
func (s errScanner) Err() error { return s.err }
func (errScanner) Close() error { return nil }
