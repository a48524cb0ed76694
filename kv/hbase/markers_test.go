package hbase

import (
	"fmt"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
)

// The markers a batch's calls write, as Tombstones counts them once HBase
// reports the calls done (the conformance suite checks the counts against a
// real HBase).
func TestMarkersOfABatch(t *testing.T) {
	r1, r2 := []byte("r1"), []byte("r2")
	var hundredRows []kv.Mutation
	for i := range 100 {
		hundredRows = append(hundredRows, kv.DeleteFamily([]byte(fmt.Sprintf("row-%03d", i)), "r", 10))
	}
	for _, tc := range []struct {
		name string
		muts []kv.Mutation
		want kv.Tombstones
	}{
		{"puts leave no marker", []kv.Mutation{kv.Put(r1, "f", []byte("a"), 1, nil), kv.Put(r2, "f", []byte("a"), 1, nil)}, kv.Tombstones{}},
		{"a delete of three columns of a row is three point markers", []kv.Mutation{
			kv.DeleteColumn(r1, "f", []byte("a"), 10), kv.DeleteColumn(r1, "f", []byte("b"), 10), kv.DeleteColumn(r1, "g", []byte("a"), 10),
		}, kv.Tombstones{Point: 3}},
		{"a column deleted twice in one call is one point marker", []kv.Mutation{
			kv.DeleteColumn(r1, "f", []byte("a"), 10), kv.DeleteColumn(r1, "f", []byte("a"), 10),
		}, kv.Tombstones{Point: 1}},
		{"a delete of two families of a row is two range markers", []kv.Mutation{
			kv.DeleteFamily(r1, "f", 10), kv.DeleteFamily(r1, "g", 10),
		}, kv.Tombstones{Range: 2}},
		{"a row delete is one range marker", []kv.Mutation{kv.DeleteRow(r1, 10)}, kv.Tombstones{Range: 1}},
		{"a family delete and a column delete at another timestamp are one marker of each kind", []kv.Mutation{
			kv.DeleteFamily(r1, "r", 8), kv.DeleteColumn(r1, "r", []byte("late"), 9),
		}, kv.Tombstones{Point: 1, Range: 1}},
		{"family deletes of 100 rows are 100 range markers", hundredRows, kv.Tombstones{Range: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got kv.Tombstones
			for _, c := range groupIntoCalls(tc.muts) {
				m := c.markers()
				got.Point += m.Point
				got.Range += m.Range
			}
			if got != tc.want {
				t.Errorf("markers = %+v, want %+v", got, tc.want)
			}
		})
	}
}
