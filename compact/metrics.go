package compact

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// workerMetrics are a Worker's metrics, on WorkerOptions.Registerer: rounds by
// outcome, what they compacted, and when a round last finished without a
// failure (compaction lag is time() minus it).
type workerMetrics struct {
	rounds      *prometheus.CounterVec
	rows        prometheus.Counter
	samples     prometheus.Counter
	rollupCells prometheus.Counter
	rowsRead    prometheus.Counter
	cellsRead   prometheus.Counter
	conflicts   prometheus.Counter
	duration    prometheus.Histogram
	lastSuccess prometheus.Gauge
	watermark   *prometheus.GaugeVec
}

func newWorkerMetrics(reg prometheus.Registerer) *workerMetrics {
	if reg == nil {
		return nil
	}
	m := &workerMetrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_rounds_total",
			Help: "Compaction rounds run by this process, by outcome: success, or failed (some salt failed; the next round retries it).",
		}, []string{"outcome"}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_rows_total",
			Help: "Data rows (one series' bucket) compacted into chunks by this process.",
		}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_samples_total",
			Help: "Raw samples compacted into chunks by this process.",
		}),
		rollupCells: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_rollup_cells_total",
			Help: "Rollup cells (downsampled windows) written by this process.",
		}),
		rowsRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_rows_read_total",
			Help: "Data rows read by this process's compaction rounds, compacted or not: with cells_read, what the rounds cost.",
		}),
		cellsRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_cells_read_total",
			Help: "Cells (data, rollup and pending marks) read by this process's compaction rounds.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hbtsdb_compaction_conflicts_total",
			Help: "Rows a compaction round left for the next because another compactor rewrote one of their cells meanwhile.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hbtsdb_compaction_round_duration_seconds",
			Help:    "Time one compaction round took.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}),
		watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hbtsdb_compaction_watermark_seconds",
			Help: "Per salt, the Unix time up to which compaction (by any worker of the store) has compacted and rolled up every bucket; time() - grace - it is how far compaction lags.",
		}, []string{"salt"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hbtsdb_compaction_last_success_timestamp_seconds",
			Help: "Unix time at which this process last finished a compaction round in which no salt failed.",
		}),
	}
	reg.MustRegister(m.rounds, m.rows, m.samples, m.rollupCells, m.rowsRead, m.cellsRead, m.conflicts, m.duration, m.lastSuccess, m.watermark)
	// Both outcomes exist from the start, so that rate() sees the first failure.
	m.rounds.WithLabelValues("success")
	m.rounds.WithLabelValues("failed")
	return m
}

// round records one round that ended at endUnix (seconds); failed says whether
// any salt failed. A round cut short by shutdown is not recorded.
func (m *workerMetrics) round(rs RoundStats, failed bool, endUnix float64) {
	if m == nil {
		return
	}
	m.rows.Add(float64(rs.Rows))
	m.samples.Add(float64(rs.Samples))
	m.rollupCells.Add(float64(rs.RollupCells))
	m.rowsRead.Add(float64(rs.RowsRead))
	m.cellsRead.Add(float64(rs.CellsRead))
	m.conflicts.Add(float64(rs.Conflicts))
	m.duration.Observe(rs.Duration.Seconds())
	if failed {
		m.rounds.WithLabelValues("failed").Inc()
		return
	}
	m.rounds.WithLabelValues("success").Inc()
	m.lastSuccess.Set(endUnix)
}

// watermarks records the store's watermarks, by salt (ms).
func (m *workerMetrics) watermarks(wm map[byte]int64) {
	for salt, ms := range wm {
		m.watermark.WithLabelValues(strconv.Itoa(int(salt))).Set(float64(ms) / 1000)
	}
}
