package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Raw sample values: the value of a cell of family schema.FamilyRaw holding a
// float sample (the qualifier and timestamp are schema/raw.go's).
//
//	value = bits(8)   big-endian IEEE-754 float64 bits, as math.Float64bits
//	      = st(8) | bits(8) with a start timestamp (histogram.go, AppendSampleValue)
//
// The value is the float's bit pattern, never the float converted: every NaN
// payload survives, in particular Prometheus' stale marker 0x7ff0000000000002
// (value.StaleNaN), and what Prometheus sent is returned to the last bit.

// RawValueLen is the size of a raw float sample's value without a start
// timestamp.
const RawValueLen = 8

// AppendRawValue appends the 8-byte big-endian bit pattern of v to dst.
func AppendRawValue(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// DecodeRawValue decodes a raw sample's value bit-exactly. It fails, wrapping
// ErrMalformed, unless b is 8 bytes long.
func DecodeRawValue(b []byte) (float64, error) {
	if len(b) != RawValueLen {
		return 0, fmt.Errorf("cellenc: raw sample value of %d bytes, want %d: %w", len(b), RawValueLen, ErrMalformed)
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}
