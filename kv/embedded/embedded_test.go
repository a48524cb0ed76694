package embedded

import (
	"context"
	"errors"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/kvtest"
)

// newStore opens a fresh store in a temporary directory, closed when the test ends
// (a store the test closed itself is fine).
func newStore(t testing.TB) kv.Store {
	t.Helper()
	st, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

func TestConformance(t *testing.T) {
	kvtest.Run(t, newStore)
}

func BenchmarkStore(b *testing.B) {
	kvtest.Bench(b, newStore)
}
