// Package hbasetest gives tests the real HBase that testing/hbase/hbase.sh started:
// its ZooKeeper address, and stores on it under a table prefix of their own so that
// tests run in parallel and leave nothing behind. Tests that need HBase skip when
// none is configured, except under `make test` and CI, which set
// TSDB_TEST_REQUIRE_HBASE=1 and so turn a missing HBase into a failure.
package hbasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/storage"
	"github.com/hbtsdb/hbtsdb/storage/hbase"
)

// Environment variables that configure HBase tests.
const (
	// EnvZooKeeper holds the ZooKeeper address of the test HBase (host:port).
	EnvZooKeeper = "TSDB_TEST_HBASE_ZK"
	// EnvRequire, when "1", makes a missing EnvZooKeeper a test failure.
	EnvRequire = "TSDB_TEST_REQUIRE_HBASE"
)

// ZooKeeper returns the test HBase's ZooKeeper address, or skips the test (fails it
// when HBase is required) if there is none.
func ZooKeeper(t testing.TB) string {
	t.Helper()
	zk := os.Getenv(EnvZooKeeper)
	if zk != "" {
		return zk
	}
	msg := fmt.Sprintf("no HBase: set %s to a ZooKeeper address; `zk=$(testing/hbase/hbase.sh start)` starts one (make test does)", EnvZooKeeper)
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s is 1 but %s", EnvRequire, msg)
	}
	t.Skip(msg)
	return ""
}

// UniquePrefix returns a table prefix no other test uses.
func UniquePrefix(name string) string {
	return fmt.Sprintf("%s%d%04d-", name, time.Now().UnixMilli()%1_000_000_000, rand.IntN(10000))
}

// NewStore opens a store on the test HBase under a fresh table prefix. Cleanup
// drops every table the test created and closes the store, even if the test closed
// it already.
func NewStore(t testing.TB) *hbase.Store {
	t.Helper()
	zk := ZooKeeper(t)
	prefix := UniquePrefix("t")
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
		if err := st.DropTable(ctx, name); err != nil && !isNotFound(err) {
			t.Errorf("drop table %s%s: %v", prefix, name, err)
		}
	}
}

func isNotFound(err error) bool {
	return errors.Is(err, storage.ErrTableNotFound)
}
