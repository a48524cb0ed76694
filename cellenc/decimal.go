package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Decimal chunks: a second encoding of chunk cells (chunk.go), chosen by
// compaction when it is smaller than Prometheus' XOR chunk — which it is for
// most of what exporters send: integers (bytes, counts) and decimals with a few
// digits after the point (seconds in 1/100 s, load averages). As
// VictoriaMetrics does, the values are written as integers m with one decimal
// scale for the chunk, V = m / 10^scale, and the integers as varint deltas
// (or deltas of deltas, whichever is smaller) divided by their greatest common
// divisor; timestamps as the first, the first step, and deltas of deltas
// unless every step is the same. XOR's bit-level coding of float64 mantissas
// cannot see that 12345.67 follows 12345.52.
//
// A chunk is decimal only if every value comes back to the bit (m / 10^scale
// is the nearest float64 to the decimal, as strconv parses it): NaN, ±Inf, -0,
// and values needing more than 15 decimals or beyond 2^53 keep the bucket XOR.
//
//	value = EncDecimal | body
//	body  = uvarint n                    samples, 1 .. MaxChunkSamples
//	        uvarint t0                   first timestamp
//	        if n > 1:
//	          uvarint step               t1 - t0, > 0
//	          byte    tmode              0: every step is step; 1: n-2 varint
//	                                     deltas of steps follow
//	        byte    scale                0 .. 15
//	        uvarint gcd                  >= 1, divides every delta of m
//	        byte    vmode                0: n-1 varint deltas/gcd follow;
//	                                     1: n-1 varint deltas of (delta/gcd)
//	        varint  m0
//
// Invariants checked by the decoder: timestamps strictly ascending and >= 0,
// |m| <= 2^53, no trailing bytes.

// EncDecimal is the encoding byte of a decimal chunk. It is not one of
// Prometheus' chunkenc encodings (1 to 3 there).
const EncDecimal byte = 0x40

// maxDecimalScale is the most digits after the point a decimal chunk keeps.
const maxDecimalScale = 15

// maxDecimalMantissa bounds |m|: every integer up to it is a float64.
const maxDecimalMantissa = 1 << 53

