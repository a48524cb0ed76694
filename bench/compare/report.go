package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/figures"
	"github.com/hbtsdb/hbtsdb/bench/internal/promquery"
)

// row is one line of the table: a label, whether higher is better, the median over
// rounds per server, and how to print a value.
type row struct {
	label        string
	higherBetter bool
	values       []float64
	format       string
}

// renderTable returns the Markdown table of the medians over rounds, with a ratio
// column tsdb ÷ best peer, and the notes a reader needs to read it.
func renderTable(c config, kinds []*serverKind, results [][]roundResult, now time.Time) string {
	// med is the median over rounds of f per server; NaN (printed "–") where f
	// is NaN in any round: a figure the server does not have.
	med := func(f func(roundResult) float64) []float64 {
		out := make([]float64, len(kinds))
		for i := range kinds {
			vs := make([]float64, 0, len(results[i]))
			for _, r := range results[i] {
				vs = append(vs, f(r))
			}
			out[i] = promquery.Median(vs)
			if slices.ContainsFunc(vs, math.IsNaN) {
				out[i] = math.NaN()
			}
		}
		return out
	}
	// local is a figure of the server's own data directory, which a tsdb on
	// HBase does not use.
	local := func(k func(roundResult) float64) func(roundResult) float64 {
		return func(r roundResult) float64 {
			if r.hbase != nil {
				return math.NaN()
			}
			return k(r)
		}
	}
	// hb is a figure of the HBase under a tsdb (HBase) server.
	hb := func(f func(h *hbaseRound, samples int) float64) func(roundResult) float64 {
		return func(r roundResult) float64 {
			if r.hbase == nil {
				return math.NaN()
			}
			return f(r.hbase, r.ingest.samples)
		}
	}
	// tsdbOnly keeps the values of the tsdb servers: a figure only they have.
	tsdbOnly := func(vs []float64) []float64 {
		for i, k := range kinds {
			if k.isPeer {
				vs[i] = math.NaN()
			}
		}
		return vs
	}
	rows := []row{
		{label: "ingest, new series, samples/s", higherBetter: true, format: "%.0f",
			values: med(func(r roundResult) float64 { return float64(r.ingest.samples) / r.ingest.wall.Seconds() })},
		{label: "samples late for tsdb when sent (their 1 h bucket ended over 3 m before), %", format: "%.0f",
			values: tsdbOnly(med(func(r roundResult) float64 { return 100 * r.late }))},
		{label: "server CPU-seconds per million samples, ingest", format: "%.2f",
			values: med(func(r roundResult) float64 { return figures.PerMillion(r.ingest.cpu, int64(r.ingest.samples)) })},
		{label: "same, until idle after the ingest (background work included)", format: "%.2f",
			values: med(func(r roundResult) float64 { return figures.PerMillion(r.ingest.cpuIdle, int64(r.ingest.samples)) })},
		{label: "peak RSS, MiB", format: "%.0f",
			values: med(func(r roundResult) float64 { return float64(r.peakRSS) / (1 << 20) })},
		{label: "disk after ingest, MiB", format: "%.1f",
			values: med(local(func(r roundResult) float64 { return float64(r.ingest.diskByte) / (1 << 20) }))},
		{label: "disk after a graceful stop, MiB", format: "%.1f",
			values: med(local(func(r roundResult) float64 { return float64(r.diskStopped) / (1 << 20) }))},
		{label: "disk after a graceful stop, bytes per sample", format: "%.2f",
			values: med(local(func(r roundResult) float64 { return float64(r.diskStopped) / float64(r.ingest.samples) }))},
	}
	hbaseMeasured := slices.ContainsFunc(results, func(rs []roundResult) bool {
		return len(rs) > 0 && rs[0].hbase != nil
	})
	if hbaseMeasured {
		rows = append(rows,
			row{label: "HBase JVM CPU-seconds per million samples, ingest", format: "%.2f",
				values: med(hb(func(h *hbaseRound, n int) float64 { return figures.PerMillion(h.jvmCPU, int64(n)) }))},
			row{label: "same, until tsdb and then HBase went idle after the ingest", format: "%.2f",
				values: med(hb(func(h *hbaseRound, n int) float64 { return figures.PerMillion(h.jvmCPUIdle, int64(n)) }))},
			row{label: "tsdb + HBase JVM CPU-seconds per million samples, ingest", format: "%.2f",
				values: med(func(r roundResult) float64 {
					if r.hbase == nil {
						return math.NaN()
					}
					return figures.PerMillion(r.ingest.cpu+r.hbase.jvmCPU, int64(r.ingest.samples))
				})},
			row{label: "HBase WAL written, bytes per sample", format: "%.1f",
				values: med(hb(func(h *hbaseRound, n int) float64 { return float64(h.walBytes) / float64(n) }))},
			row{label: "HBase tables after flush + major compaction, bytes per sample", format: "%.2f",
				values: med(hb(func(h *hbaseRound, n int) float64 { return float64(h.tableBytes) / float64(n) }))},
		)
	}
	qs := queries(c.load)
	for qi, q := range qs {
		rows = append(rows, row{label: q.label, format: "%.2f",
			values: med(func(r roundResult) float64 { return ms(r.queries[qi].median) })})
	}

	header := []string{""}
	for _, k := range kinds {
		header = append(header, k.Name)
	}
	header = append(header, "tsdb ÷ best peer")
	var cells [][]string
	for _, r := range rows {
		line := []string{r.label}
		for _, v := range r.values {
			line = append(line, figures.Format(r.format, v))
		}
		cells = append(cells, append(line, ratio(r, kinds)))
	}
	var b strings.Builder
	b.WriteString(figures.Table(header, cells))

	l := c.load
	fmt.Fprintf(&b, "\nMedians of %d interleaved %s (%s), each server on a fresh data directory every round. "+
		"Load: %d hosts × %d series × %d samples at %s = %s %s, %d samples per request, %d senders sharded by series, "+
		"remote write %s; queries: median of %d runs after a warm-up. "+
		"Ratio: tsdb ÷ the best peer (highest samples/s, lowest of the rest): above 1 is tsdb slower/bigger, "+
		"except for samples/s, where below 1 is tsdb slower.\n",
		c.rounds, figures.Plural(c.rounds, "round", "rounds"), roundOrder(kinds), l.Hosts, l.SeriesPerHost, l.Samples, fmtDuration(l.Interval),
		figures.Group(fmt.Sprint(l.TotalSamples())), l.SampleKind(), l.RequestSize, l.Senders, l.ProtoName(), c.queryRuns)
	b.WriteString("Disk (apparent size of the files under the data directory): \"after ingest\" once the server went " +
		"idle, VictoriaMetrics 11 s after /internal/force_flush (which makes the data searchable in in-memory parts; " +
		"those reach disk every 5 s), Prometheus and tsdb have no flush to ask for (Prometheus holds the hour in its head, on disk as " +
		"WAL; tsdb holds fresh raw samples in its head, on disk as the head log, and writes the rest through Pebble's WAL " +
		"and memtables); \"after a graceful stop\" once SIGTERM let each write out what it buffers.\n")
	if hbaseMeasured {
		b.WriteString(hbaseNote)
	}
	b.WriteString(seriesNote(kinds, results, qs))
	b.WriteString(settleNote(kinds, results, c.settle))
	return b.String()
}

