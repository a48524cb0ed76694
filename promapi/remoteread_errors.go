package promapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// readErrors records the first error the store gave one remote-read request's
// queriers. Prometheus' read handler answers every error of a querier with 500,
// which Prometheus (the remote reader) does not retry; with the error at hand
// the answer can say what it was: 503 for a store that does not answer now (a
// region split, moved or on a dead region server: kv.ErrUnavailable), so that
// the reader asks again. The HBase cluster test (cmd/tsdb TestHBaseCluster) met
// both during region splits and a region server's kill.
type readErrors struct {
	mu  sync.Mutex
	err error
}

func (e *readErrors) record(err error) error {
	if err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
	return err
}

func (e *readErrors) first() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

type readErrorsKey struct{}

func withReadErrors(ctx context.Context, e *readErrors) context.Context {
	return context.WithValue(ctx, readErrorsKey{}, e)
}

func readErrorsOf(ctx context.Context) *readErrors {
	e, _ := ctx.Value(readErrorsKey{}).(*readErrors)
	return e
}

// readErrorResponse answers with the status of the recorded store error
// (statusOf) where Prometheus' handler answers 500 for it, when that status is
// 503.
type readErrorResponse struct {
	http.ResponseWriter
	errs *readErrors
}

func (w readErrorResponse) WriteHeader(code int) {
	if code == http.StatusInternalServerError {
		if err := w.errs.first(); err != nil && statusOf(err) == http.StatusServiceUnavailable {
			code = http.StatusServiceUnavailable
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush keeps the streamed response's frames flowing (Prometheus' handler
// flushes after each).
func (w readErrorResponse) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// recordingSeriesSet records the errors of a SeriesSet and of its series'
// iterators.
type recordingSeriesSet struct {
	storage.SeriesSet
	errs *readErrors
}

func (s recordingSeriesSet) At() storage.Series {
	return recordingSeries{Series: s.SeriesSet.At(), errs: s.errs}
}

func (s recordingSeriesSet) Err() error { return s.errs.record(s.SeriesSet.Err()) }

type recordingSeries struct {
	storage.Series
	errs *readErrors
}

func (s recordingSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if ri, ok := it.(*recordingIterator); ok {
		it = ri.Iterator
	}
	return &recordingIterator{Iterator: s.Series.Iterator(it), errs: s.errs}
}

type recordingIterator struct {
	chunkenc.Iterator
	errs *readErrors
}

func (it *recordingIterator) Err() error { return it.errs.record(it.Iterator.Err()) }

// recordingChunkQuerier is a ChunkQuerier whose series sets record their
// errors in the Select's readErrors, when its context has one.
type recordingChunkQuerier struct{ storage.ChunkQuerier }

func (q recordingChunkQuerier) Select(ctx context.Context, sorted bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	set := q.ChunkQuerier.Select(ctx, sorted, hints, ms...)
	if e := readErrorsOf(ctx); e != nil {
		return recordingChunkSeriesSet{ChunkSeriesSet: set, errs: e}
	}
	return set
}

type recordingChunkSeriesSet struct {
	storage.ChunkSeriesSet
	errs *readErrors
}

func (s recordingChunkSeriesSet) At() storage.ChunkSeries {
	return recordingChunkSeries{ChunkSeries: s.ChunkSeriesSet.At(), errs: s.errs}
}

func (s recordingChunkSeriesSet) Err() error { return s.errs.record(s.ChunkSeriesSet.Err()) }

type recordingChunkSeries struct {
	storage.ChunkSeries
	errs *readErrors
}

func (s recordingChunkSeries) Iterator(it chunks.Iterator) chunks.Iterator {
	if ri, ok := it.(*recordingChunkIterator); ok {
		it = ri.Iterator
	}
	return &recordingChunkIterator{Iterator: s.ChunkSeries.Iterator(it), errs: s.errs}
}

type recordingChunkIterator struct {
	chunks.Iterator
	errs *readErrors
}

func (it *recordingChunkIterator) Err() error { return it.errs.record(it.Iterator.Err()) }
