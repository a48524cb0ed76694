package schema

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/kv"
)

// A data row's samples: its chunk cells (family FamilyChunk, chunk.go) and raw
// cells (family FamilyRaw, raw.go), merged. DecodeDataRow is the one decoder of
// data rows: every read path (query's Select, ChunkQuerier, Samples, Last) and the
// compaction that rewrites rows read through it, so that they agree on what a row
// holds. BucketChunkCell is its inverse for chunks.
//
// Invariants:
//
//   - The samples of a row are ascending, one per timestamp.
//   - A raw sample wins over a chunk's sample of the same timestamp: it is a late
//     (or re-sent) sample written after the bucket was compacted.
//   - Chunks of one row may overlap in time (a bucket compacted again merges them
//     into new chunks, but a reader may meet both during the rewrite); for equal
//     timestamps in two chunks, the chunk whose cell comes later in the row wins.

// RowSamples are the samples DecodeDataRow found in one data row.
type RowSamples struct {
	// BucketStart is the row's bucket start (ms).
	BucketStart int64
	// Samples are the row's float samples in [mint, maxt], ascending, one per
	// timestamp.
	Samples []Sample
	// Histograms are the row's native histogram samples in [mint, maxt],
	// ascending, one per timestamp, none at a timestamp of Samples (a series
	// holds one sample per timestamp, of either kind).
	Histograms []HistogramSample
	// Chunk is set when the row's samples in [mint, maxt] are exactly those of its
	// only chunk cell (no raw cell, the chunk wholly within the range): a reader
	// that serves chunks (remote read) may hand it out unchanged.
	Chunk chunkenc.Chunk
	// RawCells and ChunkCells count the row's cells of each family that were
	// decoded (raw cells outside [mint, maxt] included).
	RawCells, ChunkCells int
}

