package kv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
)

const applyTable = "t"

// newEmbedded opens an embedded store with table applyTable (family "f"),
// closed when the test ends.
func newEmbedded(t *testing.T) kv.Store {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: applyTable, Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	return st
}

// puts returns n puts, one per row r000, r001, ...
func puts(n int) []kv.Mutation {
	muts := make([]kv.Mutation, n)
	for i := range muts {
		muts[i] = kv.Put(fmt.Appendf(nil, "r%03d", i), "f", []byte("q"), 1, []byte("v"))
	}
	return muts
}

// recordingStore records the rows of every Apply it passes on and the most
// Applies in flight at once; block, when set, decides per Apply whether it
// waits for its context to be done (recording the cause) instead, and fail
// whether it fails at once with errBoom after the blocked ones arrived.
type recordingStore struct {
	kv.Store
	fail    func(muts []kv.Mutation) bool
	block   func(muts []kv.Mutation) bool
	arrived chan struct{} // one send per blocked Apply
	waitFor int           // blocked Applies a failing one waits for

	mu       sync.Mutex
	applies  int
	rows     map[string]int
	inFlight int
	most     int
	causes   []error
}

var errBoom = errors.New("boom")

func (s *recordingStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	s.mu.Lock()
	s.applies++
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	switch {
	case s.fail != nil && s.fail(muts):
		for range s.waitFor {
			<-s.arrived
		}
		return errBoom
	case s.block != nil && s.block(muts):
		s.arrived <- struct{}{}
		<-ctx.Done()
		s.mu.Lock()
		s.causes = append(s.causes, context.Cause(ctx))
		s.mu.Unlock()
		return ctx.Err()
	}
	if err := s.Store.Apply(ctx, table, muts); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[string]int{}
	}
	for _, m := range muts {
		s.rows[string(m.Row)]++
	}
	return nil
}

func TestApplyBatchesAppliesEveryMutationOnceInBoundedBatches(t *testing.T) {
	for _, tc := range []struct {
		name             string
		n                int
		opts             kv.ApplyOptions
		applies, maxMost int
	}{
		{"no mutations apply nothing", 0, kv.ApplyOptions{}, 0, 0},
		{"fewer than a batch are one Apply", 7, kv.ApplyOptions{MaxBatch: 10}, 1, 1},
		{"exactly a batch is one Apply", 10, kv.ApplyOptions{MaxBatch: 10}, 1, 1},
		{"more are cut into batches, the last one short", 25, kv.ApplyOptions{MaxBatch: 4, Concurrency: 3}, 7, 3},
		{"one at a time", 9, kv.ApplyOptions{MaxBatch: 2, Concurrency: 1}, 5, 1},
		{"the defaults take 10,000 per Apply", 10_001, kv.ApplyOptions{}, 2, kv.DefaultApplyConcurrency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := &recordingStore{Store: newEmbedded(t)}
			muts := puts(tc.n)
			if err := kv.ApplyBatches(ctx, st, applyTable, muts, tc.opts); err != nil {
				t.Fatal(err)
			}
			if st.applies != tc.applies || st.most > tc.maxMost {
				t.Errorf("%d Applies, at most %d at once; want %d, at most %d", st.applies, st.most, tc.applies, tc.maxMost)
			}
			for _, m := range muts {
				if n := st.rows[string(m.Row)]; n != 1 {
					t.Fatalf("row %s applied %d times, want once", m.Row, n)
				}
			}
			if len(st.rows) != tc.n {
				t.Errorf("%d rows applied, want %d", len(st.rows), tc.n)
			}
			rows := 0
			sc := st.Scan(ctx, applyTable, nil, nil)
			defer sc.Close()
			for sc.Next() {
				rows++
			}
			if err := sc.Err(); err != nil || rows != tc.n {
				t.Errorf("the store holds %d rows (%v), want %d", rows, err, tc.n)
			}
		})
	}
}

