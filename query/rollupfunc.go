package query

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Range functions served from rollups: rate, increase, delta, irate, idelta,
// changes, resets and count_over_time.
//
// No set of samples per window makes the engine compute these functions
// from them as from raw data (rate extrapolates from the sample count and
// the first and last samples of each range), so the store computes them
// itself, from windows that keep what each needs (rangefunc.go), and hands
// the engine the results. Engine rewrites a query before the engine sees it:
// each call of one of these functions whose every evaluation is over whole
// windows of a rollup (planFunc: the same conditions under which a rollup
// serves max_over_time) becomes a vector selector of the same series with
// one more matcher, __hbtsdb_rollup_fn__ = a token of the query; a Select
// with that matcher (querier.Select) returns, per series without its
// metric name, the function's value at each evaluation time, and a stale
// marker where it has none. Aggregations, binary operations and everything
// around the call stay the engine's. The rewritten expression keeps the
// positions of the query the user wrote, so that annotations point where
// they would; the engine is handed it through its parser (plannedParser),
// since it takes a query only as text.
//
// A series whose windows cannot give the engine's answer (native
// histograms, or rollup cells written before windows kept the counter
// fields, where the data row is gone) fails the Select with
// errFuncNeedsRaw, and the query runs again as written (funcQuery.Exec),
// served as every other: raw data, or the rollup past the raw retention
// with an info saying that the answer differs.

// funcLabel is the matcher that marks a Select of precomputed values.
const funcLabel = "__hbtsdb_rollup_fn__"

// errFuncNeedsRaw fails a rewritten query whose functions some series'
// windows cannot compute; the query then runs as written.
var errFuncNeedsRaw = errors.New("query: a series' rollup windows cannot give a range function's raw answer")

// funcPlan is one rewritten call: fn over ranges of rng ms ending at the
// data times from, from+step, ..., to (step 0: from only), from rollup.
type funcPlan struct {
	fn             string
	rng            int64
	rollup         schema.Rollup
	from, to, step int64
	metric         string
	pos            posrange.PositionRange // the call's matrix selector, for annotations
	// sawFloats is set once some range held a float sample: rate and
	// increase of a metric not named as a counter then have the engine's
	// info saying so.
	sawFloats atomic.Bool
}

// readRange is what the plan reads: every range it evaluates.
func (p *funcPlan) readRange() (int64, int64) { return max(0, p.from-p.rng+1), p.to }

// nonCounterInfo is the info the engine gives rate and increase of a
// metric whose name does not say it is a counter (promql/engine.go), nil
// when none is due.
func (p *funcPlan) nonCounterInfo() error {
	if (p.fn != "rate" && p.fn != "increase") || !p.sawFloats.Load() {
		return nil
	}
	for _, suffix := range []string{"_total", "_sum", "_count", "_bucket"} {
		if strings.HasSuffix(p.metric, suffix) {
			return nil
		}
	}
	return annotations.NewPossibleNonCounterInfo(p.metric, p.pos)
}

type funcPlansKey struct{}

// funcPlanOf returns the plan a Select's matchers name (funcLabel) in ctx,
// and the other matchers.
func funcPlanOf(ctx context.Context, ms []*labels.Matcher) (*funcPlan, []*labels.Matcher, bool) {
	plans, _ := ctx.Value(funcPlansKey{}).(map[string]*funcPlan)
	if plans == nil {
		return nil, ms, false
	}
	for i, m := range ms {
		if m.Name == funcLabel && m.Type == labels.MatchEqual {
			if p, ok := plans[m.Value]; ok {
				return p, append(slices.Clip(ms[:i]), ms[i+1:]...), true
			}
		}
	}
	return nil, ms, false
}

