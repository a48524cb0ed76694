package cellenc

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// What compaction writes for a bucket: its chunk cell (BucketCell), the
// bucket's samples cut into runs of one kind, each run encoded by a
// ChunkEncoder under CutCompaction, and the chunks laid out as chunk.go says.

// MaxChunkSamples is the most samples one chunk cell holds: Prometheus' XOR
// chunk counts its samples in 16 bits. A bucket with more stays raw.
const MaxChunkSamples = 1<<16 - 1

// maxHistogramSTChunkSamples is the most samples of an ST histogram chunk,
// which counts them in 14 bits.
const maxHistogramSTChunkSamples = 1<<14 - 1

// BucketChunkCell returns the chunk cell of a bucket of float samples; it is
// BucketCell without histograms.
func BucketChunkCell(samples []Sample, bucketStart int64, width time.Duration) (kv.Cell, error) {
	return BucketCell(samples, nil, bucketStart, width)
}

// BucketCell returns the chunk cell (family schema.FamilyChunk) that holds a bucket's
// samples — floats and histograms, each ascending, one per timestamp across
// both, all in the bucket starting at bucketStart — as chunk.go
// says: qualifier offset 0, timestamp the bucket's last millisecond. It fails,
// wrapping kv.ErrInvalidArgument, on no samples, samples out of order, two at
// one timestamp, outside the bucket, a histogram sample without exactly one
// of H and FH, or more than MaxChunkSamples in all.
func BucketCell(samples []Sample, histograms []HistogramSample, bucketStart int64, width time.Duration) (kv.Cell, error) {
	if err := checkBucketSamples(samples, histograms, bucketStart, width); err != nil {
		return kv.Cell{}, err
	}
	q, err := schema.AppendChunkQualifier(nil, 0, width)
	if err != nil {
		return kv.Cell{}, err
	}
	row := RowSamples{Samples: samples, Histograms: histograms}
	metas, err := compactionChunks(&row)
	if err != nil {
		return kv.Cell{}, fmt.Errorf("cellenc: bucket %d: %w: %w", bucketStart, err, kv.ErrInvalidArgument)
	}
	value := chunkCellValue(metas, samples)
	return kv.Cell{Family: schema.FamilyChunk, Qualifier: q, Timestamp: bucketStart + width.Milliseconds() - 1, Value: value}, nil
}

// checkBucketSamples checks BucketCell's arguments.
func checkBucketSamples(samples []Sample, histograms []HistogramSample, bucketStart int64, width time.Duration) error {
	n := len(samples) + len(histograms)
	switch {
	case n == 0:
		return fmt.Errorf("cellenc: a chunk of no samples: %w", kv.ErrInvalidArgument)
	case n > MaxChunkSamples:
		return fmt.Errorf("cellenc: %d samples in bucket %d, more than a chunk holds (%d): %w",
			n, bucketStart, MaxChunkSamples, kv.ErrInvalidArgument)
	}
	end := bucketStart + width.Milliseconds()
	prev := bucketStart - 1
	for _, s := range samples {
		if s.T <= prev || s.T >= end {
			if s.T < bucketStart || s.T >= end {
				return fmt.Errorf("cellenc: sample at %d is not in bucket %d: %w", s.T, bucketStart, kv.ErrInvalidArgument)
			}
			return fmt.Errorf("cellenc: chunk samples not ascending at %d: %w", s.T, kv.ErrInvalidArgument)
		}
		prev = s.T
	}
	j := 0
	for i, h := range histograms {
		if h.T < bucketStart || h.T >= end {
			return fmt.Errorf("cellenc: histogram sample at %d is not in bucket %d: %w", h.T, bucketStart, kv.ErrInvalidArgument)
		}
		if i > 0 && h.T <= histograms[i-1].T {
			return fmt.Errorf("cellenc: chunk histogram samples not ascending at %d: %w", h.T, kv.ErrInvalidArgument)
		}
		if (h.H == nil) == (h.FH == nil) {
			return fmt.Errorf("cellenc: histogram sample at %d holds not exactly one of an integer and a float histogram: %w", h.T, kv.ErrInvalidArgument)
		}
		for j < len(samples) && samples[j].T < h.T {
			j++
		}
		if j < len(samples) && samples[j].T == h.T {
			return fmt.Errorf("cellenc: a float and a histogram sample at %d: %w", h.T, kv.ErrInvalidArgument)
		}
	}
	return nil
}

