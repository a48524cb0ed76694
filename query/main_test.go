package query

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Every
// store a test opens (Pebble's background work, gohbase's region clients and
// ZooKeeper session) is closed by the test's cleanup, and their goroutines end
// with it — but for one of gohbase's by design: a scanner's Close hands the
// region server's close-scanner RPC to a goroutine of its own
// ((*scanner).closeRegionScanner) and does not wait for it, so on a busy HBase
// it can still be sending when the tests end (it failed a make test once,
// blocked in sendBlocking). Only a goroutine blocked at the top in gohbase's
// sendBlocking is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/tsuna/gohbase.sendBlocking"))
}
