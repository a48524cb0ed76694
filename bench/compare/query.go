package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/promquery"
	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
)

// benchQuery is one PromQL query of the benchmark: a range query over [start, end] at
// step, or an instant query at end when step is 0.
type benchQuery struct {
	label string // the table row
	expr  string
	step  time.Duration
}

// describe names the query in notes and warnings: its expression and its step.
func (q benchQuery) describe() string {
	if q.step == 0 {
		return fmt.Sprintf("`%s` instant", q.expr)
	}
	return fmt.Sprintf("`%s` at a %s step", q.expr, fmtDuration(q.step))
}

// queries returns the benchmark's queries for a load.
func queries(l rwload.Load) []benchQuery {
	span := fmtDuration(l.Span().Round(time.Minute))
	if l.Histograms {
		q := "histogram_quantile(0.9, sum by (job) (rate(h[5m])))"
		return []benchQuery{
			{label: fmt.Sprintf("`%s`, %s at %s, ms", q, span, fmtDuration(l.Interval)), expr: q, step: l.Interval},
			{label: "same at 5 m step, ms", expr: q, step: 5 * time.Minute},
			{label: fmt.Sprintf("`histogram_count(rate(node_hist_1[5m]))`, %d series, %s at 5 m, ms", l.Hosts, span),
				expr: "histogram_count(rate(node_hist_1[5m]))", step: 5 * time.Minute},
			{label: "one histogram series by two matchers, instant, ms", expr: `{host="host-001",series="7"}`},
		}
	}
	return []benchQuery{
		{label: fmt.Sprintf("`sum by (job) (rate(c[5m]))`, %s at %s, ms", span, fmtDuration(l.Interval)),
			expr: "sum by (job) (rate(c[5m]))", step: l.Interval},
		{label: "same at 5 m step, ms", expr: "sum by (job) (rate(c[5m]))", step: 5 * time.Minute},
		{label: fmt.Sprintf("`avg by (host) (g)`, %d series, %s at 5 m, ms", l.Hosts, span),
			expr: "avg by (host) (g)", step: 5 * time.Minute},
		{label: "one series by two matchers, instant, ms", expr: `{host="host-001",series="7"}`},
	}
}

// queryResult is the median latency of a query and the shape of its answer.
type queryResult struct {
	median  time.Duration
	series  int
	samples int
}

// runQuery runs q against base once to check the answer, then runs more times and
// returns the median latency.
func runQuery(ctx context.Context, client *http.Client, base string, q benchQuery, start, end time.Time, runs int) (queryResult, error) {
	v := url.Values{"query": {q.expr}}
	path := "/api/v1/query"
	if q.step > 0 {
		path = "/api/v1/query_range"
		v.Set("start", promquery.UnixSeconds(start))
		v.Set("end", promquery.UnixSeconds(end))
		v.Set("step", strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64))
	} else {
		v.Set("time", promquery.UnixSeconds(end))
	}
	u := base + path + "?" + v.Encode()
	var res queryResult
	body, _, err := promquery.Get(ctx, client, u)
	if err != nil {
		return res, fmt.Errorf("query %s: %w", q.expr, err)
	}
	ans, err := promquery.CountResult(body)
	if err != nil {
		return res, fmt.Errorf("query %s: %w", q.expr, err)
	}
	res.series, res.samples = ans.Series, ans.Samples
	times := make([]time.Duration, 0, runs)
	for range runs {
		_, d, err := promquery.Get(ctx, client, u)
		if err != nil {
			return res, fmt.Errorf("query %s: %w", q.expr, err)
		}
		times = append(times, d)
	}
	res.median = promquery.Median(times)
	return res, nil
}

// fmtDuration writes d the way the table does: "1 h", "5 m", "15 s".
func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d m", d/time.Minute)
	default:
		return fmt.Sprintf("%g s", d.Seconds())
	}
}