// hbaseNote explains the HBase rows.
const hbaseNote = "tsdb (HBase) writes to a standalone HBase (testing/hbase/hbase.sh: master, region server and ZooKeeper " +
	"in one JVM, local filesystem) that serves every round, each round on new tables (a table prefix of its own); " +
	"tsdb's own disk rows do not apply to it (\"–\"). HBase JVM CPU: utime+stime of the JVM over the same interval as tsdb's; " +
	"\"until idle\" waits for tsdb, then for the JVM, to go idle. WAL written: the growth of the files under the root " +
	"directory's WALs/ and oldWALs/ from before the ingest until idle. Tables: the apparent size of the round's tables " +
	"(data/default/<prefix>*) after hbase.sh compact flushed and major-compacted them.\n"

// ratio is tsdb's value (the first server) over the best peer's.
func ratio(r row, kinds []*serverKind) string {
	best, found := 0.0, false
	for i, k := range kinds {
		if !k.isPeer {
			continue
		}
		v := r.values[i]
		if math.IsNaN(v) {
			continue
		}
		if !found || (r.higherBetter && v > best) || (!r.higherBetter && v < best) {
			best, found = v, true
		}
	}
	if !found || best == 0 || math.IsNaN(r.values[0]) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r.values[0]/best)
}

func roundOrder(kinds []*serverKind) string {
	names := make([]string, 0, len(kinds)+1)
	for _, k := range kinds {
		names = append(names, k.Short)
	}
	return strings.Join(names, ", ") + ", ..."
}

// seriesNote says how many series each query returned, and warns when the servers
// disagree in any round.
func seriesNote(kinds []*serverKind, results [][]roundResult, qs []benchQuery) string {
	var b strings.Builder
	for qi, q := range qs {
		agree := true
		for i := range kinds {
			for round := range results[i] {
				if results[i][round].queries[qi].series != results[0][0].queries[qi].series {
					agree = false
				}
			}
		}
		if agree {
			fmt.Fprintf(&b, "%s: %d series on every server in every round.\n", q.describe(), results[0][0].queries[qi].series)
			continue
		}
		fmt.Fprintf(&b, "**WARNING: %s: the servers returned different numbers of series:", q.describe())
		for i, k := range kinds {
			var ns []string
			for round := range results[i] {
				ns = append(ns, fmt.Sprint(results[i][round].queries[qi].series))
			}
			fmt.Fprintf(&b, " %s %s;", k.Short, strings.Join(ns, "/"))
		}
		b.WriteString("**\n")
	}
	return b.String()
}

// settleNote names the servers that were still busy when the settle limit ran out.
func settleNote(kinds []*serverKind, results [][]roundResult, limit time.Duration) string {
	var busy []string
	for i, k := range kinds {
		for round, r := range results[i] {
			if !r.ingest.settled {
				busy = append(busy, fmt.Sprintf("%s (round %d)", k.Short, round+1))
			}
		}
	}
	if len(busy) == 0 {
		return "Every server went idle (under 5 % of a core for a second) after each ingest.\n"
	}
	return fmt.Sprintf("Still busy %s after the ingest, so \"until idle\" stops there: %s.\n", limit, strings.Join(busy, ", "))
}
