package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tsuna/gohbase/hrpc"

	"github.com/hbtsdb/hbtsdb/kv"
)

// errNotSent marks the mutations of an Apply that were not sent because an earlier
// part of the batch failed.
var errNotSent = errors.New("not sent: an earlier part of the batch failed")

// mutateCall is one HBase mutation and the indices of the batch's mutations it
// carries: all the puts of one row (a rowPut, whose cells keep their own
// timestamps), or the deletes of one row, kind and timestamp (a gohbase Mutate,
// which has a single timestamp).
type mutateCall struct {
	kind   kv.MutationKind
	row    []byte
	ts     int64                        // deletes only
	values map[string]map[string][]byte // deletes only
	cells  []putCell                    // puts only
	cellAt map[cellKey]int              // puts only, once cells outgrows linearCells: index in cells of each cell
	idx    []int
}

// cellKey identifies a cell version within a row.
type cellKey struct {
	family, qualifier string
	ts                int64
}

type callKey struct {
	row  string
	kind kv.MutationKind
	ts   int64
}

// linearCells is the most cells of a put call that groupIntoCalls searches one by one for
// an earlier version of the same cell; past it, the call gets a map. A
// remote-write request carries one sample of most series, so most rows get one
// cell (and the first write of a row its few tag cells), and a map per row cost
// more than the rest of groupIntoCalls.
const linearCells = 8

// callBlock is the fewest calls groupIntoCalls allocates at once (more as the batch's calls
// grow, never more than its mutations left).
const callBlock = 16

// groupIntoCalls groups a batch into calls, in the order of each call's first mutation: one
// for all the puts of a row, one per (row, kind, timestamp) for deletes. Two puts
// of the same cell version share a call, in which the later value wins, as it does
// on the embedded store.
//
// The calls of one batch may be sent in any order, retried, and (within a region)
// given one sequence id by HBase: without NEW_VERSION_BEHAVIOR a delete up to T
// hides every version <= T of what it covers whatever the order, and leaves newer
// versions alone, so the order of puts and deletes in a batch does not change the
// outcome.
func groupIntoCalls(muts []kv.Mutation) []*mutateCall {
	var (
		calls   []*mutateCall
		putRows = make(map[string]*mutateCall, len(muts))
		last    *mutateCall // the call of the previous put: a row's puts usually come together
		deletes map[callKey]*mutateCall
		// Calls come from blocks of callBlock, each with the first index and
		// the first cell of its calls (a call's slices are capped there, so a
		// second element moves it to a slice of its own): a batch of one-cell
		// rows allocates per block, not per call.
		callArr []mutateCall
		idxArr  []int
		cellArr []putCell
	)
	for i, m := range muts {
		var c *mutateCall
		if m.Kind == kv.KindPut {
			if c = last; c == nil || !bytes.Equal(c.row, m.Row) {
				c = putRows[string(m.Row)] // a row's puts share one call whatever their timestamps
			}
			last = c
		} else {
			c = deletes[callKey{string(m.Row), m.Kind, m.Timestamp}]
		}
		if c == nil {
			if len(callArr) == 0 {
				n := min(len(muts)-i, max(callBlock, len(calls)))
				callArr, idxArr, cellArr = make([]mutateCall, n), make([]int, n), make([]putCell, n)
			}
			c = &callArr[0]
			c.kind, c.row, c.idx, c.cells = m.Kind, m.Row, idxArr[:0:1], cellArr[:0:1]
			callArr, idxArr, cellArr = callArr[1:], idxArr[1:], cellArr[1:]
			if m.Kind == kv.KindPut {
				putRows[string(m.Row)] = c
				last = c
			} else {
				c.ts = m.Timestamp
				if deletes == nil {
					deletes = make(map[callKey]*mutateCall)
				}
				deletes[callKey{string(m.Row), m.Kind, m.Timestamp}] = c
			}
			calls = append(calls, c)
		}
		c.idx = append(c.idx, i)
		switch m.Kind {
		case kv.KindPut:
			c.addCell(putCell{family: m.Family, qualifier: m.Qualifier, ts: m.Timestamp, value: m.Value})
		case kv.KindDeleteColumn:
			if c.values == nil {
				c.values = make(map[string]map[string][]byte)
			}
			q := c.values[m.Family]
			if q == nil {
				q = make(map[string][]byte)
				c.values[m.Family] = q
			}
			q[string(m.Qualifier)] = nil
		case kv.KindDeleteFamily:
			if c.values == nil {
				c.values = make(map[string]map[string][]byte)
			}
			c.values[m.Family] = nil // gohbase: a family without qualifiers is a family delete
		case kv.KindDeleteRow:
			// values stay nil: gohbase deletes the whole row
		}
	}
	return calls
}

