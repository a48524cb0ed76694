package kvmetrics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
)

// The tombstone counter sums what the wrapped stores counted, across a Close
// and a reopen, and the wrapper passes a store's own counts through.
func TestTombstonesAreExportedAndPassedThrough(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	reg := prometheus.NewPedanticRegistry()
	m := New("embedded", reg)
	open := func() kv.Store {
		raw, err := embedded.Open(ctx, dir, embedded.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return m.Wrap(raw)
	}
	apply := func(st kv.Store, muts ...kv.Mutation) {
		t.Helper()
		if err := st.Apply(ctx, "t", muts); err != nil {
			t.Fatal(err)
		}
	}
	want := func(point, rng int) {
		t.Helper()
		exp := fmt.Sprintf(`
# HELP hbtsdb_kv_tombstones_total Tombstones the store's deletes left behind (kv.Tombstones), by kind: point (one column or cell version; embedded: Pebble point deletions, HBase: DeleteColumn markers) or range (many cells; embedded: Pebble range deletions, HBase: DeleteFamily markers and row deletes).
# TYPE hbtsdb_kv_tombstones_total counter
hbtsdb_kv_tombstones_total{backend="embedded",kind="point"} %d
hbtsdb_kv_tombstones_total{backend="embedded",kind="range"} %d
`, point, rng)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "hbtsdb_kv_tombstones_total"); err != nil {
			t.Fatal(err)
		}
	}

	st := open()
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	want(0, 0)
	apply(st, kv.Put([]byte("a"), "f", []byte("x"), 1, nil), kv.Put([]byte("a"), "f", []byte("y"), 1, nil),
		kv.Put([]byte("b"), "f", []byte("x"), 1, nil))
	apply(st, kv.DeleteFamily([]byte("a"), "f", 1), kv.DeleteColumn([]byte("b"), "f", []byte("x"), 1))
	tc, ok := st.(kv.TombstoneCounter)
	if !ok {
		t.Fatalf("the wrapper %T of an embedded store is not a kv.TombstoneCounter", st)
	}
	if got, wantN := tc.Tombstones(), (kv.Tombstones{Point: 1, Range: 1}); got != wantN {
		t.Fatalf("Tombstones() = %+v, want %+v", got, wantN)
	}
	want(1, 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st.Close() // a second Close counts nothing twice
	want(1, 1)

	st = open()
	defer st.Close()
	apply(st, kv.DeleteRow([]byte("b"), kv.MaxTimestamp))
	if got, wantN := st.(kv.TombstoneCounter).Tombstones(), (kv.Tombstones{Range: 1}); got != wantN {
		t.Fatalf("Tombstones() of the reopened store = %+v, want %+v (counted since it was opened)", got, wantN)
	}
	want(1, 2)

	// A store that does not count its tombstones: the wrapper does not claim to.
	hidden := struct{ kv.Store }{st}
	if w, ok := New("other", prometheus.NewRegistry()).Wrap(hidden).(kv.TombstoneCounter); ok {
		t.Fatalf("the wrapper of a store without Tombstones is a kv.TombstoneCounter (%T)", w)
	}
}
