package hbase

import (
	"bytes"
	"context"
	"testing"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"github.com/tsuna/gohbase/region"
)

// inRegion places a call in a made-up region, as gohbase does before serializing.
func inRegion(c hrpc.Call) {
	c.SetRegion(region.NewInfo(1, nil, []byte("t"), []byte("t,,1"), nil, nil))
}

// TestRowPutCellBlockMatchesGohbase checks rowPut's cell block byte for byte against
// the one gohbase writes for the same cell: HBase's server trusts these lengths
// (it copies with Unsafe), so a wrong byte is not an error but a crash.
func TestRowPutCellBlockMatchesGohbase(t *testing.T) {
	ctx := context.Background()
	table, row := []byte("t"), []byte("row\x00\xff")
	for _, c := range []putCell{
		{family: "r", qualifier: []byte{0, 0, 0x3a, 0x98}, ts: 1_700_000_015_000, value: []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2}},
		{family: "t", qualifier: []byte("job"), ts: 0, value: nil},
		{family: "family", qualifier: nil, ts: 1<<62 + 5, value: bytes.Repeat([]byte("v"), 70000)},
	} {
		value := c.value
		if value == nil {
			value = []byte{}
		}
		m, err := hrpc.NewPut(ctx, table, row, map[string]map[string][]byte{c.family: {string(c.qualifier): value}},
			hrpc.TimestampUint64(uint64(c.ts)))
		if err != nil {
			t.Fatal(err)
		}
		inRegion(m)
		_, want, wantSize := m.SerializeCellBlocks(nil)
		p, err := newRowPut(ctx, table, row, []putCell{c})
		if err != nil {
			t.Fatal(err)
		}
		inRegion(p)
		msg, got, gotSize := p.SerializeCellBlocks(nil)
		if len(want) != 1 || len(got) != 1 || !bytes.Equal(got[0], want[0]) || gotSize != wantSize {
			t.Fatalf("cell %s:%q@%d: rowPut wrote %d block(s) of %d bytes, gohbase %d of %d; bytes equal: %v",
				c.family, c.qualifier, c.ts, len(got), gotSize, len(want), wantSize, len(got) == 1 && len(want) == 1 && bytes.Equal(got[0], want[0]))
		}
		mut := msg.(*pb.MutateRequest).GetMutation()
		if mut.GetAssociatedCellCount() != 1 || mut.Timestamp != nil || !bytes.Equal(mut.GetRow(), row) ||
			mut.GetMutateType() != pb.MutationProto_PUT {
			t.Fatalf("mutation proto = %v", mut)
		}
	}
}

// TestRowPutCellsKeepTheirTimestamps checks a multi-cell block: each KeyValue is the
// one gohbase writes for that cell alone, in order.
func TestRowPutCellsKeepTheirTimestamps(t *testing.T) {
	ctx := context.Background()
	table, row := []byte("t"), []byte("series")
	cells := []putCell{
		{family: "r", qualifier: []byte{0, 0, 0, 1}, ts: 1001, value: []byte("a")},
		{family: "r", qualifier: []byte{0, 0, 0, 2}, ts: 1002, value: []byte("bb")},
		{family: "t", qualifier: []byte("job"), ts: 1000, value: []byte("api")},
	}
	var want []byte
	for _, c := range cells {
		m, err := hrpc.NewPut(ctx, table, row, map[string]map[string][]byte{c.family: {string(c.qualifier): c.value}},
			hrpc.TimestampUint64(uint64(c.ts)))
		if err != nil {
			t.Fatal(err)
		}
		inRegion(m)
		_, block, _ := m.SerializeCellBlocks(nil)
		want = append(want, block[0]...)
	}
	p, err := newRowPut(ctx, table, row, cells)
	if err != nil {
		t.Fatal(err)
	}
	inRegion(p)
	msg, got, size := p.SerializeCellBlocks(nil)
	if len(got) != 1 || !bytes.Equal(got[0], want) || int(size) != len(want) {
		t.Fatalf("block of 3 cells differs from gohbase's three single-cell blocks (%d vs %d bytes)", size, len(want))
	}
	if n := msg.(*pb.MutateRequest).GetMutation().GetAssociatedCellCount(); n != 3 {
		t.Fatalf("associated cell count %d, want 3", n)
	}
}
