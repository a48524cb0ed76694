package query

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Resolution choice: which Selects a rollup serves.
//
// The rule: a rollup serves a Select only where PromQL's answer is the same as
// from raw data. The engine computes every function itself from the samples a
// Select returns, so a rollup serves a Select by returning, per window, samples
// from which that function computes raw's answer:
//
//   - an instant-vector selector (hints.Range 0, whatever function or
//     aggregation is around it) gets each window's last sample at its own
//     timestamp, and a stale marker where the window ends stale: at an
//     evaluation time that is a window end, the newest sample within the
//     lookback delta is the last sample of its window, so the answer is raw's,
//     to the bit;
//   - max_over_time and min_over_time get each window's max (min) at the
//     window's end; last_over_time and present_over_time the window's last
//     sample: with evaluation times at window ends and a range that is a whole
//     number of windows ((t-range, t], closed on the right as rollup windows
//     are) the range holds whole windows, so the answer is raw's, to the bit;
//   - sum_over_time gets each window's sum, for a series whose windows hold
//     only integers adding up to at most 2^52 in magnitude
//     (cellenc.SumsExact): then the engine's sum of window sums and raw data's
//     sum of samples are both the exact sum, the same float. Any other series
//     is read from raw data (rollup.go: needsRaw): adding window sums instead
//     of samples rounds differently (0.1 beside 1e9 and -1e9 an hour later
//     gives 0.10000002384185791 from windows, 0.1 from samples; 1e308s that
//     cancel give +Inf from windows).
//
// Native histograms: a rollup window keeps its last histogram, so instant
// selectors, last_over_time and present_over_time are served for histogram
// series as for float ones, and give raw's answer, to the bit (a stale
// histogram ends a window stale as a float stale marker does). For
// max_over_time, min_over_time and sum_over_time, a series whose windows hold
// histograms is read from raw data (rollup.go: readPlanned), as a rollup keeps
// no histogram sum and raw's answer for those functions says something about
// the histograms (their sum, or an annotation that they were ignored). Data
// older than the raw retention has only its rollups: there a histogram series
// gets each window's last histogram for instant selectors, last_over_time and
// present_over_time, and nothing of its histograms for the other functions.
//
// rate, increase, delta, irate, idelta, changes, resets and count_over_time
// depend on more than one sample per window can carry through the engine
// (rate's extrapolation uses the sample count and the first value of each
// range): the store computes them itself from the windows and the engine
// gets their values (rollupfunc.go, rangefunc.go), under the same conditions
// (evaluation times and ranges of whole windows). Everything else
// (avg_over_time, quantiles, stddev, ...) reads raw data.
//
// Whether the evaluation times are window ends is a property of the whole
// query (its start, step, offsets, @ modifiers, subqueries), which a Select's
// hints do not carry: the HTTP layer, which parses the query, says so with
// WithPromQL. A Select without that (remote read, a caller of the storage
// interface) reads raw data, except for data older than the raw retention,
// which only rollups still hold.

// Resolution names what queries are served from: automatic (the zero value),
// raw data only, or one resolution of the store's rollups.
type Resolution struct {
	raw   bool
	width time.Duration
}

// ResolutionAuto serves a query from rollups where that gives raw's answer;
// ResolutionRaw always reads raw data (data older than the raw retention then
// has none).
var (
	ResolutionAuto = Resolution{}
	ResolutionRaw  = Resolution{raw: true}
)

// ParseResolution reads "auto" (or ""), "raw" or a resolution ("5m").
func ParseResolution(s string) (Resolution, error) {
	switch s {
	case "", "auto":
		return ResolutionAuto, nil
	case "raw":
		return ResolutionRaw, nil
	}
	d, err := model.ParseDuration(s)
	if err != nil || d <= 0 {
		return Resolution{}, fmt.Errorf("resolution %q is not auto, raw or a rollup resolution such as 5m", s)
	}
	return Resolution{width: time.Duration(d)}, nil
}

func (r Resolution) String() string {
	switch {
	case r.raw:
		return "raw"
	case r.width > 0:
		return model.Duration(r.width).String()
	}
	return "auto"
}

// Validate reports a resolution that is none of the store's rollups.
func (r Resolution) Validate(rollups []schema.Rollup) error {
	if r.width == 0 {
		return nil
	}
	for _, ro := range rollups {
		if ro.Resolution == r.width {
			return nil
		}
	}
	return fmt.Errorf("resolution %s is not one of the store's rollups (%s)", r, schema.FormatRollups(rollups))
}

// evalShape is what a Select needs to know of its PromQL query to tell whether
// its evaluation times are window ends.
type evalShape struct {
	start, step int64   // first evaluation time and step (0: instant), ms
	times       []int64 // per selector, its first evaluation time (offset and @ applied)
	// unaligned is set when some selector's times cannot be known from the
	// query (subqueries, anchored or smoothed selectors).
	unaligned bool
}

type resolutionKey struct{}

type resolutionChoice struct {
	res   Resolution
	set   bool
	shape *evalShape
}

