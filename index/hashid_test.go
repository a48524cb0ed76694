package index_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// TestSeriesHashIsXXH64OfTheForwardRow pins the hash format 2 derives series IDs
// from: changing it would give label sets other IDs in processes of different
// versions that register them at once.
func TestSeriesHashIsXXH64OfTheForwardRow(t *testing.T) {
	if got, want := index.SeriesHash(nil), uint64(0xef46db3751d8e999); got != want {
		t.Errorf("hash of no bytes = %#x, want XXH64's %#x", got, want)
	}
	up := labels.FromStrings("__name__", "up", "instance", "a:9100", "job", "node")
	key, err := schema.SeriesForwardRow(nil, toSchema(up))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\x01__name__\x00up\x00instance\x00a:9100\x00job\x00node\x00"; string(key) != want {
		t.Fatalf("forward row = %q, want %q", key, want)
	}
	if got, want := index.SeriesHash(key), uint64(0xfa8ebc919f09640a); got != want {
		t.Errorf("hash of %q = %#x, want %#x", key, got, want)
	}
}

// formatStores returns n handles on one fresh store of backend b created with
// format version format.
func formatStores(t *testing.T, b schematest.Backend, format, n int) []kv.Store {
	t.Helper()
	b.Settings.FormatVersion = format
	return b.Stores(t, n)
}

// TestFormatDecidesTheIDs: a registry reads the store's format version from its
// meta row (or takes RegistryOptions.FormatVersion) and gives new series counter
// IDs on a format-1 store, hash-derived IDs on a format-2 store.
func TestFormatDecidesTheIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		lbls := []labels.Labels{
			labels.FromStrings("__name__", "fmt", "i", "0"),
			labels.FromStrings("__name__", "fmt", "i", "1"),
			labels.FromStrings("__name__", "fmt", "i", "2"),
		}
		t.Run("a format-1 store keeps counter IDs", func(t *testing.T) {
			st := formatStores(t, b, schema.FormatCounterSeriesIDs, 1)[0]
			ids := resolve(t, index.NewRegistry(st, index.RegistryOptions{}), lbls...)
			if !slices.Equal(ids, []uint64{1, 2, 3}) {
				t.Errorf("IDs on a format-1 store = %v, want [1 2 3]", ids)
			}
			ids = resolve(t, index.NewRegistry(st, index.RegistryOptions{FormatVersion: 1}), labels.FromStrings("__name__", "fmt", "i", "3"))
			if ids[0] != 1001 { // the first registry's block was 1..1000
				t.Errorf("ID with FormatVersion 1 = %d, want 1001", ids[0])
			}
		})
		t.Run("a format-2 store gets hash-derived IDs", func(t *testing.T) {
			st := formatStores(t, b, schema.FormatHashSeriesIDs, 1)[0]
			r := index.NewRegistry(st, index.RegistryOptions{})
			ids := resolve(t, r, lbls...)
			for i, ls := range lbls {
				key, err := schema.SeriesForwardRow(nil, toSchema(ls))
				if err != nil {
					t.Fatal(err)
				}
				if want := index.SeriesHash(key) | index.HashIDBit; ids[i] != want {
					t.Errorf("%s got ID %#x, want %#x", ls, ids[i], want)
				}
			}
			if s := r.Stats(); s.Registered != 3 || s.IDBlocks != 0 || s.Raced != 0 {
				t.Errorf("Stats = %+v, want 3 registered without the counter", s)
			}
			got, err := index.NewRegistry(st, index.RegistryOptions{}).Labels(context.Background(), ids)
			if err != nil {
				t.Fatal(err)
			}
			for i := range lbls {
				if !labels.Equal(got[i], lbls[i]) {
					t.Errorf("Labels(%#x) = %s, want %s", ids[i], got[i], lbls[i])
				}
			}
		})
		t.Run("registering on a store without a schema fails", func(t *testing.T) {
			st := b.Store(t)
			if err := st.DropTable(context.Background(), schema.TableMeta); err != nil {
				t.Fatal(err)
			}
			err := index.NewRegistry(st, index.RegistryOptions{}).Resolve(context.Background(), lbls[:1], make([]uint64, 1))
			if err == nil {
				t.Error("Resolve without a meta table succeeded")
			}
		})
	})
}

