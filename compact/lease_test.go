package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// clock is a test clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(ms int64) *clock { return &clock{t: time.UnixMilli(ms)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const testTTL = time.Minute

// t0 is the leases' clock at the start of each test.
var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

func newLeaser(st kv.Store, owner string, c *clock) *leaser {
	return &leaser{st: st, job: schema.LeaseJobCompact, owner: owner, ttl: testTTL, now: c.Now}
}

// leaseCell reads the lease cell of salt: its value and timestamp.
func leaseCell(t *testing.T, st kv.Store, salt byte) (schema.Lease, int64) {
	t.Helper()
	r, err := st.Get(context.Background(), schema.TableMeta, schema.LeaseRow(nil, schema.LeaseJobCompact, salt), kv.Families(schema.FamilyMeta))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 1 {
		t.Fatalf("lease row of salt %d has %d cells, want 1: %+v", salt, len(r.Cells), r.Cells)
	}
	l, err := schema.ParseLeaseValue(r.Cells[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return l, r.Cells[0].Timestamp
}

// mustAcquire takes the lease of salt or fails the test.
func mustAcquire(t *testing.T, l *leaser, salt byte) *lease {
	t.Helper()
	h, holder, err := l.acquire(context.Background(), salt)
	if err != nil || h == nil {
		t.Fatalf("%s: acquire salt %d = %v, held by %+v, %v; want it taken", l.owner, salt, h, holder, err)
	}
	return h
}

// mustNotAcquire checks that the lease of salt is held by owner, so l cannot take it.
func mustNotAcquire(t *testing.T, l *leaser, salt byte, owner string) {
	t.Helper()
	h, holder, err := l.acquire(context.Background(), salt)
	if err != nil || h != nil || holder.Owner != owner {
		t.Fatalf("%s: acquire salt %d = %v, held by %+v, %v; want it left to %s", l.owner, salt, h, holder, err, owner)
	}
}

func TestLeaseAcquireRenewRelease(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			sts := b.Stores(t, 2)
			c := newClock(t0)
			a, other := newLeaser(sts[0], "a-1-x", c), newLeaser(sts[1], "b-2-y", c)
			ctx := context.Background()

			h := mustAcquire(t, a, 1)
			if l, ts := leaseCell(t, sts[1], 1); l != (schema.Lease{Owner: "a-1-x", Expiry: t0 + testTTL.Milliseconds()}) || ts != t0 {
				t.Fatalf("after acquire: cell %+v at %d", l, ts)
			}
			mustNotAcquire(t, other, 1, "a-1-x")
			if _, holder, _ := other.acquire(ctx, 2); holder.Owner != "" {
				t.Fatalf("another salt is held by %+v", holder)
			}

			// Less than half the TTL gone: no renewal, and work may go on
			// until the expiry less the margin.
			c.Add(testTTL / 4)
			left, err := h.check(ctx)
			if err != nil || left != testTTL/2 {
				t.Fatalf("check a quarter in = %s, %v; want %s left", left, err, testTTL/2)
			}
			if _, ts := leaseCell(t, sts[1], 1); ts != t0 {
				t.Fatalf("check renewed before half the TTL was gone (cell at %d)", ts)
			}
			// Half gone: check renews.
			c.Add(testTTL / 4)
			now := c.Now().UnixMilli()
			if left, err := h.check(ctx); err != nil || left != 3*testTTL/4 {
				t.Fatalf("check half way = %s, %v; want a renewal and %s left", left, err, 3*testTTL/4)
			}
			if l, ts := leaseCell(t, sts[1], 1); l.Expiry != now+testTTL.Milliseconds() || ts != now {
				t.Fatalf("after renewal: cell %+v at %d, want expiry %d at %d", l, ts, now+testTTL.Milliseconds(), now)
			}

			if err := h.release(ctx); err != nil {
				t.Fatal(err)
			}
			if l, _ := leaseCell(t, sts[1], 1); l != (schema.Lease{Owner: "a-1-x"}) {
				t.Fatalf("after release: cell %+v, want expiry 0", l)
			}
			if _, err := h.check(ctx); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("check after release = %v, want ErrLeaseLost", err)
			}
			// Released: another owner takes it at once.
			mustAcquire(t, other, 1)
			mustNotAcquire(t, a, 1, "b-2-y")
		})
	}
}

