package hbase

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"

	"github.com/hbtsdb/hbtsdb/kv"
)

// regionPuts is one HBase Multi RPC carrying the puts of many rows of one region:
// one RegionAction whose Actions are the rows' Puts, their cells in one cell block
// (RPC.proto, Client.proto MultiRequest).
//
// gohbase's SendBatch makes every row a call of its own and joins them into a
// multi request per region server; for a remote-write request, whose 2 000 samples
// are 2 000 rows, the per-call work (region lookup, result channel, request and
// response bookkeeping) was, with groupIntoCalls' map per row, about half of tsdb's CPU
// (docs/benchmarks.md). A regionPuts is one gohbase call for a region's rows:
// gohbase locates the region of its first row (Key) and sends it unbatched;
// SerializeCellBlocks then writes the rows that region holds (the longest prefix
// of rows below its stop key) and leaves the rest for another regionPuts. The rows are sorted, so the request is
// right whatever the caller guessed about the regions; the guess (Store's
// regionBounds) only decides how many requests are needed.
type regionPuts struct {
	*hrpc.Mutate // the base of a call: table, key, context, region, result channel
	calls        []*mutateCall
	// sent is how many of calls (a prefix) the last serialization wrote: the rows
	// of the region gohbase sent it to.
	sent int
}

func newRegionPuts(ctx context.Context, table []byte, calls []*mutateCall) (*regionPuts, error) {
	m, err := hrpc.NewPut(ctx, table, calls[0].row, nil)
	if err != nil {
		return nil, err
	}
	return &regionPuts{Mutate: m, calls: calls}, nil
}

// Name is the RPC's method: Multi.
func (r *regionPuts) Name() string { return "Multi" }

// Description names the call in gohbase's metrics and traces.
func (r *regionPuts) Description() string { return "MultiPut" }

// SkipBatch: a regionPuts is a multi request of its own.
func (r *regionPuts) SkipBatch() bool { return true }

// NewResponse is the response of a Multi RPC.
func (r *regionPuts) NewResponse() proto.Message { return &pb.MultiResponse{} }

// CellBlocksEnabled: the cells travel as a cell block.
func (r *regionPuts) CellBlocksEnabled() bool { return true }

// DeserializeCellBlocks: puts return no cells.
func (r *regionPuts) DeserializeCellBlocks(_ proto.Message, b []byte) (uint32, error) {
	return uint32(len(b)), nil
}

// inRegion returns how many of r.calls (a prefix: they are sorted) the region
// gohbase located for the first of them holds; at least one, the first, which
// HBase itself checks.
func (r *regionPuts) inRegion() int {
	stop := r.Region().StopKey()
	if len(stop) == 0 {
		return len(r.calls)
	}
	n, _ := slices.BinarySearchFunc(r.calls, stop, func(c *mutateCall, stop []byte) int { return bytes.Compare(c.row, stop) })
	return max(n, 1)
}

// request returns the MultiRequest of the first n calls; with cellBlocks, their
// cells as one cell block, otherwise in the protobuf.
func (r *regionPuts) request(n int, cellBlocks bool) (*pb.MultiRequest, []byte) {
	actions := make([]pb.Action, n)
	mutations := make([]pb.MutationProto, n)
	indices := make([]uint32, n)
	counts := make([]int32, n)
	ra := &pb.RegionAction{
		Region: &pb.RegionSpecifier{Type: hrpc.RegionSpecifierRegionName, Value: r.Region().Name()},
		Action: make([]*pb.Action, n),
	}
	var block []byte
	if cellBlocks {
		size := 0
		for _, c := range r.calls[:n] {
			for i := range c.cells {
				cell := &c.cells[i]
				size += cellBlockLen(len(c.row), len(cell.family), len(cell.qualifier), len(cell.value))
			}
		}
		block = make([]byte, 0, size)
	}
	for i, c := range r.calls[:n] {
		m := &mutations[i]
		m.Row, m.MutateType, m.Durability = c.row, &mutationTypePut, &durabilityDefault
		if cellBlocks {
			for j := range c.cells {
				block = appendKeyValue(block, c.row, &c.cells[j])
			}
			counts[i] = int32(len(c.cells))
			m.AssociatedCellCount = &counts[i]
		} else {
			m.ColumnValue = columnValues(c.cells)
		}
		indices[i] = uint32(i) + 1 // 0 means "no index" in a response
		actions[i] = pb.Action{Index: &indices[i], Mutation: m}
		ra.Action[i] = &actions[i]
	}
	return &pb.MultiRequest{RegionAction: []*pb.RegionAction{ra}}, block
}

// SerializeCellBlocks writes the rows of the region gohbase sends r to.
func (r *regionPuts) SerializeCellBlocks(cbs [][]byte) (proto.Message, [][]byte, uint32) {
	r.sent = r.inRegion()
	req, block := r.request(r.sent, true)
	return req, append(cbs, block), uint32(len(block))
}

// ToProto is the request without cell blocks; gohbase uses it only when they are
// off.
func (r *regionPuts) ToProto() proto.Message {
	r.sent = r.inRegion()
	req, _ := r.request(r.sent, false)
	return req
}