// TestTheFirstFailedBatchCancelsTheOthers: the batches in flight when one
// fails are cancelled with its error as the cause, and that error is
// returned, naming its batch.
func TestTheFirstFailedBatchCancelsTheOthers(t *testing.T) {
	muts := puts(12)
	failing := func(b []kv.Mutation) bool { return string(b[0].Row) == "r008" }
	st := &recordingStore{Store: newEmbedded(t), fail: failing, waitFor: 2, arrived: make(chan struct{}, 2),
		block: func(b []kv.Mutation) bool { return !failing(b) }}
	err := kv.ApplyBatches(context.Background(), st, applyTable, muts, kv.ApplyOptions{MaxBatch: 4, Concurrency: 3})
	want := "kv: apply 12 mutations to t: batch 3 of 3 (mutations 8 to 11): boom"
	if err == nil || err.Error() != want || !errors.Is(err, errBoom) {
		t.Fatalf("ApplyBatches = %v, want %s", err, want)
	}
	if len(st.causes) != 2 {
		t.Fatalf("%d batches were blocked, want 2", len(st.causes))
	}
	for _, c := range st.causes {
		if !errors.Is(c, errBoom) {
			t.Errorf("a batch in flight was ended by %v, want the cancellation caused by the first error", c)
		}
	}
}

// TestBatchesNotStartedWhenOneFailedAreNotApplied: one at a time, the batches
// after a failed one never reach the store.
func TestBatchesNotStartedWhenOneFailedAreNotApplied(t *testing.T) {
	st := &recordingStore{Store: newEmbedded(t), fail: func(b []kv.Mutation) bool { return string(b[0].Row) == "r000" }}
	err := kv.ApplyBatches(context.Background(), st, applyTable, puts(10), kv.ApplyOptions{MaxBatch: 3, Concurrency: 1})
	if !errors.Is(err, errBoom) || st.applies != 1 || len(st.rows) != 0 {
		t.Errorf("ApplyBatches = %v after %d Applies (%d rows); want boom after 1", err, st.applies, len(st.rows))
	}
}

func TestApplyBatchesOnADoneContextAppliesNothing(t *testing.T) {
	st := &recordingStore{Store: newEmbedded(t)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := kv.ApplyBatches(ctx, st, applyTable, puts(10), kv.ApplyOptions{MaxBatch: 3})
	if !errors.Is(err, context.Canceled) || st.applies != 0 {
		t.Errorf("ApplyBatches = %v after %d Applies, want context.Canceled and none", err, st.applies)
	}
}

// TestWritesRunsOtherWritesWithTheBatches: a write added with Go shares the
// concurrency bound and the cancellation, and its error is returned as it is.
func TestWritesRunsOtherWritesWithTheBatches(t *testing.T) {
	st := &recordingStore{Store: newEmbedded(t), waitFor: 1, arrived: make(chan struct{}, 1),
		block: func([]kv.Mutation) bool { return true }}
	w := kv.NewWrites(st, kv.ApplyOptions{Concurrency: 2})
	w.Apply(applyTable, puts(3), "store 3 cells")
	w.Go(func(context.Context) error {
		<-st.arrived
		return fmt.Errorf("write postings: %w", errBoom)
	})
	if err := w.Run(context.Background()); err == nil || err.Error() != "write postings: boom" {
		t.Fatalf("Run = %v, want the other write's error as it is", err)
	}
	if len(st.causes) != 1 || !errors.Is(st.causes[0], errBoom) {
		t.Errorf("the Apply in flight was ended by %v, want the other write's error", st.causes)
	}
}

func TestApplyOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts kv.ApplyOptions
		want string
	}{
		{kv.ApplyOptions{}, ""},
		{kv.ApplyOptions{MaxBatch: 1, Concurrency: 1}, ""},
		{kv.ApplyOptions{MaxBatch: -1, Concurrency: -2},
			"write: Options.Apply.MaxBatch must not be negative (0 means the default, 10000), got -1\n" +
				"write: Options.Apply.Concurrency must not be negative (0 means the default, 4), got -2"},
	} {
		err := tc.opts.Validate("write: Options.Apply")
		if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || err != nil && got != tc.want {
			t.Errorf("Validate(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	if got := (kv.ApplyOptions{}).WithDefaults(); got != (kv.ApplyOptions{MaxBatch: 10_000, Concurrency: 4}) {
		t.Errorf("defaults %+v", got)
	}
	if got := (kv.ApplyOptions{MaxBatch: 5, Concurrency: 2}).WithDefaults(); !slices.Equal([]int{got.MaxBatch, got.Concurrency}, []int{5, 2}) {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
}