// A holder that stops renewing loses its lease: by its own clock at the expiry
// less the margin, and for the others at the expiry, when one of them takes it
// over with a check-and-put on the holder's exact value.
func TestLeaseExpiryTakeover(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			sts := b.Stores(t, 2)
			c := newClock(t0)
			a, other := newLeaser(sts[0], "a", c), newLeaser(sts[1], "b", c)
			ctx := context.Background()
			h := mustAcquire(t, a, 0)

			c.Add(3*testTTL/4 - time.Millisecond)
			mustNotAcquire(t, other, 0, "a")
			c.Add(time.Millisecond) // the expiry less the margin: the holder stops
			if _, err := h.check(ctx); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("check at the expiry less the margin = %v, want ErrLeaseLost", err)
			}
			c.Add(testTTL/4 - time.Millisecond)
			mustNotAcquire(t, other, 0, "a") // still a's for the others

			c.Add(time.Millisecond) // the expiry
			hb := mustAcquire(t, other, 0)
			if l, _ := leaseCell(t, sts[0], 0); l.Owner != "b" {
				t.Fatalf("after the takeover the cell is %+v", l)
			}
			// The old holder can neither work nor release b's lease.
			if _, err := h.check(ctx); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("old holder's check = %v", err)
			}
			if err := h.release(ctx); err != nil {
				t.Fatalf("releasing a lost lease = %v, want nothing done", err)
			}
			if l, _ := leaseCell(t, sts[0], 0); l.Owner != "b" || l.Expiry == 0 {
				t.Fatalf("the old holder's release changed the cell: %+v", l)
			}
			if _, err := hb.check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A worker whose clock is behind the last writer's still writes a visible cell:
// its cell timestamp is one more than the old cell's, not its own now.
func TestLeaseCellTimestampsOnlyGrow(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			sts := b.Stores(t, 2)
			ahead, behind := newClock(t0+10*time.Hour.Milliseconds()), newClock(t0)
			a, other := newLeaser(sts[0], "ahead", ahead), newLeaser(sts[1], "behind", behind)
			ctx := context.Background()
			h := mustAcquire(t, a, 0)
			if err := h.release(ctx); err != nil {
				t.Fatal(err)
			}
			_, released := leaseCell(t, sts[0], 0)
			if released != ahead.Now().UnixMilli()+1 {
				t.Fatalf("release at %d, want one after the acquire's %d", released, ahead.Now().UnixMilli())
			}
			hb := mustAcquire(t, other, 0)
			l, ts := leaseCell(t, sts[0], 0)
			if l != (schema.Lease{Owner: "behind", Expiry: t0 + testTTL.Milliseconds()}) || ts != released+1 {
				t.Fatalf("cell after the takeover: %+v at %d, want behind's lease at %d", l, ts, released+1)
			}
			behind.Add(testTTL / 2)
			if _, err := hb.check(ctx); err != nil {
				t.Fatal(err)
			}
			if l, ts2 := leaseCell(t, sts[0], 0); l.Expiry != t0+3*testTTL.Milliseconds()/2 || ts2 != ts+1 {
				t.Fatalf("cell after the renewal: %+v at %d, want expiry %d at %d", l, ts2, t0+3*testTTL.Milliseconds()/2, ts+1)
			}
		})
	}
}