// TestSameLabelsSameIDAcrossStores: two processes with nothing in common but the
// label set (two stores, not even one table) give it the same ID.
func TestSameLabelsSameIDAcrossStores(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ls := labels.FromStrings("__name__", "same", "host", "h1")
		a := resolve(t, index.NewRegistry(b.Store(t), index.RegistryOptions{}), ls)[0]
		c := resolve(t, index.NewRegistry(b.Store(t), index.RegistryOptions{}), ls)[0]
		if a != c || a&index.HashIDBit == 0 {
			t.Errorf("IDs on two stores: %#x and %#x, want one hash-derived ID", a, c)
		}
	})
}

// collideWith returns a series hash under which every label set of lbls hashes
// as victim does, and every other as XXH64.
func collideWith(t *testing.T, victim labels.Labels, lbls ...labels.Labels) func([]byte) uint64 {
	t.Helper()
	target, err := schema.SeriesForwardRow(nil, toSchema(victim))
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for _, ls := range lbls {
		k, err := schema.SeriesForwardRow(nil, toSchema(ls))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return func(key []byte) uint64 {
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return index.SeriesHash(target)
			}
		}
		return index.SeriesHash(key)
	}
}

// TestHashCollisions: a series whose hash-derived ID another label set holds
// gets a counter ID (a check-and-put, as on format 1), and both read back.
func TestHashCollisions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		a := labels.FromStrings("__name__", "collide", "i", "a")
		others := []labels.Labels{
			labels.FromStrings("__name__", "collide", "i", "b"),
			labels.FromStrings("__name__", "collide", "i", "c"),
			labels.FromStrings("__name__", "collide", "i", "d"),
		}
		hash := collideWith(t, a, others...)

		t.Run("with a registered series", func(t *testing.T) {
			sts := formatStores(t, b, schema.FormatHashSeriesIDs, 2)
			first := index.NewRegistry(sts[0], index.WithSeriesHash(index.RegistryOptions{}, hash))
			idA := resolve(t, first, a)[0]
			if idA&index.HashIDBit == 0 {
				t.Fatalf("the first series got %#x, want its hash-derived ID", idA)
			}
			// Another process registers one colliding series; then four race on
			// the two others, on two store handles: every one takes the counter
			// path, because the colliding reverse row is durable and stays.
			r := index.NewRegistry(sts[1], index.WithSeriesHash(index.RegistryOptions{}, hash))
			idB := resolve(t, r, others[0])[0]
			if idB == idA || idB&index.HashIDBit != 0 {
				t.Errorf("the colliding series got %#x (the first has %#x), want a counter ID", idB, idA)
			}
			if s := r.Stats(); s.Collisions != 1 || s.Registered != 1 || s.IDBlocks != 1 {
				t.Errorf("Stats = %+v, want 1 collision registered with the counter", s)
			}
			results := make([][]uint64, 4)
			var wg sync.WaitGroup
			for w := range results {
				wg.Go(func() {
					r := index.NewRegistry(sts[w%2], index.WithSeriesHash(index.RegistryOptions{}, hash))
					ids := make([]uint64, 2)
					if err := r.Resolve(ctx, others[1:], ids); err != nil {
						t.Errorf("writer %d: %v", w, err)
					}
					results[w] = ids
				})
			}
			wg.Wait()
			for w := range results {
				if !slices.Equal(results[w], results[0]) {
					t.Errorf("writer %d resolved %v, writer 0 %v", w, results[w], results[0])
				}
			}
			all := []uint64{idA, idB, results[0][0], results[0][1]}
			want := append([]labels.Labels{a}, others...)
			seen := map[uint64]bool{}
			for _, id := range all {
				if seen[id] || id == 0 {
					t.Errorf("IDs %v are not distinct", all)
				}
				seen[id] = true
			}
			fwd := forwardRows(t, sts[0])
			got, err := index.NewRegistry(sts[0], index.RegistryOptions{}).Labels(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			for i := range all {
				if !labels.Equal(got[i], want[i]) {
					t.Errorf("Labels(%#x) = %s, want %s", all[i], got[i], want[i])
				}
				if f := fwd[fmt.Sprint(toSchema(want[i]))]; f != all[i] {
					t.Errorf("forward row of %s = %#x, want %#x", want[i], f, all[i])
				}
			}
			// A registry with the real hash finds them all by their forward rows.
			if again := resolve(t, index.NewRegistry(sts[1], index.RegistryOptions{}), want...); !slices.Equal(again, all) {
				t.Errorf("resolved again: %v, want %v", again, all)
			}
		})

		t.Run("within one batch", func(t *testing.T) {
			st := formatStores(t, b, schema.FormatHashSeriesIDs, 1)[0]
			r := index.NewRegistry(st, index.WithSeriesHash(index.RegistryOptions{}, hash))
			batch := append([]labels.Labels{a}, others...)
			ids := resolve(t, r, batch...)
			if ids[0]&index.HashIDBit == 0 {
				t.Errorf("the first of the batch got %#x, want its hash-derived ID", ids[0])
			}
			for i, id := range ids[1:] {
				if id&index.HashIDBit != 0 || slices.Contains(ids[:i+1], id) {
					t.Errorf("IDs %v: want the colliding ones distinct counter IDs", ids)
				}
			}
			if s := r.Stats(); s.Registered != 4 || s.IDBlocks != 1 {
				t.Errorf("Stats = %+v, want 4 registered, 1 ID block", s)
			}
			got, err := index.NewRegistry(st, index.RegistryOptions{}).Labels(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			for i := range batch {
				if !labels.Equal(got[i], batch[i]) {
					t.Errorf("Labels(%#x) = %s, want %s", ids[i], got[i], batch[i])
				}
			}
		})
	})
}

