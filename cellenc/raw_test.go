package cellenc_test

import (
	"errors"
	"math"
	"testing"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

func TestRawValuesAreBitExact(t *testing.T) {
	r := newRand()
	bits := []uint64{
		0x7ff0000000000002, // Prometheus' stale marker, a signalling NaN
		0x7ff8000000000001, // Prometheus' normal NaN
		0xfff8000000000000, // negative quiet NaN
		0x7ff0000000000001, // smallest signalling NaN payload
		0x8000000000000000, // -0
		0x0000000000000001, // smallest subnormal
		math.Float64bits(math.Inf(1)),
		math.Float64bits(math.Inf(-1)),
		math.Float64bits(math.MaxFloat64),
	}
	for range 1000 {
		bits = append(bits, r.Uint64())
	}
	for _, b := range bits {
		enc := cellenc.AppendRawValue(nil, math.Float64frombits(b))
		if len(enc) != cellenc.RawValueLen || enc[0] != byte(b>>56) || enc[7] != byte(b) {
			t.Fatalf("AppendRawValue(bits %#x) = %x, want the bits big-endian", b, enc)
		}
		v, err := cellenc.DecodeRawValue(enc)
		if err != nil || math.Float64bits(v) != b {
			t.Fatalf("DecodeRawValue(%x) = bits %#x, %v; want %#x", enc, math.Float64bits(v), err, b)
		}
	}
	if _, err := cellenc.DecodeRawValue(make([]byte, 7)); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("a 7-byte value decodes: %v", err)
	}
}