// WithResolution returns ctx carrying a resolution asked for by the user (the
// HTTP API's resolution parameter); it overrides Options.Resolution.
func WithResolution(ctx context.Context, res Resolution) context.Context {
	c, _ := ctx.Value(resolutionKey{}).(resolutionChoice)
	c.res, c.set = res, true
	return context.WithValue(ctx, resolutionKey{}, c)
}

// WithPromQL returns ctx carrying what the Selects of a PromQL query need to
// be served from rollups: the parsed query and its evaluation times (start;
// end and step for a range query, step 0 for an instant query).
func WithPromQL(ctx context.Context, expr parser.Expr, start, end time.Time, step time.Duration) context.Context {
	c, _ := ctx.Value(resolutionKey{}).(resolutionChoice)
	c.shape = shapeOf(expr, start.UnixMilli(), end.UnixMilli(), step.Milliseconds())
	return context.WithValue(ctx, resolutionKey{}, c)
}

// shapeOf collects the times a query's selectors are evaluated relative to:
// the first evaluation time, shifted by every offset and pinned by every @.
func shapeOf(expr parser.Expr, start, end, step int64) *evalShape {
	s := &evalShape{start: start, step: step}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.SubqueryExpr:
			s.unaligned = true
		case *parser.VectorSelector:
			if n.Anchored || n.Smoothed {
				s.unaligned = true
			}
			at := start
			switch {
			case n.Timestamp != nil:
				at = *n.Timestamp
			case n.StartOrEnd == parser.START:
				at = start
			case n.StartOrEnd == parser.END:
				at = end
			}
			// Unpinned, the selector sees at + k*step - offset; pinned by @, it
			// sees at - offset at every step.
			s.times = append(s.times, at-n.OriginalOffset.Milliseconds())
		}
		return nil
	})
	return s
}

// aligned reports whether every evaluation time of every selector of the
// query is a multiple of res.
func (s *evalShape) aligned(res time.Duration) bool {
	r := res.Milliseconds()
	if s == nil || s.unaligned || s.step%r != 0 {
		return false
	}
	for _, t := range s.times {
		if t%r != 0 {
			return false
		}
	}
	return s.start%r == 0
}

// readMode is what a Select returns per window.
type readMode uint8

// servesHistograms reports whether a rollup read in mode returns what raw's
// answer needs of native histograms (each window's last one).
func (m readMode) servesHistograms() bool { return m == modeLast || m == modeLastValue }

const (
	modeRaw       readMode = iota
	modeLast               // last sample at its timestamp, then the stale marker ending the window
	modeLastValue          // last sample (stale markers are not samples)
	modeMax                // max at the window end
	modeMin                // min at the window end
	modeSum                // sum at the window end
	modeFunc               // a range function's value at each evaluation time (rollupfunc.go)
)

// rangeModes are the range functions a rollup answers as raw data does, and
// how.
var rangeModes = map[string]readMode{
	"max_over_time":     modeMax,
	"min_over_time":     modeMin,
	"sum_over_time":     modeSum,
	"last_over_time":    modeLastValue,
	"present_over_time": modeLastValue,
}

// rollupPlan is how a Select reads: raw data, or a rollup for the samples
// before rawFrom and raw data from rawFrom on.
type rollupPlan struct {
	mode    readMode
	rollup  schema.Rollup
	rawFrom int64 // raw data from this timestamp on; math.MaxInt64: all from the rollup
	info    error // the annotation saying so
	// sameAsRaw is set when info promises raw data's answer: a series whose
	// windows cannot give it is read from raw data (needsRaw).
	sameAsRaw bool
	// caveat records why windows served could not give raw data's answer
	// where raw data no longer exists; the Select's info then says so
	// (seriesSet.Warnings). Shared by the copies of the plan.
	caveat *planCaveat
	// fn is the rewritten call a modeFunc Select computes.
	fn *funcPlan
}

// planCaveat is what a Select learns while reading that its plan's info must
// take back: windows served for data raw data no longer holds, whose answer
// for the function is not raw data's (sums that are not exact, histograms
// the rollup keeps only the last of).
type planCaveat struct {
	reason atomic.Pointer[string]
}

// note records the first reason the windows ws served in mode give for not
// being raw data's answer (whyNotRaw).
func (c *planCaveat) note(ws []cellenc.RollupWindow, mode readMode) {
	if c == nil || c.reason.Load() != nil {
		return
	}
	if reason := whyNotRaw(ws, mode); reason != "" {
		c.reason.CompareAndSwap(nil, &reason)
	}
}

// infoAfterReads returns the plan's info, or, once the reads noted a caveat,
// the info that takes its promise back.
func (p rollupPlan) infoAfterReads() error {
	if p.caveat == nil {
		return p.info
	}
	r := p.caveat.reason.Load()
	if r == nil {
		return p.info
	}
	return fmt.Errorf("%w: served from the %s rollup where raw samples have expired, for %s: the answer may differ from raw data's",
		annotations.PromQLInfo, model.Duration(p.rollup.Resolution), *r)
}

