package cellenc_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// decimalRoundTrip encodes samples as a decimal chunk (wanting ok as given)
// and decodes them back to the bit.
func decimalRoundTrip(t *testing.T, samples []cellenc.Sample, wantOK bool) []byte {
	t.Helper()
	b, ok := cellenc.AppendDecimalChunk(nil, samples)
	if ok != wantOK {
		t.Fatalf("AppendDecimalChunk(%v) ok = %v, want %v", samples, ok, wantOK)
	}
	if !ok {
		return nil
	}
	if b[0] != cellenc.EncDecimal {
		t.Fatalf("encoding byte %#x", b[0])
	}
	got, n, err := cellenc.DecodeDecimalChunk(nil, b[1:], math.MinInt64, math.MaxInt64)
	if err != nil || n != len(samples) || len(got) != len(samples) {
		t.Fatalf("DecodeDecimalChunk: %d samples (%d), %v; want %d", len(got), n, err, len(samples))
	}
	for i := range samples {
		if got[i].T != samples[i].T || math.Float64bits(got[i].V) != math.Float64bits(samples[i].V) {
			t.Fatalf("sample %d: %v@%d, want %v@%d", i, got[i].V, got[i].T, samples[i].V, samples[i].T)
		}
	}
	return b
}

func TestDecimalChunkRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name string
		gen  func(i int) float64
	}{
		{"constant", func(int) float64 { return 42 }},
		{"integer counter", func(i int) float64 { return float64(i * i * 1000) }},
		{"cpu seconds in 1/100", func(i int) float64 { return float64(123456+i*1497+r.IntN(7)) / 100 }},
		{"load average", func(int) float64 { return float64(r.IntN(500)) / 100 }},
		{"pages of 4096", func(i int) float64 { return float64((1000 + r.IntN(10)) * 4096) }},
		{"negative", func(i int) float64 { return -float64(i+1) / 8 }},
		{"thousandths", func(i int) float64 { return float64(i) / 1000 }},
		{"15 decimals", func(i int) float64 { return float64(i) / 1e15 }},
		{"2^53", func(int) float64 { return 1 << 53 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ss []cellenc.Sample
			ts := int64(1_700_000_000_000)
			for i := range 240 {
				ss = append(ss, cellenc.Sample{T: ts, V: tc.gen(i)})
				ts += 15_000
				if i%50 == 7 {
					ts += int64(r.IntN(2000)) // irregular steps now and then
				}
			}
			decimalRoundTrip(t, ss, true)
			decimalRoundTrip(t, ss[:1], true)
			decimalRoundTrip(t, ss[:2], true)
		})
	}
	// Values with no exact decimal form keep the bucket XOR.
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.Nextafter(0.3, 1),
		1.0 / 3, 1 << 54, math.SmallestNonzeroFloat64, 1e-16} {
		decimalRoundTrip(t, []cellenc.Sample{{T: 1, V: 1}, {T: 2, V: v}}, false)
	}
}

// TestBucketChunkCellPicksTheSmaller: a bucket of a counter in 1/100 s is a
// decimal chunk, smaller than XOR by half or more; random float64s stay XOR;
// either way the row decodes to the samples written.
func TestBucketChunkCellPicksTheSmaller(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	counter, random := make([]cellenc.Sample, 240), make([]cellenc.Sample, 240)
	v := 1000.0
	for i := range counter {
		v += float64(1400+r.IntN(200)) / 100
		v = math.Round(v*100) / 100
		counter[i] = cellenc.Sample{T: int64(i) * 15_000, V: v}
		random[i] = cellenc.Sample{T: int64(i) * 15_000, V: r.Float64()}
	}
	for _, tc := range []struct {
		name    string
		samples []cellenc.Sample
		enc     byte
		maxLen  int
	}{
		{"counter", counter, cellenc.EncDecimal, 240 * 2},
		{"random", random, 1, 240 * 9},
	} {
		cell, err := cellenc.BucketChunkCell(tc.samples, 0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if cell.Value[0] != tc.enc || len(cell.Value) > tc.maxLen {
			t.Errorf("%s: encoding %#x, %d bytes; want %#x, at most %d", tc.name, cell.Value[0], len(cell.Value), tc.enc, tc.maxLen)
		}
	}
}

func TestDecodeDecimalChunkRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"empty", nil, "cellenc: decimal chunk: bad varint at byte 0: malformed"},
		{"no samples", []byte{0x00, 0x00, 0x00, 0x01, 0x00, 0x00}, "cellenc: decimal chunk: 0 samples at byte 2: malformed"},
		{"step 0", []byte{0x02, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00}, "cellenc: decimal chunk: a step that is not positive at byte 3: malformed"},
		{"timestamp mode 2", []byte{0x03, 0x01, 0x01, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}, "cellenc: decimal chunk: timestamp mode 2 at byte 4: malformed"},
		{"steps going back", []byte{0x03, 0x01, 0x02, 0x01, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}, "cellenc: decimal chunk: timestamps not ascending at byte 5: malformed"},
		{"scale 16", []byte{0x01, 0x01, 0x10, 0x01, 0x00, 0x00}, "cellenc: decimal chunk: scale 16 at byte 3: malformed"},
		{"gcd 0", []byte{0x01, 0x01, 0x00, 0x00, 0x00, 0x00}, "cellenc: decimal chunk: gcd 0 at byte 4: malformed"},
		{"value mode 2", []byte{0x01, 0x01, 0x00, 0x01, 0x02, 0x00}, "cellenc: decimal chunk: value mode 2 at byte 5: malformed"},
		{"value beyond 2^53", []byte{0x01, 0x01, 0x00, 0x01, 0x00, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, "cellenc: decimal chunk: value out of range at byte 14: malformed"},
		{"trailing bytes", []byte{0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00}, "cellenc: decimal chunk: 1 trailing bytes at byte 6: malformed"},
	} {
		_, _, err := cellenc.DecodeDecimalChunk(nil, tc.b, math.MinInt64, math.MaxInt64)
		if !errors.Is(err, schema.ErrMalformed) || err.Error() != tc.msg {
			t.Errorf("%s: DecodeDecimalChunk(% x) = %v, want %s", tc.name, tc.b, err, tc.msg)
		}
	}
}
