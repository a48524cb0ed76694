package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/figures"
)

// backendTitle names a backend in headings.
func backendTitle(backend string) string {
	if backend == "hbase" {
		return "tsdb (HBase)"
	}
	return "tsdb (embedded)"
}

// f formats v with format, "–" for NaN (a figure the run does not have).
func f(format string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// minutes writes a part's span from the start of the load: "0–6".
func minutes(start time.Time, p part) string {
	return fmt.Sprintf("%.0f–%.0f", p.from.Sub(start).Minutes(), p.to.Sub(start).Minutes())
}

// renderRun returns the Markdown report of one run: its load, two tables of
// figures per part (tenth) with a last ÷ first row, and the whole-life,
// shutdown and disk figures.
func renderRun(r *runResult) string {
	var b strings.Builder
	c := r.cfg
	l := c.load
	fmt.Fprintf(&b, "### %s: %s of steady load\n\n", backendTitle(r.backend), r.loadEnd.Sub(r.start).Round(time.Second))
	fmt.Fprintf(&b, "Load: %d hosts × %d series = %d series at %s (%.0f samples/s), remote write %s, %d senders; "+
		"--schema.bucket-width=%s, --compact.grace=%s, --compact.interval=%s. Queries: %s, one after the other every %s, "+
		"each over the last %s at a %s step with resolution=raw and stats=all.\n\n",
		l.Hosts, l.SeriesPerHost, l.Series(), l.Interval, float64(l.Series())/l.Interval.Seconds(), l.ProtoName(), l.Senders,
		c.bucketWidth, c.grace, c.compactEvery, queryList(), c.queryEvery, c.queryRange, c.queryStep)
	ps := parts(r, c.parts)
	if len(ps) == 0 {
		b.WriteString("No part of the run was measured.\n")
		return b.String()
	}
	b.WriteString(cpuTable(r, ps))
	b.WriteString("\n")
	b.WriteString(workTable(r, ps))
	b.WriteString("\n")
	b.WriteString(lifeTable(r, ps))
	return b.String()
}

func queryList() string {
	var qs []string
	for _, q := range steadyQueries {
		qs = append(qs, "`"+q.expr+"`")
	}
	return strings.Join(qs, ", ")
}

// row is one line of a table: a label and its cells, with the values the
// last ÷ first row divides.
type tableRow struct {
	label  string
	cells  []string
	values []float64
}

// writeTable writes header and rows, then a row of the last part's values over
// the first's (columns whose value is NaN in either: "–").
func writeTable(b *strings.Builder, header []string, rows []tableRow) {
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, append([]string{r.label}, r.cells...))
	}
	if len(rows) >= 2 {
		first, last := rows[0].values, rows[len(rows)-1].values
		ratios := []string{"last ÷ first"}
		for i := range first {
			ratios = append(ratios, f("%.2f×", ratio(last[i], first[i])))
		}
		cells = append(cells, ratios)
	}
	b.WriteString(figures.Table(header, cells))
}

