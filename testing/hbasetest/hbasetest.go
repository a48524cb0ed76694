// Package hbasetest tells tests where the real HBase that testing/hbase/hbase.sh
// started is, and gives them table prefixes of their own so that they run in
// parallel and leave nothing behind. Tests that need HBase skip when none is
// configured, except under `make test` and CI, which set TSDB_TEST_REQUIRE_HBASE=1
// and so turn a missing HBase into a failure (testing/testenv). It imports no kv package, so
// kv/hbase's own tests can use it; testing/hbasestore opens stores.
package hbasetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/testenv"
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
	testenv.Missing(t, EnvRequire, fmt.Sprintf("no HBase: set %s to a ZooKeeper address; `zk=$(testing/hbase/hbase.sh start)` starts one (make test does)", EnvZooKeeper))
	return ""
}

// UniquePrefix returns a table prefix no other test uses.
func UniquePrefix(name string) string {
	return fmt.Sprintf("%s%d%04d-", name, time.Now().UnixMilli()%1_000_000_000, rand.IntN(10000))
}
