package hbase

import (
	"context"
	"encoding/binary"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"
)

// HBase's KeyValue type byte of a put cell (KeyValue.Type.Put).
const cellTypePut = 4

// putCell is one cell of a rowPut.
type putCell struct {
	family    string
	qualifier []byte
	ts        int64
	value     []byte
}

// rowPut is one HBase Put of a row whose cells carry timestamps of their own.
//
// gohbase's Mutate gives every cell of a mutation the same timestamp, so a row of
// samples (each cell stamped with its sample's time) would take one Mutate, one
// server-side row operation, per cell. HBase's protocol has no such limit: the
// cells of a mutation travel as a cell block of KeyValues, each with its own
// timestamp (MutationProto.associated_cell_count, RPC.proto). rowPut embeds the
// gohbase Mutate for everything else (region lookup, batching, the response) and
// writes the cell block itself.
type rowPut struct {
	*hrpc.Mutate
	cells []putCell
	// The request SerializeCellBlocks returns, allocated with the rowPut.
	request  pb.MutateRequest
	mutation pb.MutationProto
	count    int32
}

func newRowPut(ctx context.Context, table, row []byte, cells []putCell) (*rowPut, error) {
	m, err := hrpc.NewPut(ctx, table, row, nil)
	if err != nil {
		return nil, err
	}
	return &rowPut{Mutate: m, cells: cells}, nil
}

// CellBlocksEnabled: a rowPut is only ever sent as cell blocks (gohbase's multi
// requests use them).
func (p *rowPut) CellBlocksEnabled() bool { return true }

// Shared by every rowPut's request: protobuf only reads them.
var (
	mutationTypePut   = pb.MutationProto_PUT
	durabilityDefault = pb.MutationProto_USE_DEFAULT
)

// SerializeCellBlocks returns the MutateRequest of the row, its cells as one cell
// block. gohbase only calls it for a multi request, which keeps the request's
// Mutation and names the region itself; so the request is the mutation that
// gohbase's own Mutate.SerializeCellBlocks would build (row, type PUT, default
// durability, no timestamp of its own, the cell count), without a region.
func (p *rowPut) SerializeCellBlocks(cbs [][]byte) (proto.Message, [][]byte, uint32) {
	row := p.Key()
	size := 0
	for i := range p.cells {
		c := &p.cells[i]
		size += cellBlockLen(len(row), len(c.family), len(c.qualifier), len(c.value))
	}
	block := make([]byte, 0, size)
	for i := range p.cells {
		block = appendKeyValue(block, row, &p.cells[i])
	}
	p.count = int32(len(p.cells))
	p.mutation = pb.MutationProto{
		Row:                 row,
		MutateType:          &mutationTypePut,
		Durability:          &durabilityDefault,
		AssociatedCellCount: &p.count,
	}
	p.request = pb.MutateRequest{Mutation: &p.mutation}
	return &p.request, append(cbs, block), uint32(len(block))
}

// ToProto is the request without cell blocks, each cell with its own timestamp;
// gohbase uses it only when cell blocks are off.
func (p *rowPut) ToProto() proto.Message {
	req := p.Mutate.ToProto().(*pb.MutateRequest)
	req.Mutation.Timestamp = nil
	req.Mutation.ColumnValue = columnValues(p.cells)
	return req
}

// columnValues are cells as a MutationProto's column values, each cell with its
// own timestamp.
func columnValues(cells []putCell) []*pb.MutationProto_ColumnValue {
	var cvs []*pb.MutationProto_ColumnValue
	byFamily := map[string]*pb.MutationProto_ColumnValue{}
	for _, c := range cells {
		cv := byFamily[c.family]
		if cv == nil {
			cv = &pb.MutationProto_ColumnValue{Family: []byte(c.family)}
			byFamily[c.family] = cv
			cvs = append(cvs, cv)
		}
		ts := uint64(c.ts)
		cv.QualifierValue = append(cv.QualifierValue, &pb.MutationProto_ColumnValue_QualifierValue{
			Qualifier: c.qualifier, Value: c.value, Timestamp: &ts,
		})
	}
	return cvs
}

// cellBlockLen is the size of one KeyValue in a cell block.
func cellBlockLen(rowLen, familyLen, qualifierLen, valueLen int) int {
	keyLen := 2 + rowLen + 1 + familyLen + qualifierLen + 8 + 1
	return 4 + 4 + 4 + keyLen + valueLen
}

// appendKeyValue appends one KeyValue in HBase's cell block encoding (KeyValue with
// a 4-byte length prefix, as KeyValueCodec writes it):
//
//	total length (4) | key length (4) | value length (4) |
//	row length (2) | row | family length (1) | family | qualifier | timestamp (8) | type (1) |
//	value
func appendKeyValue(b, row []byte, c *putCell) []byte {
	keyLen := 2 + len(row) + 1 + len(c.family) + len(c.qualifier) + 8 + 1
	b = binary.BigEndian.AppendUint32(b, uint32(4+4+keyLen+len(c.value)))
	b = binary.BigEndian.AppendUint32(b, uint32(keyLen))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.value)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(row)))
	b = append(b, row...)
	b = append(b, byte(len(c.family)))
	b = append(b, c.family...)
	b = append(b, c.qualifier...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.ts))
	b = append(b, cellTypePut)
	return append(b, c.value...)
}
