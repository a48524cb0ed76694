package cellenc_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// benchFloats is an hour of a 15 s counter and of a gauge with random values
// (XOR), the bucket shapes compaction writes most.
func benchFloats() [][]cellenc.Sample {
	rng := rand.New(rand.NewPCG(1, 2))
	var counter, gauge []cellenc.Sample
	v := 0.0
	for i := range 240 {
		v += float64(rng.IntN(1000))
		counter = append(counter, cellenc.Sample{T: 7_200_000 + int64(i)*15_000, V: v})
		gauge = append(gauge, cellenc.Sample{T: 7_200_000 + int64(i)*15_000, V: rng.Float64() * math.Pi})
	}
	return [][]cellenc.Sample{counter, gauge}
}

// BenchmarkBucketChunkCellFloats: the chunk cell of a bucket of floats, as
// compaction writes it (XOR or decimal).
func BenchmarkBucketChunkCellFloats(b *testing.B) {
	buckets := benchFloats()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := cellenc.BucketChunkCell(buckets[i%2], 7_200_000, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(240, "samples/op")
}

// BenchmarkDecodeDataRowFloatChunk: a row of one float chunk cell, decoded.
func BenchmarkDecodeDataRowFloatChunk(b *testing.B) {
	var rows []kv.Row
	for _, s := range benchFloats() {
		c, err := cellenc.BucketChunkCell(s, 7_200_000, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		key := schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 7, BucketStart: 7_200_000})
		rows = append(rows, kv.Row{Key: key, Cells: []kv.Cell{c}})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := cellenc.DecodeDataRow(rows[i%2], time.Hour, 0, math.MaxInt64); err != nil {
			b.Fatal(err)
		}
	}
}

// benchHistograms is an hour of a 15 s integer histogram of schema 3 with 30
// populated buckets in two spans, each growing by 0 to 4 a scrape.
func benchHistograms() []cellenc.HistogramSample {
	rng := rand.New(rand.NewPCG(3, 4))
	counts := make([]int64, 30)
	var out []cellenc.HistogramSample
	for i := range 240 {
		h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 15}, {Offset: 3, Length: 15}}}
		var total uint64
		prev := int64(0)
		for j := range counts {
			counts[j] += int64(rng.IntN(5))
			h.PositiveBuckets = append(h.PositiveBuckets, counts[j]-prev)
			prev = counts[j]
			total += uint64(counts[j])
		}
		h.ZeroCount = uint64(i)
		h.Count = total + h.ZeroCount
		h.Sum = float64(total) * 0.25
		out = append(out, cellenc.HistogramSample{T: 7_200_000 + int64(i)*15_000, H: h})
	}
	return out
}

// BenchmarkBucketCellHistograms: the chunk cell of a bucket of 240
// histograms, as compaction writes it; B/sample is the cell's value.
func BenchmarkBucketCellHistograms(b *testing.B) {
	hs := benchHistograms()
	var size int
	b.ReportAllocs()
	for b.Loop() {
		c, err := cellenc.BucketCell(nil, hs, 7_200_000, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		size = len(c.Value)
	}
	b.ReportMetric(float64(size)/float64(len(hs)), "B/sample")
}

// BenchmarkDecodeDataRowHistogramChunk: a row of one histogram chunk cell,
// decoded.
func BenchmarkDecodeDataRowHistogramChunk(b *testing.B) {
	c, err := cellenc.BucketCell(nil, benchHistograms(), 7_200_000, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	key := schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 7, BucketStart: 7_200_000})
	row := kv.Row{Key: key, Cells: []kv.Cell{c}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cellenc.DecodeDataRow(row, time.Hour, 0, math.MaxInt64); err != nil {
			b.Fatal(err)
		}
	}
}
