package embedded

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/RaduBerinde/btreemap"
)

// Freezing: the live cells of a head row (arena and refs, about 50 bytes a raw
// sample with the append slack) re-encoded as an immutable block (headblock.go,
// a few bytes a sample), once the row holds HeadOptions.FreezeCells of them or
// has not been written for HeadOptions.FreezeAfter. A row is then its frozen
// blocks followed by a live tail that later puts append to, as before.
//
// The head's semantics do not change, only how a row holds its cells:
//   - Every frozen cell sorts before every live one (head.go's invariants), so
//     a row's cells in order are its blocks' in order, then the live ones, and
//     no key is in both. A put at or before the last frozen cell (a late
//     sample, an overwrite), and a delete that may match a frozen cell, first
//     thaw the row: its blocks are decoded back into arena and refs, and the
//     change applies to those as to a row never frozen. The maintenance
//     freezes the row again later; each thaw doubles the live cells the row
//     must hold before it freezes by count (headRow.thaws), so that a row
//     written out of order (late marks, under random nonces) is not decoded
//     and encoded at every few puts, and freezes once idle instead.
//   - Readers decode a row's blocks into their snapshot (rowSnapshot.decode)
//     after releasing the lock; a flush to Pebble decodes them too.
//   - The head log is unchanged: a replay rebuilds live rows, which freeze
//     again.
//   - A row's size counts its blocks' bytes, so head.bytes and the bounds
//     MaxBytes keeps stay exact.
//
// The maintenance pass (maintainHead) freezes: it takes the rows queued by
// puts that brought their live cells to FreezeCells, and every FreezeAfter the
// rows not written since the scan before; it snapshots their live cells under
// the lock held shared, encodes outside it, and swaps each block in under the
// lock held exclusively only if the row's gen is still the one it
// snapshotted (else the row waits for the next pass). The live cells are
// merged into the row's last block while that holds fewer than mergeBelow
// cells, so that a row is a few large blocks rather than many small ones.

// Defaults of the freeze policy (HeadOptions.FreezeCells, FreezeAfter).
// FreezeCells 128 (half an hour of a 15 s series) rather than 32: in
// bench/compare's whole server, 32 cost 21 % more ingest CPU than no freezing
// and made fresh-data queries 40-60 % slower (frozen rows are decoded per
// read) for 24 % less peak memory; 128 cost 6 % and 10-50 % for 21 % less
// (docs/performance.md).
const (
	DefaultHeadFreezeCells = 128
	DefaultHeadFreezeAfter = time.Minute
)

// minBlockCells is the fewest live cells a pass freezes into a block of their
// own: a block of one or two cells takes more than they do live (a block
// costs its first cell written whole and a slice header, some 60 bytes).
// Fewer are frozen only merged into the row's last block.
const minBlockCells = 4

// freezeBatch is how many rows a freeze pass encodes between two takes of the
// head's lock.
const freezeBatch = 256

// freezePolicy is when rows freeze: once cells live cells are held (0: never),
// after a row was not written for after (0: never), or after every Apply
// (eachApply, for tests).
type freezePolicy struct {
	cells     int
	after     time.Duration
	eachApply bool
}

// freezeState is the head's freezing state, under head.mu.
type freezeState struct {
	policy freezePolicy
	// epoch counts the scans for idle rows; a row's touched is the epoch of
	// its last put.
	epoch    uint32
	lastScan time.Time
	// queue is the rows whose live cells reached policy.cells since the last
	// pass (each once: headRow.queued).
	queue []*headRow
}

// changedLocked records a change to row r: a new gen, and the freeze queue if
// its live cells reached the policy's count.
func (h *head) changedLocked(r *headRow) {
	r.gen++
	if n := h.freeze.policy.cells; n > 0 && !r.queued && len(r.refs) >= n<<r.thaws {
		r.queued = true
		h.freeze.queue = append(h.freeze.queue, r)
	}
}

// maxThawShift bounds headRow.thaws: a row thawed that often freezes by
// count at 2^maxThawShift times FreezeCells live cells, or when idle.
const maxThawShift = 6

