package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Chunks: family schema.FamilyChunk of the data table, written by compaction
// (compact/), which seals a bucket into one chunk cell and deletes the raw
// cells it covers; every reader merges chunk cells with raw cells
// (DecodeDataRow).
//
//	qualifier = offset(4)          big-endian uint32, ms from the row's bucketStart
//	                               to the start of the chunk's window: 0, as a
//	                               chunk cell holds the whole bucket (BucketCell)
//	value     = encoding(1) | data one of:
//	              1..6  one Prometheus chunk (chunkenc.Encoding: EncXOR,
//	                    EncHistogram, EncFloatHistogram, EncXOR2,
//	                    EncHistogramST, EncFloatHistogramST), its bytes as
//	                    chunkenc.Chunk.Bytes returns them;
//	              0x40  a decimal chunk (decimal.go) of floats;
//	              0x41  EncChunks: several chunks, each
//	                    encoding(1) | uvarint length | data, with encoding one of
//	                    1..6 or 0x40; at least two, each of at least one
//	                    sample, ascending and disjoint in time (every sample of
//	                    one is older than every sample of the next)
//	timestamp = the bucket's last millisecond, bucketStart + width - 1
//
// An empty value holds no samples: what a delete (compact/delete.go) leaves of
// a chunk cell all of whose samples it removed, rather than a column delete,
// whose HBase marker would hide the chunk a later compaction of the bucket
// writes at the same timestamp.
//
// What compaction writes (BucketCell, bucketcell.go: a ChunkEncoder under
// CutCompaction, chunkencode.go) for a bucket's samples:
//
//   - floats only, none with a start timestamp: one XOR or decimal chunk,
//     whichever is smaller — the same bytes as before histograms existed;
//   - otherwise the bucket's samples cut into runs, and the cell is the run's
//     chunk alone when there is one, an EncChunks cell when there are more. A
//     new run starts where the kind changes (float, integer histogram, float
//     histogram), and where Prometheus' own appender
//     (Appender.AppendHistogram(prev, st, t, h, appendOnly=false)) returns a
//     new chunk that is not a recoding: a counter reset, a schema or
//     zero-threshold change, a change of custom bounds; and where a chunk is
//     full (65535 samples, 16383 for the ST histogram encodings). A float run
//     is XOR2 when one of its samples has a start timestamp, else XOR or
//     decimal, whichever is smaller. A histogram run uses the ST encoding when
//     one of its samples has a start timestamp (an ST chunk holds samples
//     without one too). Prometheus' own chunk encoder
//     (storage.NewSeriesToChunkEncoder) cuts at every change between samples
//     with and without a start timestamp instead; one chunk per run is
//     smaller and decodes the same.
//
// Why one cell holding a sequence rather than one cell per chunk at its own
// qualifier offset: a bucket compacted again (late samples, possibly of
// another kind) may cut its samples differently, and a cell of the first
// layout that the second does not rewrite would stay, older than the newer
// data yet winning over it wherever it overlaps. Deleting it is not an option
// (below). One cell rewritten whole never leaves a stale chunk behind. Why a
// bucket of one run is its chunk alone, not an EncChunks cell of one: the
// common bucket (one kind all hour) pays no container byte or length, and is
// a Prometheus chunk that remote read hands out as it is; and floats keep
// their decimal encoding inside an EncChunks cell, where it is smaller. A
// reader built before EncChunks and the ST encodings refuses such cells
// (ErrMalformed); a reader of today reads every cell written before.
//
// What a chunk gives back: every float and every histogram count and sum bit
// for bit, the start timestamps, the timestamps; and what Prometheus' chunks
// give of the rest, as its own TSDB does: a histogram's counter-reset hint is
// NotCounterReset (GaugeType in a gauge chunk) but for a chunk's first
// sample, whose hint is the chunk's counter-reset header (which Prometheus'
// iterators turn into UnknownCounterReset, not knowing whether the chunk
// before is the one that was cut from; in a cell it is): CounterReset where
// the appender found a reset or the sample said so, UnknownCounterReset at
// the start of a run (the bucket's first histogram, or the first after
// floats), where an explicit NotCounterReset is lost too; a histogram
// whose buckets are a subset of the chunk's comes back with the chunk's
// layout (the missing buckets present and empty); a stale marker histogram
// (Sum = value.StaleNaN) comes back as a histogram holding only that Sum.
//
// Invariants:
//
//   - every sample of a chunk lies in its row's bucket and in its window, so
//     chunk qualifiers sort by time; readers accept several chunk cells per row;
//   - a chunk is rewritten in place: compacting a bucket again (late samples)
//     writes the same qualifier at the same timestamp, which replaces the cell on
//     both backends (HBase keeps the later write of equal coordinates). Nothing
//     ever deletes a chunk column, so no HBase delete marker can hide a rewrite,
//     and no rewrite is hidden by an older version with a newer timestamp (which
//     would happen if the timestamp were the last sample's and a rewrite's last
//     sample were older);
//   - the cell timestamp is the bucket's end, so the family's TTL expires a
//     chunk once every sample it may hold expired; a reader that restricts a scan
//     to a time range must let through cells up to the end of the last bucket it
//     reads (a chunk's samples are older than its cell timestamp);
//   - a chunk and raw cells of the same row may hold the same timestamp (a late
//     sample written again after compaction, or a compaction interrupted before
//     it deleted the raw cells): readers keep the raw sample, whatever the kinds.

