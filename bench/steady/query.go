package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/promquery"
)

// steadyQuery is one of the range queries asked all along the run.
type steadyQuery struct {
	expr string
	// reach is how far before a step the query reads: its range selector's
	// range, or the lookback delta (5m) of an instant selector.
	reach time.Duration
	// perHost says the answer has one series per host; otherwise one.
	perHost bool
}

// wantSeries is the number of series the query answers under a load of hosts hosts.
func (q steadyQuery) wantSeries(hosts int) int {
	if q.perHost {
		return hosts
	}
	return 1
}

// steadyQueries are the three range queries: one series per host each (c and
// g are series 0 and 1 of every host, rwload.Load.MetricName).
var steadyQueries = []steadyQuery{
	{expr: "sum by (host) (rate(c[5m]))", reach: 5 * time.Minute, perHost: true},
	{expr: "avg(g)", reach: 5 * time.Minute},
	{expr: "max_over_time(g[10m])", reach: 10 * time.Minute, perHost: true},
}

// queryResult is one answered (or failed) query.
type queryResult struct {
	at      time.Time // when the answer had arrived
	query   int       // index in steadyQueries
	latency time.Duration
	ans     promquery.Answer
	// inReach is how many samples the store holds in the rows the query
	// reads: one series per host, the steps acknowledged from the start of
	// the bucket holding start - reach to end. What a query costs the store
	// is counted per sample of it.
	inReach int64
	err     error
}

// querier asks the steady queries over the last queryRange, one after the
// other, every queryEvery, until ctx is done.
type querier struct {
	base       string
	client     *http.Client
	rt         *realTimeLoad
	hosts      int
	rangeOf    time.Duration
	step       time.Duration
	every      time.Duration
	bucket     time.Duration
	resolution string // resolution parameter: raw on tsdb

	mu      sync.Mutex
	results []queryResult
}

func (q *querier) run(ctx context.Context) {
	for {
		round := time.Now()
		for i := range steadyQueries {
			if ctx.Err() != nil {
				return
			}
			r := q.ask(ctx, i)
			if ctx.Err() != nil {
				return // cut short by the end of the load: not a result
			}
			q.mu.Lock()
			q.results = append(q.results, r)
			q.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(round.Add(q.every))):
		}
	}
}

// ask runs query i over the last rangeOf, ending now (whole seconds).
func (q *querier) ask(ctx context.Context, i int) queryResult {
	sq := steadyQueries[i]
	end := time.Now().Truncate(time.Second)
	start := end.Add(-q.rangeOf)
	v := url.Values{
		"query": {sq.expr},
		"start": {promquery.UnixSeconds(start)},
		"end":   {promquery.UnixSeconds(end)},
		"step":  {strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64)},
		"stats": {"all"},
	}
	if q.resolution != "" {
		v.Set("resolution", q.resolution)
	}
	from := start.Add(-sq.reach).Truncate(q.bucket).UnixMilli()
	r := queryResult{query: i, inReach: int64(q.hosts) * int64(q.rt.stepsIn(from, end.UnixMilli()))}
	body, latency, err := promquery.Get(ctx, q.client, q.base+"/api/v1/query_range?"+v.Encode())
	r.at, r.latency = time.Now(), latency
	if err != nil {
		r.err = fmt.Errorf("query %s: %w", sq.expr, err)
		return r
	}
	if r.ans, err = promquery.CountResult(body); err != nil {
		r.err = fmt.Errorf("query %s: %w", sq.expr, err)
	}
	return r
}

// snapshot returns the results so far.
func (q *querier) snapshot() []queryResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queryResult(nil), q.results...)
}
