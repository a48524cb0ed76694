// Package hbasestore opens kv/hbase stores on the test HBase (see
// testing/hbasetest) under table prefixes of their own, and drops their tables
// when the test ends.
package hbasestore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/hbase"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// NewStore opens a store on the test HBase under a fresh table prefix. Cleanup
// drops every table the test created and closes the store, even if the test closed
// it already.
func NewStore(t testing.TB) *hbase.Store {
	t.Helper()
	zk := hbasetest.ZooKeeper(t)
	prefix := hbasetest.UniquePrefix("t")
	st := Open(t, zk, prefix)
	t.Cleanup(func() {
		st.Close()
		DropPrefix(t, zk, prefix)
	})
	return st
}

// Open opens a store on the HBase at zk with the given table prefix; the test fails
// if it cannot.
func Open(t testing.TB, zk, prefix string) *hbase.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := hbase.Open(ctx, hbase.Options{Quorum: zk, TablePrefix: prefix})
	if err != nil {
		t.Fatalf("open HBase at %s: %v", zk, err)
	}
	return st
}

// DropPrefix drops every table with the given prefix, reporting failures as test
// errors.
func DropPrefix(t testing.TB, zk, prefix string) {
	t.Helper()
	st := Open(t, zk, prefix)
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tables, err := st.ListTables(ctx)
	if err != nil {
		t.Errorf("list tables %s*: %v", prefix, err)
		return
	}
	for _, name := range tables {
		if err := st.DropTable(ctx, name); err != nil && !isNotFound(err) && stillListed(ctx, st, name) {
			t.Errorf("drop table %s%s: %v", prefix, name, err)
		}
	}
}

// stillListed reports whether table is still in the store after a drop that
// failed: HBase may answer a finished (and already evicted) delete procedure's
// poll with "procedure not found" although the table is gone. A table whose
// listing fails counts as still there.
func stillListed(ctx context.Context, st kv.Store, table string) bool {
	tables, err := st.ListTables(ctx)
	return err != nil || slices.Contains(tables, table)
}

func isNotFound(err error) bool {
	return errors.Is(err, kv.ErrTableNotFound)
}
