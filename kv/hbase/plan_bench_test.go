package hbase

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tsuna/gohbase/region"

	"github.com/hbtsdb/hbtsdb/kv"
)

// BenchmarkPlan measures grouping a remote-write-shaped batch (10 rows of 100
// samples, each at its own timestamp) into gohbase calls, without HBase.
func BenchmarkPlan(b *testing.B) {
	var muts []kv.Mutation
	for i := range 1000 {
		row := fmt.Appendf(nil, "series-%08d", i/100)
		q := binary.BigEndian.AppendUint32(nil, uint32(i%100)*15000)
		v := binary.BigEndian.AppendUint64(nil, math.Float64bits(float64(i)))
		muts = append(muts, kv.Put(row, "r", q, 1_700_000_000_000+int64(i%100)*15000, v))
	}
	table := []byte("tsdb-bench")
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range groupIntoCalls(muts) {
			if _, err := c.mutate(context.Background(), table); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPlanRemoteWrite measures what Apply does to a remote-write request
// before gohbase sends it: 2 000 samples of 2 000 series, one cell in each
// series' row (a Prometheus request carries one sample of most series), grouped
// into calls, sorted and serialized as the Multi RPC of one region (regionPuts).
func BenchmarkPlanRemoteWrite(b *testing.B) {
	var muts []kv.Mutation
	for i := range 2000 {
		row := fmt.Appendf(nil, "\x07host-%03d\x00node_metric_%04d\x00%08d%08d", i%100, i/100, i, 0)
		v := binary.BigEndian.AppendUint64(nil, math.Float64bits(float64(i)))
		muts = append(muts, kv.Put(row, "r", []byte{0, 0, 0x3a, 0x98}, 1_700_000_015_000, v))
	}
	table := []byte("tsdb-bench")
	reg := region.NewInfo(1, nil, table, []byte("tsdb-bench,,1"), nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		calls := groupIntoCalls(muts)
		slices.SortFunc(calls, func(a, b *mutateCall) int { return bytes.Compare(a.row, b.row) })
		rp, err := newRegionPuts(context.Background(), table, calls)
		if err != nil {
			b.Fatal(err)
		}
		rp.SetRegion(reg) // as gohbase does before serializing
		if _, _, n := rp.SerializeCellBlocks(nil); n == 0 || rp.sent != len(calls) {
			b.Fatalf("serialized %d bytes of %d rows, want all %d", n, rp.sent, len(calls))
		}
	}
}
