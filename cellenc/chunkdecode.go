package cellenc

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Decoding one chunk of a chunk cell (DecodeChunkCellSamples, chunk.go): its
// samples, checked as the cell format (chunk.go) requires.

// decodeChunk appends the samples in [mint, maxt] of one chunk of encoding enc
// to dst; *last is the newest timestamp seen before it in the cell, which
// every sample must follow. Prometheus' iterators panic on some malformed
// chunks (a histogram schema they cannot reduce, a bit stream cut short in
// places they do not check): that is ErrMalformed here too.
func decodeChunk(dst ChunkCellSamples, enc byte, data []byte, mint, maxt int64, last *int64) (_ ChunkCellSamples, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cellenc: chunk of encoding %d: %v: %w", enc, p, ErrMalformed)
		}
	}()
	if enc == EncDecimal {
		n := len(dst.Samples)
		var total int
		var err error
		if dst.Samples, total, err = DecodeDecimalChunk(dst.Samples, data, math.MinInt64, math.MaxInt64); err != nil {
			return dst, err
		}
		if first := dst.Samples[n].T; first <= *last {
			return dst, fmt.Errorf("cellenc: decimal chunk starting at %d after a sample at %d: %w", first, *last, ErrMalformed)
		}
		*last = dst.Samples[len(dst.Samples)-1].T
		dst.Samples = append(dst.Samples[:n], cutSamples(dst.Samples[n:], mint, maxt)...)
		dst.Chunks = append(dst.Chunks, nil)
		dst.Total += total
		return dst, nil
	}
	e := chunkenc.Encoding(enc)
	if !chunkenc.IsValidEncoding(e) {
		return dst, fmt.Errorf("cellenc: chunk encoding %d is unknown: %w", enc, ErrMalformed)
	}
	chk, err := chunkenc.FromData(e, data)
	if err != nil {
		return dst, fmt.Errorf("cellenc: %w: %w", err, ErrMalformed)
	}
	if len(data) < 2 || chk.NumSamples() == 0 {
		return dst, fmt.Errorf("cellenc: %s chunk of no samples: %w", e, ErrMalformed)
	}
	if want := chunkValueType(e); want != chunkenc.ValFloat {
		if err := checkHistogramLayout(data); err != nil {
			return dst, fmt.Errorf("cellenc: %s chunk: %w", e, err)
		}
	}
	want := chunkValueType(e)
	// The first sample of a chunk gets the chunk's counter-reset header as
	// its hint: Prometheus' iterators say UnknownCounterReset there, as a
	// TSDB chunk's predecessor may be gone or be a later backfill; a cell's
	// chunks are consecutive, and its first chunk's header is the first
	// sample's own hint (or Unknown), so the header is true here.
	header := histogram.UnknownCounterReset
	if hc, ok := chk.(interface {
		GetCounterResetHeader() chunkenc.CounterResetHeader
	}); ok {
		switch hc.GetCounterResetHeader() {
		case chunkenc.CounterReset:
			header = histogram.CounterReset
		case chunkenc.NotCounterReset:
			header = histogram.NotCounterReset
		case chunkenc.GaugeType:
			header = histogram.GaugeType
		}
	}
	it := chk.Iterator(nil)
	n := 0
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != want {
			return dst, fmt.Errorf("cellenc: %s chunk holds a %s sample: %w", e, vt, ErrMalformed)
		}
		t := it.AtT()
		if t <= *last {
			return dst, fmt.Errorf("cellenc: %s chunk: sample at %d after one at %d: %w", e, t, *last, ErrMalformed)
		}
		*last = t
		n++
		if t < mint || t > maxt {
			continue
		}
		switch vt {
		case chunkenc.ValFloat:
			_, v := it.At()
			dst.Samples = append(dst.Samples, Sample{T: t, V: v, ST: it.AtST()})
		case chunkenc.ValHistogram:
			_, h := it.AtHistogram(nil)
			if n == 1 && !value.IsStaleNaN(h.Sum) {
				h.CounterResetHint = header
			}
			if err := h.Validate(); err != nil {
				return dst, fmt.Errorf("cellenc: %s chunk: histogram at %d: %v: %w", e, t, err, ErrMalformed)
			}
			dst.Histograms = append(dst.Histograms, HistogramSample{T: t, ST: it.AtST(), H: h})
		case chunkenc.ValFloatHistogram:
			_, h := it.AtFloatHistogram(nil)
			if n == 1 && !value.IsStaleNaN(h.Sum) {
				h.CounterResetHint = header
			}
			if err := h.Validate(); err != nil {
				return dst, fmt.Errorf("cellenc: %s chunk: histogram at %d: %v: %w", e, t, err, ErrMalformed)
			}
			dst.Histograms = append(dst.Histograms, HistogramSample{T: t, ST: it.AtST(), FH: h})
		}
	}
	if err := it.Err(); err != nil {
		return dst, fmt.Errorf("cellenc: %s chunk: %w: %w", e, err, ErrMalformed)
	}
	if n != chk.NumSamples() {
		return dst, fmt.Errorf("cellenc: %s chunk of %d samples decodes %d: %w", e, chk.NumSamples(), n, ErrMalformed)
	}
	dst.Chunks = append(dst.Chunks, chk)
	dst.Total += n
	return dst, nil
}