// addCell adds cell to a put call, in the place of an earlier version of the same
// cell if there is one.
func (c *mutateCall) addCell(cell putCell) {
	if c.cellAt == nil {
		for j := range c.cells {
			if o := &c.cells[j]; o.ts == cell.ts && o.family == cell.family && bytes.Equal(o.qualifier, cell.qualifier) {
				*o = cell
				return
			}
		}
		c.cells = append(c.cells, cell)
		if len(c.cells) > linearCells {
			c.cellAt = make(map[cellKey]int, 2*len(c.cells))
			for j, o := range c.cells {
				c.cellAt[cellKey{o.family, string(o.qualifier), o.ts}] = j
			}
		}
		return
	}
	ck := cellKey{cell.family, string(cell.qualifier), cell.ts}
	if j, dup := c.cellAt[ck]; dup {
		c.cells[j] = cell
		return
	}
	c.cellAt[ck] = len(c.cells)
	c.cells = append(c.cells, cell)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// mutate builds the HBase call of c.
func (c *mutateCall) mutate(ctx context.Context, table []byte) (hrpc.Call, error) {
	if c.kind == kv.KindPut {
		return newRowPut(ctx, table, c.row, c.cells)
	}
	// A delete with a timestamp removes every version up to it (HBase's
	// DeleteColumns, DeleteFamily and a row Delete with a timestamp).
	return hrpc.NewDel(ctx, table, c.row, c.values, hrpc.TimestampUint64(uint64(c.ts)))
}

// Apply writes the mutations to table. Each row's mutations are applied atomically
// by HBase, the batch as a whole is not (see groupIntoCalls).
// A batch with an invalid mutation is rejected whole, before anything is sent.
func (s *Store) Apply(ctx context.Context, table string, mutations []kv.Mutation) error {
	ctx, done, err := s.beginCall(ctx)
	if err != nil {
		return err
	}
	defer done()
	htable, err := s.tableName(table)
	if err != nil {
		return fmt.Errorf("hbase: apply to %s: %w", table, err)
	}
	var failed []kv.MutationError
	for i, m := range mutations {
		if err := m.Validate(); err != nil {
			failed = append(failed, kv.MutationError{Index: i, Err: err})
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("hbase: apply to %s: %w", htable, &kv.BatchError{Failed: failed, Total: len(mutations)})
	}

	// Puts go as one Multi RPC per region (sendPuts); deletes, and the puts HBase
	// refused there, through gohbase's SendBatch, which retries what it can and
	// says which rows failed why. The order does not matter (see groupIntoCalls).
	var puts, rest []*mutateCall
	for _, c := range groupIntoCalls(mutations) {
		if c.kind == kv.KindPut {
			puts = append(puts, c)
		} else {
			rest = append(rest, c)
		}
	}
	if len(puts) > 0 {
		retry, f := s.sendPuts(ctx, htable, puts, failed)
		if failed = f; len(failed) > 0 {
			for _, c := range rest {
				for _, i := range c.idx {
					failed = append(failed, kv.MutationError{Index: i, Err: errNotSent})
				}
			}
			rest = nil
		}
		rest = append(retry, rest...)
	}

	// The other calls are sent in chunks. After a chunk with a failure the rest is
	// not sent: the caller retries the whole batch anyway, and a failure such as a
	// missing table would otherwise cost every call a meta lookup.
	var chunks [][]*mutateCall
	for start := 0; start < len(rest); start += s.opts.MaxBatchCalls {
		chunks = append(chunks, rest[start:min(start+s.opts.MaxBatchCalls, len(rest))])
	}
	for n, chunk := range chunks {
		if failed = s.sendMutations(ctx, htable, chunk, failed); len(failed) == 0 {
			continue
		}
		for _, rest := range chunks[n+1:] {
			for _, c := range rest {
				for _, i := range c.idx {
					failed = append(failed, kv.MutationError{Index: i, Err: errNotSent})
				}
			}
		}
		break
	}
	if len(failed) == 0 {
		return nil
	}
	slices.SortFunc(failed, func(a, b kv.MutationError) int { return a.Index - b.Index })
	return fmt.Errorf("hbase: apply to %s: %w", htable, &kv.BatchError{Failed: failed, Total: len(mutations)})
}

// sendMutations sends calls in one SendBatch and appends a MutationError for each
// mutation of a failed call to failed.
func (s *Store) sendMutations(ctx context.Context, table []byte, calls []*mutateCall, failed []kv.MutationError) []kv.MutationError {
	batch := make([]hrpc.Call, 0, len(calls))
	sent := make([]*mutateCall, 0, len(calls))
	for _, c := range calls {
		m, err := c.mutate(ctx, table)
		if err != nil {
			for _, i := range c.idx {
				failed = append(failed, kv.MutationError{Index: i, Err: fmt.Errorf("%w: %v", kv.ErrInvalidArgument, err)})
			}
			continue
		}
		batch = append(batch, m)
		sent = append(sent, c)
	}
	if len(batch) == 0 {
		return failed
	}
	res, ok := s.client.SendBatch(ctx, batch)
	if ok {
		for _, c := range sent {
			s.tombs.Add(c.markers())
		}
		return failed
	}
	for j, r := range res {
		if r.Error == nil {
			s.tombs.Add(sent[j].markers())
			continue
		}
		err := classify(ctx, r.Error)
		for _, i := range sent[j].idx {
			failed = append(failed, kv.MutationError{Index: i, Err: err})
		}
	}
	return failed
}

// markers is what HBase writes for call c when it succeeds (kv.MutationKind
// states the same): a delete of N columns, N DeleteColumn markers (point); a
// family delete, one DeleteFamily marker per family (range); a row delete, one
// (range), although the region server writes one DeleteFamily marker for each
// family of the table (HRegion.prepareDelete), which the store does not know.
func (c *mutateCall) markers() kv.Tombstones {
	var n kv.Tombstones
	switch c.kind {
	case kv.KindDeleteColumn:
		for _, qualifiers := range c.values {
			n.Point += int64(len(qualifiers))
		}
	case kv.KindDeleteFamily:
		n.Range = int64(len(c.values))
	case kv.KindDeleteRow:
		n.Range = 1
	}
	return n
}

var _ kv.TombstoneCounter = (*Store)(nil)

// Tombstones counts the delete markers Apply wrote since the store was opened
// (mutateCall.markers): only those of calls HBase reported done, so a call that
// failed, was cut short or was not sent counts nothing. It still answers after
// Close.
func (s *Store) Tombstones() kv.Tombstones {
	return s.tombs.Load()
}

// checkCell validates the address of an Increment or CheckAndPut.
func checkCell(row []byte, family string) error {
	switch {
	case len(row) == 0:
		return fmt.Errorf("%w: empty row key", kv.ErrInvalidArgument)
	case len(row) > kv.MaxRowKeyLen:
		return fmt.Errorf("%w: row key of %d bytes exceeds %d", kv.ErrInvalidArgument, len(row), kv.MaxRowKeyLen)
	case family == "":
		return fmt.Errorf("%w: no family", kv.ErrInvalidArgument)
	}
	return nil
}

// Increment adds delta to the 8-byte big-endian counter at (row, family, qualifier)
// with HBase's Increment, which is atomic within the row and stamps the cell with
// the region server's clock.
func (s *Store) Increment(ctx context.Context, table string, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	ctx, done, err := s.beginCall(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	htable, err := s.tableName(table)
	if err == nil {
		err = checkCell(row, family)
	}
	if err != nil {
		return 0, fmt.Errorf("hbase: increment in %s: %w", table, err)
	}
	inc, err := hrpc.NewIncSingle(ctx, htable, row, family, string(qualifier), delta)
	if err != nil {
		return 0, fmt.Errorf("hbase: increment in %s: %w", table, err)
	}
	v, err := s.client.Increment(inc)
	if err != nil {
		return 0, fmt.Errorf("hbase: increment in %s: %w", htable, classify(ctx, err))
	}
	return v, nil
}

// CheckAndPut is HBase's checkAndPut with an EQUAL comparison on the put's own
// column; HBase reads "expected is empty" as "the column is absent or empty".
func (s *Store) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	ctx, done, err := s.beginCall(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	htable, err := s.tableName(table)
	if err == nil {
		err = put.Validate()
	}
	if err == nil && put.Kind != kv.KindPut {
		err = fmt.Errorf("%w: check-and-put of a %s, want a put", kv.ErrInvalidArgument, put.Kind)
	}
	if err != nil {
		return false, fmt.Errorf("hbase: check and put in %s: %w", table, err)
	}
	values := map[string]map[string][]byte{put.Family: {string(put.Qualifier): nonNil(put.Value)}}
	m, err := hrpc.NewPut(ctx, htable, put.Row, values, hrpc.TimestampUint64(uint64(put.Timestamp)))
	if err != nil {
		return false, fmt.Errorf("hbase: check and put in %s: %w", table, err)
	}
	ok, err := s.client.CheckAndPut(m, put.Family, string(put.Qualifier), expected)
	if err != nil {
		return false, fmt.Errorf("hbase: check and put in %s: %w", htable, classify(ctx, err))
	}
	return ok, nil
}
