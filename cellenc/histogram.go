package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// Native histogram samples: family schema.FamilyRaw of the data table, in the same
// cells as float samples (same qualifier, same timestamp), so that a series may
// change from float to histogram and back sample by sample, as in Prometheus,
// and a sample written twice replaces itself whatever its kind.
//
//	qualifier = offset(4)   as for a float sample (schema.AppendRawQualifier)
//	value     = kind(1) | hint(1) | schema(zigzag varint) | zeroThreshold(8)
//	            | zeroCount | count | sum(8)
//	            | spans(positive) | spans(negative)
//	            | buckets(positive) | buckets(negative)
//	            | customValues
//	timestamp = the sample's timestamp
//
//	kind         0x01 an integer histogram (histogram.Histogram), 0x02 a float
//	             histogram (histogram.FloatHistogram); 0x11 and 0x12 the same
//	             with a start timestamp: 8 more bytes, big-endian int64 ms,
//	             right after the hint
//	hint         the counter-reset hint (histogram.CounterResetHint, 0..3)
//	zeroCount,   uvarint for an integer histogram; 8 bytes of float64 bits
//	count        (big-endian, as every float here) for a float histogram
//	spans        uvarint n, then n × (zigzag varint offset, uvarint length)
//	buckets      uvarint n, then n × zigzag varint delta (integer histogram:
//	             the delta-encoded counts Prometheus uses) or n × 8 bytes of
//	             float64 bits (float histogram: absolute counts)
//	customValues uvarint n, then n × 8 bytes of float64 bits: the bucket
//	             bounds of a custom-buckets histogram (schema -53, NHCB); n is
//	             0 for exponential schemas
//
// A float sample with a start timestamp (Sample.ST != 0) has a 16-byte value:
// the start timestamp (big-endian int64 ms), then the float's bits.
//
// Invariants:
//
//   - a float sample's value is exactly 8 bytes (RawValueLen), 16 with a start
//     timestamp (RawValueSTLen), and a histogram's is at least 20 (kind, hint, schema, zero threshold, sum and the five
//     counts of the empty lists), so the length tells them apart
//     (DecodeSampleValue);
//   - every float is stored as its bit pattern, so NaN payloads (the stale
//     marker value.StaleNaN in Sum) and -0 survive; the encoding is canonical:
//     decoding and encoding again gives the same bytes, which the fuzz target
//     checks;
//   - a decoded histogram passes Prometheus' own Validate (spans and buckets
//     agree, counts are consistent) and has a schema Prometheus knows
//     (-4..8, or -53 with custom values); anything else is ErrMalformed.
//
// After compaction (compact/), histogram samples go into Prometheus' own
// chunk encodings in the chunk family: chunkenc.EncHistogram and
// EncFloatHistogram, or their ST forms when samples carry start timestamps, as
// floats go into EncXOR (EncXOR2 with start timestamps); see chunk.go.

// Sample kinds of a raw cell's value (the first byte of a histogram value).
const (
	histogramKindInt   byte = 0x01
	histogramKindFloat byte = 0x02
	// histogramWithST marks a histogram value that carries a start timestamp.
	histogramWithST byte = 0x10
)

// RawValueSTLen is the length of a float sample's value with a start timestamp.
const RawValueSTLen = 8 + RawValueLen

// AppendSampleValue appends the raw cell value of a float sample to dst: its
// bits, preceded by its start timestamp when it has one.
func AppendSampleValue(dst []byte, s Sample) []byte {
	if s.ST != 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(s.ST))
	}
	return AppendRawValue(dst, s.V)
}

// AppendHistogramSampleValue appends the raw cell value of a histogram sample
// (its H or FH, which must be valid) to dst, with its start timestamp when it
// has one.
func AppendHistogramSampleValue(dst []byte, s HistogramSample) []byte {
	start := len(dst)
	if s.H != nil {
		dst = AppendHistogramValue(dst, s.H)
	} else {
		dst = AppendFloatHistogramValue(dst, s.FH)
	}
	if s.ST == 0 {
		return dst
	}
	// Insert the start timestamp after kind and hint.
	dst[start] |= histogramWithST
	var st [8]byte
	binary.BigEndian.PutUint64(st[:], uint64(s.ST))
	dst = append(dst, st[:]...)
	copy(dst[start+10:], dst[start+2:len(dst)-8])
	copy(dst[start+2:start+10], st[:])
	return dst
}