// cpuTable is the throughput and CPU per part: tsdb's CPU-seconds per million
// samples ingested in the part, in all (/proc) and by category (profiles).
func cpuTable(r *runResult, ps []part) string {
	header := []string{"minutes", "samples/s", "tsdb CPU-s/M"}
	for _, cat := range categories {
		header = append(header, cat)
	}
	if r.hbase {
		header = append(header, "HBase JVM CPU-s/M")
	}
	if r.vm != nil {
		header = append(header, "VictoriaMetrics CPU-s/M")
	}
	header = append(header, "compaction rows/s", "mean round, s", "max lag, s", "disk, B/sample")
	var rows []tableRow
	for _, p := range ps {
		var tr tableRow
		tr.label = minutes(r.start, p)
		add := func(format string, v float64) {
			tr.cells = append(tr.cells, f(format, v))
			tr.values = append(tr.values, v)
		}
		secs := p.to.Sub(p.from).Seconds()
		add("%.0f", float64(p.samples)/secs)
		add("%.2f", figures.PerMillion(p.cpu, p.samples))
		for _, cat := range categories {
			v := math.NaN()
			if p.split != nil {
				v = figures.PerMillion(p.split[cat], p.samples)
			}
			add("%.2f", v)
		}
		if r.hbase {
			v := math.NaN()
			if r.jvmMeasured {
				v = figures.PerMillion(p.jvm, p.samples)
			}
			add("%.2f", v)
		}
		if r.vm != nil {
			add("%.2f", figures.PerMillion(p.vm, p.vmSamples))
		}
		add("%.0f", p.rows/secs)
		add("%.2f", ratio(p.roundSeconds, p.roundCount))
		add("%.0f", p.maxLag.Seconds())
		disk := math.NaN()
		if r.diskMeasured {
			disk = ratio(float64(p.diskBytes), float64(p.ackedAtEnd))
		}
		add("%.1f", disk)
		rows = append(rows, tr)
	}
	var b strings.Builder
	writeTable(&b, header, rows)
	b.WriteString("\nCPU-s/M: CPU-seconds per million samples ingested in the part; tsdb's from /proc (utime+stime), split by " +
		"back-to-back CPU profiles (by the pprof label hbtsdb_job: ingest, compaction, queries; Pebble's flushes, compactions " +
		"and table statistics by their frames, whatever their label, as \"store background\"; its WAL writer as \"store WAL\"; " +
		"the runtime's GC workers as \"GC\"; gohbase's region clients as \"HBase client\"). Lag: time since the last compaction " +
		"round without a failure ended, the largest seen in the part. Disk: ")
	if r.hbase {
		b.WriteString("the files of the run's HBase tables (HFiles: what the memstores hold is not on disk yet), ")
	} else {
		b.WriteString("the embedded store's directory, ")
	}
	b.WriteString("per sample acknowledged so far.\n")
	return b.String()
}

// workTable is the queries' latency and what the queries and the compaction
// rounds cost the store per unit of work, per part.
func workTable(r *runResult, ps []part) string {
	var header []string
	header = append(header, "minutes")
	for _, q := range steadyQueries {
		header = append(header, "`"+q.expr+"` p50 / p99, ms")
	}
	header = append(header, "query keys per sample", "query cells per sample", "compaction keys per row",
		"compaction cells per row", "point / range tombstones per compacted sample")
	var rows []tableRow
	failed := 0
	for _, p := range ps {
		var tr tableRow
		tr.label = minutes(r.start, p)
		for _, qs := range p.queries {
			p50, p99, answered, fails := latencies(qs)
			failed += fails
			if answered == 0 {
				tr.cells = append(tr.cells, "–")
				tr.values = append(tr.values, math.NaN())
				continue
			}
			tr.cells = append(tr.cells, fmt.Sprintf("%.1f / %.1f", ms(p50), ms(p99)))
			tr.values = append(tr.values, ms(p99))
		}
		add := func(format string, v float64) {
			tr.cells = append(tr.cells, f(format, v))
			tr.values = append(tr.values, v)
		}
		qCells, qKeys := p.queryCost()
		cCells, cKeys := p.compactionCost()
		if r.hbase {
			qKeys, cKeys = math.NaN(), math.NaN()
		}
		add("%.2f", qKeys)
		add("%.3f", qCells)
		add("%.1f", cKeys)
		add("%.1f", cCells)
		tomb := "–"
		if len(p.tombstones) > 0 {
			tomb = fmt.Sprintf("%s / %s", f("%.3f", ratio(p.tombstones["point"], p.compacted)),
				f("%.3f", ratio(p.tombstones["range"], p.compacted)))
		}
		tr.cells = append(tr.cells, tomb)
		tr.values = append(tr.values, math.NaN())
		rows = append(rows, tr)
	}
	var b strings.Builder
	writeTable(&b, header, rows)
	b.WriteString("\nLatencies: wall time to the last byte (the last ÷ first row divides the p99s). Keys: internal keys the " +
		"store's iterators stepped over for the job's reads (hbtsdb_kv_read_internal_keys_total; embedded only), cells: " +
		"cells its reads returned (hbtsdb_kv_read_cells_total); per sample in the queries' reach (one series per host, " +
		"every sample acknowledged from the start of the bucket of start − range to the end) and per compacted row. " +
		"Tombstones: hbtsdb_kv_tombstones_total, where the build exports it.")
	if failed > 0 {
		fmt.Fprintf(&b, " **%d queries failed.**", failed)
	}
	b.WriteString("\n")
	return b.String()
}

