package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
)

// sample is a CPU profile sample of d whose stack holds the functions named
// (innermost first) and whose labels are labels.
func sample(d time.Duration, labels map[string][]string, funcs ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1, int64(d)}, Label: labels}
	for _, name := range funcs {
		s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: name}}}})
	}
	return s
}

func TestCPUSplitsByFramesThenByJobLabel(t *testing.T) {
	ingest := map[string][]string{"hbtsdb_job": {"ingest"}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			sample(10*time.Millisecond, ingest, "github.com/hbtsdb/hbtsdb/write.(*Writer).Write"),
			// A flush started from an ingest goroutine inherits its label: still the store's.
			sample(20*time.Millisecond, ingest, "github.com/cockroachdb/pebble/v2.(*DB).flush1", "github.com/cockroachdb/pebble/v2.(*DB).flush"),
			sample(30*time.Millisecond, map[string][]string{"hbtsdb_job": {"compaction"}}, "github.com/hbtsdb/hbtsdb/compact.(*Compactor).CompactSalt"),
			sample(40*time.Millisecond, nil, "github.com/cockroachdb/pebble/v2.(*DB).collectTableStats"),
			sample(50*time.Millisecond, map[string][]string{"hbtsdb_job": {"query"}}, "github.com/prometheus/prometheus/promql.(*Engine).exec"),
			sample(60*time.Millisecond, nil, "github.com/cockroachdb/pebble/v2/record.(*LogWriter).flushLoop"),
			sample(70*time.Millisecond, nil, "runtime.gcDrain", "runtime.gcBgMarkWorker"),
			sample(80*time.Millisecond, nil, "github.com/tsuna/gohbase/region.(*client).receiveRPCs"),
			sample(90*time.Millisecond, nil, "net/http.(*conn).serve"),
		},
	}
	cs, err := split(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		catIngest: 10 * time.Millisecond, catStore: 60 * time.Millisecond, catCompaction: 30 * time.Millisecond,
		catQuery: 50 * time.Millisecond, catWAL: 60 * time.Millisecond, catGC: 70 * time.Millisecond,
		catHBase: 80 * time.Millisecond, catOther: 90 * time.Millisecond,
	}
	for _, cat := range categories {
		if cs.by[cat] != want[cat] {
			t.Errorf("%s: %s, want %s", cat, cs.by[cat], want[cat])
		}
	}
	if cs.total != 450*time.Millisecond {
		t.Errorf("total %s, want 450ms", cs.total)
	}
}