// minHistogramValueLen is the shortest histogram value: kind, hint, a one-byte
// schema, zero threshold and sum (8 each), one-byte zero count and count, and
// the five one-byte list lengths.
const minHistogramValueLen = 1 + 1 + 1 + 8 + 8 + 1 + 1 + 5

// AppendHistogramValue appends the raw cell value of an integer native
// histogram to dst. h must be valid (h.Validate()); the caller validates.
func AppendHistogramValue(dst []byte, h *histogram.Histogram) []byte {
	dst = append(dst, histogramKindInt, byte(h.CounterResetHint))
	dst = binary.AppendVarint(dst, int64(h.Schema))
	dst = appendFloat(dst, h.ZeroThreshold)
	dst = binary.AppendUvarint(dst, h.ZeroCount)
	dst = binary.AppendUvarint(dst, h.Count)
	dst = appendFloat(dst, h.Sum)
	dst = appendSpans(dst, h.PositiveSpans)
	dst = appendSpans(dst, h.NegativeSpans)
	dst = appendDeltas(dst, h.PositiveBuckets)
	dst = appendDeltas(dst, h.NegativeBuckets)
	return appendFloats(dst, h.CustomValues)
}

// AppendFloatHistogramValue appends the raw cell value of a float native
// histogram to dst. h must be valid (h.Validate()); the caller validates.
func AppendFloatHistogramValue(dst []byte, h *histogram.FloatHistogram) []byte {
	dst = append(dst, histogramKindFloat, byte(h.CounterResetHint))
	dst = binary.AppendVarint(dst, int64(h.Schema))
	dst = appendFloat(dst, h.ZeroThreshold)
	dst = appendFloat(dst, h.ZeroCount)
	dst = appendFloat(dst, h.Count)
	dst = appendFloat(dst, h.Sum)
	dst = appendSpans(dst, h.PositiveSpans)
	dst = appendSpans(dst, h.NegativeSpans)
	dst = appendFloats(dst, h.PositiveBuckets)
	dst = appendFloats(dst, h.NegativeBuckets)
	return appendFloats(dst, h.CustomValues)
}

// SampleValue is a decoded raw cell value: exactly one of a float (H and FH
// nil), an integer histogram (H) or a float histogram (FH), and its start
// timestamp (0 when it has none).
type SampleValue struct {
	ST int64
	F  float64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// DecodeSampleValue decodes a raw cell value of either kind, bit-exactly. It
// fails, wrapping ErrMalformed, on any value that AppendRawValue,
// AppendHistogramValue or AppendFloatHistogramValue cannot have written.
func DecodeSampleValue(b []byte) (SampleValue, error) {
	switch len(b) {
	case RawValueLen:
		f, err := DecodeRawValue(b)
		return SampleValue{F: f}, err
	case RawValueSTLen:
		st := int64(binary.BigEndian.Uint64(b))
		if st == 0 {
			return SampleValue{}, fmt.Errorf("cellenc: float sample value with a start timestamp of 0: %w", ErrMalformed)
		}
		f, err := DecodeRawValue(b[8:])
		return SampleValue{ST: st, F: f}, err
	}
	if len(b) < minHistogramValueLen {
		return SampleValue{}, fmt.Errorf("cellenc: sample value of %d bytes is neither a float (%d) nor a histogram (at least %d): %w",
			len(b), RawValueLen, minHistogramValueLen, ErrMalformed)
	}
	d := histogramDecoder{b: b[2:]}
	kind, hint := b[0], histogram.CounterResetHint(b[1])
	var st int64
	if kind&histogramWithST != 0 {
		kind &^= histogramWithST
		st = int64(binary.BigEndian.Uint64(b[2:10])) // len(b) >= 20
		if st == 0 {
			return SampleValue{}, fmt.Errorf("cellenc: histogram value with a start timestamp of 0: %w", ErrMalformed)
		}
		d.b = b[10:]
	}
	if hint > histogram.GaugeType {
		return SampleValue{}, fmt.Errorf("cellenc: histogram counter-reset hint %d is unknown: %w", hint, ErrMalformed)
	}
	schemaNumber := d.varint()
	switch kind {
	case histogramKindInt:
		h := &histogram.Histogram{CounterResetHint: hint, Schema: int32(schemaNumber)}
		h.ZeroThreshold = d.float()
		h.ZeroCount = d.uvarint()
		h.Count = d.uvarint()
		h.Sum = d.float()
		h.PositiveSpans = d.spans()
		h.NegativeSpans = d.spans()
		h.PositiveBuckets = d.deltas()
		h.NegativeBuckets = d.deltas()
		h.CustomValues = d.floats()
		if err := d.finish(schemaNumber); err != nil {
			return SampleValue{}, err
		}
		if err := h.Validate(); err != nil {
			return SampleValue{}, fmt.Errorf("cellenc: integer histogram: %v: %w", err, ErrMalformed)
		}
		return SampleValue{ST: st, H: h}, nil
	case histogramKindFloat:
		h := &histogram.FloatHistogram{CounterResetHint: hint, Schema: int32(schemaNumber)}
		h.ZeroThreshold = d.float()
		h.ZeroCount = d.float()
		h.Count = d.float()
		h.Sum = d.float()
		h.PositiveSpans = d.spans()
		h.NegativeSpans = d.spans()
		h.PositiveBuckets = d.floats()
		h.NegativeBuckets = d.floats()
		h.CustomValues = d.floats()
		if err := d.finish(schemaNumber); err != nil {
			return SampleValue{}, err
		}
		if err := h.Validate(); err != nil {
			return SampleValue{}, fmt.Errorf("cellenc: float histogram: %v: %w", err, ErrMalformed)
		}
		return SampleValue{ST: st, FH: h}, nil
	default:
		return SampleValue{}, fmt.Errorf("cellenc: sample value kind 0x%02x is unknown: %w", kind, ErrMalformed)
	}
}

func appendFloat(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
}

func appendFloats(dst []byte, fs []float64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(fs)))
	for _, f := range fs {
		dst = appendFloat(dst, f)
	}
	return dst
}

