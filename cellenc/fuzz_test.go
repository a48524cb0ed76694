package cellenc_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

func FuzzDecodeRawValue(f *testing.F) {
	f.Add([]byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2}) // the stale marker
	f.Add([]byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) // 1.5
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := cellenc.DecodeRawValue(b)
		if err != nil {
			return
		}
		if enc := cellenc.AppendRawValue(nil, v); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeRawValue(%x) = %v, which re-encodes as %x", b, v, enc)
		}
	})
}

func FuzzDecodeRollupWindows(f *testing.F) {
	const bucket = int64(1_700_000_000_000 / 3_600_000 * 3_600_000)
	stale := math.Float64frombits(value.StaleNaN)
	for i, samples := range [][]cellenc.Sample{
		{{T: bucket, V: 1}, {T: bucket + 1, V: 2}, {T: bucket + 300_000, V: 0}, {T: bucket + 300_001, V: stale}},
		{{T: bucket + 10, V: stale}},
		{{T: bucket + 10, V: math.NaN()}, {T: bucket + 20, V: math.Inf(-1)}, {T: bucket + 3_599_999, V: math.Copysign(0, -1)}},
		nil,
	} {
		res := rollupFuzzResolutions[i%len(rollupFuzzResolutions)]
		f.Add(cellenc.EncodeRollupWindows(nil, bucket, res, cellenc.AggregateWindows(samples, nil, res)), bucket, uint8(i))
	}
	// Windows with native histograms (their count and last one).
	hs := []cellenc.HistogramSample{
		{T: bucket + 5, H: tsdbutil.GenerateTestHistogram(1)},
		{T: bucket + 400_000, ST: bucket - 1, FH: tsdbutil.GenerateTestCustomBucketsFloatHistogram(2)},
		{T: bucket + 400_001, H: &histogram.Histogram{Sum: stale}},
	}
	for i, res := range rollupFuzzResolutions {
		fs := []cellenc.Sample{{T: bucket + 1, V: 1}, {T: bucket + 300_000, V: 2}}
		f.Add(cellenc.EncodeRollupWindows(nil, bucket, res, cellenc.AggregateWindows(fs, hs, res)), bucket, uint8(i))
	}
	f.Add([]byte{}, int64(0), uint8(0))
	f.Add([]byte{1, 0x80, 0}, int64(0), uint8(1))
	f.Add([]byte{1, 1, 2, 1, 1, 0, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0}, int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, bucketStart int64, resIndex uint8) {
		res := rollupFuzzResolutions[int(resIndex)%len(rollupFuzzResolutions)]
		ws, err := cellenc.DecodeRollupWindows(nil, b, bucketStart, res)
		if err != nil {
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("DecodeRollupWindows(%x) failed without ErrMalformed: %v", b, err)
			}
			return
		}
		if enc := cellenc.EncodeRollupWindows(nil, bucketStart, res, ws); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeRollupWindows(%x, %d, %s) = %+v, which re-encodes as %x", b, bucketStart, res, ws, enc)
		}
		// Decoding appends: what dst held before (a previous cell's windows, which
		// may end where these do) neither changes the result nor is checked.
		prev := []cellenc.RollupWindow{{End: math.MaxInt64, StaleT: -1}}
		got, err := cellenc.DecodeRollupWindows(prev, b, bucketStart, res)
		if err != nil || len(got) != len(ws)+1 || !sameWindow(got[0], prev[0]) {
			t.Fatalf("DecodeRollupWindows(%x) after a window = %d windows, %v; want %d", b, len(got), err, len(ws)+1)
		}
		for i := range ws {
			if !sameWindow(got[i+1], ws[i]) {
				t.Fatalf("DecodeRollupWindows(%x) after a window: window %d = %+v, want %+v", b, i, got[i+1], ws[i])
			}
		}
	})
}

