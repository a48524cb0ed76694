package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readWork is what a job's reads returned and cost the store so far
// (hbtsdb_kv_read_*_total, summed over operations).
type readWork struct {
	rows, cells, keys, keysDeleted, seeks float64
}

func (a readWork) minus(b readWork) readWork {
	return readWork{rows: a.rows - b.rows, cells: a.cells - b.cells, keys: a.keys - b.keys,
		keysDeleted: a.keysDeleted - b.keysDeleted, seeks: a.seeks - b.seeks}
}

// serverMetrics is what one scrape of tsdb's /metrics says.
type serverMetrics struct {
	samplesWritten float64 // hbtsdb_samples_written_total
	// The compaction worker's counters (hbtsdb_compaction_*).
	rows, compactedSamples, roundsOK, roundsFailed float64
	roundSeconds, roundCount                       float64 // hbtsdb_compaction_round_duration_seconds sum and count
	lastSuccess                                    float64 // Unix seconds; 0 before the first round
	// rowsRead and cellsRead are the worker's own count of what its rounds
	// read (hbtsdb_compaction_{rows,cells}_read_total), where it exports them.
	rowsRead, cellsRead float64
	// tombstones is hbtsdb_kv_tombstones_total by kind, where exported.
	tombstones map[string]float64
	// read is hbtsdb_kv_read_* by job (kv.JobOf: ingest, query, compaction, other).
	read map[string]readWork
}

// scrapeMetrics reads base/metrics.
func scrapeMetrics(ctx context.Context, client *http.Client, base string) (serverMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return serverMetrics{}, fmt.Errorf("metrics request: %w", err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return serverMetrics{}, fmt.Errorf("get /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return serverMetrics{}, fmt.Errorf("get /metrics: %s: %s", resp.Status, b)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the metrics bench/steady follows from the text format.
func parseMetrics(r io.Reader) (serverMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return serverMetrics{}, fmt.Errorf("parse /metrics: %w", err)
	}
	m := serverMetrics{tombstones: map[string]float64{}, read: map[string]readWork{}}
	sum := func(name string, match func(labels map[string]string) bool) float64 {
		f := families[name]
		if f == nil {
			return 0
		}
		var total float64
		for _, metric := range f.GetMetric() {
			if match != nil && !match(labelMap(metric)) {
				continue
			}
			total += value(metric)
		}
		return total
	}
	outcome := func(o string) func(map[string]string) bool {
		return func(l map[string]string) bool { return l["outcome"] == o }
	}
	m.samplesWritten = sum("hbtsdb_samples_written_total", nil)
	m.rows = sum("hbtsdb_compaction_rows_total", nil)
	m.compactedSamples = sum("hbtsdb_compaction_samples_total", nil)
	m.roundsOK = sum("hbtsdb_compaction_rounds_total", outcome("success"))
	m.roundsFailed = sum("hbtsdb_compaction_rounds_total", outcome("failed"))
	m.lastSuccess = sum("hbtsdb_compaction_last_success_timestamp_seconds", nil)
	m.rowsRead = sum("hbtsdb_compaction_rows_read_total", nil)
	m.cellsRead = sum("hbtsdb_compaction_cells_read_total", nil)
	if f := families["hbtsdb_compaction_round_duration_seconds"]; f != nil && len(f.GetMetric()) == 1 {
		h := f.GetMetric()[0].GetHistogram()
		m.roundSeconds, m.roundCount = h.GetSampleSum(), float64(h.GetSampleCount())
	}
	if f := families["hbtsdb_kv_tombstones_total"]; f != nil {
		for _, metric := range f.GetMetric() {
			m.tombstones[labelMap(metric)["kind"]] += value(metric)
		}
	}
	for name, add := range map[string]func(*readWork, float64){
		"hbtsdb_kv_read_rows_total":                  func(w *readWork, v float64) { w.rows += v },
		"hbtsdb_kv_read_cells_total":                 func(w *readWork, v float64) { w.cells += v },
		"hbtsdb_kv_read_internal_keys_total":         func(w *readWork, v float64) { w.keys += v },
		"hbtsdb_kv_read_internal_keys_deleted_total": func(w *readWork, v float64) { w.keysDeleted += v },
		"hbtsdb_kv_read_internal_seeks_total":        func(w *readWork, v float64) { w.seeks += v },
	} {
		f := families[name]
		if f == nil {
			continue
		}
		for _, metric := range f.GetMetric() {
			job := labelMap(metric)["job"]
			w := m.read[job]
			add(&w, value(metric))
			m.read[job] = w
		}
	}
	return m, nil
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// snapshot is one measurement of the run: the processes' CPU, tsdb's
// metrics, the disk, and the load so far.
type snapshot struct {
	at time.Time
	// CPU time so far, from /proc: tsdb, the HBase JVM (tsdb on HBase, 0
	// otherwise) and VictoriaMetrics (0 without it).
	tsdbCPU, jvmCPU, vmCPU time.Duration
	metrics                serverMetrics
	// diskBytes is what tsdb's data takes: the embedded store's directory,
	// or the files of its HBase tables (HFiles; the memstores are not on disk).
	diskBytes int64
	// acked is the samples tsdb acknowledged, vmAcked those VictoriaMetrics did.
	acked, vmAcked int64
}

// lag is the compaction lag at the snapshot: the time since the last round
// without a failure ended (README: time() - hbtsdb_compaction_last_success_timestamp_seconds),
// or since the start when none has yet.
func (s snapshot) lag(start time.Time) time.Duration {
	if s.metrics.lastSuccess == 0 {
		return s.at.Sub(start)
	}
	return s.at.Sub(time.UnixMilli(int64(s.metrics.lastSuccess * 1000)))
}

// jobNames are the jobs of the read counters, in report order.
var jobNames = []string{"ingest", "query", "compaction", "other"}

// describeRead writes a job's read work in a progress line.
func describeRead(w readWork) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rows=%.0f cells=%.0f", w.rows, w.cells)
	if w.keys > 0 {
		fmt.Fprintf(&b, " keys=%.0f deleted=%.0f seeks=%.0f", w.keys, w.keysDeleted, w.seeks)
	}
	return b.String()
}