// ChunkEncodingLen is the length of the encoding byte in front of a chunk value.
const ChunkEncodingLen = 1

// EncChunks is the encoding byte of a chunk cell holding several chunks. It is
// not one of Prometheus' chunkenc encodings (1 to 6 there).
const EncChunks byte = 0x41

// AppendChunkValue appends the value of a chunk cell: the encoding byte, then
// the chunk's bytes.
func AppendChunkValue(dst []byte, encoding byte, data []byte) []byte {
	dst = append(dst, encoding)
	return append(dst, data...)
}

// DecodeChunkValue splits a chunk cell's value into its encoding byte and the
// chunk's bytes (aliasing b). It fails, wrapping ErrMalformed, on an empty value.
func DecodeChunkValue(b []byte) (encoding byte, data []byte, err error) {
	if len(b) < ChunkEncodingLen+1 {
		return 0, nil, fmt.Errorf("cellenc: chunk value of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	return b[0], b[ChunkEncodingLen:], nil
}

// ChunkCellSamples are the samples of one chunk cell (DecodeChunkCellSamples).
type ChunkCellSamples struct {
	// Samples and Histograms are the cell's samples in [mint, maxt], each
	// ascending.
	Samples    []Sample
	Histograms []HistogramSample
	// Chunks are the cell's chunks, oldest first; an entry is nil for a
	// decimal chunk, which is not a Prometheus chunk.
	Chunks []chunkenc.Chunk
	// Total is how many samples the cell holds, in [mint, maxt] or not.
	Total int
}

// DecodeChunkCellSamples appends the samples in [mint, maxt] of a chunk cell's
// value to dst. It fails, wrapping ErrMalformed, on a value BucketCell cannot
// have written: an unknown encoding, a chunk that does not decode, samples not
// ascending, an EncChunks value of fewer than two chunks, an empty chunk, a
// histogram Prometheus' Validate refuses.
func DecodeChunkCellSamples(dst ChunkCellSamples, value []byte, mint, maxt int64) (ChunkCellSamples, error) {
	enc, data, err := DecodeChunkValue(value)
	if err != nil {
		return dst, err
	}
	if enc != EncChunks {
		last := int64(math.MinInt64)
		return decodeChunk(dst, enc, data, mint, maxt, &last)
	}
	last := int64(math.MinInt64)
	n := 0
	for len(data) > 0 {
		e := data[0]
		l, k := binary.Uvarint(data[1:])
		if k <= 0 || l == 0 || l > uint64(len(data)-1-k) || k != uvarintLen(l) {
			return dst, fmt.Errorf("cellenc: chunk %d of a multi-chunk cell: bad length: %w", n, ErrMalformed)
		}
		body := data[1+k : 1+k+int(l)]
		data = data[1+k+int(l):]
		if e == EncChunks {
			return dst, fmt.Errorf("cellenc: chunk %d of a multi-chunk cell is a multi-chunk cell: %w", n, ErrMalformed)
		}
		if dst, err = decodeChunk(dst, e, body, mint, maxt, &last); err != nil {
			return dst, fmt.Errorf("cellenc: chunk %d of a multi-chunk cell: %w", n, err)
		}
		n++
	}
	if n < 2 {
		return dst, fmt.Errorf("cellenc: multi-chunk cell of %d chunks: %w", n, ErrMalformed)
	}
	return dst, nil
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}