// checkHistogramLayout refuses a histogram chunk whose bucket layout (written
// with its first sample, right after the 3-byte header, in Prometheus'
// varbit coding) claims more buckets than the chunk has bits: every sample
// takes at least a bit per bucket, and Prometheus' iterator allocates the
// buckets the layout claims before it reads any, up to 2^32 a span.
func checkHistogramLayout(data []byte) error {
	r := bitReader{b: data, off: 3 * 8}
	switch r.bits(8) {
	case 0:
	case 255:
		r.bits(64)
	}
	r.varbit() // schema
	var buckets uint64
	for range 2 {
		n := r.varbit()
		for i := uint64(0); i < n && !r.eof; i++ {
			buckets += uint64(uint32(r.varbit())) // length, as chunkenc reads it
			r.varbit()                            // offset
			if buckets > uint64(len(data))*8 {
				return fmt.Errorf("a bucket layout of more than %d buckets in %d bytes: %w", buckets, len(data), ErrMalformed)
			}
		}
	}
	return nil
}

// bitReader reads Prometheus' bit streams (most significant bit first) far
// enough for checkHistogramLayout; past the end it reads zeros and sets eof.
type bitReader struct {
	b   []byte
	off int // in bits
	eof bool
}

func (r *bitReader) bits(n int) uint64 {
	var v uint64
	for range n {
		if r.off >= len(r.b)*8 {
			r.eof = true
			return v
		}
		v = v<<1 | uint64(r.b[r.off/8]>>(7-r.off%8)&1)
		r.off++
	}
	return v
}

// varbit reads a varbit number (chunkenc's putVarbitUint and putVarbitInt
// share the prefix), returning its raw bits.
func (r *bitReader) varbit() uint64 {
	ones := 0
	for ones < 8 && r.bits(1) == 1 {
		ones++
	}
	return r.bits([]int{0, 3, 6, 9, 12, 18, 25, 56, 64}[ones])
}

// chunkValueType is the kind of sample a chunk of encoding e holds.
func chunkValueType(e chunkenc.Encoding) chunkenc.ValueType {
	switch e {
	case chunkenc.EncHistogram, chunkenc.EncHistogramST:
		return chunkenc.ValHistogram
	case chunkenc.EncFloatHistogram, chunkenc.EncFloatHistogramST:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

// cutSamples returns the samples (ascending) in [mint, maxt].
func cutSamples(s []Sample, mint, maxt int64) []Sample {
	i := 0
	for i < len(s) && s[i].T < mint {
		i++
	}
	j := len(s)
	for j > i && s[j-1].T > maxt {
		j--
	}
	return s[i:j]
}
