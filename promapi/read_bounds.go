package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// anyOrigin is Prometheus' default --web.cors.origin, ".*", compiled as
// CompileCORSOrigin does; Prometheus answers it with Access-Control-Allow-Origin: *.
var anyOrigin = regexp.MustCompile("^(?:.*)$")

// CompileCORSOrigin compiles a --web.cors.origin value as Prometheus does: the
// expression is fully anchored.
func CompileCORSOrigin(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, fmt.Errorf("CORS origin %q: %w", s, err)
	}
	return re, nil
}

// boundQueryLength answers 400 bad_data, before anything parses them, to a
// request whose query parameter or one of whose match[] selectors is longer
// than max bytes.
func boundQueryLength(maxLen int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			respondError(w, errBadDataType, fmt.Errorf("error parsing form values: %w", err))
			return
		}
		if n := len(r.Form.Get("query")); n > maxLen {
			respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "query": the query is %d bytes long, more than the limit of %d (--query.max-length)`, n, maxLen))
			return
		}
		for _, m := range r.Form["match[]"] {
			if len(m) > maxLen {
				respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "match[]": a selector is %d bytes long, more than the limit of %d (--query.max-length)`, len(m), maxLen))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// boundFormatDepth answers 400 bad_data to a format_query request whose
// expression nests deeper than max: Prometheus' pretty-printer takes time cubic
// in the depth. The query is parsed here once more (its length is bounded);
// one that does not parse goes on, for Prometheus to answer its error.
func boundFormatDepth(maxDepth int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.FormValue("query"))
		if err == nil {
			depth := 0
			parser.Inspect(expr, func(_ parser.Node, path []parser.Node) error {
				depth = max(depth, len(path)+1)
				return nil
			})
			if depth > maxDepth {
				respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "query": the expression nests %d deep, more than format_query's limit of %d (--query.format-max-depth)`, depth, maxDepth))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// timeoutEngine is a PromQL engine whose queries report a deadline that the
// store ran into as the engine's own timeout, so that Prometheus' API answers
// 503 (errorType timeout) rather than 422 (execution): the engine wraps only
// the deadlines it notices itself in promql.ErrQueryTimeout, and a Select that
// fails on the query's context deadline would otherwise be an execution error.
type timeoutEngine struct{ promql.QueryEngine }

func (e timeoutEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	qry, err := e.QueryEngine.NewInstantQuery(ctx, q, opts, qs, ts)
	if err != nil {
		return nil, err
	}
	return timeoutQuery{qry}, nil
}

func (e timeoutEngine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	qry, err := e.QueryEngine.NewRangeQuery(ctx, q, opts, qs, start, end, step)
	if err != nil {
		return nil, err
	}
	return timeoutQuery{qry}, nil
}

type timeoutQuery struct{ promql.Query }

func (q timeoutQuery) Exec(ctx context.Context) *promql.Result {
	res := q.Query.Exec(ctx)
	var timeout promql.ErrQueryTimeout
	if res.Err != nil && errors.Is(res.Err, context.DeadlineExceeded) && !errors.As(res.Err, &timeout) {
		res.Err = fmt.Errorf("%w: %w", promql.ErrQueryTimeout("expression evaluation"), res.Err)
	}
	return res
}

// sampleBudget counts the samples a SAMPLES remote-read request has read, over
// all its queries, and stops them at limit.
type sampleBudget struct {
	limit    int64
	n        atomic.Int64
	exceeded atomic.Bool
}

// take counts one sample and reports whether it is within the limit.
func (b *sampleBudget) take() bool {
	if b.n.Add(1) <= b.limit {
		return true
	}
	b.exceeded.Store(true)
	return false
}

// err is Prometheus' text for a remote read over its sample limit.
func (b *sampleBudget) err() error {
	return fmt.Errorf("exceeded sample limit (%d)", b.limit)
}

type sampleBudgetKey struct{}

func withSampleBudget(ctx context.Context, b *sampleBudget) context.Context {
	return context.WithValue(ctx, sampleBudgetKey{}, b)
}

// budgetQueryable is q whose queriers count the samples they hand out against
// the sampleBudget of the Select's context, when it has one, and record the
// store's errors in its readErrors (remoteread_errors.go), when it has those.
type budgetQueryable struct {
	storage.SampleAndChunkQueryable
}

func (q budgetQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	qr, err := q.SampleAndChunkQueryable.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return budgetQuerier{qr}, nil
}

type budgetQuerier struct{ storage.Querier }

// ChunkQuerier is q's, with its errors recorded (remoteread_errors.go).
func (q budgetQueryable) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	qr, err := q.SampleAndChunkQueryable.ChunkQuerier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return recordingChunkQuerier{qr}, nil
}

func (q budgetQuerier) Select(ctx context.Context, sorted bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	set := q.Querier.Select(ctx, sorted, hints, ms...)
	if e := readErrorsOf(ctx); e != nil {
		set = recordingSeriesSet{SeriesSet: set, errs: e}
	}
	if b, ok := ctx.Value(sampleBudgetKey{}).(*sampleBudget); ok {
		return budgetSeriesSet{SeriesSet: set, budget: b}
	}
	return set
}

type budgetSeriesSet struct {
	storage.SeriesSet
	budget *sampleBudget
}

func (s budgetSeriesSet) At() storage.Series {
	return budgetSeries{Series: s.SeriesSet.At(), budget: s.budget}
}

type budgetSeries struct {
	storage.Series
	budget *sampleBudget
}

func (s budgetSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if bi, ok := it.(*budgetIterator); ok {
		it = bi.Iterator
	}
	return &budgetIterator{Iterator: s.Series.Iterator(it), budget: s.budget}
}

// budgetIterator stops with the budget's error at the first sample over it.
type budgetIterator struct {
	chunkenc.Iterator
	budget *sampleBudget
	err    error
}

func (it *budgetIterator) Next() chunkenc.ValueType {
	if it.err != nil {
		return chunkenc.ValNone
	}
	vt := it.Iterator.Next()
	if vt != chunkenc.ValNone && !it.budget.take() {
		it.err = it.budget.err()
		return chunkenc.ValNone
	}
	return vt
}

func (it *budgetIterator) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.Iterator.Err()
}

// budgetResponse turns the 500 Prometheus' read handler answers for an error it
// does not know into the 400 it answers its own sample limit with, when the
// error is the request's sample budget.
type budgetResponse struct {
	http.ResponseWriter
	budget *sampleBudget
}

func (w budgetResponse) WriteHeader(code int) {
	if code == http.StatusInternalServerError && w.budget.exceeded.Load() {
		code = http.StatusBadRequest
	}
	w.ResponseWriter.WriteHeader(code)
}
