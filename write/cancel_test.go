package write_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

var errBoom = errors.New("boom")

// failMetadata is a kv.Store whose Apply to the meta table fails with errBoom once
// `others` Applies to the data and index tables have started, and whose Applies to
// those tables block until their context is done, recording its cause. Applies to
// the series table (the registry's) go to the store.
type failMetadata struct {
	kv.Store
	others  int
	arrived chan struct{} // one send per blocked call

	mu     sync.Mutex
	causes map[string]error // table -> context.Cause of its blocked Apply's context
	healed bool             // every call goes to the store
}

func (s *failMetadata) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	switch {
	case s.healed || table == schema.TableSeries:
		return s.Store.Apply(ctx, table, muts)
	case table == schema.TableMeta:
		for range s.others {
			<-s.arrived
		}
		return errBoom
	}
	select {
	case s.arrived <- struct{}{}:
	case <-ctx.Done():
	}
	<-ctx.Done()
	s.mu.Lock()
	s.causes[table] = context.Cause(ctx)
	s.mu.Unlock()
	return ctx.Err()
}

// TestTheFirstStoreErrorCancelsTheOtherWrites: the data, postings and metadata of
// a request are stored concurrently; when one fails, WriteAt cancels the others,
// returns that first error with a zero Result, and remembers nothing it wrote: a
// retry writes it all.
func TestTheFirstStoreErrorCancelsTheOtherWrites(t *testing.T) {
	// What is tested is the writer's, not the store's: the embedded store will do.
	b := schematest.Backends()[0]
	st := b.Store(t)
	fs := &failMetadata{Store: st, others: 2, arrived: make(chan struct{}, 2), causes: map[string]error{}}
	cs := schematest.Counting(fs)
	w, err := write.New(cs, b.Settings, nil, nil, write.Options{
		Limits: testLimits,
		Apply:  kv.ApplyOptions{Concurrency: 3},
		Now:    func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	req := write.Request{
		Series:   []write.Series{{Labels: labels.FromStrings("__name__", "c_total", "job", "j"), Samples: one(nowMs, 1)}},
		Metadata: []schema.Metadata{{Metric: "c_total", Type: "counter", Help: "Cs."}},
	}

	res, err := w.Write(context.Background(), &req)
	if want := "write: store metric metadata: boom"; err == nil || err.Error() != want || !errors.Is(err, errBoom) {
		t.Errorf("Write = %v, want %s", err, want)
	}
	if res.SeriesWritten != 0 || res.SamplesWritten != 0 || res.MetadataWritten != 0 || res.Rejected != nil {
		t.Errorf("a failed write reports %+v", res)
	}
	if len(fs.causes) != 2 {
		t.Fatalf("blocked Applies: %v, want one to each of the data and index tables", fs.causes)
	}
	for _, table := range []string{schema.TableData, schema.TableIndex} {
		if c := fs.causes[table]; !errors.Is(c, errBoom) {
			t.Errorf("the Apply to %s was ended by %v, want the cancellation caused by the first error", table, c)
		}
	}

	// Nothing counts as written: once the store is healthy, the retry writes the
	// tag column, the postings and the metadata (CountingStore counts the cells of
	// the Applies the store accepted).
	puts := func() [3]int {
		return [3]int{cs.Puts(schema.TableData, schema.FamilyTags), cs.Puts(schema.TableIndex, schema.FamilyPostings), cs.Puts(schema.TableMeta, schema.FamilyMeta)}
	}
	if got := puts(); got != [3]int{} {
		t.Errorf("tag, posting and metadata puts of the failed write = %v, want none", got)
	}
	fs.healed = true
	res, err = w.Write(context.Background(), &req)
	if err != nil || res.SeriesWritten != 1 || res.SamplesWritten != 1 || res.MetadataWritten != 1 {
		t.Fatalf("the retry = %+v, %v", res, err)
	}
	if got, want := puts(), [3]int{1, 2, 3}; got != want {
		t.Errorf("tag, posting and metadata puts of the retry = %v, want %v", got, want)
	}
}
