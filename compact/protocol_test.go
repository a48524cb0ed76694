package compact

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// tombstones returns what st's deletes left behind so far.
func tombstones(t *testing.T, st kv.Store) kv.Tombstones {
	t.Helper()
	tc, ok := st.(kv.TombstoneCounter)
	if !ok {
		t.Fatalf("%T counts no tombstones", st)
	}
	return tc.Tombstones()
}

// compactionTombstones is what compaction's deletes leave on backend, given
// inFiles, what they leave where raw cells and marks are in the store's files.
// On the embedded store they live in its head (schema.Transient) until
// compaction deletes them, and leave no tombstone at all.
func compactionTombstones(backend string, inFiles kv.Tombstones) kv.Tombstones {
	if backend == "embedded" {
		return kv.Tombstones{}
	}
	return inFiles
}

// Compacting rows of on-time samples deletes each row's raw cells with one
// family delete (one DeleteFamily marker on HBase) and its pending mark with
// one column delete: never a tombstone per sample. A late sample costs a
// column delete of its own. On the embedded store, none of it leaves a
// tombstone.
func TestCompactionLaysOneTombstonePerRow(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b)
			before := tombstones(t, f.st)
			st, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background())
			if err != nil || st.Rows != 9 || st.RawCells != 9*240 {
				t.Fatalf("Compact = %+v, %v; want 9 rows of 240 samples", st, err)
			}
			after := tombstones(t, f.st)
			if got, want := (kv.Tombstones{Point: after.Point - before.Point, Range: after.Range - before.Range}), compactionTombstones(b.Name, kv.Tombstones{Point: 9, Range: 9}); got != want {
				t.Errorf("compacting 9 rows left %+v, want %+v: a range per row's raw cells, a point per mark", got, want)
			}

			// Two late samples into one compacted bucket, in two requests.
			ls := f.series[1]
			for _, ts := range []int64{day0 + 1_000, day0 + 2_000} {
				f.write(t, write.Request{Series: []write.Series{{Labels: ls, Samples: []cellenc.Sample{{T: ts, V: -1}}}}})
			}
			before = tombstones(t, f.st)
			st, err = f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background())
			if err != nil || st.Rows != 1 || st.RawCells != 2 {
				t.Fatalf("the next pass = %+v, %v; want the row of the late samples", st, err)
			}
			after = tombstones(t, f.st)
			if got, want := (kv.Tombstones{Point: after.Point - before.Point, Range: after.Range - before.Range}), compactionTombstones(b.Name, kv.Tombstones{Point: 2 + 2}); got != want {
				t.Errorf("compacting two late samples left %+v, want %+v: a point per late cell and per mark", got, want)
			}
		})
	}
}

// Two compactors on one salt at once — one whose lease ran out while it
// worked, another that took over — never undo each other's work, whatever
// the interleaving, even with a late sample written in between: every cell
// each writes is a check-and-put on what it read before the samples it
// summarises. The one that lost the race leaves the rows it could not write,
// deletes nothing of them, and the store ends with every sample, each chunk
// and rollup cell made from all of its bucket's samples.
func TestCompactorsRacingOnOneSaltUndoNothing(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, step := range []string{"rollups written", "chunks written"} {
			t.Run(b.Name+"/the other runs after "+step, func(t *testing.T) {
				f := newFixture(t, b)
				late := cellenc.Sample{T: day0 + 7_500, V: -1}
				st := f.compactRacedAfter(t, step, late, testRollups)
				if step == "rollups written" && st.Conflicts != 1 {
					t.Errorf("the slow compactor = %+v, want 1 conflict: its chunk cell changed under it", st)
				}
				got := f.samples(t)
				found := false
				for _, s := range got[0] {
					found = found || s == late
				}
				if !found {
					t.Errorf("the late sample %v was lost", late)
				}
				if _, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background()); err != nil { // the other salts
					t.Fatal(err)
				}
				f.checkRollups(t, testRollups, f.samples(t))
				if raw, chunk, _ := f.cells(t); raw != 3*80 || chunk != 9 {
					t.Errorf("%d raw cells, %d chunks; want 240 (the open bucket's) and 9", raw, chunk)
				}
			})
		}
	}
}

// compactRacedAfter compacts the salt of h1 with testRollups, one row per
// batch; while that compactor is between step and the next of its first row
// (h1's row of bucket day0, the first its salt's marks name: salt, bucket,
// then host order), late arrives in that row and another compactor, of
// otherRollups, does the whole salt. It returns the first compactor's Stats.
func (f *fixture) compactRacedAfter(t *testing.T, step string, late cellenc.Sample, otherRollups []schema.Rollup) Stats {
	t.Helper()
	salt := schema.Salt("h1", f.settings.Salts)
	ran := false
	slow := f.compactor(t, Options{Rollups: testRollups, BatchRows: 1, afterStep: func(s string) error {
		if s != step || ran {
			return nil
		}
		ran = true
		f.write(t, write.Request{Series: []write.Series{{Labels: f.series[0], Samples: []cellenc.Sample{late}}}})
		if _, err := f.compactor(t, Options{Rollups: otherRollups}).CompactSalt(context.Background(), salt); err != nil {
			t.Errorf("the other compactor: %v", err)
		}
		return nil
	}})
	st, err := slow.CompactSalt(context.Background(), salt)
	if err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the other compactor never ran")
	}
	return st
}