// Of owners racing for one salt, on separate connections, exactly one wins.
func TestLeaseRaceHasOneWinner(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			const n = 4
			sts := b.Stores(t, n)
			c := newClock(t0)
			for round := range 3 {
				var (
					wg   sync.WaitGroup
					mu   sync.Mutex
					won  []*lease
					errs []error
				)
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						h, _, err := newLeaser(sts[i], fmt.Sprintf("w%d", i), c).acquire(context.Background(), 0)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							errs = append(errs, err)
						}
						if h != nil {
							won = append(won, h)
						}
					}()
				}
				wg.Wait()
				if len(errs) > 0 || len(won) != 1 {
					t.Fatalf("round %d: %d winners, errors %v; want one winner", round, len(won), errs)
				}
				if l, _ := leaseCell(t, sts[0], 0); l.Owner != won[0].l.owner {
					t.Fatalf("round %d: %s won but the cell says %+v", round, won[0].l.owner, l)
				}
				if err := won[0].release(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// failingStore fails every CheckAndPut once fail is set.
type failingStore struct {
	kv.Store
	mu   sync.Mutex
	fail error
}

func (f *failingStore) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *failingStore) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	f.mu.Lock()
	err := f.fail
	f.mu.Unlock()
	if err != nil {
		return false, err
	}
	return f.Store.CheckAndPut(ctx, table, expected, put)
}

// Once its lease is lost, a holder's guarded store refuses every call, whatever
// made it lose the lease.
func TestGuardedStoreRefusesWorkOnceTheLeaseIsLost(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, tc := range []struct {
			name string
			lose func(t *testing.T, st kv.Store, fs *failingStore, c *clock)
			want string
		}{
			{"renewal refused", func(t *testing.T, st kv.Store, _ *failingStore, c *clock) {
				steal(t, st, 0, "thief", c.Now().UnixMilli()+time.Hour.Milliseconds())
				c.Add(testTTL / 2)
			}, "renewal refused"},
			{"renewal failed", func(t *testing.T, _ kv.Store, fs *failingStore, c *clock) {
				fs.setFail(fmt.Errorf("region server gone: %w", kv.ErrUnavailable))
				c.Add(testTTL / 2)
			}, "renewal failed: region server gone"},
			{"lease ran out", func(t *testing.T, _ kv.Store, _ *failingStore, c *clock) {
				c.Add(3 * testTTL / 4)
			}, "the lease ran out"},
		} {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				st := b.Store(t)
				fs := &failingStore{Store: st}
				c := newClock(t0)
				h := mustAcquire(t, newLeaser(fs, "a", c), 0)
				g := &guardedStore{Store: st, lease: h}
				ctx := context.Background()
				if _, err := g.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow)); err != nil {
					t.Fatalf("a call while the lease is held: %v", err)
				}
				tc.lose(t, st, fs, c)
				sc := g.Scan(ctx, schema.TableData, nil, nil)
				if sc.Next() {
					t.Error("a scan returned a row after the lease was lost")
				}
				scanErr := sc.Err()
				sc.Close()
				for name, err := range map[string]error{
					"scan":  scanErr,
					"apply": g.Apply(ctx, schema.TableData, []kv.Mutation{kv.Put([]byte{0, 1}, schema.FamilyRaw, []byte{0, 0, 0, 0}, 1, make([]byte, 8))}),
					"get rows": func() error {
						_, err := g.GetRows(ctx, schema.TableData, [][]byte{{0}})
						return err
					}(),
				} {
					if !errors.Is(err, ErrLeaseLost) {
						t.Errorf("%s after %s = %v, want ErrLeaseLost", name, tc.name, err)
					}
				}
				if _, err := g.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow)); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("the error says %v, want %q", err, tc.want)
				}
			})
		}
	}
}

// steal overwrites the lease of salt with owner's, as a worker that took it over
// would (a newer cell timestamp).
func steal(t *testing.T, st kv.Store, salt byte, owner string, expiry int64) {
	t.Helper()
	_, ts := leaseCell(t, st, salt)
	v, err := schema.AppendLeaseValue(nil, schema.Lease{Owner: owner, Expiry: expiry})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(context.Background(), schema.TableMeta, []kv.Mutation{
		kv.Put(schema.LeaseRow(nil, schema.LeaseJobCompact, salt), schema.FamilyMeta, []byte(schema.QualifierLease), ts+1, v),
	}); err != nil {
		t.Fatal(err)
	}
}
