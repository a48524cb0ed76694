package hbase

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

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
		for _, c := range plan(muts) {
			if _, err := c.mutate(context.Background(), table); err != nil {
				b.Fatal(err)
			}
		}
	}
}
