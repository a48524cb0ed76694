package query

import (
	"context"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

var (
	_ storage.Queryable      = (*Reader)(nil)
	_ storage.ChunkQueryable = (*Reader)(nil)
)

// Querier returns a Prometheus querier of the samples in [mint, maxt]
// (inclusive bounds in milliseconds). It is safe for concurrent use, reads
// nothing until asked, and its Close stops the reads of its series sets.
func (r *Reader) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{base: base{r: r, mint: mint, maxt: maxt}}, nil
}

// base is what Querier and ChunkQuerier share: the time range, label queries,
// series selection and the fetchers to stop on Close.
type base struct {
	r          *Reader
	mint, maxt int64
	mu         sync.Mutex
	fetchers   []*fetcher
}

// selectRange returns the range a Select reads: the querier's, narrowed to
// the hints' Start and End when given (the engine sets them per selector).
func (b *base) selectRange(hints *storage.SelectHints) (int64, int64, bool) {
	mint, maxt := b.mint, b.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	return clampRange(mint, maxt)
}

// selectSeries selects the series of a Select, by the index or by the
// host/metric scan (plan.go); with the scan, rows holds every series' rows.
func (b *base) selectSeries(ctx context.Context, hints *storage.SelectHints, ms []*labels.Matcher) (sel selection, err error) {
	mint, maxt, ok := b.selectRange(hints)
	if !ok {
		return selection{}, nil
	}
	limit := 0
	if hints != nil {
		limit = hints.Limit
	}
	onlyLabels := hints != nil && hints.Func == "series"
	return b.r.plan(ctx, mint, maxt, limit, onlyLabels, ms)
}

// selectSeriesOnly selects the series of a Select by the tag index, without
// reading their rows (for a Select served from a rollup).
func (b *base) selectSeriesOnly(ctx context.Context, hints *storage.SelectHints, ms []*labels.Matcher) (selection, error) {
	mint, maxt, ok := b.selectRange(hints)
	if !ok {
		return selection{}, nil
	}
	ss, err := b.r.selectSeries(ctx, mint, maxt, hints.Limit, ms)
	if err != nil {
		return selection{}, err
	}
	return selection{series: ss, mint: mint, maxt: maxt}, nil
}

// track remembers a fetcher to stop on Close.
func (b *base) track(f *fetcher) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fetchers = append(b.fetchers, f)
}

// Close stops every read of the querier's series sets.
func (b *base) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.fetchers {
		f.close()
	}
	b.fetchers = nil
	return nil
}

func (b *base) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	vs, err := b.r.labelValues(ctx, b.mint, b.maxt, name, labelLimit(hints), ms)
	return vs, nil, err
}

func (b *base) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	ns, err := b.r.labelNames(ctx, b.mint, b.maxt, labelLimit(hints), ms)
	return ns, nil, err
}

func labelLimit(h *storage.LabelHints) int {
	if h == nil {
		return 0
	}
	return h.Limit
}

type querier struct{ base }

// Select returns the series matching ms with their samples in the querier's
// range (narrowed by hints.Start/End), sorted by labels whatever sortSeries
// says. With hints.Func "series" the series carry no samples and are those the
// index holds for the days of the range, without a look at their samples: unlike
// Prometheus' head, this can include a series whose samples that day all lie
// outside the range. Errors, limit errors (ErrLimitExceeded)
// included, come from the set's Err.
func (q *querier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	ctx, cancel := q.r.withTimeout(ctx)
	var plan rollupPlan
	if mint, maxt, ok := q.selectRange(hints); ok {
		plan = q.r.chooseResolution(ctx, hints, mint, maxt)
	}
	var (
		sel selection
		err error
	)
	if plan.mode == modeRaw {
		sel, err = q.selectSeries(ctx, hints, ms)
	} else {
		// A rollup is read per series: select them by the index alone.
		sel, err = q.selectSeriesOnly(ctx, hints, ms)
	}
	if err != nil {
		cancel()
		return storage.ErrSeriesSet(err)
	}
	if sel.onlyLabels || sel.rows != nil {
		cancel()
		return &listSeriesSet{sel: sel, i: -1}
	}
	f := newFetcher(ctx, cancel, q.r, sel.series, sel.mint, sel.maxt, plan)
	q.track(f)
	ss := &seriesSet{f: f}
	if plan.info != nil {
		ss.warnings = annotations.New().Add(plan.info)
	}
	return ss
}

// seriesSet hands out the series of a fetcher.
type seriesSet struct {
	f        *fetcher
	cur      *floatSeries
	err      error
	warnings annotations.Annotations
}

func (s *seriesSet) Next() bool {
	if s.err != nil {
		return false
	}
	ser, rows, ok, err := s.f.nextWithSamples()
	if !ok {
		s.err = err
		return false
	}
	s.cur = &floatSeries{labels: ser.labels, rows: rows}
	return true
}

func (s *seriesSet) At() storage.Series                { return s.cur }
func (s *seriesSet) Err() error                        { return s.err }
func (s *seriesSet) Warnings() annotations.Annotations { return s.warnings }

// listSeriesSet hands out series read beforehand (the host/metric scan) or
// without samples (hints.Func "series").
type listSeriesSet struct {
	sel selection
	i   int
}

func (s *listSeriesSet) Next() bool {
	s.i++
	return s.i < len(s.sel.series)
}

func (s *listSeriesSet) At() storage.Series {
	fs := &floatSeries{labels: s.sel.series[s.i].labels}
	if s.sel.rows != nil {
		fs.rows = s.sel.rows[s.i]
	}
	return fs
}

func (*listSeriesSet) Err() error                        { return nil }
func (*listSeriesSet) Warnings() annotations.Annotations { return nil }

// floatSeries is one series and its rows' samples.
type floatSeries struct {
	labels labels.Labels
	rows   []bucketSamples
}

func (s *floatSeries) Labels() labels.Labels { return s.labels }

func (s *floatSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	return newSeriesIterator(it, s.rows)
}
