package query

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	promschema "github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/hbtsdb/hbtsdb/cellenc"
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
	if p, rest, ok := funcPlanOf(ctx, ms); ok {
		return q.selectFunc(ctx, p, rest)
	}
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
		defer cancel()
		if sel.rows != nil {
			if sel.history, err = q.r.histories(ctx, sel.series, sel.mint, sel.rows); err != nil {
				return storage.ErrSeriesSet(err)
			}
		}
		return &listSeriesSet{sel: sel, i: -1}
	}
	f := newFetcher(ctx, cancel, q.r, sel.series, sel.mint, sel.maxt, plan)
	f.withHistory = true
	q.track(f)
	return &seriesSet{f: f, plan: plan}
}

// selectFunc returns the series matching ms with p's function's values
// computed from a rollup (rollupfunc.go), without their metric name, as the
// function returns them.
func (q *querier) selectFunc(ctx context.Context, p *funcPlan, ms []*labels.Matcher) storage.SeriesSet {
	ctx, cancel := q.r.withTimeout(ctx)
	mint, maxt := p.readRange()
	ss, err := q.r.selectSeries(ctx, mint, maxt, 0, ms)
	if err != nil {
		cancel()
		return storage.ErrSeriesSet(err)
	}
	plan := rollupPlan{mode: modeFunc, rollup: p.rollup, rawFrom: math.MaxInt64, sameAsRaw: true, info: sameAsRawInfo(p.rollup), fn: p}
	f := newFetcher(ctx, cancel, q.r, ss, mint, maxt, plan)
	q.track(f)
	return &seriesSet{f: f, plan: plan}
}

// seriesSet hands out the series of a fetcher.
type seriesSet struct {
	f    *fetcher
	plan rollupPlan
	cur  *floatSeries
	err  error
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
	ls := ser.labels
	if s.plan.mode == modeFunc {
		// As the engine drops them from a function's output.
		ls = ls.DropReserved(promschema.IsMetadataLabel)
	}
	if s.cur, s.err = newFloatSeries(ls, s.f.history, rows); s.err != nil {
		s.f.close()
		return false
	}
	return true
}

func (s *seriesSet) At() storage.Series { return s.cur }
func (s *seriesSet) Err() error         { return s.err }

// Warnings returns the plan's info: what the reads learnt is in it once the
// set is exhausted, as the engine asks for it.
func (s *seriesSet) Warnings() annotations.Annotations {
	var as annotations.Annotations
	if info := s.plan.infoAfterReads(); info != nil {
		as.Add(info)
	}
	if s.plan.fn != nil {
		if info := s.plan.fn.nonCounterInfo(); info != nil {
			as.Add(info)
		}
	}
	return as
}

// listSeriesSet hands out series read beforehand (the host/metric scan) or
// without samples (hints.Func "series").
type listSeriesSet struct {
	sel selection
	i   int
	cur *floatSeries
	err error
}

func (s *listSeriesSet) Next() bool {
	if s.err != nil {
		return false
	}
	s.i++
	if s.i >= len(s.sel.series) {
		return false
	}
	var rows, history []cellenc.RowSamples
	if s.sel.rows != nil {
		rows = s.sel.rows[s.i]
	}
	if s.sel.history != nil {
		history = s.sel.history[s.i]
	}
	s.cur, s.err = newFloatSeries(s.sel.series[s.i].labels, history, rows)
	return s.err == nil
}

func (s *listSeriesSet) At() storage.Series              { return s.cur }
func (s *listSeriesSet) Err() error                      { return s.err }
func (*listSeriesSet) Warnings() annotations.Annotations { return nil }

// floatSeries is one series and its rows' samples; mixed holds them merged
// when a row holds histograms or start timestamps (newSeriesIterator).
type floatSeries struct {
	labels labels.Labels
	rows   []cellenc.RowSamples
	mixed  mixedList
}

// newFloatSeries returns the series of rows, its histograms as Prometheus'
// head hands them out (asHead), after history (see Reader.history).
func newFloatSeries(ls labels.Labels, history, rows []cellenc.RowSamples) (*floatSeries, error) {
	s := &floatSeries{labels: ls, rows: rows}
	if !anyGeneral(rows) {
		return s, nil
	}
	skip := 0
	if len(history) > 0 {
		for i := range history {
			skip += history[i].Len()
		}
		rows = append(slices.Clip(history), rows...)
	}
	s.mixed = flattenMixed(rows)
	for i := range rows {
		if len(rows[i].Histograms) > 0 {
			if err := asHead(s.mixed); err != nil {
				return nil, fmt.Errorf("query: series %s: %w", ls, err)
			}
			break
		}
	}
	s.mixed = s.mixed[skip:]
	return s, nil
}

// history returns what asHead needs to know of the series s before mint to
// give the histograms of rows (its rows from mint on) the hints Prometheus'
// head would: when the first of them is a histogram, it may be the second of
// a head chunk that started before mint (and so "not a reset"). A head chunk
// never crosses the end of its 2h range (cellenc.HeadChunkRange), so the rows of
// [start of mint's range, mint) are all that can matter. None when the first
// sample is a float (a histogram after it starts a chunk whatever came
// before) or mint starts a range.
func (r *Reader) history(ctx context.Context, s *series, mint int64, rows []cellenc.RowSamples) ([]cellenc.RowSamples, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	fs, hs := rows[0].Samples, rows[0].Histograms
	if len(hs) == 0 || (len(fs) > 0 && fs[0].T < hs[0].T) {
		return nil, nil
	}
	from := mint - mint%cellenc.HeadChunkRange
	if from >= mint {
		return nil, nil
	}
	return r.readSeries(ctx, s, from, mint-1)
}

func (s *floatSeries) Labels() labels.Labels { return s.labels }

func (s *floatSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if s.mixed != nil {
		return newSampleIterator(it, s.mixed)
	}
	return newFloatIterator(it, s.rows)
}
