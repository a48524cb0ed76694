package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Raw samples: family FamilyRaw of the data table, one cell per sample.
//
//	qualifier = offset(4)   big-endian uint32, ms from the row's bucketStart
//	value     = bits(8)     big-endian IEEE-754 float64 bits (cellenc/raw.go), or a
//	                        native histogram (cellenc/histogram.go)
//	timestamp = the sample's timestamp, bucketStart + offset (ms)
//
// Invariants:
//
//   - 0 <= offset < bucket width; a validated bucket width is at most 24h =
//     86,400,000 ms, which fits 4 bytes. Big-endian offsets make a row's raw cells
//     sort by time, oldest first.
//   - The value is the float's bit pattern, never the float converted: every NaN
//     payload survives, in particular Prometheus' stale marker 0x7ff0000000000002
//     (value.StaleNaN), and what Prometheus sent is returned to the last bit.
//   - The cell timestamp is the sample timestamp, so writing a sample twice (a
//     retried remote-write batch) overwrites the same cell instead of adding a
//     version, and the family's TTL expires samples by their own age.

// RawQualifierLen is the size of a raw sample's qualifier.
const RawQualifierLen = 4

// AppendRawQualifier appends the qualifier of a raw sample at offset milliseconds
// after its bucket start to dst. The sample's timestamp is bucketStart + offset; the
// offset must lie in [0, width), else the error wraps ErrMalformed.
func AppendRawQualifier(dst []byte, offset int64, width time.Duration) ([]byte, error) {
	if offset < 0 || offset >= width.Milliseconds() || offset > math.MaxUint32 {
		return dst, fmt.Errorf("schema: raw sample offset %d ms outside bucket width %s: %w", offset, width, ErrMalformed)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(offset)), nil
}

// DecodeRawQualifier decodes a raw sample's qualifier into its offset in milliseconds
// from the bucket start. It fails, wrapping ErrMalformed, unless q is 4 bytes holding
// an offset below width.
func DecodeRawQualifier(q []byte, width time.Duration) (offset int64, err error) {
	if len(q) != RawQualifierLen {
		return 0, fmt.Errorf("schema: raw sample qualifier of %d bytes, want %d: %w", len(q), RawQualifierLen, ErrMalformed)
	}
	offset = int64(binary.BigEndian.Uint32(q))
	if offset >= width.Milliseconds() {
		return 0, fmt.Errorf("schema: raw sample offset %d ms outside bucket width %s: %w", offset, width, ErrMalformed)
	}
	return offset, nil
}
