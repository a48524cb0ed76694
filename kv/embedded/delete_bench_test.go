package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// The shape of compaction's deletes: a sealed bucket of a series is a
// row of deleteCells raw cells of family r (15 s samples over an hour), which
// compaction rewrites as one chunk and then deletes with one DeleteFamily up to
// the bucket's end - 2 ms, plus one DeleteColumn per late cell (at the bucket's
// end - 1), deleteRows rows per Apply.
const (
	deleteRows     = 500
	deleteCells    = 240
	deleteStep     = 15_000    // ms between samples
	deleteBucket   = 3_600_000 // ms
	deleteLateRows = 10        // every deleteLateRows-th row has one late cell
	deleteLoadRows = 10_000    // rows loaded at least: 2.4 M raw cells
	ingestBatch    = 2_000     // puts per ingest-shaped Apply
	ingestWriters  = 2
)

// deleteRowKey is a data row key's shape: salt(1) | series(8) | bucketStart(8).
func deleteRowKey(series int, bucketStart int64) []byte {
	k := []byte{byte(series % 16)}
	k = binary.BigEndian.AppendUint64(k, uint64(series))
	return binary.BigEndian.AppendUint64(k, uint64(bucketStart))
}

// BenchmarkCompactionDeletes applies compaction-shaped delete batches (one
// op: the raw cells of deleteRows rows of deleteCells raw cells) to a store
// loaded with at least 2.4 M raw cells and compacted (sealed buckets sit in the
// lower levels). shape=family is compaction's shape: one DeleteFamily per
// row and a DeleteColumn per late cell; shape=columns its former shape, a
// DeleteColumn per raw cell up to its timestamp.
//
// It reports the tombstones per op; lock-ms/op, how long each op held the
// store's exclusive lock (reading the rows and inserting the batch into the
// memtable; the fsync comes after; 0 for shape=columns, which holds it
// shared); and close-ms, how long Close took once the deletes were flushed (it
// waits for the compactions under way). With ingest, ingestWriters goroutines
// apply ingestBatch-put batches into other rows throughout, and put-p99-ms and
// put-max-ms are their Apply latencies while the deletes ran (base-p99-ms:
// before the deletes started). Run it with a fixed count:
//
//	go test -run '^$' -bench CompactionDeletes -benchtime 20x ./kv/embedded/
func BenchmarkCompactionDeletes(b *testing.B) {
	for _, c := range []struct {
		shape  string
		ingest bool
	}{{"family", false}, {"family", true}, {"columns", false}} {
		b.Run(fmt.Sprintf("shape=%s/ingest=%t", c.shape, c.ingest), func(b *testing.B) {
			benchCompactionDeletes(b, c.shape == "columns", c.ingest)
		})
	}
}

