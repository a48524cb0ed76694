package compact

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// A worker's metrics count what its rounds compacted and read, the time of the
// last round without a failure, and the store's watermarks.
func TestWorkerMetricsCountRounds(t *testing.T) {
	b := schematest.Backends()[0]
	f, _ := newSaltedFixture(t, b, 1, 2)
	c := newClock(f.now.UnixMilli())
	reg := prometheus.NewPedanticRegistry()
	w := f.workerOn(t, f.st, "w", c, WorkerOptions{Registerer: reg, Compact: Options{Rollups: testRollups}})
	rs, err := w.RunOnce(context.Background())
	if err != nil || rs.Rows != f.sealedRows() {
		t.Fatalf("round = %+v, %v; want %d rows", rs, err, f.sealedRows())
	}
	if _, err := w.RunOnce(context.Background()); err != nil { // nothing left to compact
		t.Fatal(err)
	}
	want := fmt.Sprintf(`
# HELP hbtsdb_compaction_last_success_timestamp_seconds Unix time at which this process last finished a compaction round in which no salt failed.
# TYPE hbtsdb_compaction_last_success_timestamp_seconds gauge
hbtsdb_compaction_last_success_timestamp_seconds %v
# HELP hbtsdb_compaction_rounds_total Compaction rounds run by this process, by outcome: success, or failed (some salt failed; the next round retries it).
# TYPE hbtsdb_compaction_rounds_total counter
hbtsdb_compaction_rounds_total{outcome="failed"} 0
hbtsdb_compaction_rounds_total{outcome="success"} 2
# HELP hbtsdb_compaction_rows_total Data rows (one series' bucket) compacted into chunks by this process.
# TYPE hbtsdb_compaction_rows_total counter
hbtsdb_compaction_rows_total %d
# HELP hbtsdb_compaction_samples_total Raw samples compacted into chunks by this process.
# TYPE hbtsdb_compaction_samples_total counter
hbtsdb_compaction_samples_total %d
# HELP hbtsdb_compaction_rows_read_total Data rows read by this process's compaction rounds, compacted or not: with cells_read, what the rounds cost.
# TYPE hbtsdb_compaction_rows_read_total counter
hbtsdb_compaction_rows_read_total %d
# HELP hbtsdb_compaction_cells_read_total Cells (data, rollup and pending marks) read by this process's compaction rounds.
# TYPE hbtsdb_compaction_cells_read_total counter
hbtsdb_compaction_cells_read_total %d
# HELP hbtsdb_compaction_watermark_seconds Per salt, the Unix time up to which compaction (by any worker of the store) has compacted and rolled up every bucket; time() - grace - it is how far compaction lags.
# TYPE hbtsdb_compaction_watermark_seconds gauge
hbtsdb_compaction_watermark_seconds{salt="0"} %v
hbtsdb_compaction_watermark_seconds{salt="1"} %v
`, float64(c.Now().UnixMilli())/1000, rs.Rows, rs.Samples, rs.Rows, rs.Rows*(1+240), float64(f.cutoff())/1000, float64(f.cutoff())/1000)
	// The second round read nothing: what the first compacted, and nothing
	// else, its rows' marks and raw cells.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hbtsdb_compaction_last_success_timestamp_seconds",
		"hbtsdb_compaction_rounds_total", "hbtsdb_compaction_rows_total", "hbtsdb_compaction_samples_total",
		"hbtsdb_compaction_rows_read_total", "hbtsdb_compaction_cells_read_total", "hbtsdb_compaction_watermark_seconds"); err != nil {
		t.Error(err)
	}
	if rs.Samples == 0 {
		t.Error("the round compacted no samples")
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