// results sorts the sent calls by the response: done, or to retry through gohbase's
// SendBatch (retry) when HBase answered the region or the row with an exception,
// or did not answer for it.
func (r *regionPuts) results(msg proto.Message) (retry []*mutateCall) {
	sent := r.calls[:r.sent]
	resp, _ := msg.(*pb.MultiResponse)
	if resp == nil || len(resp.GetRegionActionResult()) != 1 || resp.GetRegionActionResult()[0].GetException() != nil {
		return sent
	}
	ok := make([]bool, len(sent))
	for _, roe := range resp.GetRegionActionResult()[0].GetResultOrException() {
		if i := int(roe.GetIndex()) - 1; i >= 0 && i < len(sent) && roe.GetException() == nil {
			ok[i] = true
		}
	}
	for i, c := range sent {
		if !ok[i] {
			retry = append(retry, c)
		}
	}
	return retry
}

// regionBounds are the region boundaries (start and stop keys) of each table seen
// in answers: the guess of which rows share a region. A stale guess (a region
// split, merged or moved since) costs another request, never a wrong one.
type regionBounds struct {
	mu     sync.Mutex
	tables map[string][][]byte // table -> sorted keys
}

// maxBounds bounds the keys kept per table; past it the table's are forgotten and
// learnt again.
const maxBounds = 1 << 14

func (b *regionBounds) learn(table []byte, keys ...[]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tables == nil {
		b.tables = map[string][][]byte{}
	}
	ks := b.tables[string(table)]
	for _, k := range keys {
		if len(k) == 0 {
			continue
		}
		i, found := slices.BinarySearchFunc(ks, k, bytes.Compare)
		if found {
			continue
		}
		if len(ks) >= maxBounds {
			ks = nil
			i = 0
		}
		ks = slices.Insert(ks, i, bytes.Clone(k))
	}
	b.tables[string(table)] = ks
}

// known reports whether a boundary of table has been learnt: a table of one
// region has none, but its first answer records its empty start and stop keys as
// known.
func (b *regionBounds) known(table []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.tables[string(table)]
	return ok
}

// group splits calls, sorted by row, where a known boundary of table falls
// between two rows, and into groups of at most max calls.
func (b *regionBounds) group(table []byte, calls []*mutateCall, max int) [][]*mutateCall {
	b.mu.Lock()
	ks := b.tables[string(table)]
	b.mu.Unlock()
	var groups [][]*mutateCall
	start, next := 0, 0 // next: the first boundary above calls[start]
	for i, c := range calls {
		if i > start && (i-start >= max || next < len(ks) && bytes.Compare(c.row, ks[next]) >= 0) {
			groups = append(groups, calls[start:i])
			start = i
		}
		if i == start {
			next, _ = slices.BinarySearchFunc(ks, c.row, bytes.Compare)
			for next < len(ks) && bytes.Compare(ks[next], c.row) <= 0 {
				next++
			}
		}
	}
	if start < len(calls) {
		groups = append(groups, calls[start:])
	}
	return groups
}

// sendPuts writes put calls as one Multi RPC per region (regionPuts), up to
// Options.ParallelRegionCalls at a time, in rounds until every row was sent: a
// round sends each group of rows guessed to share a region, and what a group held
// beyond its region goes in the next. Calls HBase refused (a region or row
// exception) or did not answer are returned in retry, for SendBatch; calls of a
// request that failed (gohbase could not locate the region or reach its server
// before ctx ended, the table is missing) are appended to failed. After a round
// with a failure, the rows left are not sent.
func (s *Store) sendPuts(ctx context.Context, table []byte, calls []*mutateCall, failed []kv.MutationError) (retry []*mutateCall, _ []kv.MutationError) {
	slices.SortFunc(calls, func(a, b *mutateCall) int { return bytes.Compare(a.row, b.row) })
	pending := calls
	for len(pending) > 0 {
		groups := s.bounds.group(table, pending, s.opts.MaxBatchCalls)
		var later []*mutateCall
		if !s.bounds.known(table) {
			// Nothing known of the table's regions (its first Apply, or it is
			// missing): one request finds out before more are sent.
			groups, later = groups[:1], pending[len(groups[0]):]
		}
		type outcome struct {
			rp  *regionPuts
			msg proto.Message
			err error
		}
		out := make([]outcome, len(groups))
		sem := make(chan struct{}, s.opts.ParallelRegionCalls)
		var wg sync.WaitGroup
		for i, g := range groups {
			rp, err := newRegionPuts(ctx, table, g)
			if err != nil {
				out[i].err = fmt.Errorf("%w: %v", kv.ErrInvalidArgument, err)
				continue
			}
			out[i].rp = rp
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				out[i].msg, out[i].err = s.rpc.SendRPC(rp)
			})
		}
		wg.Wait()
		var next []*mutateCall
		roundFailed := false
		for i, o := range out {
			if o.err != nil {
				roundFailed = true
				err := o.err
				if o.rp != nil {
					err = classify(ctx, err)
				}
				for _, c := range groups[i] {
					for _, j := range c.idx {
						failed = append(failed, kv.MutationError{Index: j, Err: err})
					}
				}
				continue
			}
			reg := o.rp.Region()
			s.bounds.learn(table, reg.StartKey(), reg.StopKey())
			retry = append(retry, o.rp.results(o.msg)...)
			next = append(next, groups[i][o.rp.sent:]...)
		}
		pending = append(next, later...)
		if roundFailed {
			for _, c := range pending {
				for _, j := range c.idx {
					failed = append(failed, kv.MutationError{Index: j, Err: errNotSent})
				}
			}
			return nil, failed
		}
	}
	return retry, failed
}
