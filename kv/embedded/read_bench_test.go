package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// BenchmarkGetRowsHeld reads fresh data rows as a query does: GetRows of 14
// rows (7 series × 2 buckets) of families c and r in a time range, each row
// 120 raw cells held by the head (4-byte qualifiers, 8-byte values, as
// schema/raw.go writes them) and 4 tag cells of family t in Pebble.
//
//	go test -run '^$' -bench BenchmarkGetRowsHeld -benchmem ./kv/embedded/
func BenchmarkGetRowsHeld(b *testing.B) {
	const (
		rows     = 1000
		perRow   = 120
		tags     = 4
		perBatch = 14
	)
	ctx := context.Background()
	st := openStore(b, b.TempDir(), Options{Head: HeadOptions{Holds: holdRaw}})
	spec := kv.TableSpec{Name: "data", Families: []kv.FamilySpec{{Name: "c"}, {Name: "r"}, {Name: "t"}}}
	if _, err := st.EnsureTable(ctx, spec); err != nil {
		b.Fatal(err)
	}
	rowKey := func(i int) []byte { return []byte(fmt.Sprintf("\x00host-%03d\x00c\x00series-%04d\x00bucket", i/10, i)) }
	for i := range rows {
		var muts []kv.Mutation
		for k := range perRow {
			q := binary.BigEndian.AppendUint32(nil, uint32(k*15000))
			v := binary.BigEndian.AppendUint64(nil, uint64(k))
			muts = append(muts, kv.Put(rowKey(i), "r", q, int64(k*15000), v))
		}
		for k := range tags {
			muts = append(muts, kv.Put(rowKey(i), "t", []byte(fmt.Sprintf("tag-%d", k)), 1, []byte("value")))
		}
		if err := st.Apply(ctx, "data", muts); err != nil {
			b.Fatal(err)
		}
	}
	keys := make([][]byte, perBatch)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU(b)
	for n := range b.N {
		for j := range keys {
			keys[j] = rowKey((n*perBatch + j*37) % rows)
		}
		got, err := st.GetRows(ctx, "data", keys, kv.Families("c", "r"), kv.TimeRange(0, perRow*15000))
		if err != nil {
			b.Fatal(err)
		}
		if len(got[0].Cells) != perRow {
			b.Fatalf("%d cells, want %d", len(got[0].Cells), perRow)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N*perBatch*perRow), "cpu-ns/cell")
}

// processCPU is the process' CPU time (user + system, every thread), which a
// busy machine disturbs less than the wall time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
