package query

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. No
// dependency goroutine needs ignoring: every store a test opens (Pebble's
// background work, gohbase's region clients and ZooKeeper session) is closed
// by the test's cleanup, and their goroutines end with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