// FuzzDecodeDecimalChunk: decoding never panics and fails only with
// ErrMalformed; what decodes is ascending, within [mint, maxt], and encodes
// back (when it has a decimal form, which every decoded value has unless it is
// beyond the encoder's scale) to a chunk that decodes to the same samples.
func FuzzDecodeDecimalChunk(f *testing.F) {
	for _, ss := range [][]cellenc.Sample{
		{{T: 0, V: 1}},
		{{T: 10, V: 1.5}, {T: 25, V: 2.25}, {T: 40, V: 3}},
		{{T: 1_700_000_000_000, V: 1e12}, {T: 1_700_000_015_000, V: -7}, {T: 1_700_000_031_000, V: 0.001}},
	} {
		b, ok := cellenc.AppendDecimalChunk(nil, ss)
		if !ok {
			f.Fatalf("seed %v has no decimal form", ss)
		}
		f.Add(b[1:], int64(0), int64(math.MaxInt64))
	}
	f.Fuzz(func(t *testing.T, b []byte, mint, maxt int64) {
		got, n, err := cellenc.DecodeDecimalChunk(nil, b, mint, maxt)
		if err != nil {
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("DecodeDecimalChunk(%x) failed without ErrMalformed: %v", b, err)
			}
			return
		}
		all, total, err := cellenc.DecodeDecimalChunk(nil, b, math.MinInt64, math.MaxInt64)
		if err != nil || total != n || len(all) != n || len(got) > n {
			t.Fatalf("DecodeDecimalChunk(%x): %d of %d samples in range, %d in all (%d), %v", b, len(got), n, len(all), total, err)
		}
		for i, s := range all {
			if s.T < 0 || i > 0 && s.T <= all[i-1].T {
				t.Fatalf("DecodeDecimalChunk(%x): sample %d at %d", b, i, s.T)
			}
		}
		for _, s := range got {
			if s.T < mint || s.T > maxt {
				t.Fatalf("DecodeDecimalChunk(%x, %d, %d) returned a sample at %d", b, mint, maxt, s.T)
			}
		}
		enc, ok := cellenc.AppendDecimalChunk(nil, all)
		if !ok {
			return
		}
		again, _, err := cellenc.DecodeDecimalChunk(nil, enc[1:], math.MinInt64, math.MaxInt64)
		if err != nil || len(again) != len(all) {
			t.Fatalf("re-encoding %x: %d samples, %v", b, len(again), err)
		}
		for i := range all {
			if again[i].T != all[i].T || math.Float64bits(again[i].V) != math.Float64bits(all[i].V) {
				t.Fatalf("re-encoding %x: sample %d is %v@%d, want %v@%d", b, i, again[i].V, again[i].T, all[i].V, all[i].T)
			}
		}
	})
}