func benchCompactionDeletes(b *testing.B, columns, ingest bool) {
	ctx := context.Background()
	st, err := Open(ctx, b.TempDir(), Options{SweepInterval: -1, MinFreeBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close() // fails with ErrClosed once the benchmark closed it
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "data", Families: []kv.FamilySpec{{Name: "c"}, {Name: "r"}}}); err != nil {
		b.Fatal(err)
	}
	const bucket = int64(1_700_000_000_000 / deleteBucket * deleteBucket)
	rows := max(deleteLoadRows, b.N*deleteRows)
	value := make([]byte, 8)
	muts := make([]kv.Mutation, 0, 40*deleteCells)
	for series := range rows {
		row := deleteRowKey(series, bucket)
		for i := range deleteCells {
			binary.BigEndian.PutUint64(value, math.Float64bits(float64(series+i)))
			q := binary.BigEndian.AppendUint32(nil, uint32(i*deleteStep))
			muts = append(muts, kv.Put(row, "r", q, bucket+int64(i*deleteStep), bytes8(value)))
		}
		if series%deleteLateRows == 0 {
			muts = append(muts, kv.Put(row, "r", binary.BigEndian.AppendUint32(nil, deleteBucket-1), bucket+deleteBucket-1, bytes8(value)))
		}
		// The chunk compaction wrote before it deletes: ~1.5 bytes a sample.
		muts = append(muts, kv.Put(row, "c", []byte{0}, bucket+deleteBucket-1, make([]byte, deleteCells*3/2)))
		if len(muts) >= 40*deleteCells {
			if err := st.Apply(ctx, "data", muts); err != nil {
				b.Fatal(err)
			}
			muts = muts[:0]
		}
	}
	if err := st.Apply(ctx, "data", muts); err != nil {
		b.Fatal(err)
	}
	if err := st.Compact(ctx); err != nil {
		b.Fatal(err)
	}

	var (
		stop     atomic.Bool
		deleting atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		base     []time.Duration // put latencies before the deletes
		during   []time.Duration // and while they ran
	)
	if ingest {
		started := make(chan struct{}, ingestWriters)
		for w := range ingestWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				puts := make([]kv.Mutation, ingestBatch)
				for step := 0; !stop.Load(); step++ {
					// One sample of each of ingestBatch series of the next bucket.
					for i := range puts {
						series := (w*ingestBatch + i) * 7 % rows
						q := binary.BigEndian.AppendUint32(nil, uint32(step%deleteCells*deleteStep))
						puts[i] = kv.Put(deleteRowKey(series, bucket+deleteBucket), "r", q, bucket+deleteBucket+int64(step%deleteCells*deleteStep), value)
					}
					began := time.Now()
					if err := st.Apply(ctx, "data", puts); err != nil {
						b.Error(err)
						return
					}
					took := time.Since(began)
					mu.Lock()
					if deleting.Load() {
						during = append(during, took)
					} else {
						base = append(base, took)
					}
					mu.Unlock()
					if step == 20 {
						started <- struct{}{}
					}
				}
			}()
		}
		for range ingestWriters {
			<-started
		}
	}

	before := st.Tombstones()
	var hold time.Duration
	deleting.Store(true)
	b.ResetTimer()
	for n := range b.N {
		muts = muts[:0]
		for series := n * deleteRows; series < (n+1)*deleteRows; series++ {
			row := deleteRowKey(series, bucket)
			if columns {
				for i := range deleteCells {
					q := binary.BigEndian.AppendUint32(nil, uint32(i*deleteStep))
					muts = append(muts, kv.DeleteColumn(row, "r", q, bucket+int64(i*deleteStep)))
				}
			} else {
				muts = append(muts, kv.DeleteFamily(row, "r", bucket+deleteBucket-2))
			}
			if series%deleteLateRows == 0 {
				muts = append(muts, kv.DeleteColumn(row, "r", binary.BigEndian.AppendUint32(nil, deleteBucket-1), bucket+deleteBucket-1))
			}
		}
		if columns {
			if err := st.Apply(ctx, "data", muts); err != nil {
				b.Fatal(err)
			}
			continue
		}
		began := time.Now()
		pending, err := st.applyExclusive(ctx, "data", muts)
		hold += time.Since(began)
		if err == nil {
			err = pending.wait()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	deleting.Store(false)
	stop.Store(true)
	wg.Wait()
	after := st.Tombstones()
	ops := float64(b.N)
	b.ReportMetric(float64(after.Range-before.Range)/ops, "range/op")
	b.ReportMetric(float64(after.Point-before.Point)/ops, "point/op")
	b.ReportMetric(float64(hold.Milliseconds())/ops, "lock-ms/op")
	if ingest {
		b.ReportMetric(ms(quantile(base, 0.99)), "base-p99-ms")
		b.ReportMetric(ms(quantile(during, 0.99)), "put-p99-ms")
		b.ReportMetric(ms(quantile(during, 1)), "put-max-ms")
	}
	// Every row's raw cells are gone; the chunk and the ingest's next bucket stay.
	row, err := st.Get(ctx, "data", deleteRowKey(0, bucket))
	if err != nil || len(row.Cells) != 1 || row.Cells[0].Family != "c" {
		b.Fatalf("row 0 after the deletes: %d cells, %v; want its chunk alone", len(row.Cells), err)
	}
	// Close once the tombstones are flushed: it waits for the
	// compactions under way.
	if err := st.db.Flush(); err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(time.Since(began)), "close-ms")
}

func bytes8(v []byte) []byte { return binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(v)) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile is the q-quantile of ds (0 when empty), by rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