// failForwardRows is a kv.Store whose Applies of forward registry rows fail:
// a process that dies between a batch's reverse and forward rows.
type failForwardRows struct {
	kv.Store
	mu     sync.Mutex
	healed bool
}

func (s *failForwardRows) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	s.mu.Lock()
	healed := s.healed
	s.mu.Unlock()
	if !healed && table == schema.TableSeries && len(muts) > 0 && muts[0].Row[0] == schema.SeriesForwardKind {
		return errBoom
	}
	return s.Store.Apply(ctx, table, muts)
}

// TestAnInterruptedRegistrationCompletes: when the forward rows of a batch are
// not written after its reverse rows were, the next Resolve (of this process or
// another) completes the registration with the same IDs.
func TestAnInterruptedRegistrationCompletes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		st := formatStores(t, b, schema.FormatHashSeriesIDs, 1)[0]
		fs := &failForwardRows{Store: st}
		lbls := []labels.Labels{
			labels.FromStrings("__name__", "crash", "i", "0"),
			labels.FromStrings("__name__", "crash", "i", "1"),
		}
		ids := make([]uint64, 2)
		if err := index.NewRegistry(fs, index.RegistryOptions{}).Resolve(ctx, lbls, ids); !errors.Is(err, errBoom) {
			t.Fatalf("Resolve with failing forward rows = %v, want errBoom", err)
		}
		if !slices.Equal(ids, []uint64{0, 0}) {
			t.Errorf("ids after the failure = %v, want none", ids)
		}
		if n := len(forwardRows(t, st)); n != 0 {
			t.Fatalf("%d forward rows after the failure, want 0", n)
		}
		fs.mu.Lock()
		fs.healed = true
		fs.mu.Unlock()
		// The reverse rows are there: a new registry completes the registration.
		r := index.NewRegistry(fs, index.RegistryOptions{})
		got := resolve(t, r, lbls...)
		if s := r.Stats(); s.Resumed != 2 || s.Registered != 2 || s.Collisions != 0 {
			t.Errorf("Stats = %+v, want 2 resumed registrations", s)
		}
		fwd := forwardRows(t, st)
		for i, ls := range lbls {
			if got[i]&index.HashIDBit == 0 || fwd[fmt.Sprint(toSchema(ls))] != got[i] {
				t.Errorf("%s resolved to %#x, forward row %#x", ls, got[i], fwd[fmt.Sprint(toSchema(ls))])
			}
		}
		back, err := index.NewRegistry(st, index.RegistryOptions{}).Labels(ctx, got)
		if err != nil || !labels.Equal(back[0], lbls[0]) || !labels.Equal(back[1], lbls[1]) {
			t.Errorf("Labels = %v, %v", back, err)
		}
	})
}
