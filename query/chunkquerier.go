package query

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// MaxChunkSamples is the most samples of a chunk the ChunkQuerier encodes from
// raw cells, as Prometheus' head cuts its chunks.
const MaxChunkSamples = cellenc.HeadChunkSamples

// ChunkQuerier returns a Prometheus chunk querier of [mint, maxt] (inclusive,
// ms), for remote read's STREAMED_XOR_CHUNKS. Each series' chunks are the stored
// chunks of its rows (family c) as they are when a row's chunk cell holds
// exactly its samples in the range (cellenc.RowSamples.Chunks, any encoding),
// and otherwise chunks encoded from the row's merged samples, never across a
// bucket boundary: XOR chunks of at most MaxChunkSamples for a row of floats
// without start timestamps, else Prometheus' encodings cut as its head cuts
// them (chunkencode.go).
// Series come as Querier's do, Options.Concurrency read ahead, so memory stays
// flat in the number of series.
func (r *Reader) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	return &chunkQuerier{base: base{r: r, mint: mint, maxt: maxt}}, nil
}

type chunkQuerier struct{ base }

func (q *chunkQuerier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	ctx, cancel := q.r.withTimeout(ctx)
	sel, err := q.selectSeries(ctx, hints, ms)
	if err != nil {
		cancel()
		return storage.ErrChunkSeriesSet(err)
	}
	if sel.onlyLabels || sel.rows != nil {
		cancel()
		return &chunkSeriesSet{list: &sel, i: -1}
	}
	f := newFetcher(ctx, cancel, q.r, sel.series, sel.mint, sel.maxt, rollupPlan{})
	q.track(f)
	return &chunkSeriesSet{f: f}
}

// chunkSeriesSet hands out the series of a fetcher, or of a selection read
// beforehand (list, its i-th series), as chunks.
type chunkSeriesSet struct {
	f    *fetcher
	list *selection
	i    int
	cur  *chunkSeries
	err  error
}

func (s *chunkSeriesSet) Next() bool {
	if s.list != nil {
		s.i++
		if s.i >= len(s.list.series) {
			return false
		}
		s.cur = &chunkSeries{labels: s.list.series[s.i].labels}
		if s.list.rows != nil {
			s.cur.rows = s.list.rows[s.i]
		}
		return true
	}
	if s.err != nil {
		return false
	}
	ser, rows, ok, err := s.f.nextWithSamples()
	if !ok {
		s.err = err
		return false
	}
	s.cur = &chunkSeries{labels: ser.labels, rows: rows}
	return true
}

func (s *chunkSeriesSet) At() storage.ChunkSeries           { return s.cur }
func (s *chunkSeriesSet) Err() error                        { return s.err }
func (s *chunkSeriesSet) Warnings() annotations.Annotations { return nil }

type chunkSeries struct {
	labels labels.Labels
	rows   []cellenc.RowSamples
}

func (s *chunkSeries) Labels() labels.Labels { return s.labels }

func (s *chunkSeries) Iterator(chunks.Iterator) chunks.Iterator {
	return &chunkIterator{rows: s.rows}
}

// chunkIterator hands out a row's stored chunks as they are, or encodes
// chunks one at a time: up to MaxChunkSamples of a row's float samples, or,
// for a row with histograms or start timestamps, the whole row when reached
// (encodeRow), its chunks handed out in turn.
type chunkIterator struct {
	rows    []cellenc.RowSamples
	r, i    int           // next row and sample within it
	pending []chunks.Meta // the rest of a general row's chunks
	cur     chunks.Meta
	err     error
}

func (it *chunkIterator) Next() bool {
	if it.err != nil {
		return false
	}
	if len(it.pending) > 0 {
		it.cur, it.pending = it.pending[0], it.pending[1:]
		return true
	}
	for it.r < len(it.rows) && it.i >= it.rows[it.r].Len() {
		it.r, it.i = it.r+1, 0
	}
	if it.r >= len(it.rows) {
		return false
	}
	row := &it.rows[it.r]
	if len(row.Chunks) > 0 || general(row) {
		metas, err := chunkMetas(row)
		if err != nil {
			it.err = fmt.Errorf("query: encode the chunks of bucket %d: %w", row.BucketStart, err)
			return false
		}
		it.i = row.Len()
		it.cur, it.pending = metas[0], metas[1:]
		return true
	}
	part := row.Samples[it.i:min(it.i+MaxChunkSamples, len(row.Samples))]
	chk := chunkenc.NewXORChunk()
	app, err := chk.Appender()
	if err != nil {
		it.err = fmt.Errorf("query: encode a chunk: %w", err)
		return false
	}
	for _, s := range part {
		app.Append(0, s.T, s.V)
	}
	it.cur = chunks.Meta{Chunk: chk, MinTime: part[0].T, MaxTime: part[len(part)-1].T}
	it.i += len(part)
	return true
}

func (it *chunkIterator) At() chunks.Meta { return it.cur }
func (it *chunkIterator) Err() error      { return it.err }
