package schema

import "time"

// Chunk cells: family FamilyChunk of the data table, written by compaction.
//
//	qualifier = offset(4)   big-endian uint32, ms from the row's bucketStart to
//	                        the start of the chunk's window: 0, as a chunk cell
//	                        holds the whole bucket
//	value     = a chunk cell (cellenc/chunk.go)
//	timestamp = the bucket's last millisecond, bucketStart + width - 1

// AppendChunkQualifier appends the qualifier of a chunk whose window starts
// offset milliseconds after its bucket start; see AppendRawQualifier.
func AppendChunkQualifier(dst []byte, offset int64, width time.Duration) ([]byte, error) {
	return AppendRawQualifier(dst, offset, width)
}
