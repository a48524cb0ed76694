package hbaseadmin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/testing/hbaseadmin"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// TestCompactLeavesOneHFilePerStore writes a two-region table in three flushed
// rounds, so that each store has several HFiles before the major compaction, and
// checks that after Compact each store holds one HFile, and that a second round of
// writes grows the table by about what it wrote.
func TestCompactLeavesOneHFilePerStore(t *testing.T) {
	zk := hbasetest.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := hbaseadmin.RootDir(ctx, zk)
	if err != nil {
		t.Fatal(err)
	}
	prefix := hbasetest.UniquePrefix("adm")
	st := hbasestore.Open(t, zk, prefix)
	t.Cleanup(func() {
		st.Close()
		hbasestore.DropPrefix(t, zk, prefix)
	})
	spec := kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}, SplitKeys: [][]byte{{'m'}}}
	if _, err := st.EnsureTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	table := prefix + spec.Name

	write := func(round int) {
		t.Helper()
		var muts []kv.Mutation
		for i := range 200 {
			for _, first := range []string{"a", "z"} { // one row in each region
				row := fmt.Appendf(nil, "%s-%03d", first, i)
				muts = append(muts, kv.Put(row, "f", fmt.Appendf(nil, "q%d", round), 1000, make([]byte, 100)))
			}
		}
		if err := st.Apply(ctx, spec.Name, muts); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		write(round)
		if err := hbaseadmin.Compact(ctx, zk, table); err != nil {
			t.Fatal(err)
		}
	}
	first, err := hbaseadmin.HFiles(root, table)
	if err != nil {
		t.Fatal(err)
	}
	if first.Stores != 2 || first.Count != 2 || first.Bytes < 3*400*100 || first.FamilyBytes["f"] != first.Bytes {
		t.Fatalf("after 3 rounds of 400 cells of 100 bytes and Compact: %+v, want 2 stores of 1 HFile each, >= 120000 bytes, all in family f", first)
	}

	write(3)
	if err := hbaseadmin.Compact(ctx, zk, table); err != nil {
		t.Fatal(err)
	}
	second, err := hbaseadmin.HFiles(root, table)
	if err != nil {
		t.Fatal(err)
	}
	if second.Count != 2 || second.Bytes < first.Bytes+400*100 || second.Bytes > first.Bytes*2 {
		t.Fatalf("after a 4th round and Compact: %+v (was %+v), want 2 HFiles, grown by >= 40000 bytes and less than doubled", second, first)
	}
}

func TestCompactFailsOnAMissingTable(t *testing.T) {
	zk := hbasetest.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := hbaseadmin.Compact(ctx, zk, hbasetest.UniquePrefix("missing")+"t")
	if err == nil {
		t.Fatal("Compact of a table that does not exist succeeded")
	}
	t.Logf("error as expected: %v", err)
}

func TestRootDirRefusesAnotherInstance(t *testing.T) {
	zk := hbasetest.ZooKeeper(t)
	if _, err := hbaseadmin.RootDir(context.Background(), zk+"0"); err == nil {
		t.Fatalf("RootDir accepted ZooKeeper %s0, which hbase.sh's instance is not", zk)
	}
}
