package kvmetrics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
)

// The head gauges report what the open store's head holds, and drop to 0
// when it is closed.
func TestHeadGauges(t *testing.T) {
	ctx := context.Background()
	raw, err := embedded.Open(ctx, t.TempDir(), embedded.Options{
		Head: embedded.HeadOptions{Holds: func(table, family string) bool { return family == "held" }}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	m := New("embedded", reg)
	st := m.Wrap(raw)
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "held"}, {Name: "files"}}}); err != nil {
		t.Fatal(err)
	}
	var muts []kv.Mutation
	for i := range 10 {
		muts = append(muts, kv.Put([]byte(fmt.Sprint("row", i%3)), "held", []byte{byte(i)}, 1, []byte("v")))
	}
	muts = append(muts, kv.Put([]byte("row0"), "files", []byte("q"), 1, []byte("v")))
	if err := st.Apply(ctx, "t", muts); err != nil {
		t.Fatal(err)
	}
	hs, ok := m.HeadStats()
	if !ok || hs.Rows != 3 || hs.Cells != 10 || hs.Bytes <= 0 || hs.LogBytes <= 0 {
		t.Fatalf("HeadStats = %+v, %v; want 3 rows, 10 cells, some bytes and log", hs, ok)
	}
	want := fmt.Sprintf(`
# HELP hbtsdb_kv_head_cells Cells (raw samples, pending marks) the store's head holds in memory.
# TYPE hbtsdb_kv_head_cells gauge
hbtsdb_kv_head_cells{backend="embedded"} 10
# HELP hbtsdb_kv_head_flushed_cells_total Cells the head wrote into the store's files because it was over its memory or log bound (0 while compaction keeps up).
# TYPE hbtsdb_kv_head_flushed_cells_total counter
hbtsdb_kv_head_flushed_cells_total{backend="embedded"} 0
# HELP hbtsdb_kv_head_rows Rows whose fresh cells the store keeps in memory behind its head log (embedded store; 0 without a head).
# TYPE hbtsdb_kv_head_rows gauge
hbtsdb_kv_head_rows{backend="embedded"} 3
# HELP hbtsdb_kv_head_bytes Memory the store's head takes; bounded by --storage.head.max-bytes.
# TYPE hbtsdb_kv_head_bytes gauge
hbtsdb_kv_head_bytes{backend="embedded"} %d
`, hs.Bytes)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hbtsdb_kv_head_cells", "hbtsdb_kv_head_rows",
		"hbtsdb_kv_head_bytes", "hbtsdb_kv_head_flushed_cells_total"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if hs, ok := m.HeadStats(); ok || hs != (kv.HeadStats{}) {
		t.Fatalf("HeadStats after Close = %+v, %v; want none", hs, ok)
	}
}