// rewriteFuncs replaces in expr (evaluated at start, start+step, ..., end;
// ms) every call planFunc serves from a rollup by its vector selector,
// naming each by token and an index.
func (r *Reader) rewriteFuncs(ctx context.Context, expr parser.Expr, start, end, step int64, token string) (parser.Expr, map[string]*funcPlan) {
	res := r.resolutionOf(ctx)
	if res.raw || res.width > 0 || len(r.opts.Rollups) == 0 {
		return expr, nil
	}
	plans := map[string]*funcPlan{}
	var walk func(e parser.Expr) parser.Expr
	walk = func(e parser.Expr) parser.Expr {
		switch n := e.(type) {
		case *parser.Call:
			if p := r.planFunc(n, start, end, step); p != nil {
				name := fmt.Sprintf("%s-%d", token, len(plans))
				plans[name] = p
				return funcSelector(n, name)
			}
			for i, a := range n.Args {
				n.Args[i] = walk(a)
			}
		case *parser.AggregateExpr:
			n.Expr = walk(n.Expr)
			if n.Param != nil {
				n.Param = walk(n.Param)
			}
		case *parser.BinaryExpr:
			n.LHS, n.RHS = walk(n.LHS), walk(n.RHS)
		case *parser.ParenExpr:
			n.Expr = walk(n.Expr)
		case *parser.UnaryExpr:
			n.Expr = walk(n.Expr)
		}
		// Subqueries are not walked: their evaluation times are their own.
		return e
	}
	expr = walk(expr)
	return expr, plans
}

// planFunc returns the plan of call when a rollup serves it: a function of
// rollupFuncs over a plain selector of one metric (__name__="..."), with a
// range and every evaluation time (offset and @ applied) whole windows of a
// rollup that holds the data read, as chooseResolution requires of a Select
// it serves from a rollup; the coarsest such rollup. Nil otherwise.
func (r *Reader) planFunc(call *parser.Call, start, end, step int64) *funcPlan {
	if !rollupFuncs[call.Func.Name] || len(call.Args) != 1 {
		return nil
	}
	ms, ok := call.Args[0].(*parser.MatrixSelector)
	if !ok || ms.RangeExpr != nil {
		return nil
	}
	vs, ok := ms.VectorSelector.(*parser.VectorSelector)
	if !ok || vs.Anchored || vs.Smoothed || vs.OriginalOffsetExpr != nil {
		return nil
	}
	metric := ""
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			metric = m.Value
		}
	}
	if metric == "" {
		return nil
	}
	from, to, st := start, end, step
	switch {
	case vs.Timestamp != nil:
		from, to, st = *vs.Timestamp, *vs.Timestamp, 0
	case vs.StartOrEnd == parser.START:
		from, to, st = start, start, 0
	case vs.StartOrEnd == parser.END:
		from, to, st = end, end, 0
	}
	if st > 0 {
		to = from + (to-from)/st*st
	} else {
		to = from
	}
	off := vs.OriginalOffset.Milliseconds()
	from, to = from-off, to-off
	rng := ms.Range.Milliseconds()
	if rng <= 0 || from-rng+1 < 0 {
		return nil
	}
	lo, hi := from-rng+1, to
	if hi-lo <= int64(r.opts.RollupMinBuckets)*r.settings.BucketWidth.Milliseconds() {
		return nil
	}
	now := r.opts.Now().UnixMilli()
	rollups := r.opts.Rollups
	for i := len(rollups) - 1; i >= 0; i-- {
		ro := rollups[i]
		rm := ro.Resolution.Milliseconds()
		if rng%rm != 0 || from%rm != 0 || st%rm != 0 {
			continue
		}
		if ro.Retention != 0 && lo < now-ro.Retention.Milliseconds() {
			continue
		}
		return &funcPlan{fn: call.Func.Name, rng: rng, rollup: ro, from: from, to: to, step: st, metric: metric, pos: ms.PositionRange()}
	}
	return nil
}

