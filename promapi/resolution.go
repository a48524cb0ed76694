package promapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/query"
)

// Resolution of PromQL queries: /api/v1/query and /api/v1/query_range take
// an optional parameter resolution=auto|raw|<rollup resolution> (the default
// is the server's --query.resolution), and tell the read path the query's
// evaluation times, so that it can serve a selector from a rollup where that
// gives raw data's answer (query/resolution.go). A query whose time is not
// given (instant query at "now") reads raw data: its evaluation time is only
// known inside Prometheus' handler.

// withResolution wraps a PromQL endpoint: it reads the resolution parameter
// (400 bad_data when it is not auto, raw or a duration) and the query's
// evaluation times into the request's context. instant tells /query from
// /query_range.
func withResolution(instant bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			respondError(w, errBadDataType, fmt.Errorf("error parsing form values: %w", err))
			return
		}
		ctx := r.Context()
		if s := r.Form.Get("resolution"); s != "" {
			res, err := query.ParseResolution(s)
			if err != nil {
				respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "resolution": %w`, err))
				return
			}
			ctx = query.WithResolution(ctx, res)
		}
		if shapeCtx, ok := evalTimes(r, instant); ok {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Form.Get("query"))
			if err == nil {
				ctx = query.WithPromQL(ctx, expr, shapeCtx.start, shapeCtx.end, shapeCtx.step)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type evalTimesOf struct {
	start, end time.Time
	step       time.Duration
}

// evalTimes reads a query's evaluation times as Prometheus' handler will; false
// when they are not given or do not parse (the handler then answers).
func evalTimes(r *http.Request, instant bool) (evalTimesOf, bool) {
	if instant {
		t, err := parsePromTime(r.Form.Get("time"))
		return evalTimesOf{start: t, end: t}, err == nil
	}
	start, err1 := parsePromTime(r.Form.Get("start"))
	end, err2 := parsePromTime(r.Form.Get("end"))
	step, err3 := parsePromDuration(r.Form.Get("step"))
	return evalTimesOf{start: start, end: end, step: step}, err1 == nil && err2 == nil && err3 == nil && step > 0
}

// parsePromTime parses a time as Prometheus' API does: Unix seconds with a
// fraction, or RFC 3339. An empty string is an error here (the handler would
// take "now").
func parsePromTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		sec, frac := math.Modf(t)
		frac = math.Round(frac*1000) / 1000
		return time.Unix(int64(sec), int64(frac*float64(time.Second))).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// parsePromDuration parses a step as Prometheus' API does: seconds with a
// fraction, or a Prometheus duration.
func parsePromDuration(s string) (time.Duration, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		ts := d * float64(time.Second)
		if ts > float64(math.MaxInt64) || ts < float64(math.MinInt64) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration. It overflows int64", s)
		}
		return time.Duration(ts), nil
	}
	d, err := model.ParseDuration(s)
	return time.Duration(d), err
}