func TestParseMetricsSumsTheFiguresTheReportUses(t *testing.T) {
	text := `# TYPE hbtsdb_compaction_rows_total counter
hbtsdb_compaction_rows_total 400
# TYPE hbtsdb_compaction_rounds_total counter
hbtsdb_compaction_rounds_total{outcome="failed"} 1
hbtsdb_compaction_rounds_total{outcome="success"} 12
# TYPE hbtsdb_compaction_last_success_timestamp_seconds gauge
hbtsdb_compaction_last_success_timestamp_seconds 1.7e+09
# TYPE hbtsdb_compaction_round_duration_seconds histogram
hbtsdb_compaction_round_duration_seconds_bucket{le="+Inf"} 13
hbtsdb_compaction_round_duration_seconds_sum 6.5
hbtsdb_compaction_round_duration_seconds_count 13
# TYPE hbtsdb_samples_written_total counter
hbtsdb_samples_written_total{protocol="remote_write_v1"} 1000
hbtsdb_samples_written_total{protocol="put"} 5
# TYPE hbtsdb_kv_read_internal_keys_total counter
hbtsdb_kv_read_internal_keys_total{backend="embedded",job="compaction",operation="scan"} 70
hbtsdb_kv_read_internal_keys_total{backend="embedded",job="compaction",operation="get_rows"} 30
hbtsdb_kv_read_internal_keys_total{backend="embedded",job="query",operation="scan"} 9
# TYPE hbtsdb_kv_read_cells_total counter
hbtsdb_kv_read_cells_total{backend="embedded",job="compaction",operation="get_rows"} 20
# TYPE hbtsdb_kv_tombstones_total counter
hbtsdb_kv_tombstones_total{backend="embedded",kind="point"} 3
hbtsdb_kv_tombstones_total{backend="embedded",kind="range"} 4
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.rows != 400 || m.roundsOK != 12 || m.roundsFailed != 1 || m.lastSuccess != 1.7e9 || m.samplesWritten != 1005 ||
		m.roundSeconds != 6.5 || m.roundCount != 13 {
		t.Errorf("parsed %+v", m)
	}
	if got := m.read["compaction"]; got.keys != 100 || got.cells != 20 {
		t.Errorf("compaction reads %+v, want 100 keys and 20 cells", got)
	}
	if got := m.read["query"]; got.keys != 9 {
		t.Errorf("query reads %+v, want 9 keys", got)
	}
	if m.tombstones["point"] != 3 || m.tombstones["range"] != 4 {
		t.Errorf("tombstones %v", m.tombstones)
	}
}

func TestStepsInCountsTheAcknowledgedStepsOfARange(t *testing.T) {
	rt := &realTimeLoad{ackedSteps: []int64{1000, 2000, 3000, 5000}}
	for _, tc := range []struct {
		from, to int64
		want     int
	}{{0, 10_000, 4}, {2000, 3000, 2}, {2001, 4999, 1}, {6000, 7000, 0}, {0, 999, 0}} {
		if got := rt.stepsIn(tc.from, tc.to); got != tc.want {
			t.Errorf("stepsIn(%d, %d) = %d, want %d", tc.from, tc.to, got, tc.want)
		}
	}
	if rt.lastStep() != 5000 {
		t.Errorf("lastStep = %d, want 5000", rt.lastStep())
	}
}

func TestLastOverFirstRowDividesTheLastPartByTheFirst(t *testing.T) {
	var b strings.Builder
	writeTable(&b, []string{"minutes", "a", "b"}, []tableRow{
		{label: "0–1", cells: []string{"2", "–"}, values: []float64{2, math.NaN()}},
		{label: "1–2", cells: []string{"3", "1"}, values: []float64{3, 1}},
		{label: "2–3", cells: []string{"5", "1"}, values: []float64{5, 1}},
	})
	if !strings.HasSuffix(b.String(), "| last ÷ first | 2.50× | – |\n") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestFlagsDefaultToAnHourOnTheEmbeddedStoreAndHBaseWhenGiven(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.run.duration != time.Hour || len(c.backends) != 1 || c.backends[0] != "embedded" || !c.vm ||
		c.run.load.Series() != 5000 || c.run.bucketWidth != time.Minute {
		t.Errorf("defaults: %+v", c)
	}
	if want := "--schema.bucket-width=1m0s --compact.grace=15s --compact.interval=10s --web.enable-pprof"; strings.Join(c.run.tsdbArgs(), " ") != want {
		t.Errorf("tsdb args %v, want %s", c.run.tsdbArgs(), want)
	}
	c, err = parseFlags([]string{"-hbase", "-backends", "hbase, embedded", "-duration", "20m", "-grace", "30s"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.backends, ",") != "embedded,hbase" || c.run.duration != 20*time.Minute || c.run.grace != 30*time.Second {
		t.Errorf("-hbase -backends hbase,embedded: %+v", c)
	}
	for _, args := range [][]string{{"-backends", "hbase"}, {"-backends", "cassandra"}, {"-duration", "0s"}, {"-hosts", "1"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v accepted, want an error", args)
		}
	}
	if l := (rwload.Load{Hosts: 10, SeriesPerHost: 20}); shortRunConfig().load.Series() != l.Series() {
		t.Errorf("the short run has %d series, want %d", shortRunConfig().load.Series(), l.Series())
	}
}
