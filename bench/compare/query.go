package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
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
func queries(l load) []benchQuery {
	span := fmtDuration(l.span().Round(time.Minute))
	if l.histograms {
		q := "histogram_quantile(0.9, sum by (job) (rate(h[5m])))"
		return []benchQuery{
			{label: fmt.Sprintf("`%s`, %s at %s, ms", q, span, fmtDuration(l.interval)), expr: q, step: l.interval},
			{label: "same at 5 m step, ms", expr: q, step: 5 * time.Minute},
			{label: fmt.Sprintf("`histogram_count(rate(node_hist_1[5m]))`, %d series, %s at 5 m, ms", l.hosts, span),
				expr: "histogram_count(rate(node_hist_1[5m]))", step: 5 * time.Minute},
			{label: "one histogram series by two matchers, instant, ms", expr: `{host="host-001",series="7"}`},
		}
	}
	return []benchQuery{
		{label: fmt.Sprintf("`sum by (job) (rate(c[5m]))`, %s at %s, ms", span, fmtDuration(l.interval)),
			expr: "sum by (job) (rate(c[5m]))", step: l.interval},
		{label: "same at 5 m step, ms", expr: "sum by (job) (rate(c[5m]))", step: 5 * time.Minute},
		{label: fmt.Sprintf("`avg by (host) (g)`, %d series, %s at 5 m, ms", l.hosts, span),
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
		v.Set("start", unixSeconds(start))
		v.Set("end", unixSeconds(end))
		v.Set("step", strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64))
	} else {
		v.Set("time", unixSeconds(end))
	}
	u := base + path + "?" + v.Encode()
	var res queryResult
	body, _, err := get(ctx, client, u)
	if err != nil {
		return res, fmt.Errorf("query %s: %w", q.expr, err)
	}
	res.series, res.samples, err = countResult(body)
	if err != nil {
		return res, fmt.Errorf("query %s: %w", q.expr, err)
	}
	times := make([]time.Duration, 0, runs)
	for range runs {
		_, d, err := get(ctx, client, u)
		if err != nil {
			return res, fmt.Errorf("query %s: %w", q.expr, err)
		}
		times = append(times, d)
	}
	res.median = median(times)
	return res, nil
}

// get fetches u and returns the body and the time to the last byte.
func get(ctx context.Context, client *http.Client, u string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("build request: %w", err)
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("get: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(t0)
	if err != nil {
		return nil, 0, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: %.300s", resp.Status, body)
	}
	return body, d, nil
}

// countResult returns the number of series and samples (floats and histograms) in a
// Prometheus HTTP API answer of resultType matrix or vector.
func countResult(body []byte) (series, samples int, err error) {
	var ans struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value      json.RawMessage   `json:"value"`
				Values     []json.RawMessage `json:"values"`
				Histogram  json.RawMessage   `json:"histogram"`
				Histograms []json.RawMessage `json:"histograms"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return 0, 0, fmt.Errorf("decode answer %.200s: %w", body, err)
	}
	if ans.Status != "success" {
		return 0, 0, fmt.Errorf("answer status %q: %.200s", ans.Status, body)
	}
	for _, r := range ans.Data.Result {
		samples += len(r.Values) + len(r.Histograms)
		if len(r.Value) > 0 {
			samples++
		}
		if len(r.Histogram) > 0 {
			samples++
		}
	}
	return len(ans.Data.Result), samples, nil
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// median returns the median of ds (the mean of the middle two for an even count).
func median[T ~int64 | ~float64](ds []T) T {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
