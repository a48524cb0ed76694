package query

import (
	"fmt"
	"math"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// Chunks of rows with native histograms or start timestamps (remote read's
// STREAMED_XOR_CHUNKS), and the histograms Select hands out (asHead). Samples
// go into Prometheus' own chunk encodings, cut as Prometheus' head cuts them
// (tsdb/head_append.go, chunkEncoder):
//
//   - a new chunk where the value type changes (float, integer histogram,
//     float histogram);
//   - float chunks of at most MaxChunkSamples samples;
//   - a histogram chunk is cut by the head's time and size rules
//     (histogramsAppendPreprocessor: at the end of its 2h chunk range, earlier
//     when a predicted end from its size is reached, at twice
//     TargetBytesPerHistogramChunk bytes, and not before
//     MinSamplesPerHistogramChunk samples within a range); the appender's
//     AppendHistogram / AppendFloatHistogram (appendOnly false) decides the
//     rest: a new chunk on a counter reset, a schema or zero threshold change,
//     a gauge/counter switch, after a stale marker, and a chunk recoded in
//     place when new buckets appear. So the histograms a reader decodes are
//     those Prometheus' head would hand out: the chunk's hint on its first
//     sample (UnknownCounterReset unless a gauge), NotCounterReset (or
//     GaugeType) on the others, spans widened to the chunk's layout;
//   - remote read's chunks: a row at a time (never across a bucket boundary),
//     in the ST encodings (EncXOR2, EncHistogramST, EncFloatHistogramST) for
//     the kinds whose samples in the row carry a start timestamp, which
//     Prometheus' remote-read client decodes like the others
//     (chunkenc.FromData); without start timestamps the classic encodings,
//     which every client reads.

// chunkMetas returns the chunks of a row (len() > 0): its stored chunks with
// their time ranges, or its samples encoded (encodeRow).
func chunkMetas(b *cellenc.RowSamples) ([]chunks.Meta, error) {
	if len(b.Chunks) == 0 {
		return encodeRow(b)
	}
	// The stored chunks hold exactly the row's samples, in order: chunk k
	// holds the NumSamples() samples after those of the chunks before it.
	ts := make([]int64, 0, b.Len())
	for i, isHist := range b.InTimeOrder() {
		if isHist {
			ts = append(ts, b.Histograms[i].T)
		} else {
			ts = append(ts, b.Samples[i].T)
		}
	}
	out := make([]chunks.Meta, 0, len(b.Chunks))
	off := 0
	for _, chk := range b.Chunks {
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

// headChunkRange is the chunk range of Prometheus' head (2h,
// tsdb.DefaultBlockDuration): a histogram chunk is cut at the latest at the
// end of the range its first sample falls in (tsdb's rangeForTimestamp).
const headChunkRange = 2 * 3600 * 1000

// rangeForTimestamp is tsdb's: the end of t's chunk range.
func rangeForTimestamp(t int64) int64 {
	return (t/headChunkRange)*headChunkRange + headChunkRange
}

// chunkEncoder builds chunks from a sequence of samples as Prometheus' head
// does (tsdb/head_append.go: appendPreprocessor, histogramsAppendPreprocessor,
// appendHistogram): see the rules above.
type chunkEncoder struct {
	out        []chunks.Meta
	chk        chunkenc.Chunk
	app        chunkenc.Appender
	minT, maxT int64
	// nextAt and computed are the head's series state for histogram chunks:
	// when the current chunk is to be cut at the latest, and whether that was
	// predicted from its size yet.
	nextAt   int64
	computed bool
}

// cut closes the current chunk, if any, and starts one of encoding enc at t.
func (e *chunkEncoder) cut(enc chunkenc.Encoding, t int64) error {
	e.flush()
	chk, err := chunkenc.NewEmptyChunk(enc)
	if err != nil {
		return err
	}
	app, err := chk.Appender()
	if err != nil {
		return err
	}
	e.chk, e.app, e.minT, e.nextAt = chk, app, t, rangeForTimestamp(t)
	return nil
}

// flush hands out the current chunk.
func (e *chunkEncoder) flush() {
	if e.chk != nil && e.chk.NumSamples() > 0 {
		e.out = append(e.out, chunks.Meta{Chunk: e.chk, MinTime: e.minT, MaxTime: e.maxT})
	}
	e.chk, e.app = nil, nil
}

// histogramFull is the head's decision to cut a histogram chunk before a
// sample at t, by time and size (histogramsAppendPreprocessor).
func (e *chunkEncoder) histogramFull(t int64) bool {
	n, size := e.chk.NumSamples(), len(e.chk.Bytes())
	const target = chunkenc.TargetBytesPerHistogramChunk
	nextRangeStart := e.nextAt
	if e.computed {
		nextRangeStart = rangeForTimestamp(e.minT)
	}
	if !e.computed && size >= target/4 {
		e.nextAt = computeChunkEndTime(e.minT, e.maxT, e.nextAt, float64(target)/float64(size))
		e.computed = true
	}
	return (t >= e.nextAt || size >= 2*target) && (n >= chunkenc.MinSamplesPerHistogramChunk || t >= nextRangeStart)
}

// computeChunkEndTime is tsdb's: the end of a chunk started at start that is
// 1/ratioToFull full at cur, so that the rest of the range up to maxT holds
// equally sized chunks.
func computeChunkEndTime(start, cur, maxT int64, ratioToFull float64) int64 {
	n := float64(maxT-start) / (float64(cur-start+1) * ratioToFull)
	if n <= 1 {
		return maxT
	}
	return int64(float64(start) + float64(maxT-start)/math.Floor(n))
}

// appendFloat appends a float sample to a chunk of encoding enc.
func (e *chunkEncoder) appendFloat(enc chunkenc.Encoding, st, t int64, v float64) error {
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
func (e *chunkEncoder) appendHistogram(enc chunkenc.Encoding, st, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	var prev chunkenc.Appender
	if e.chk == nil || e.chk.Encoding() != enc || e.histogramFull(t) {
		// As the head, the new chunk's first sample is compared with the
		// appender before (its counter-reset header).
		prev = e.app
		if err := e.cut(enc, t); err != nil {
			return err
		}
		e.computed = false
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
		// A counter reset or a layout the chunk cannot take: the appender
		// started a new chunk (the head keeps its computed flag).
		app := e.app
		e.flush()
		e.chk, e.app, e.minT, e.nextAt = next, app, t, rangeForTimestamp(t)
	}
	e.maxT = t
	return nil
}

// encodings are the chunk encodings of each kind of sample.
type encodings struct{ float, hist, floatHist chunkenc.Encoding }

// classicEncodings are the encodings without start timestamps.
var classicEncodings = encodings{chunkenc.EncXOR, chunkenc.EncHistogram, chunkenc.EncFloatHistogram}

// encode encodes samples (ascending) into chunks, oldest first.
func encode(samples mixedList, enc encodings) ([]chunks.Meta, error) {
	var e chunkEncoder
	for i := range samples {
		x := &samples[i]
		var err error
		switch {
		case x.h != nil:
			err = e.appendHistogram(enc.hist, x.st, x.t, x.h, nil)
		case x.fh != nil:
			err = e.appendHistogram(enc.floatHist, x.st, x.t, nil, x.fh)
		default:
			err = e.appendFloat(enc.float, x.st, x.t, x.v)
		}
		if err != nil {
			return nil, err
		}
	}
	e.flush()
	return e.out, nil
}

// encodeRow encodes the samples of a row (len() > 0) into chunks, oldest
// first: the ST encoding of a kind when one of the row's samples of that kind
// has a start timestamp.
func encodeRow(b *cellenc.RowSamples) ([]chunks.Meta, error) {
	enc := classicEncodings
	if b.HasStartTimestamps() {
		enc.float = chunkenc.EncXOR2
	}
	for i := range b.Histograms {
		switch x := &b.Histograms[i]; {
		case x.ST == 0:
		case x.H != nil:
			enc.hist = chunkenc.EncHistogramST
		default:
			enc.floatHist = chunkenc.EncFloatHistogramST
		}
	}
	return encode(flattenMixed([]cellenc.RowSamples{*b}), enc)
}

// asHead gives the histograms of samples (a series' samples, ascending) what
// a reader of Prometheus' head would see: they go through the head's chunks
// (encode) and are read back, so that counter-reset hints are the chunks'
// (UnknownCounterReset on the first histogram of a chunk, NotCounterReset on
// the others, GaugeType in a gauge chunk) and spans widened to the chunk's
// layout. PromQL's answers depend on the hints (a sum of histograms carries
// the hint of its operands; a reset hint is honoured), and Prometheus' head
// sets them this way whatever the writer said. Floats are left as they are.
// samples is changed in place.
func asHead(samples mixedList) error {
	metas, err := encode(samples, classicEncodings)
	if err != nil {
		return err
	}
	k := 0 // the next sample to compare
	var it chunkenc.Iterator
	for _, m := range metas {
		it = m.Chunk.Iterator(it)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			for k < len(samples) && samples[k].t < it.AtT() {
				k++
			}
			if k >= len(samples) || samples[k].t != it.AtT() {
				return fmt.Errorf("chunk sample at %d is not the series'", it.AtT())
			}
			switch typ {
			case chunkenc.ValHistogram:
				_, samples[k].h = it.AtHistogram(nil)
			case chunkenc.ValFloatHistogram:
				_, samples[k].fh = it.AtFloatHistogram(nil)
			}
			k++
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	return nil
}