// frozenMayMatch reports whether a delete of the suffixes that start with
// under (nil: all) may match a frozen cell of the row. Every frozen suffix is
// <= the last, so none starts with an under that sorts after the last
// unless the last itself does. The row must have frozen cells.
func (r *headRow) frozenMayMatch(under []byte) bool {
	last := r.frozen.last
	return under == nil || bytes.Compare(under, last) <= 0 || bytes.HasPrefix(last, under)
}

// thaw decodes the row's blocks back into its arena and refs, followed by its
// live cells: the row is as if never frozen. The caller accounts for the
// change of size. A block that does not decode is one the head encoded itself
// and then corrupted: thaw panics.
func (r *headRow) thaw() {
	s := rowSnapshot{prefix: r.prefix, arena: r.arena, refs: r.refs, blocks: r.blockList()}
	if err := s.decode(); err != nil {
		panic(fmt.Sprintf("embedded: head: thaw: %v", err))
	}
	r.arena, r.refs, r.garbage = s.arena, s.refs, 0
	r.frozen = nil
	r.thaws = min(r.thaws+1, maxThawShift)
}

// frozenTail is the block of a row's live cells, encoded from a snapshot
// taken at the row's gen: a block to add after the row's blocks, or to
// replace its last block with (merged: the last block's cells and the live
// ones).
type frozenTail struct {
	r      *headRow
	gen    uint32
	block  []byte
	merged bool
	last   []byte // the suffix of its last cell
	cells  int    // the live cells it freezes
}

// encodeTail encodes the live cells of a snapshot of row r (refs into arena,
// in order), merged with the row's last block lastBlock if that holds fewer
// than mergeBelow cells: a block of many cells takes less than several of
// few (see minBlockCells), for a re-encoding of the cells merged.
func encodeTail(r *headRow, gen uint32, arena []byte, refs []cellRef, lastBlock []byte) (frozenTail, error) {
	ft := frozenTail{r: r, gen: gen, cells: len(refs)}
	snap := rowSnapshot{prefix: r.prefix, arena: arena, refs: refs}
	if lastBlock != nil {
		if n, _, err := blockHeader(lastBlock); err == nil && n < mergeBelow {
			snap.blocks, ft.merged = [][]byte{lastBlock}, true
			if err := snap.decode(); err != nil {
				return frozenTail{}, fmt.Errorf("embedded: head: freeze: %w", err)
			}
		}
	}
	cells := make([]blockCell, len(snap.refs))
	for i := range snap.refs {
		cells[i] = blockCell{suffix: snap.suffix(i), value: snap.value(i)}
	}
	block, err := encodeBlock(cells)
	if err != nil {
		return frozenTail{}, fmt.Errorf("embedded: head: freeze row %q: %w", r.prefix, err)
	}
	ft.block, ft.last = block, bytes.Clone(cells[len(cells)-1].suffix)
	return ft, nil
}

// mergeBelow is the number of cells under which a row's last block is merged
// with the live cells frozen after it rather than followed by a block of
// their own. Each merge decodes and re-encodes the block: with 32 live cells
// a freeze, a cell is encoded 2.5 times on average (1.5 with 64; with the
// default 128 a row's blocks are never merged). 128 raw
// samples take 1.7-2.3 bytes each in a block, 240 take 1.2-1.8
// (TestHeadBlockIsSmall's shapes).
const mergeBelow = 128

// worthFreezing reports whether a pass would freeze the row's live cells:
// there are some, and enough for a block of their own or a block to merge
// them into.
func (r *headRow) worthFreezing() bool {
	return len(r.refs) >= minBlockCells || len(r.refs) > 0 && r.frozen != nil
}

// lastBlock is the row's last block, nil if none.
func (r *headRow) lastBlock() []byte {
	if r.frozen == nil {
		return nil
	}
	return r.frozen.blocks[len(r.frozen.blocks)-1]
}

