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

var errBoom = errors.New("boom")

// failOneClaim is a kv.Store whose CheckAndPut of the forward row failRow fails
// with errBoom once the other `others` CheckAndPuts have started, and whose other
// CheckAndPuts block until their context is done, recording its cause.
type failOneClaim struct {
	kv.Store
	failRow []byte
	others  int
	arrived chan struct{} // one send per blocked call

	mu     sync.Mutex
	causes []error // context.Cause of each blocked call's context
	healed bool    // every call goes to the store
}

func (s *failOneClaim) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	if s.healed {
		return s.Store.CheckAndPut(ctx, table, expected, put)
	}
	if bytes.Equal(put.Row, s.failRow) {
		for range s.others {
			<-s.arrived
		}
		return false, errBoom
	}
	select {
	case s.arrived <- struct{}{}:
	case <-ctx.Done():
	}
	<-ctx.Done()
	s.mu.Lock()
	s.causes = append(s.causes, context.Cause(ctx))
	s.mu.Unlock()
	return false, ctx.Err()
}

// TestTheFirstFailedClaimCancelsTheOthers: when the check-and-put of one new
// series fails, Resolve cancels those still running, returns that first error, and
// caches none of the series it did not register: a retry registers them all.
func TestTheFirstFailedClaimCancelsTheOthers(t *testing.T) {
	// What is tested is the registry's, not the store's: the embedded store will
	// do. Check-and-puts are format 1's (and format 2's hash collisions').
	b := schematest.Backends()[0]
	b.Settings.FormatVersion = schema.FormatCounterSeriesIDs
	st := b.Store(t)
	lbls := []labels.Labels{
		labels.FromStrings("__name__", "claim", "i", "0"),
		labels.FromStrings("__name__", "claim", "i", "1"),
		labels.FromStrings("__name__", "claim", "i", "2"),
	}
	failRow, err := schema.SeriesForwardRow(nil, toSchema(lbls[1]))
	if err != nil {
		t.Fatal(err)
	}
	fs := &failOneClaim{Store: st, failRow: failRow, others: 2, arrived: make(chan struct{}, 2)}
	r := index.NewRegistry(fs, index.RegistryOptions{RegisterParallelism: 3})

	ids := make([]uint64, len(lbls))
	err = r.Resolve(context.Background(), lbls, ids)
	if want := `index: register series {__name__="claim", i="1"}: boom`; err == nil || err.Error() != want || !errors.Is(err, errBoom) {
		t.Errorf("Resolve = %v, want %s", err, want)
	}
	if len(fs.causes) != 2 {
		t.Fatalf("%d check-and-puts were blocked, want 2", len(fs.causes))
	}
	for i, c := range fs.causes {
		if !errors.Is(c, errBoom) {
			t.Errorf("blocked check-and-put %d was ended by %v, want the cancellation caused by the first error", i, c)
		}
	}
	if want := []uint64{0, 0, 0}; !slices.Equal(ids, want) {
		t.Errorf("ids after the failure = %v, want %v", ids, want)
	}
	if s := r.Stats(); s.Registered != 0 || s.Raced != 0 {
		t.Errorf("Stats after the failure = %+v, want nothing registered", s)
	}

	// Nothing unregistered was cached: once the store is healthy, the registry that
	// failed registers all three, with the IDs their forward rows hold.
	fs.healed = true
	got := resolve(t, r, lbls...)
	fwd := forwardRows(t, st)
	for i, ls := range lbls {
		if want := fwd[fmt.Sprint(toSchema(ls))]; got[i] != want || want == 0 {
			t.Errorf("after the retry %s resolves to %d, its forward row says %d", ls, got[i], want)
		}
	}
	if s := r.Stats(); s.Registered != 3 {
		t.Errorf("Stats after the retry = %+v, want 3 registered", s)
	}
}
