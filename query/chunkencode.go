package query

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// Chunks of rows with native histograms or start timestamps (remote read's
// STREAMED_XOR_CHUNKS). The samples of a row, in time order, go into
// Prometheus' own chunk encodings, cut as Prometheus' head cuts them
// (tsdb/head_append.go):
//
//   - a new chunk where the value type changes (float, integer histogram,
//     float histogram);
//   - float chunks of at most MaxChunkSamples samples;
//   - a histogram chunk is closed once it holds TargetBytesPerHistogramChunk
//     bytes and at least MinSamplesPerHistogramChunk samples, and the
//     appender's AppendHistogram / AppendFloatHistogram (appendOnly false)
//     decides the rest: a new chunk on a counter reset, a schema or zero
//     threshold change, a gauge/counter switch, and a chunk recoded in place
//     when new buckets appear. So the histograms a reader decodes are those
//     Prometheus' head would hand out: the chunk's counter-reset header on its
//     first sample, NotCounterReset (or GaugeType) on the others, and spans
//     widened to the chunk's layout;
//   - the kinds whose samples carry a start timestamp use the ST encodings
//     (EncXOR2, EncHistogramST, EncFloatHistogramST), which Prometheus' remote
//     read client decodes like the others (chunkenc.FromData); without start
//     timestamps the classic encodings, which every client reads;
//   - never across a bucket boundary (one row at a time).

// chunkMetas returns the chunks of a row (len() > 0): its stored chunks with
// their time ranges, or its samples encoded (encodeRow).
func (b *bucketSamples) chunkMetas() ([]chunks.Meta, error) {
	if len(b.chunks) == 0 {
		return encodeRow(b)
	}
	// The stored chunks hold exactly the row's samples, in order: chunk k
	// holds the NumSamples() samples after those of the chunks before it.
	ts := make([]int64, 0, b.len())
	fs, hs := b.samples, b.histograms
	for i, j := 0, 0; i < len(fs) || j < len(hs); {
		if i < len(fs) && (j >= len(hs) || fs[i].t < hs[j].T) {
			ts = append(ts, fs[i].t)
			i++
		} else {
			ts = append(ts, hs[j].T)
			j++
		}
	}
	out := make([]chunks.Meta, 0, len(b.chunks))
	off := 0
	for _, chk := range b.chunks {
		n := chk.NumSamples()
		if n == 0 || off+n > len(ts) {
			return nil, fmt.Errorf("stored chunks hold more than the row's %d samples", len(ts))
		}
		out = append(out, chunks.Meta{Chunk: chk, MinTime: ts[off], MaxTime: ts[off+n-1]})
		off += n
	}
	if off != len(ts) {
		return nil, fmt.Errorf("stored chunks hold %d samples, the row %d", off, len(ts))
	}
	return out, nil
}

// rowEncoder builds the chunks of one row.
type rowEncoder struct {
	out        []chunks.Meta
	chk        chunkenc.Chunk
	app        chunkenc.Appender
	minT, maxT int64
}

// cut closes the current chunk, if any, and starts one of encoding e at t.
func (e *rowEncoder) cut(enc chunkenc.Encoding, t int64) error {
	e.flush()
	chk, err := chunkenc.NewEmptyChunk(enc)
	if err != nil {
		return err
	}
	app, err := chk.Appender()
	if err != nil {
		return err
	}
	e.chk, e.app, e.minT = chk, app, t
	return nil
}

// flush hands out the current chunk.
func (e *rowEncoder) flush() {
	if e.chk != nil && e.chk.NumSamples() > 0 {
		e.out = append(e.out, chunks.Meta{Chunk: e.chk, MinTime: e.minT, MaxTime: e.maxT})
	}
	e.chk, e.app = nil, nil
}

// full reports whether a histogram chunk is to be closed before the next
// sample, by its size.
func (e *rowEncoder) full() bool {
	return len(e.chk.Bytes()) >= chunkenc.TargetBytesPerHistogramChunk &&
		e.chk.NumSamples() >= chunkenc.MinSamplesPerHistogramChunk
}

// appendFloat appends a float sample to a chunk of encoding enc.
func (e *rowEncoder) appendFloat(enc chunkenc.Encoding, st, t int64, v float64) error {
	if e.chk == nil || e.chk.Encoding() != enc || e.chk.NumSamples() >= MaxChunkSamples {
		if err := e.cut(enc, t); err != nil {
			return err
		}
	}
	e.app.Append(st, t, v)
	e.maxT = t
	return nil
}

// appendHistogram appends an integer (h) or float (fh) histogram to a chunk
// of encoding enc; the sample is copied first, as the appender may change its
// spans.
func (e *rowEncoder) appendHistogram(enc chunkenc.Encoding, st, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	var prev chunkenc.Appender
	switch {
	case e.chk == nil || e.chk.Encoding() != enc:
		if err := e.cut(enc, t); err != nil {
			return err
		}
	case e.full():
		prev = e.app
		if err := e.cut(enc, t); err != nil {
			return err
		}
	}
	var (
		next    chunkenc.Chunk
		recoded bool
		err     error
	)
	if h != nil {
		next, recoded, e.app, err = e.app.AppendHistogram(prev, st, t, h.Copy(), false)
	} else {
		next, recoded, e.app, err = e.app.AppendFloatHistogram(prev, st, t, fh.Copy(), false)
	}
	if err != nil {
		return fmt.Errorf("histogram at %d: %w", t, err)
	}
	switch {
	case next == nil:
	case recoded:
		e.chk = next
	default:
		e.flush()
		e.chk, e.minT = next, t
	}
	e.maxT = t
	return nil
}

// encodeRow encodes the samples of a row (len() > 0) into chunks, oldest
// first.
func encodeRow(b *bucketSamples) ([]chunks.Meta, error) {
	floatEnc := chunkenc.EncXOR
	if b.sts != nil {
		floatEnc = chunkenc.EncXOR2
	}
	hEnc, fhEnc := chunkenc.EncHistogram, chunkenc.EncFloatHistogram
	for i := range b.histograms {
		switch x := &b.histograms[i]; {
		case x.ST == 0:
		case x.H != nil:
			hEnc = chunkenc.EncHistogramST
		default:
			fhEnc = chunkenc.EncFloatHistogramST
		}
	}
	var e rowEncoder
	fs, hs := b.samples, b.histograms
	for i, j := 0, 0; i < len(fs) || j < len(hs); {
		var err error
		if i < len(fs) && (j >= len(hs) || fs[i].t < hs[j].T) {
			var st int64
			if b.sts != nil {
				st = b.sts[i]
			}
			err = e.appendFloat(floatEnc, st, fs[i].t, fs[i].v)
			i++
		} else {
			x := &hs[j]
			enc := fhEnc
			if x.H != nil {
				enc = hEnc
			}
			err = e.appendHistogram(enc, x.ST, x.T, x.H, x.FH)
			j++
		}
		if err != nil {
			return nil, err
		}
	}
	e.flush()
	return e.out, nil
}
