package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// TestCompactDropsOverwrittenCells writes the same cells of table "big" three times,
// flushing after each round and holding a snapshot of it, and checks that DiskUsage
// sees the three copies before Compact (once the snapshots are released) and one
// after, with the small table's share apart.
func TestCompactDropsOverwrittenCells(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, t.TempDir(), Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, name := range []string{"big", "small"} {
		if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: name, Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
			t.Fatal(err)
		}
	}
	const cells, valueLen = 2000, 512
	round := int64(cells * valueLen) // the values of one round; random, so incompressible
	rng := rand.New(rand.NewPCG(1, 2))
	put := func(table string, n int) {
		t.Helper()
		muts := make([]kv.Mutation, n)
		for i := range muts {
			v := make([]byte, valueLen)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			muts[i] = kv.Put(fmt.Appendf(nil, "row-%05d", i), "f", []byte("q"), 1000, v)
		}
		if err := st.Apply(ctx, table, muts); err != nil {
			t.Fatal(err)
		}
	}
	put("small", cells/10)
	// Pebble compacts on its own whenever it likes; a snapshot after each round keeps
	// that round's versions until the snapshot is closed, whatever Pebble does.
	var snaps []*pebble.Snapshot
	for range 3 {
		put("big", cells)
		if err := st.db.Flush(); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, st.db.NewSnapshot())
	}

	before, err := st.DiskUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range snaps {
		if err := snap.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := st.DiskUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one round %d bytes; before Compact %+v; after %+v", round, before, after)

	if b := before.Tables["big"]; b < 3*round {
		t.Errorf("before Compact, table big: %d bytes, want >= %d (three flushed rounds of %d)", b, 3*round, round)
	}
	if a := after.Tables["big"]; a < round || a > round*3/2 {
		t.Errorf("after Compact, table big: %d bytes, want one round: [%d, %d]", a, round, round*3/2)
	}
	if a := after.Tables["small"]; a < round/10 || a > round/10*3/2 {
		t.Errorf("after Compact, table small: %d bytes, want [%d, %d]", a, round/10, round/10*3/2)
	}
	if after.SSTables < after.Tables["big"]+after.Tables["small"] || after.Files < after.SSTables {
		t.Errorf("after Compact: %+v, want Files >= SSTables >= the tables' sum", after)
	}
}

func TestCompactAndDiskUsageAfterClose(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, t.TempDir(), Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(ctx); err != nil {
		t.Fatalf("Compact of an empty store: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(ctx); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Compact after Close: %v, want kv.ErrClosed", err)
	}
	if _, err := st.DiskUsage(ctx); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("DiskUsage after Close: %v, want kv.ErrClosed", err)
	}
}

func TestCompactHonoursACancelledContext(t *testing.T) {
	st, err := Open(context.Background(), t.TempDir(), Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Compact(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Compact with a cancelled context: %v, want context.Canceled", err)
	}
}
