package kvmetrics

import (
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
)

func TestInstrumentCountsOperationsAndErrors(t *testing.T) {
	ctx := context.Background()
	raw, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	st := New("embedded", reg).Wrap(raw)
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	muts := []kv.Mutation{kv.Put([]byte("a"), "f", []byte("q"), 1, []byte("v")), kv.Put([]byte("b"), "f", []byte("q"), 1, []byte("v"))}
	if err := st.Apply(ctx, "t", muts); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "t", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetRows(ctx, "t", [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	sc := st.Scan(ctx, "t", nil, nil)
	rows := 0
	for sc.Next() {
		rows++
	}
	sc.Close()
	sc.Close() // a second Close is not a second scan
	if rows != 2 {
		t.Fatalf("scanned %d rows, want 2", rows)
	}
	if err := st.Apply(ctx, "absent", muts); !errors.Is(err, kv.ErrTableNotFound) {
		t.Fatalf("Apply to an absent table: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Get(cancelled, "t", []byte("a")); err == nil {
		t.Fatal("Get with a cancelled context: no error")
	}

	for op, want := range map[string]int{"apply": 2, "get": 2, "get_rows": 1, "scan": 1} {
		h := st.(*store).m.duration.WithLabelValues(op).(prometheus.Histogram)
		if n := histogramCount(t, h); n != uint64(want) {
			t.Errorf("%s observed %d times, want %d", op, n, want)
		}
	}
	wantErrors := `
# HELP hbtsdb_kv_operation_errors_total Store operations that failed (not those the caller cancelled), by operation.
# TYPE hbtsdb_kv_operation_errors_total counter
hbtsdb_kv_operation_errors_total{backend="embedded",operation="apply"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantErrors), "hbtsdb_kv_operation_errors_total"); err != nil {
		t.Error(err)
	}
	if n := histogramCount(t, st.(*store).m.batch.(prometheus.Histogram)); n != 2 {
		t.Errorf("batch sizes observed %d times, want 2", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	h.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestReadCountersSayWhatEachJobReadAndWhatItCostTheStore: reads are counted by
// operation and by the job of their context's pprof label (other without one):
// the rows and cells returned, and, on the embedded store, the keys Pebble
// iterated over, which include the cells a read skipped.
func TestReadCountersSayWhatEachJobReadAndWhatItCostTheStore(t *testing.T) {
	ctx := context.Background()
	raw, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	m := New("embedded", reg)
	st := m.Wrap(raw)
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	var muts []kv.Mutation
	for _, row := range []string{"a", "b"} {
		for ts := int64(1); ts <= 3; ts++ {
			muts = append(muts, kv.Put([]byte(row), "f", []byte{byte(ts)}, ts, []byte("v")))
		}
	}
	if err := st.Apply(ctx, "t", muts); err != nil {
		t.Fatal(err)
	}
	pprof.Do(ctx, pprof.Labels(kv.JobLabel, kv.JobQuery), func(ctx context.Context) {
		if _, err := st.GetRows(ctx, "t", [][]byte{[]byte("a"), []byte("b"), []byte("c")}); err != nil {
			t.Fatal(err)
		}
		// The time range leaves one cell of each row: Pebble still steps over the others.
		sc := st.Scan(ctx, "t", nil, nil, kv.TimeRange(3, 4))
		for sc.Next() {
		}
		if err := sc.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := st.Get(ctx, "t", []byte("a")); err != nil {
		t.Fatal(err)
	}
	count := func(c *prometheus.CounterVec, op, job string) float64 {
		return testutil.ToFloat64(c.WithLabelValues(op, job))
	}
	for _, tc := range []struct {
		op, job     string
		rows, cells float64
	}{
		{"get_rows", kv.JobQuery, 2, 6},
		{"scan", kv.JobQuery, 2, 2},
		{"get", kv.JobOther, 1, 3},
	} {
		if rows, cells := count(m.readRows, tc.op, tc.job), count(m.readCells, tc.op, tc.job); rows != tc.rows || cells != tc.cells {
			t.Errorf("%s by %s: %g rows and %g cells counted, want %g and %g", tc.op, tc.job, rows, cells, tc.rows, tc.cells)
		}
		// Every cell read is a key Pebble positioned; the scan's skipped ones too.
		wantKeys := tc.cells
		if tc.op == "scan" {
			wantKeys = 6
		}
		if keys := count(m.readKeys, tc.op, tc.job); keys < wantKeys {
			t.Errorf("%s by %s: %g internal keys counted, want at least %g", tc.op, tc.job, keys, wantKeys)
		}
		if seeks := count(m.readSeeks, tc.op, tc.job); seeks < 1 {
			t.Errorf("%s by %s: %g seeks counted, want at least 1", tc.op, tc.job, seeks)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
