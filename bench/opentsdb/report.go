package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/hbtsdb/hbtsdb/bench/internal/figures"
	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/promquery"
)

// goalRatio is the project's goal: hbtsdb ingests at least this many times
// OpenTSDB's points/s through /api/put on the same HBase.
const goalRatio = 10

// columnName is a target's column header.
func columnName(target string) string {
	if target == targetOpenTSDB {
		v := os.Getenv("OPENTSDB_VERSION")
		if v == "" {
			v = "2.4.1" // testing/opentsdb/opentsdb.sh's default
		}
		return "OpenTSDB " + v + " (TSD)"
	}
	return "hbtsdb (tsdb serve, HBase)"
}

// row is one line of the table: a label and the median over rounds per
// target (NaN: a figure the target does not have).
type row struct {
	label  string
	format string
	values []float64
}

// renderTable returns the Markdown table of the medians over rounds, a ratio
// column hbtsdb ÷ OpenTSDB when both ran, and the notes a reader needs.
func renderTable(c config, hb *hbaserun.Instance, results map[string][]roundResult, before, after machine) string {
	targets := c.targets
	med := func(f func(roundResult) float64) []float64 {
		out := make([]float64, len(targets))
		for i, t := range targets {
			var vs []float64
			for _, r := range results[t] {
				vs = append(vs, f(r))
			}
			out[i] = promquery.Median(vs)
			if slices.ContainsFunc(vs, math.IsNaN) || len(vs) == 0 {
				out[i] = math.NaN()
			}
		}
		return out
	}
	perM := func(d func(roundResult) float64) func(roundResult) float64 {
		return func(r roundResult) float64 { return d(r) / (float64(r.points) / 1e6) }
	}
	hbase := func(f func(h *hbaseCost) float64) func(roundResult) float64 {
		return func(r roundResult) float64 {
			if r.hbase == nil {
				return math.NaN()
			}
			return f(r.hbase)
		}
	}
	rows := []row{
		{label: "points/s stored (first request to last answer)", format: "%.0f",
			values: med(func(r roundResult) float64 { return float64(r.sent.stored) / r.sent.wall.Seconds() })},
		{label: "points failed (all rounds)", format: "%.0f", values: sums(targets, results, func(r roundResult) float64 {
			return float64(r.sent.failed + r.warmFailed)
		})},
		{label: "points late for tsdb when sent (their 1 h bucket ended over 3 m before), %", format: "%.0f",
			values: med(func(r roundResult) float64 { return 100 * r.late })},
		{label: "server CPU-seconds per million points, ingest", format: "%.2f",
			values: med(perM(func(r roundResult) float64 { return r.cpu.Seconds() }))},
		{label: "same, until it and HBase went idle", format: "%.2f",
			values: med(perM(func(r roundResult) float64 { return r.cpuIdle.Seconds() }))},
		{label: "server peak RSS, MiB", format: "%.0f",
			values: med(func(r roundResult) float64 { return float64(r.peakRSS) / (1 << 20) })},
	}
	if hb.Measured() {
		rows = append(rows,
			row{label: "HBase JVM CPU-seconds per million points, ingest", format: "%.2f",
				values: med(perM(hbase(func(h *hbaseCost) float64 { return h.cpu.Seconds() })))},
			row{label: "same, until the server and HBase went idle", format: "%.2f",
				values: med(perM(hbase(func(h *hbaseCost) float64 { return h.cpuIdle.Seconds() })))},
			row{label: "server + HBase JVM CPU-seconds per million points, until idle", format: "%.2f",
				values: med(perM(func(r roundResult) float64 {
					if r.hbase == nil {
						return math.NaN()
					}
					return r.cpuIdle.Seconds() + r.hbase.cpuIdle.Seconds()
				}))},
			row{label: "HBase WAL written, bytes per point", format: "%.1f",
				values: med(hbase(func(h *hbaseCost) float64 { return float64(h.walBytes) / float64(c.load.Total()) }))},
		)
		if c.tables {
			rows = append(rows, row{label: "HBase tables after flush + major compaction, bytes per point", format: "%.2f",
				values: med(hbase(func(h *hbaseCost) float64 { return float64(h.tableBytes) / float64(c.load.Total()) }))})
		}
	}

	both := len(targets) == 2
	header := []string{""}
	for _, t := range targets {
		header = append(header, columnName(t))
	}
	if both {
		header = append(header, "hbtsdb ÷ OpenTSDB")
	}
	var cells [][]string
	for _, r := range rows {
		line := []string{r.label}
		for _, v := range r.values {
			line = append(line, figures.Format(r.format, v))
		}
		if both {
			line = append(line, ratio(r.values[0], r.values[1]))
		}
		cells = append(cells, line)
	}
	var b strings.Builder
	b.WriteString(figures.Table(header, cells))
	b.WriteString("\n")
	b.WriteString(loadNote(c))
	b.WriteString(roundsNote(c, results))
	b.WriteString(failuresNote(c, results))
	if both {
		ps := rows[0].values
		verdict := "met"
		if !(ps[1] >= goalRatio*ps[0]) {
			verdict = "**not met**"
		}
		fmt.Fprintf(&b, "hbtsdb ÷ OpenTSDB points/s: %s (goal ≥ %d×: %s).\n", ratio(ps[0], ps[1]), goalRatio, verdict)
	}
	fmt.Fprintf(&b, "Machine: %d cores; load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		before.cores, before.loadavg, after.loadavg)
	return b.String()
}

// ratio is hbtsdb's value over OpenTSDB's.
func ratio(otsdb, hbtsdb float64) string {
	if math.IsNaN(otsdb) || math.IsNaN(hbtsdb) || otsdb == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", hbtsdb/otsdb)
}

// sums is the sum over rounds of f per target.
func sums(targets []string, results map[string][]roundResult, f func(roundResult) float64) []float64 {
	out := make([]float64, len(targets))
	for i, t := range targets {
		for _, r := range results[t] {
			out[i] += f(r)
		}
	}
	return out
}

// loadNote says what was sent, how, and what was measured.
func loadNote(c config) string {
	l := c.load
	enc := "plain JSON"
	if l.Gzip {
		enc = "gzip-encoded JSON"
	}
	unit := "seconds"
	if l.inMillis() {
		unit = "milliseconds"
	}
	warm := "no warm-up"
	if c.warmup > 0 {
		warm = fmt.Sprintf("after a warm-up of %d points per series on other metric names (%s points, not measured)",
			c.warmup, figures.Group(fmt.Sprint(c.warmupLoad().Total())))
	}
	return fmt.Sprintf("Medians of %d %s, the targets alternating (%s first in odd rounds), each on new tables in the same HBase. "+
		"Load: %d hosts × %d metrics × %d points at %s = %s points (even metrics integer counters, odd ones float gauges; "+
		"tags host and dc; timestamps in %s, the span ending when the round starts), "+
		"POST /api/put%s with JSON arrays of %d datapoints (%s) from %d concurrent senders, one request in flight each, "+
		"each sender owning a share of the hosts and sending in time order, %s. "+
		"A point counts as stored when the answer's \"success\" counts it. "+
		"CPU: utime+stime of the process from /proc/<pid>/stat, from the first request to the last answer (\"ingest\") "+
		"and until the server and the HBase JVM had each used under 5 %% of a core over %s (at most %s after the ingest). "+
		"Server: the TSD's JVM (-Xmx%s) for OpenTSDB, the tsdb serve process for hbtsdb.\n",
		c.rounds, figures.Plural(c.rounds, "round", "rounds"), columnName(c.targets[0]),
		l.Hosts, l.Metrics, l.Points, l.Interval, figures.Group(fmt.Sprint(l.Total())), unit,
		putQuery(c.sync), l.Batch, enc, l.Senders, warm, c.idle, c.settle, c.tsdHeap)
}

// roundsNote lists every round's points/s and whether the targets went idle.
func roundsNote(c config, results map[string][]roundResult) string {
	var parts, busy []string
	for _, t := range c.targets {
		var ps []string
		for i, r := range results[t] {
			ps = append(ps, figures.Format("%.0f", float64(r.sent.stored)/r.sent.wall.Seconds()))
			if !r.idle {
				busy = append(busy, fmt.Sprintf("%s (round %d)", t, i+1))
			}
		}
		parts = append(parts, columnName(t)+" "+strings.Join(ps, " / "))
	}
	s := "Points/s by round: " + strings.Join(parts, "; ") + ".\n"
	if len(busy) > 0 {
		s += fmt.Sprintf("Still busy %s after the ingest, so \"until idle\" stops there: %s.\n", c.settle, strings.Join(busy, ", "))
	}
	return s
}

// failuresNote says that every point was stored, or, loudly, which failed
// and why.
func failuresNote(c config, results map[string][]roundResult) string {
	var lines []string
	for _, t := range c.targets {
		for i, r := range results[t] {
			if r.sent.failed > 0 {
				lines = append(lines, fmt.Sprintf("%s round %d: %d of %d points failed: %s", t, i+1, r.sent.failed, r.points,
					strings.Join(r.sent.topReasons(3), "; ")))
			}
			if r.warmFailed > 0 {
				lines = append(lines, fmt.Sprintf("%s round %d: %d warm-up points failed", t, i+1, r.warmFailed))
			}
		}
	}
	if len(lines) == 0 {
		return "Every point of every round was stored (both answered every request with all its datapoints counted as success).\n"
	}
	return "**RUN WITH FAILURES — its figures do not count:** " + strings.Join(lines, ". ") + ".\n"
}