// Two compactors with different resolution lists on one salt (a rolling
// change of --rollups, a tsdb compact started with the old list): the one
// whose list lacks 1h, compacting a row again with a late sample between the
// other's steps, makes the 1h cells of the rows it compacts void instead of
// leaving the other's cell of fewer samples behind; every
// cell not void is made from all of its bucket's samples.
func TestCompactorsWithDifferentListsLeaveNoStaleCell(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, step := range []string{"rollups written", "chunks written"} {
			t.Run(b.Name+"/the other runs after "+step, func(t *testing.T) {
				f := newFixture(t, b)
				only5m := testRollups[:1]
				f.compactRacedAfter(t, step, cellenc.Sample{T: day0 + 7_500, V: -1}, only5m)
				if _, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background()); err != nil { // the other salts
					t.Fatal(err)
				}
				samples := f.samples(t)
				f.checkRollups(t, only5m, samples)
				want, got := f.wantRollups(t, testRollups[1:], samples), f.gotRollups(t, testRollups[1:])
				voids := 0
				for name, w := range want {
					switch g := got[name]; {
					case strings.HasSuffix(g, " void"):
						voids++
					case g != w:
						t.Errorf("1h rollup cell %s = %s, want %s (or void)", name, g, w)
					}
				}
				// The other compactor did the rows it found: their 1h cells
				// are void, the raced one's included.
				if voids == 0 || len(got) != len(want) {
					t.Errorf("%d void 1h cells of %d, %d expected; want the rows the other compacted void", voids, len(got), len(want))
				}
			})
		}
	}
}

// A store whose pending table was added after it held data (written by an
// older tsdb, which marked no row) gets its unmarked raw cells compacted: each
// pass sweeps the salt until one has sealed the bucket of that moment, and
// none does after.
func TestUnmarkedRowsOfAnUpgradedStoreAreSwept(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			// The older tsdb's store: no marks, and the moment the table
			// was added recorded, as provision does, at day0+3h30m.
			if err := f.st.DropTable(ctx, schema.TablePending); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.EnsureTable(ctx, schema.PendingTable(b.TableOptions)); err != nil {
				t.Fatal(err)
			}
			if err := f.st.Apply(ctx, schema.TableMeta, []kv.Mutation{kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta,
				[]byte(schema.QualifierPendingSince), 1, []byte(strconv.FormatInt(f.now.UnixMilli(), 10)))}); err != nil {
				t.Fatal(err)
			}
			before := f.dump(t)
			st, err := f.compactor(t, Options{}).Compact(ctx)
			if err != nil || st.Rows != 9 {
				t.Fatalf("the first pass = %+v, %v; want the 9 sealed rows found by a sweep", st, err)
			}
			if after := f.dump(t); after != before {
				t.Errorf("samples changed:\nbefore %s\nafter  %s", before, after)
			}
			// The bucket of day0+3h30m is not sealed yet: the next pass sweeps
			// again (and finds nothing)...
			st, err = f.compactor(t, Options{}).Compact(ctx)
			if err != nil || st.Rows != 0 {
				t.Fatalf("the second pass = %+v, %v; want nothing compacted", st, err)
			}
			// ... until a pass seals it. Then the sweep is over: the open
			// bucket's 240 raw cells are the last unmarked ones.
			f.now = f.now.Add(time.Hour)
			st, err = f.compactor(t, Options{}).Compact(ctx)
			if err != nil || st.Rows != 3 {
				t.Fatalf("the pass that seals day0+3h = %+v, %v; want its 3 rows, unmarked, found by a sweep", st, err)
			}
			f.writeOnTime(t, write.Request{Series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "host", "h3", "job", "node"),
				Samples: []cellenc.Sample{{T: day0 + 4*hour + 1000, V: 1}}}}})
			f.now = f.now.Add(time.Hour)
			st, err = f.compactor(t, Options{}).Compact(ctx)
			if err != nil || st.Rows != 1 || st.RowsRead != 1 {
				t.Fatalf("a pass after the sweeps = %+v, %v; want the one marked row read and compacted, nothing swept", st, err)
			}
		})
	}
}

// A Worker keeps its lease while one call of its Compactor runs longer than
// the lease's TTL: the lease's keeper renews it in the background, so the
// round ends with the salt compacted, not lost.
func TestLeaseIsRenewedWhileACallRunsLong(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f, _ := newSaltedFixture(t, b, 1, 1)
			c := newClock(f.now.UnixMilli())
			ttl := MinLeaseTTL
			st := &stallingStore{Store: f.st, stall: func(ctx context.Context) error {
				// Three renewals' worth of the worker's clock passes while
				// the call is held; each step waits for the keeper to renew.
				for range 3 {
					_, ts := leaseCell(t, f.st, 0)
					c.Add(ttl / 2)
					for {
						if _, now := leaseCell(t, f.st, 0); now > ts {
							break
						}
						select {
						case <-ctx.Done():
							return context.Cause(ctx)
						case <-time.After(time.Millisecond):
						}
					}
				}
				return nil
			}}
			w := f.workerOn(t, st, "w", c, WorkerOptions{LeaseTTL: ttl})
			rs, err := w.RunOnce(context.Background())
			if err != nil || rs.Salts != 1 || rs.Rows != f.sealedRows() {
				t.Fatalf("round = %+v, %v; want the salt's %d rows compacted under a lease kept all along", rs, err, f.sealedRows())
			}
			if !st.stalled {
				t.Fatal("no call was held")
			}
		})
	}
}

// stallingStore holds the first GetRows of the data table in stall.
type stallingStore struct {
	kv.Store
	stall   func(ctx context.Context) error
	stalled bool
}

func (s *stallingStore) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	if table == schema.TableData && !s.stalled {
		s.stalled = true
		if err := s.stall(ctx); err != nil {
			return nil, errors.Join(err, ctx.Err())
		}
	}
	return s.Store.GetRows(ctx, table, rows, opts...)
}
