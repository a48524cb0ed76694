package main

import (
	"math"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/promquery"
)

// part is one part of a run (a tenth of the bench's): what happened between
// two snapshots.
type part struct {
	from, to       time.Time
	samples        int64 // acknowledged by tsdb
	cpu, jvm, vm   time.Duration
	vmSamples      int64
	split          map[string]time.Duration // tsdb's CPU by category (profiles scaled to cpu); nil without profiles
	rows           float64                  // compacted
	compacted      float64                  // samples compacted
	rounds         float64
	roundSeconds   float64 // time the rounds that ended in the part took
	roundCount     float64
	read           map[string]readWork // by job
	tombstones     map[string]float64  // by kind
	maxLag         time.Duration
	diskBytes      int64 // at the part's end
	ackedAtEnd     int64
	queries        [][]queryResult // by query, answered in the part
	queriesInReach int64           // samples in reach of the answered queries
}

// at returns the first snapshot at or after t (the last one if none is).
func at(snaps []snapshot, t time.Time) int {
	for i, s := range snaps {
		if !s.at.Before(t) {
			return i
		}
	}
	return len(snaps) - 1
}

// between returns the part from snapshot i to snapshot j, with the queries and
// profiles of that time.
func between(r *runResult, i, j int) part {
	a, b := r.snapshots[i], r.snapshots[j]
	p := part{
		from: a.at, to: b.at,
		samples: b.acked - a.acked, vmSamples: b.vmAcked - a.vmAcked,
		cpu: b.tsdbCPU - a.tsdbCPU, jvm: b.jvmCPU - a.jvmCPU, vm: b.vmCPU - a.vmCPU,
		rows: b.metrics.rows - a.metrics.rows, compacted: b.metrics.compactedSamples - a.metrics.compactedSamples,
		rounds:       b.metrics.roundsOK + b.metrics.roundsFailed - a.metrics.roundsOK - a.metrics.roundsFailed,
		roundSeconds: b.metrics.roundSeconds - a.metrics.roundSeconds, roundCount: b.metrics.roundCount - a.metrics.roundCount,
		read: map[string]readWork{}, tombstones: map[string]float64{},
		diskBytes: b.diskBytes, ackedAtEnd: b.acked,
		queries: make([][]queryResult, len(steadyQueries)),
	}
	for _, job := range jobNames {
		p.read[job] = b.metrics.read[job].minus(a.metrics.read[job])
	}
	for kind, n := range b.metrics.tombstones {
		p.tombstones[kind] = n - a.metrics.tombstones[kind]
	}
	for _, s := range r.snapshots[i : j+1] {
		p.maxLag = max(p.maxLag, s.lag(r.start))
	}
	for _, q := range r.queries {
		if q.at.After(a.at) && !q.at.After(b.at) {
			p.queries[q.query] = append(p.queries[q.query], q)
			if q.err == nil {
				p.queriesInReach += q.inReach
			}
		}
	}
	var total time.Duration
	by := map[string]time.Duration{}
	for _, cs := range r.profiles {
		mid := cs.start.Add(cs.end.Sub(cs.start) / 2)
		if mid.After(a.at) && !mid.After(b.at) {
			for cat, d := range cs.by {
				by[cat] += d
			}
			total += cs.total
		}
	}
	if total > 0 {
		p.split = map[string]time.Duration{}
		for cat, d := range by {
			p.split[cat] = time.Duration(float64(p.cpu) * float64(d) / float64(total))
		}
	}
	return p
}

// parts divides the load's time into n parts of equal length.
func parts(r *runResult, n int) []part {
	out := make([]part, 0, n)
	d := r.loadEnd.Sub(r.start)
	prev := at(r.snapshots, r.start)
	for k := 1; k <= n; k++ {
		next := at(r.snapshots, r.start.Add(d*time.Duration(k)/time.Duration(n)))
		if next <= prev {
			continue
		}
		out = append(out, between(r, prev, next))
		prev = next
	}
	return out
}

// cycleBounds are the indexes of the snapshots at which the rows of 1, 2, 3,
// ... buckets had been compacted (every series has one row per bucket): cycle
// k, from bound k-1 to bound k, holds the compaction of bucket k and the rounds
// between it and the previous one, whatever the clock. Bucket 0, cut by the
// start of the load, ends before the first bound.
func cycleBounds(r *runResult) []int {
	series := float64(r.cfg.load.Series())
	var bounds []int
	for k := 1; ; k++ {
		next := -1
		for i, s := range r.snapshots {
			if s.metrics.rows >= series*float64(k) {
				next = i
				break
			}
		}
		if next < 0 {
			return bounds
		}
		bounds = append(bounds, next)
	}
}

// cycles returns the complete cycles of the run (cycleBounds), from cycle 1.
// Two buckets compacted between two snapshots (by one round, when compaction
// lags) fall into one cycle, whose cost is per row all the same.
func cycles(r *runResult) []part {
	var out []part
	bounds := cycleBounds(r)
	for k := 1; k < len(bounds); k++ {
		if bounds[k] > bounds[k-1] {
			out = append(out, between(r, bounds[k-1], bounds[k]))
		}
	}
	return out
}

// ratio is a / b, NaN when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// latencies returns the p50 and p99 latency of the answered queries, and how
// many failed.
func latencies(qs []queryResult) (p50, p99 time.Duration, answered, failed int) {
	var ds []time.Duration
	for _, q := range qs {
		if q.err != nil {
			failed++
			continue
		}
		ds = append(ds, q.latency)
	}
	return promquery.Quantile(ds, 0.5), promquery.Quantile(ds, 0.99), len(ds), failed
}

// compactionCost is what compacting cost the store per compacted row in a
// part: the cells its reads returned and, on the embedded store, the keys
// Pebble iterated over.
func (p part) compactionCost() (cellsPerRow, keysPerRow float64) {
	w := p.read["compaction"]
	return ratio(w.cells, p.rows), ratio(w.keys, p.rows)
}

// queryCost is what the queries cost the store per sample in their reach
// (queryResult.inReach): the cells returned and the keys iterated over.
func (p part) queryCost() (cellsPerSample, keysPerSample float64) {
	w := p.read["query"]
	return ratio(w.cells, float64(p.queriesInReach)), ratio(w.keys, float64(p.queriesInReach))
}