// lifeTable is what the whole run cost, beside VictoriaMetrics under the same
// load, shutdown and disk.
func lifeTable(r *runResult, ps []part) string {
	var b strings.Builder
	queryCPU, profiled := time.Duration(0), true
	for _, p := range ps {
		if p.split == nil {
			profiled = false
			continue
		}
		queryCPU += p.split[catQuery]
	}
	total := r.idleCPU - r.cpu0
	life := total - queryCPU
	header := []string{"", backendTitle(r.backend)}
	if r.vm != nil {
		header = append(header, r.vm.name)
	}
	rows := [][]string{
		{"samples acknowledged", fmt.Sprint(r.acked)},
		{"CPU-s per million samples, whole life: from before the load until idle after compaction caught up, queries excepted",
			f("%.2f", figures.PerMillion(life, r.acked))},
	}
	if r.vm != nil {
		rows[0] = append(rows[0], fmt.Sprint(r.vm.acked))
		rows[1] = append(rows[1], f("%.2f", figures.PerMillion(r.vm.cpu, r.vm.acked)))
	}
	if r.hbase && r.jvmMeasured {
		jvm := r.jvmIdleCPU - r.jvmCPU0
		rows = append(rows,
			[]string{"HBase JVM CPU-s per million samples, same span (its reads for the queries included)", f("%.2f", figures.PerMillion(jvm, r.acked))},
			[]string{"tsdb + HBase JVM, whole life", f("%.2f", figures.PerMillion(life+jvm, r.acked))})
	}
	rows = append(rows,
		[]string{"SIGTERM to exit, s", f("%.2f", r.shutdown.Seconds())},
	)
	if r.diskMeasured {
		rows = append(rows, []string{"disk after the stop, bytes per sample", f("%.2f", ratio(float64(r.diskAfterStop), float64(r.acked)))})
		if r.vm != nil {
			rows[len(rows)-1] = append(rows[len(rows)-1], f("%.2f", ratio(float64(r.vm.disk), float64(r.vm.acked))))
		}
	}
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|---|")
	for range header[1:] {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		for len(row) < len(header) {
			row = append(row, "–")
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	fmt.Fprintf(&b, "\nAfter the load: compaction caught up with the last bucket: %v (%s); tsdb went idle (under 5 %% of a core "+
		"for a second): %v.", r.drained, r.drainTook.Round(time.Second), r.idle)
	if !profiled {
		b.WriteString(" Some parts had no CPU profile: their queries' CPU is not taken out of the whole-life figure.")
	}
	if r.vm != nil {
		fmt.Fprintf(&b, " VictoriaMetrics took the same requests (retried %d), its CPU counted until it went idle (%v) after "+
			"/internal/force_flush.", r.vm.retried, r.vm.idle)
	}
	if r.shutdownErr != nil {
		fmt.Fprintf(&b, " **Shutdown: %v.**", r.shutdownErr)
	}
	fmt.Fprintf(&b, " Requests retried (429/5xx): %d; steps skipped because the load fell behind: %d.\n", r.retried, r.skipped)
	return b.String()
}

// renderCycles is the table of the short test: per compaction cycle (the
// compaction of one bucket and the rounds before it), what compaction and the
// queries cost the store.
func renderCycles(r *runResult, cs []part) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| cycle | minutes | rows | compaction cells/row | compaction keys/row | keys under range tombstones/row | "+
		"queries | query cells/sample | query keys/sample | tsdb CPU-s | p99 ms (%d queries) |\n", len(steadyQueries))
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, p := range cs {
		cCells, cKeys := p.compactionCost()
		qCells, qKeys := p.queryCost()
		deleted := ratio(p.read["compaction"].keysDeleted, p.rows)
		if r.hbase {
			cKeys, qKeys, deleted = math.NaN(), math.NaN(), math.NaN()
		}
		var p99s []string
		n := 0
		for _, qs := range p.queries {
			_, p99, answered, _ := latencies(qs)
			n += answered
			p99s = append(p99s, f("%.1f", ms(p99)))
		}
		fmt.Fprintf(&b, "| %d | %s | %.0f | %s | %s | %s | %d | %s | %s | %.1f | %s |\n", i+1, minutes(r.start, p), p.rows,
			f("%.1f", cCells), f("%.1f", cKeys), f("%.1f", deleted), n,
			f("%.3f", qCells), f("%.2f", qKeys), p.cpu.Seconds(), strings.Join(p99s, " / "))
	}
	return b.String()
}
