package schema_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// benchFloats is an hour of a 15 s counter and of a gauge with random values
// (XOR), the bucket shapes compaction writes most.
func benchFloats() [][]schema.Sample {
	rng := rand.New(rand.NewPCG(1, 2))
	var counter, gauge []schema.Sample
	v := 0.0
	for i := range 240 {
		v += float64(rng.IntN(1000))
		counter = append(counter, schema.Sample{T: 7_200_000 + int64(i)*15_000, V: v})
		gauge = append(gauge, schema.Sample{T: 7_200_000 + int64(i)*15_000, V: rng.Float64() * math.Pi})
	}
	return [][]schema.Sample{counter, gauge}
}

// BenchmarkBucketChunkCellFloats: the chunk cell of a bucket of floats, as
// compaction writes it (XOR or decimal).
func BenchmarkBucketChunkCellFloats(b *testing.B) {
	buckets := benchFloats()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := schema.BucketChunkCell(buckets[i%2], 7_200_000, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(240, "samples/op")
}

// BenchmarkDecodeDataRowFloatChunk: a row of one float chunk cell, decoded.
func BenchmarkDecodeDataRowFloatChunk(b *testing.B) {
	var rows []kv.Row
	for _, s := range benchFloats() {
		c, err := schema.BucketChunkCell(s, 7_200_000, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		key := schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 7, BucketStart: 7_200_000})
		rows = append(rows, kv.Row{Key: key, Cells: []kv.Cell{c}})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := schema.DecodeDataRow(rows[i%2], time.Hour, 0, math.MaxInt64); err != nil {
			b.Fatal(err)
		}
	}
}
