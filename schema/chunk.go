package schema

import (
	"fmt"
	"time"
)

// Chunks: family FamilyChunk of the data table, written by compaction
// (downsample/), which seals a bucket into one chunk and deletes the raw cells
// it covers; every reader merges chunk cells with raw cells (DecodeDataRow).
//
//	qualifier = offset(4)          big-endian uint32, ms from the row's bucketStart
//	                               to the start of the chunk's window: 0, as a
//	                               chunk holds the whole bucket (BucketChunkCell)
//	value     = encoding(1) | data Prometheus chunk encoding (chunkenc.Encoding,
//	                               EncXOR = 1) followed by the chunk's bytes as
//	                               chunkenc.Chunk.Bytes returns them; or
//	                               EncDecimal (0x40) and a decimal chunk
//	                               (decimal.go), whichever is smaller
//	timestamp = the bucket's last millisecond, bucketStart + width - 1
//
// Invariants:
//
//   - every sample of a chunk lies in its row's bucket and in its window, so
//     chunk qualifiers sort by time; readers accept several chunks per row;
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
//     it deleted the raw cells): readers keep the raw sample.

// ChunkEncodingLen is the length of the encoding byte in front of a chunk value.
const ChunkEncodingLen = 1

// AppendChunkQualifier appends the qualifier of a chunk whose window starts
// offset milliseconds after its bucket start; see AppendRawQualifier.
func AppendChunkQualifier(dst []byte, offset int64, width time.Duration) ([]byte, error) {
	return AppendRawQualifier(dst, offset, width)
}

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
		return 0, nil, fmt.Errorf("schema: chunk value of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	return b[0], b[ChunkEncodingLen:], nil
}