// DecodeDataRow decodes the chunk and raw cells of one data row into its samples
// in [mint, maxt] (inclusive, ms). Cells of other families are ignored. It fails,
// wrapping ErrMalformed, on a cell that does not decode or a raw cell whose
// timestamp is not its qualifier's.
func DecodeDataRow(row kv.Row, width time.Duration, mint, maxt int64) (RowSamples, error) {
	_, bucketStart, err := ParseDataRowTail(row.Key)
	if err != nil {
		return RowSamples{}, err
	}
	out := RowSamples{BucketStart: bucketStart}
	var (
		fromChunks, raw []Sample
		rawH            []HistogramSample
		chunks          []chunkenc.Chunk
		cut             bool // a chunk had samples outside [mint, maxt]
	)
	for _, c := range row.Cells {
		switch c.Family {
		case FamilyRaw:
			out.RawCells++
			s, err := DecodeRawCell(c, bucketStart, width)
			if errors.Is(err, ErrHistogramCell) {
				h, err := DecodeRawHistogramCell(c, bucketStart, width)
				if err != nil {
					return out, err
				}
				if h.T >= mint && h.T <= maxt {
					rawH = append(rawH, h)
				}
				continue
			}
			if err != nil {
				return out, err
			}
			if s.T >= mint && s.T <= maxt {
				raw = append(raw, s)
			}
		case FamilyChunk:
			out.ChunkCells++
			if enc, data, err := DecodeChunkValue(c.Value); err == nil && enc == EncDecimal {
				n := len(fromChunks)
				var total int
				if fromChunks, total, err = DecodeDecimalChunk(fromChunks, data, mint, maxt); err != nil {
					return out, fmt.Errorf("schema: chunk of bucket %d: %w", bucketStart, err)
				}
				// Not a Prometheus chunk: a reader that serves chunks encodes
				// the samples itself.
				chunks = append(chunks, nil)
				cut = cut || len(fromChunks)-n != total
				continue
			}
			chk, err := DecodeChunkCell(c)
			if err != nil {
				return out, fmt.Errorf("schema: chunk of bucket %d: %w", bucketStart, err)
			}
			chunks = append(chunks, chk)
			n := len(fromChunks)
			if fromChunks, err = appendChunkSamples(fromChunks, chk, mint, maxt); err != nil {
				return out, fmt.Errorf("schema: chunk of bucket %d: %w: %w", bucketStart, err, ErrMalformed)
			}
			cut = cut || len(fromChunks)-n != chk.NumSamples()
		}
	}
	switch {
	case len(fromChunks) == 0:
		out.Samples = raw
	case len(raw) == 0:
		slices.SortStableFunc(fromChunks, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
		out.Samples = keepLast(fromChunks)
		if len(chunks) == 1 && chunks[0] != nil && !cut && len(out.Samples) == chunks[0].NumSamples() {
			out.Chunk = chunks[0]
		}
	default:
		out.Samples = mergeRaw(fromChunks, raw)
	}
	if len(rawH) > 0 {
		out.Chunk = nil
		out.Histograms = rawH
		out.Samples = dropAt(out.Samples, rawH)
	}
	return out, nil
}

// dropAt removes from samples (ascending) those at a timestamp of hs
// (ascending): a raw histogram replaces a chunk's float of its timestamp.
func dropAt(samples []Sample, hs []HistogramSample) []Sample {
	out := samples[:0]
	j := 0
	for _, s := range samples {
		for j < len(hs) && hs[j].T < s.T {
			j++
		}
		if j < len(hs) && hs[j].T == s.T {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ErrHistogramCell is DecodeRawCell's answer for a raw cell that holds a native
// histogram sample (histogram.go) rather than a float one: decode it with
// DecodeRawHistogramCell.
var ErrHistogramCell = errors.New("schema: raw cell holds a histogram sample")

// DecodeRawCell decodes one raw cell holding a float sample, of the row whose
// bucket starts at bucketStart. The cell's timestamp must be the sample's
// (raw.go). A cell holding a histogram sample fails with ErrHistogramCell.
func DecodeRawCell(c kv.Cell, bucketStart int64, width time.Duration) (Sample, error) {
	off, err := DecodeRawQualifier(c.Qualifier, width)
	if err != nil {
		return Sample{}, err
	}
	if t := bucketStart + off; t != c.Timestamp {
		return Sample{}, fmt.Errorf("schema: raw cell at offset %d of bucket %d has timestamp %d: %w",
			off, bucketStart, c.Timestamp, ErrMalformed)
	}
	if len(c.Value) == RawValueLen {
		return Sample{T: c.Timestamp, V: math.Float64frombits(binary.BigEndian.Uint64(c.Value))}, nil
	}
	if len(c.Value) >= minHistogramValueLen {
		return Sample{}, ErrHistogramCell
	}
	v, err := DecodeSampleValue(c.Value)
	if err != nil {
		return Sample{}, err
	}
	return Sample{T: c.Timestamp, V: v.F, ST: v.ST}, nil
}

// DecodeRawHistogramCell decodes one raw cell holding a histogram sample (see
// DecodeRawCell). A float cell fails, wrapping ErrMalformed.
func DecodeRawHistogramCell(c kv.Cell, bucketStart int64, width time.Duration) (HistogramSample, error) {
	off, err := DecodeRawQualifier(c.Qualifier, width)
	if err != nil {
		return HistogramSample{}, err
	}
	if t := bucketStart + off; t != c.Timestamp {
		return HistogramSample{}, fmt.Errorf("schema: raw cell at offset %d of bucket %d has timestamp %d: %w",
			off, bucketStart, c.Timestamp, ErrMalformed)
	}
	if len(c.Value) < minHistogramValueLen {
		return HistogramSample{}, fmt.Errorf("schema: raw cell at offset %d of bucket %d holds a float, not a histogram: %w", off, bucketStart, ErrMalformed)
	}
	v, err := DecodeSampleValue(c.Value)
	if err != nil {
		return HistogramSample{}, fmt.Errorf("schema: raw cell at offset %d of bucket %d: %w", off, bucketStart, err)
	}
	return HistogramSample{T: c.Timestamp, ST: v.ST, H: v.H, FH: v.FH}, nil
}

// DecodeChunkCell decodes a chunk cell. Only the float XOR encoding is accepted:
// hbtsdb stores no histograms yet.
func DecodeChunkCell(c kv.Cell) (chunkenc.Chunk, error) {
	enc, data, err := DecodeChunkValue(c.Value)
	if err != nil {
		return nil, err
	}
	e := chunkenc.Encoding(enc)
	if e != chunkenc.EncXOR {
		return nil, fmt.Errorf("schema: chunk encoding %s is not a float encoding hbtsdb reads: %w", e, ErrMalformed)
	}
	chk, err := chunkenc.FromData(e, data)
	if err != nil {
		return nil, fmt.Errorf("schema: %w: %w", err, ErrMalformed)
	}
	return chk, nil
}

// MaxChunkSamples is the most samples one chunk holds: Prometheus' XOR chunk
// counts its samples in 16 bits. A bucket with more stays raw.
const MaxChunkSamples = 1<<16 - 1

// BucketChunkCell returns the chunk cell (family FamilyChunk, chunk.go) that
// holds samples — ascending, one per timestamp, all in the bucket starting at
// bucketStart — as one chunk, Prometheus' XOR or a decimal chunk (decimal.go),
// whichever is smaller: qualifier offset 0, timestamp the bucket's last
// millisecond. It fails, wrapping kv.ErrInvalidArgument, on no samples, samples
// out of order or outside the bucket, or more than MaxChunkSamples.
func BucketChunkCell(samples []Sample, bucketStart int64, width time.Duration) (kv.Cell, error) {
	switch {
	case len(samples) == 0:
		return kv.Cell{}, fmt.Errorf("schema: a chunk of no samples: %w", kv.ErrInvalidArgument)
	case len(samples) > MaxChunkSamples:
		return kv.Cell{}, fmt.Errorf("schema: %d samples in bucket %d, more than a chunk holds (%d): %w",
			len(samples), bucketStart, MaxChunkSamples, kv.ErrInvalidArgument)
	case samples[0].T < bucketStart || samples[len(samples)-1].T-bucketStart >= width.Milliseconds():
		return kv.Cell{}, fmt.Errorf("schema: samples [%d, %d] are not all in bucket %d: %w",
			samples[0].T, samples[len(samples)-1].T, bucketStart, kv.ErrInvalidArgument)
	}
	chk := chunkenc.NewXORChunk()
	app, err := chk.Appender()
	if err != nil {
		return kv.Cell{}, fmt.Errorf("schema: chunk appender: %w", err)
	}
	for i, s := range samples {
		if i > 0 && s.T <= samples[i-1].T {
			return kv.Cell{}, fmt.Errorf("schema: chunk samples not ascending at %d: %w", s.T, kv.ErrInvalidArgument)
		}
		app.Append(0, s.T, s.V)
	}
	q, err := AppendChunkQualifier(nil, 0, width)
	if err != nil {
		return kv.Cell{}, err
	}
	value := AppendChunkValue(nil, byte(chunkenc.EncXOR), chk.Bytes())
	if dec, ok := AppendDecimalChunk(nil, samples); ok && len(dec) < len(value) {
		value = dec
	}
	return kv.Cell{Family: FamilyChunk, Qualifier: q, Timestamp: bucketStart + width.Milliseconds() - 1, Value: value}, nil
}

// appendChunkSamples appends the samples of chk in [mint, maxt].
func appendChunkSamples(dst []Sample, chk chunkenc.Chunk, mint, maxt int64) ([]Sample, error) {
	it := chk.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if t >= mint && t <= maxt {
			dst = append(dst, Sample{T: t, V: v})
		}
	}
	return dst, it.Err()
}

// mergeRaw merges chunk samples (any order) with ascending raw samples, one per
// timestamp, raw winning.
func mergeRaw(chunks, raw []Sample) []Sample {
	slices.SortStableFunc(chunks, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
	chunks = keepLast(chunks)
	out := make([]Sample, 0, len(chunks)+len(raw))
	i, j := 0, 0
	for i < len(chunks) || j < len(raw) {
		switch {
		case j == len(raw) || (i < len(chunks) && chunks[i].T < raw[j].T):
			out = append(out, chunks[i])
			i++
		case i < len(chunks) && chunks[i].T == raw[j].T:
			i++ // the raw sample replaces it
		default:
			out = append(out, raw[j])
			j++
		}
	}
	return keepLast(out)
}

// keepLast keeps the last sample of each run of equal timestamps.
func keepLast(s []Sample) []Sample {
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && out[n-1].T == x.T {
			out[n-1] = x
			continue
		}
		out = append(out, x)
	}
	return out
}