// compactionChunks encodes a bucket's samples into chunks under
// CutCompaction: a run of samples of one kind (float, integer histogram,
// float histogram) goes into the ST encoding of its kind when one of the
// run's samples has a start timestamp, else into the classic one.
func compactionChunks(row *RowSamples) ([]chunks.Meta, error) {
	e := NewChunkEncoder(CutCompaction)
	for _, r := range kindRuns(row) {
		if r.kind == chunkenc.ValFloat {
			fs := row.Samples[r.from:r.to]
			enc := chunkenc.ValFloat.ChunkEncoding(anyST(fs), false)
			for _, s := range fs {
				if err := e.AppendFloat(enc, s.ST, s.T, s.V); err != nil {
					return nil, err
				}
			}
			continue
		}
		hs := row.Histograms[r.from:r.to]
		enc := r.kind.ChunkEncoding(false, anyHistogramST(hs))
		for _, h := range hs {
			if err := e.AppendHistogram(enc, h.ST, h.T, h.H, h.FH); err != nil {
				return nil, err
			}
		}
	}
	return e.Chunks(), nil
}

// kindRun is a run of a row's samples of one kind, in time order:
// Samples[from:to] for floats, Histograms[from:to] for histograms.
type kindRun struct {
	kind     chunkenc.ValueType
	from, to int
}

// kindRuns cuts a row's samples, in time order, into runs of one kind.
func kindRuns(row *RowSamples) []kindRun {
	var out []kindRun
	for i, isHist := range row.InTimeOrder() {
		kind := chunkenc.ValFloat
		switch {
		case isHist && row.Histograms[i].H != nil:
			kind = chunkenc.ValHistogram
		case isHist:
			kind = chunkenc.ValFloatHistogram
		}
		if n := len(out); n > 0 && out[n-1].kind == kind && out[n-1].to == i {
			out[n-1].to++
			continue
		}
		out = append(out, kindRun{kind: kind, from: i, to: i + 1})
	}
	return out
}

// anyST reports whether one of samples has a start timestamp.
func anyST(samples []Sample) bool {
	for _, s := range samples {
		if s.ST != 0 {
			return true
		}
	}
	return false
}

// anyHistogramST reports whether one of hs has a start timestamp.
func anyHistogramST(hs []HistogramSample) bool {
	for _, h := range hs {
		if h.ST != 0 {
			return true
		}
	}
	return false
}

// chunkCellValue lays out the chunks of a bucket (encoded from its float
// samples fs and its histograms) as a chunk cell's value: the one chunk
// alone, or an EncChunks cell of them. An XOR chunk is replaced by the
// decimal chunk of the same samples when that is smaller.
func chunkCellValue(metas []chunks.Meta, fs []Sample) []byte {
	parts := make([][]byte, 0, len(metas))
	for _, m := range metas {
		enc := m.Chunk.Encoding()
		part := AppendChunkValue(nil, byte(enc), m.Chunk.Bytes())
		if enc == chunkenc.EncXOR {
			lo, _ := slices.BinarySearchFunc(fs, m.MinTime, func(s Sample, t int64) int { return cmp.Compare(s.T, t) })
			hi, _ := slices.BinarySearchFunc(fs, m.MaxTime+1, func(s Sample, t int64) int { return cmp.Compare(s.T, t) })
			if dec, ok := AppendDecimalChunk(nil, fs[lo:hi]); ok && len(dec) < len(part) {
				part = dec
			}
		}
		parts = append(parts, part)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	size := 1
	for _, p := range parts {
		size += len(p) + binary.MaxVarintLen32
	}
	out := make([]byte, 1, size)
	out[0] = EncChunks
	for _, p := range parts {
		out = append(out, p[0])
		out = binary.AppendUvarint(out, uint64(len(p)-1))
		out = append(out, p[1:]...)
	}
	return out
}