// funcSelector is the vector selector that replaces call (whose argument is
// a matrix selector of a vector selector): its selector, modifiers and
// position, and the matcher naming its plan.
func funcSelector(call *parser.Call, name string) *parser.VectorSelector {
	vs := call.Args[0].(*parser.MatrixSelector).VectorSelector.(*parser.VectorSelector)
	return &parser.VectorSelector{
		LabelMatchers:  append(slices.Clone(vs.LabelMatchers), labels.MustNewMatcher(labels.MatchEqual, funcLabel, name)),
		OriginalOffset: vs.OriginalOffset,
		Offset:         vs.Offset,
		Timestamp:      vs.Timestamp,
		StartOrEnd:     vs.StartOrEnd,
		PosRange:       call.PosRange,
	}
}

// readFunc computes p's function for series s from the windows of
// [mint, maxt] (p.readRange): one sample per evaluation time with a value,
// and a stale marker at one without after one with.
func (r *Reader) readFunc(ctx context.Context, s *series, mint, maxt int64, p *funcPlan) ([]cellenc.RowSamples, error) {
	ws, err := r.readWindows(ctx, s, p.rollup, mint, maxt, funcNeedsCounters(p.fn))
	if err != nil {
		return nil, fmt.Errorf("query: read series %d (%s) from the %s rollup: %w", s.id, s.labels, schema.RollupTable(p.rollup.Resolution), err)
	}
	for _, w := range ws {
		if (w.Histograms > 0 && p.fn != "count_over_time") || (w.Count > 0 && !w.HasCounters && funcNeedsCounters(p.fn)) {
			return nil, fmt.Errorf("%w: %s of series %s", errFuncNeedsRaw, p.fn, s.labels)
		}
	}
	if s := ReadStatsFrom(ctx); s != nil {
		s.funcSeries.Add(1)
	}
	var out []cellenc.Sample
	lo, hi := 0, 0 // ws[lo:hi] end in (t-rng, t]
	for t := p.from; t <= p.to; t += p.step {
		for hi < len(ws) && ws[hi].End <= t {
			hi++
		}
		for lo < hi && ws[lo].End <= t-p.rng {
			lo++
		}
		in := ws[lo:hi]
		if slicesHaveSamples(in) {
			p.sawFloats.Store(true)
		}
		if v, ok := evalWindows(p.fn, in, t, p.rng); ok {
			out = append(out, cellenc.Sample{T: t, V: v})
		} else if n := len(out); n > 0 && !value.IsStaleNaN(out[n-1].V) {
			out = append(out, cellenc.Sample{T: t, V: math.Float64frombits(value.StaleNaN)})
		}
		if p.step == 0 {
			break
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return []cellenc.RowSamples{{BucketStart: -1, Samples: out}}, nil
}

// ReaderSource is a queryable whose read path Engine can plan with: *Reader,
// and *db.DB.
type ReaderSource interface {
	QueryReader() (*Reader, error)
}

// QueryReader returns r.
func (r *Reader) QueryReader() (*Reader, error) { return r, nil }

// Engine is the PromQL engine over a store: Prometheus' own, with the range
// functions a rollup computes exactly served from it (see above). It
// implements promql.QueryEngine.
type Engine struct {
	engine *promql.Engine
	parser *plannedParser
	// Queries whose functions use start timestamps, or keep the metric
	// name until the end, are not rewritten: windows keep no start
	// timestamps, and a Select of precomputed values drops the name.
	useStartTimestamps, delayedNameRemoval bool
}

var _ promql.QueryEngine = (*Engine)(nil)

// NewEngine returns the engine promql.NewEngine(opts) makes, with its
// parser wrapped to take rewritten queries.
func NewEngine(opts promql.EngineOpts) *Engine {
	p := &plannedParser{Parser: opts.Parser}
	if p.Parser == nil {
		p.Parser = parser.NewParser(parser.Options{})
	}
	opts.Parser = p
	return &Engine{engine: promql.NewEngine(opts), parser: p, useStartTimestamps: opts.UseStartTimestamps, delayedNameRemoval: opts.EnableDelayedNameRemoval}
}

// plannedParser hands the engine a rewritten expression for the query text
// Engine made for it, and parses every other text as Parser does.
type plannedParser struct {
	parser.Parser
	pending sync.Map // query text -> parser.Expr
}

func (p *plannedParser) ParseExpr(input string) (parser.Expr, error) {
	if e, ok := p.pending.LoadAndDelete(input); ok {
		return e.(parser.Expr), nil
	}
	return p.Parser.ParseExpr(input)
}

func (e *Engine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, ts, ts, 0)
}

func (e *Engine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	return e.newQuery(ctx, q, opts, qs, start, end, step)
}

// newQuery makes the query of qs, rewritten when a rollup serves some of its
// range functions (step 0: an instant query at start).
func (e *Engine) newQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, step time.Duration) (promql.Query, error) {
	build := func(ctx context.Context, qs string) (promql.Query, error) {
		if step == 0 {
			return e.engine.NewInstantQuery(ctx, q, opts, qs, start)
		}
		return e.engine.NewRangeQuery(ctx, q, opts, qs, start, end, step)
	}
	src, ok := q.(ReaderSource)
	if !ok || e.delayedNameRemoval || e.usesStartTimestamps(opts) {
		return build(ctx, qs)
	}
	r, err := src.QueryReader()
	if err != nil || r == nil {
		return build(ctx, qs)
	}
	expr, err := e.parser.Parser.ParseExpr(qs)
	if err != nil {
		return build(ctx, qs) // the engine reports it
	}
	token := newQueryToken()
	expr, plans := r.rewriteFuncs(ctx, expr, start.UnixMilli(), end.UnixMilli(), step.Milliseconds(), token)
	if len(plans) == 0 {
		return build(ctx, qs)
	}
	// The text the engine gets is the query's with a comment naming the
	// rewrite; the parser answers it with the rewritten expression.
	text := qs + "\n# hbtsdb: range functions served from rollups, " + token
	e.parser.pending.Store(text, expr)
	defer e.parser.pending.Delete(text)
	qry, err := build(ctx, text)
	if err != nil {
		return nil, err
	}
	return &funcQuery{Query: qry, qs: qs, plans: plans, asWritten: func(ctx context.Context) (promql.Query, error) { return build(ctx, qs) }}, nil
}