var pow10 = func() (p [maxDecimalScale + 1]float64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decimalValue returns m / 10^scale as a float64.
func decimalValue(m int64, scale int) float64 {
	if scale == 0 {
		return float64(m)
	}
	return float64(m) / pow10[scale]
}

// decimals returns the digits after the point of v's shortest decimal form,
// false when v has no decimal chunk form (NaN, ±Inf, -0, too many digits).
func decimals(v float64) (int, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || (v == 0 && math.Signbit(v)) {
		return 0, false
	}
	if v == math.Trunc(v) {
		return 0, math.Abs(v) <= maxDecimalMantissa
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	i := strings.IndexByte(s, '.')
	if i < 0 {
		return 0, true
	}
	d := len(s) - i - 1
	return d, d <= maxDecimalScale
}

// AppendDecimalChunk appends samples (ascending, one per timestamp, at least
// one, timestamps >= 0) as a decimal chunk value, encoding byte first; false
// (and dst unchanged) when some value has no exact decimal form.
func AppendDecimalChunk(dst []byte, samples []Sample) ([]byte, bool) {
	n := len(samples)
	if n == 0 || n > MaxChunkSamples {
		return dst, false
	}
	scale := 0
	for _, s := range samples {
		d, ok := decimals(s.V)
		if !ok {
			return dst, false
		}
		scale = max(scale, d)
	}
	ms := make([]int64, n)
	for i, s := range samples {
		m := math.Round(s.V * pow10[scale])
		if math.Abs(m) > maxDecimalMantissa {
			return dst, false
		}
		ms[i] = int64(m)
		if math.Float64bits(decimalValue(ms[i], scale)) != math.Float64bits(s.V) {
			return dst, false
		}
	}
	out := append(dst, EncDecimal)
	out = binary.AppendUvarint(out, uint64(n))
	out = binary.AppendUvarint(out, uint64(samples[0].T))
	if n > 1 {
		step := samples[1].T - samples[0].T
		out = binary.AppendUvarint(out, uint64(step))
		regular := true
		for i := 2; i < n; i++ {
			regular = regular && samples[i].T-samples[i-1].T == step
		}
		if regular {
			out = append(out, 0)
		} else {
			out = append(out, 1)
			for i := 2; i < n; i++ {
				out = binary.AppendVarint(out, (samples[i].T-samples[i-1].T)-(samples[i-1].T-samples[i-2].T))
			}
		}
	}
	out = append(out, byte(scale))
	var g int64
	for i := 1; i < n; i++ {
		g = gcd(g, abs(ms[i]-ms[i-1]))
	}
	g = max(g, 1)
	out = binary.AppendUvarint(out, uint64(g))
	var deltas, dods []byte
	var prev int64
	for i := 1; i < n; i++ {
		d := (ms[i] - ms[i-1]) / g
		deltas = binary.AppendVarint(deltas, d)
		dods = binary.AppendVarint(dods, d-prev)
		prev = d
	}
	body := deltas
	if len(dods) < len(deltas) {
		out = append(out, 1)
		body = dods
	} else {
		out = append(out, 0)
	}
	out = binary.AppendVarint(out, ms[0])
	return append(out, body...), true
}

// DecodeDecimalChunk appends the samples in [mint, maxt] of a decimal chunk's
// data (the value after its encoding byte) to dst, and returns how many samples
// the chunk holds. It fails, wrapping ErrMalformed, on data AppendDecimalChunk
// cannot have written.
func DecodeDecimalChunk(dst []Sample, data []byte, mint, maxt int64) ([]Sample, int, error) {
	d := valueDecoder{b: data}
	n := d.uvarint()
	t := int64(d.uvarint())
	if d.err == nil && (n == 0 || n > MaxChunkSamples || n > uint64(len(data))) {
		d.fail(fmt.Sprintf("%d samples", n))
	}
	ts := make([]int64, 0, min(n, MaxChunkSamples))
	if d.err == nil {
		ts = append(ts, t)
	}
	if n > 1 {
		step := int64(d.uvarint())
		if step <= 0 {
			d.fail("a step that is not positive")
		}
		mode := d.byte()
		for i := uint64(1); i < n && d.err == nil; i++ {
			if i >= 2 {
				switch mode {
				case 0:
				case 1:
					step += d.varint()
				default:
					d.fail(fmt.Sprintf("timestamp mode %d", mode))
				}
			}
			if step <= 0 || t > math.MaxInt64-step {
				d.fail("timestamps not ascending")
			}
			t += step
			ts = append(ts, t)
		}
	}
	scale := int(d.byte())
	if scale > maxDecimalScale {
		d.fail(fmt.Sprintf("scale %d", scale))
	}
	g := int64(d.uvarint())
	if d.err == nil && g < 1 {
		d.fail("gcd 0")
	}
	vmode := d.byte()
	if vmode > 1 {
		d.fail(fmt.Sprintf("value mode %d", vmode))
	}
	m := d.varint()
	var delta int64
	for i := range ts {
		if d.err != nil {
			break
		}
		if i > 0 {
			x := d.varint()
			if vmode == 1 {
				x += delta
			}
			delta = x
			if abs(x) > 2*maxDecimalMantissa/g {
				d.fail("value out of range")
				break
			}
			m += x * g
		}
		if abs(m) > maxDecimalMantissa {
			d.fail("value out of range")
			break
		}
		if ts[i] >= mint && ts[i] <= maxt {
			dst = append(dst, Sample{T: ts[i], V: decimalValue(m, scale)})
		}
	}
	if d.err == nil && d.off != len(data) {
		d.fail(fmt.Sprintf("%d trailing bytes", len(data)-d.off))
	}
	if d.err != nil {
		return dst, 0, fmt.Errorf("cellenc: decimal chunk: %w", d.err)
	}
	return dst, len(ts), nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