func appendDeltas(dst []byte, ds []int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ds)))
	for _, d := range ds {
		dst = binary.AppendVarint(dst, d)
	}
	return dst
}

func appendSpans(dst []byte, spans []histogram.Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendVarint(dst, int64(s.Offset))
		dst = binary.AppendUvarint(dst, uint64(s.Length))
	}
	return dst
}

// histogramDecoder reads a histogram value's fields; the first malformed one
// sets err, after which every read returns zero values.
type histogramDecoder struct {
	b       []byte
	err     error
	scratch [binary.MaxVarintLen64]byte
}

func (d *histogramDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("cellenc: histogram value: %s: %w", what, ErrMalformed)
	}
	d.b = nil
}

// varint and uvarint refuse non-minimal encodings too, so that a value has
// exactly one encoding.
func (d *histogramDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 || n != len(binary.AppendVarint(d.scratch[:0], v)) {
		d.fail("truncated or overlong varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *histogramDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != len(binary.AppendUvarint(d.scratch[:0], v)) {
		d.fail("truncated or overlong uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *histogramDecoder) float() float64 {
	if len(d.b) < 8 {
		d.fail("truncated float")
		return 0
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return f
}

// count reads a list length, which cannot exceed what the rest of the value
// holds (each element takes at least min bytes).
func (d *histogramDecoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail(fmt.Sprintf("a list of %d elements in %d bytes", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *histogramDecoder) spans() []histogram.Span {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	spans := make([]histogram.Span, n)
	for i := range spans {
		off := d.varint()
		length := d.uvarint()
		if off < math.MinInt32 || off > math.MaxInt32 || length > math.MaxUint32 {
			d.fail("span out of range")
		}
		spans[i] = histogram.Span{Offset: int32(off), Length: uint32(length)}
	}
	return spans
}

func (d *histogramDecoder) deltas() []int64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	ds := make([]int64, n)
	for i := range ds {
		ds[i] = d.varint()
	}
	return ds
}

func (d *histogramDecoder) floats() []float64 {
	n := d.count(8)
	if n == 0 {
		return nil
	}
	fs := make([]float64, n)
	for i := range fs {
		fs[i] = d.float()
	}
	return fs
}

// finish checks that the whole value was read and that its schema is one
// Prometheus knows.
func (d *histogramDecoder) finish(schemaNumber int64) error {
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("cellenc: histogram value: %d bytes after its last field: %w", len(d.b), ErrMalformed)
	}
	if !histogram.IsValidSchema(int32(schemaNumber)) || schemaNumber != int64(int32(schemaNumber)) {
		return fmt.Errorf("cellenc: histogram schema %d is not one of -4..8 or -53 (custom buckets): %w", schemaNumber, ErrMalformed)
	}
	return nil
}
