package kvtest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// benchSpec is shaped like hbtsdb's data table: samples as cells of family r.
var benchSpec = kv.TableSpec{Name: "bench", Families: []kv.FamilySpec{{Name: "r"}}}

const (
	benchBatch   = 1000 // cells per Apply, about one remote-write request's worth of one row group
	benchPerRow  = 100  // cells per row, like samples of one series in one bucket
	benchScanned = 100_000
)

// sampleBatch fills muts with benchBatch sample-shaped puts: rows of benchPerRow
// cells with 4-byte qualifiers and 8-byte values, starting at cell number first.
func sampleBatch(muts []kv.Mutation, first int) []kv.Mutation {
	muts = muts[:0]
	for i := first; i < first+benchBatch; i++ {
		row := fmt.Appendf(nil, "series-%08d", i/benchPerRow)
		q := binary.BigEndian.AppendUint32(nil, uint32(i%benchPerRow)*15000)
		v := binary.BigEndian.AppendUint64(nil, math.Float64bits(float64(i)))
		muts = append(muts, kv.Put(row, "r", q, 1_700_000_000_000+int64(i%benchPerRow)*15000, v))
	}
	return muts
}

// Bench measures batched put and scan throughput in cells/s on stores made by
// newStore. Run it with go test -bench.
func Bench(b *testing.B, newStore NewStore) {
	b.Run("BatchPut", func(b *testing.B) {
		st := newStore(b)
		ctx := context.Background()
		if _, err := st.EnsureTable(ctx, benchSpec); err != nil {
			b.Fatal(err)
		}
		muts := make([]kv.Mutation, 0, benchBatch)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			muts = sampleBatch(muts, i*benchBatch)
			if err := st.Apply(ctx, benchSpec.Name, muts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*benchBatch)/time.Since(start).Seconds(), "cells/s")
	})
	b.Run("Scan", func(b *testing.B) {
		st := newStore(b)
		ctx := context.Background()
		if _, err := st.EnsureTable(ctx, benchSpec); err != nil {
			b.Fatal(err)
		}
		muts := make([]kv.Mutation, 0, benchBatch)
		for first := 0; first < benchScanned; first += benchBatch {
			if err := st.Apply(ctx, benchSpec.Name, sampleBatch(muts, first)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			sc := st.Scan(ctx, benchSpec.Name, nil, nil)
			cells := 0
			for sc.Next() {
				cells += len(sc.Row().Cells)
			}
			if err := sc.Err(); err != nil {
				b.Fatal(err)
			}
			sc.Close()
			if cells != benchScanned {
				b.Fatalf("scanned %d cells, want %d", cells, benchScanned)
			}
		}
		b.ReportMetric(float64(b.N*benchScanned)/time.Since(start).Seconds(), "cells/s")
	})
}