// swapLocked puts ft's block into the row in place of its live cells, if the
// row is still in the head and unchanged since the snapshot; h.mu must be
// held exclusively. It reports whether it did.
func (h *head) swapLocked(ft frozenTail) bool {
	r := ft.r
	if r.gen != ft.gen || h.byPrefix[string(r.prefix)] != r {
		return false
	}
	before := r.size()
	if r.frozen == nil {
		r.frozen = &rowBlocks{}
	}
	f := r.frozen
	if ft.merged {
		// Readers hold copies of f.blocks, never f.blocks itself.
		f.bytes -= cap(f.blocks[len(f.blocks)-1])
		f.blocks[len(f.blocks)-1] = ft.block
	} else {
		f.blocks = append(f.blocks, ft.block)
	}
	f.last = ft.last
	f.cells += ft.cells
	f.bytes += cap(ft.block)
	// The live cells are all in the block now; the arena stays with readers
	// that hold it, and the next put starts a new one.
	r.arena, r.refs, r.garbage = nil, nil, 0
	r.gen++
	h.bytes += r.size() - before
	return true
}

// freezeAllLocked freezes the live cells of every row, however few, under
// h.mu held exclusively (HeadOptions.freezeEachApply: tests).
func (h *head) freezeAllLocked() error {
	for _, r := range h.rows.Ascend(btreemap.Min[[]byte](), btreemap.Max[[]byte]()) {
		if len(r.refs) == 0 {
			continue
		}
		ft, err := encodeTail(r, r.gen, r.arena, r.refs, r.lastBlock())
		if err != nil {
			return err
		}
		h.swapLocked(ft)
	}
	return nil
}

// freezePass is the freezing part of a maintenance pass at time now: it freezes
// the rows queued since the last pass and, every policy.after, the rows not
// written since the scan before. It returns how many rows it froze.
func (h *head) freezePass(now time.Time) (int, error) {
	p := h.freeze.policy
	h.mu.Lock()
	rows := h.freeze.queue
	h.freeze.queue = nil
	for _, r := range rows {
		r.queued = false
	}
	scan := p.after > 0 && now.Sub(h.freeze.lastScan) >= p.after
	if scan {
		h.freeze.epoch++
		h.freeze.lastScan = now
	}
	epoch := h.freeze.epoch
	h.mu.Unlock()

	if scan {
		// Rows whose last put was before the previous scan: idle for at least
		// policy.after (and at most twice that).
		h.mu.RLock()
		for _, r := range h.rows.Ascend(btreemap.Min[[]byte](), btreemap.Max[[]byte]()) {
			if r.worthFreezing() && !r.queued && epoch-r.touched >= 2 {
				rows = append(rows, r)
			}
		}
		h.mu.RUnlock()
	}
	frozen := 0
	for len(rows) > 0 {
		n := min(len(rows), freezeBatch)
		k, err := h.freezeRows(rows[:n])
		frozen += k
		if err != nil {
			return frozen, err
		}
		rows = rows[n:]
	}
	return frozen, nil
}

// freezeRows freezes the live cells of rows: snapshots under h.mu held
// shared, encodes without it, swaps in under it held exclusively what did
// not change meanwhile.
func (h *head) freezeRows(rows []*headRow) (int, error) {
	type snap struct {
		r         *headRow
		gen       uint32
		arena     []byte
		refs      []cellRef
		lastBlock []byte
	}
	snaps := make([]snap, 0, len(rows))
	h.mu.RLock()
	for _, r := range rows {
		if !r.worthFreezing() || h.byPrefix[string(r.prefix)] != r {
			continue
		}
		snaps = append(snaps, snap{r: r, gen: r.gen, arena: r.arena[:len(r.arena):len(r.arena)], refs: slices.Clone(r.refs),
			lastBlock: r.lastBlock()})
	}
	h.mu.RUnlock()
	tails := make([]frozenTail, 0, len(snaps))
	for _, s := range snaps {
		ft, err := encodeTail(s.r, s.gen, s.arena, s.refs, s.lastBlock)
		if err != nil {
			return 0, err
		}
		tails = append(tails, ft)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	frozen := 0
	for _, ft := range tails {
		if h.swapLocked(ft) {
			frozen++
			continue
		}
		// Changed meanwhile: the next pass tries again (a put queues it
		// too, but the puts may have stopped).
		if r := ft.r; h.byPrefix[string(r.prefix)] == r && !r.queued {
			r.queued = true
			h.freeze.queue = append(h.freeze.queue, r)
		}
	}
	return frozen, nil
}