// usesStartTimestamps reports whether rate, increase, irate and resets use
// start timestamps in a query with opts, which windows do not keep.
func (e *Engine) usesStartTimestamps(opts promql.QueryOpts) bool {
	if opts != nil {
		if u := opts.UseStartTimestamps(); u != nil {
			return *u
		}
	}
	return e.useStartTimestamps
}

// newQueryToken names one query's rewrite: random, so that no query text can
// name another's plans.
func newQueryToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// funcQuery is a rewritten query; it runs as written when a series' windows
// cannot compute its functions (errFuncNeedsRaw).
type funcQuery struct {
	promql.Query
	qs        string
	plans     map[string]*funcPlan
	asWritten func(context.Context) (promql.Query, error)
}

// Exec runs the rewritten query, and the query as written when that fails
// with errFuncNeedsRaw. The ReadStats of ctx count the cells of the run that
// answered: those an abandoned run read say nothing of where the answer
// came from.
func (q *funcQuery) Exec(ctx context.Context) *promql.Result {
	actx, attempt := WithReadStats(context.WithValue(ctx, funcPlansKey{}, q.plans))
	res := q.Query.Exec(actx)
	if res.Err == nil || !errors.Is(res.Err, errFuncNeedsRaw) {
		if s := ReadStatsFrom(ctx); s != nil {
			s.add(attempt)
		}
		return res
	}
	again, err := q.asWritten(ctx)
	if err != nil {
		return &promql.Result{Err: err}
	}
	q.Query.Close()
	q.Query = again
	return again.Exec(ctx)
}

// String returns the query as written.
func (q *funcQuery) String() string { return q.qs }