// FuzzDecodeChunkCell: decoding a chunk cell's value never panics and fails
// only with ErrMalformed; what decodes is ascending across both kinds, and,
// when it fits one bucket, BucketCell encodes it back to a cell that decodes
// to the same samples (chunk.go says what a chunk keeps of a histogram:
// every count and sum, not the layout of empty buckets nor every hint).
func FuzzDecodeChunkCell(f *testing.F) {
	const day = int64(24 * time.Hour / time.Millisecond)
	stale := math.Float64frombits(value.StaleNaN)
	at := func(i int) int64 { return int64(i) * 15_000 }
	var seeds [][]byte
	add := func(fs []cellenc.Sample, hs []cellenc.HistogramSample) {
		c, err := cellenc.BucketCell(fs, hs, 0, 24*time.Hour)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, c.Value)
	}
	var ih, fh, ch, sth []cellenc.HistogramSample
	for i := range 12 {
		ih = append(ih, cellenc.HistogramSample{T: at(i), H: tsdbutil.GenerateTestHistogram(int64(i % 5))})
		fh = append(fh, cellenc.HistogramSample{T: at(i), FH: tsdbutil.GenerateTestGaugeFloatHistogram(int64(i))})
		ch = append(ch, cellenc.HistogramSample{T: at(i), H: tsdbutil.GenerateTestCustomBucketsHistogram(int64(i))})
		sth = append(sth, cellenc.HistogramSample{T: at(i), ST: 1, FH: tsdbutil.GenerateTestFloatHistogram(int64(i))})
	}
	add(nil, ih)
	add(nil, fh)
	add(nil, ch)
	add(nil, sth)
	add(nil, append(ih[:3:3], cellenc.HistogramSample{T: at(3), H: &histogram.Histogram{Sum: stale}}))
	add([]cellenc.Sample{{T: at(20), V: 1.5, ST: 3}, {T: at(21), V: stale}}, nil)
	add([]cellenc.Sample{{T: at(20), V: math.Pi}, {T: at(21), V: 2}}, ih)
	add([]cellenc.Sample{{T: at(20), V: 1}, {T: at(21), V: 2}}, fh)
	for _, s := range seeds {
		f.Add(s, int64(0), int64(math.MaxInt64))
	}
	f.Add([]byte{cellenc.EncChunks, 1, 2, 0, 0}, int64(0), int64(100))
	f.Fuzz(func(t *testing.T, b []byte, mint, maxt int64) {
		got, err := cellenc.DecodeChunkCellSamples(cellenc.ChunkCellSamples{}, b, mint, maxt)
		if err != nil {
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("DecodeChunkCellSamples(%x) failed without ErrMalformed: %v", b, err)
			}
			return
		}
		all, err := cellenc.DecodeChunkCellSamples(cellenc.ChunkCellSamples{}, b, math.MinInt64, math.MaxInt64)
		if errors.Is(err, schema.ErrMalformed) {
			return // a histogram outside [mint, maxt] is not decoded, nor checked
		}
		if err != nil || all.Total != got.Total || len(all.Samples)+len(all.Histograms) != all.Total ||
			len(got.Samples)+len(got.Histograms) > got.Total {
			t.Fatalf("DecodeChunkCellSamples(%x): %d+%d of %d samples in range, %d+%d of %d in all, %v", b,
				len(got.Samples), len(got.Histograms), got.Total, len(all.Samples), len(all.Histograms), all.Total, err)
		}
		for _, s := range got.Samples {
			if s.T < mint || s.T > maxt {
				t.Fatalf("DecodeChunkCellSamples(%x, %d, %d) returned a sample at %d", b, mint, maxt, s.T)
			}
		}
		for _, s := range got.Histograms {
			if s.T < mint || s.T > maxt {
				t.Fatalf("DecodeChunkCellSamples(%x, %d, %d) returned a histogram at %d", b, mint, maxt, s.T)
			}
		}
		inDay := func(t int64) bool { return t >= 0 && t < day }
		for _, s := range all.Samples {
			if !inDay(s.T) || !inDay(s.ST) {
				return
			}
		}
		for _, s := range all.Histograms {
			if !inDay(s.T) || !inDay(s.ST) {
				return
			}
		}
		if all.Total > cellenc.MaxChunkSamples {
			return
		}
		c, err := cellenc.BucketCell(all.Samples, all.Histograms, 0, 24*time.Hour)
		if err != nil {
			if errors.Is(err, kv.ErrInvalidArgument) && strings.Contains(err.Error(), "a float and a histogram sample at") {
				t.Fatalf("DecodeChunkCellSamples(%x) gave a float and a histogram at one timestamp", b)
			}
			return // e.g. Prometheus' appender refusing a histogram it decoded
		}
		again, err := cellenc.DecodeChunkCellSamples(cellenc.ChunkCellSamples{}, c.Value, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("re-encoding %x as %x: %v", b, c.Value, err)
		}
		if err := sameSamples(all.Samples, again.Samples, all.Histograms, again.Histograms); err != nil {
			t.Fatalf("re-encoding %x as %x: %v", b, c.Value, err)
		}
	})
}

// rollupFuzzResolutions are the resolutions FuzzDecodeRollupWindows decodes with:
// one shorter than the default bucket width, one equal, one longer.
var rollupFuzzResolutions = []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}
