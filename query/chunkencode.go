package query

import (
	"fmt"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// Chunks of rows with native histograms or start timestamps (remote read's
// STREAMED_XOR_CHUNKS), and the histograms Select hands out (asHead). Samples
// go into Prometheus' own chunk encodings through cellenc's one chunk encoder,
// cut as Prometheus' head cuts them (cellenc.CutHead: a new chunk where the
// value type changes, float chunks of at most MaxChunkSamples samples,
// histogram chunks by the head's time and size rules and the appender's own
// cuts). Remote read's chunks are a row at a time (never across a bucket
// boundary), in the ST encodings (EncXOR2, EncHistogramST,
// EncFloatHistogramST) for the kinds whose samples in the row carry a start
// timestamp, which Prometheus' remote-read client decodes like the others
// (chunkenc.FromData); without start timestamps the classic encodings, which
// every client reads.

// chunkMetas returns the chunks of a row (Len() > 0): its stored chunks with
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

// encodings are the chunk encodings of each kind of sample.
type encodings struct{ float, hist, floatHist chunkenc.Encoding }

// classicEncodings are the encodings without start timestamps.
var classicEncodings = encodings{chunkenc.EncXOR, chunkenc.EncHistogram, chunkenc.EncFloatHistogram}

// encode encodes samples (ascending) into chunks, oldest first.
func encode(samples mixedList, enc encodings) ([]chunks.Meta, error) {
	e := cellenc.NewChunkEncoder(cellenc.CutHead)
	for i := range samples {
		x := &samples[i]
		var err error
		switch {
		case x.h != nil:
			err = e.AppendHistogram(enc.hist, x.st, x.t, x.h, nil)
		case x.fh != nil:
			err = e.AppendHistogram(enc.floatHist, x.st, x.t, nil, x.fh)
		default:
			err = e.AppendFloat(enc.float, x.st, x.t, x.v)
		}
		if err != nil {
			return nil, err
		}
	}
	return e.Chunks(), nil
}

// encodeRow encodes the samples of a row (Len() > 0) into chunks, oldest
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