// sameAsRawInfo is the info of an answer served from rollup ro with raw
// data's answer.
func sameAsRawInfo(ro schema.Rollup) error {
	return fmt.Errorf("%w: served from the %s rollup (the same answer as from raw data)", annotations.PromQLInfo, model.Duration(ro.Resolution))
}

// resolutionOf is what a query under ctx is served from: the resolution the
// user asked for (WithResolution), else Options.Resolution.
func (r *Reader) resolutionOf(ctx context.Context) Resolution {
	if c, _ := ctx.Value(resolutionKey{}).(resolutionChoice); c.set {
		return c.res
	}
	return r.opts.Resolution
}

// chooseResolution plans a Select of [mint, maxt] (clamped) with hints.
func (r *Reader) chooseResolution(ctx context.Context, hints *storage.SelectHints, mint, maxt int64) rollupPlan {
	rollups := r.opts.Rollups
	if len(rollups) == 0 || hints == nil || hints.Func == "series" {
		return rollupPlan{}
	}
	c, _ := ctx.Value(resolutionKey{}).(resolutionChoice)
	res := r.resolutionOf(ctx)
	if res.raw {
		return rollupPlan{}
	}
	now := r.opts.Now().UnixMilli()
	covers := func(ro schema.Rollup) bool { return ro.Retention == 0 || mint >= now-ro.Retention.Milliseconds() }
	approx := modeLast
	if m, ok := rangeModes[hints.Func]; ok && hints.Range > 0 {
		approx = m
	}
	if res.width > 0 {
		for _, ro := range rollups {
			if ro.Resolution == res.width {
				return rollupPlan{mode: approx, rollup: ro, rawFrom: math.MaxInt64, info: fmt.Errorf(
					"%w: served from the %s rollup, as asked (resolution=%s); the answer may differ from raw data's",
					annotations.PromQLInfo, res, res)}
			}
		}
		return rollupPlan{}
	}
	width := r.settings.BucketWidth.Milliseconds()
	if c.shape != nil && maxt-mint > int64(r.opts.RollupMinBuckets)*width {
		for i := len(rollups) - 1; i >= 0; i-- {
			ro := rollups[i]
			rm := ro.Resolution.Milliseconds()
			mode := modeLast
			if hints.Range > 0 {
				m, ok := rangeModes[hints.Func]
				if !ok || hints.Range%rm != 0 {
					continue
				}
				mode = m
			}
			if covers(ro) && c.shape.aligned(ro.Resolution) {
				return rollupPlan{mode: mode, rollup: ro, rawFrom: math.MaxInt64, sameAsRaw: true, caveat: &planCaveat{}, info: sameAsRawInfo(ro)}
			}
		}
	}
	if ret := r.opts.RawRetention; ret > 0 && mint < now-ret.Milliseconds() {
		// Raw data before expired is gone: the finest rollup that still holds
		// mint serves that part, or else the one kept longest.
		expired := now - ret.Milliseconds()
		ro := rollups[0]
		for _, o := range rollups {
			if covers(o) {
				ro = o
				break
			}
			if o.Retention > ro.Retention {
				ro = o
			}
		}
		// The rollup serves whole windows: up to the end of the window that
		// holds the expiry point (its older samples are only in the rollup),
		// raw data after it. Raw samples of that window read as well would be
		// counted twice.
		rawFrom := cellenc.WindowEnd(expired, ro.Resolution) + 1
		info := fmt.Sprintf("raw samples before %s have expired (raw retention %s); the range up to %s is served from the %s rollup",
			rfc3339(expired), model.Duration(ret), rfc3339(rawFrom-1), model.Duration(ro.Resolution))
		switch {
		case hints.Range > 0 && approx == modeLast:
			// A range function a rollup does not answer gets each window's
			// last sample there: its answer is not raw data's.
			info += fmt.Sprintf(", one sample per window, so %s over it differs from raw data's", rangeFuncName(hints.Func))
		case c.shape == nil || !c.shape.aligned(ro.Resolution) || hints.Range%ro.Resolution.Milliseconds() != 0:
			// Window ends that are not evaluation times, or a range that
			// is not whole windows: windows are cut where raw data's
			// ranges are not.
			info += ", whose windows end at other times than the query's evaluation times: the answer over it may differ from raw data's"
		}
		return rollupPlan{mode: approx, rollup: ro, rawFrom: rawFrom, caveat: &planCaveat{}, info: fmt.Errorf("%w: %s", annotations.PromQLInfo, info)}
	}
	return rollupPlan{}
}

// rfc3339 writes a timestamp (ms) for an info, to the second.
func rfc3339(t int64) string { return time.UnixMilli(t).UTC().Format(time.RFC3339) }

// rangeFuncName names a range function for an info ("the function" when the
// hints do not say which).
func rangeFuncName(f string) string {
	if f == "" {
		return "the function"
	}
	return f
}
