package embedded

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/RaduBerinde/btreemap"
)

// The head: cells of the families HeadOptions.Holds names, kept in memory
// instead of Pebble, made durable by the head log (headlog.go) before Apply
// returns.
//
// Why: remote write puts one cell per sample into the data table's raw family,
// and compaction deletes them all again an hour or two later, once their bucket
// is sealed and rewritten as one chunk cell. Through Pebble each such cell was a
// memtable insert, a WAL record, a key in a flushed file, a share of every L0
// compaction, and finally part of a range deletion that reads and compactions
// fragment. In the head it is an append to its row's arena and a few bytes of
// the head log; compaction's family delete drops it from memory, and Pebble
// never sees it. Only what stays longer than the head may hold (HeadOptions.
// MaxBytes, MaxLogBytes) is written to Pebble, as the same cell keys. Once a
// row has enough cells, or is not written for a while, its cells are frozen
// into a compressed block of a few bytes a sample (headfreeze.go), and later
// puts start a new live tail after them.
//
// The head lives below the kv.Store interface, as cell keys in Pebble's own
// encoding (keys.go), so every read path (rowReader over a merged iterator,
// headiter.go) and every semantic (versions, TTL, time ranges, filters,
// deletes) is the one the rest of the store has, and the kv conformance suite
// runs with a head holding every family.
//
// Invariants:
//   - A cell key is in the head, in Pebble, or (after a flush that a crash
//     interrupted before the log was truncated, then a replay) in both with the
//     same value; a read merges the two and takes the head's copy of a key held
//     in both (headiter.go).
//   - Every change to the head is in the head log, in the order it was applied
//     to memory (head.mu orders both), so a replay rebuilds the same head.
//   - A row's arena is append-only: bytes below its length are never written
//     again, so a reader may keep arena[:len] without a lock while the row
//     grows. Deletes and overwrites rebuild the refs, and the arena when half
//     of it is garbage.
//   - A row's frozen blocks (headfreeze.go) are never written again either,
//     and every cell they hold sorts before every cell of its arena: a put at
//     or before the last frozen cell, and any delete, thaws the row first.
//   - bytes is the sum of size() over the rows, cells the sum of cellCount():
//     every change to a row adds the difference its size made.

// head is the in-memory part of the head. Its methods that end in Locked need
// h.mu held (exclusively when they change it).
type head struct {
	mu sync.RWMutex
	// rows by row prefix (tablePrefix | esc(row)); row prefixes are prefix-free,
	// so this order is the order of every cell key of the rows.
	rows *btreemap.BTreeMap[[]byte, *headRow]
	// byPrefix finds a row by its prefix without the btree's comparisons of
	// long keys that share most of their bytes (a write looks up one row per
	// sample); the same rows as rows.
	byPrefix map[string]*headRow
	// bytes is the memory the rows take, as headRow.size counts it; cells the
	// number of cells held.
	bytes, cells int64

	// freeze is what headfreeze.go needs: the policy, and the rows to look at.
	freeze freezeState
}

// headRow is the cells of one row held in the head.
type headRow struct {
	prefix []byte
	// arena holds suffix | value of every cell ever put since the last rebuild;
	// refs index the live ones, sorted by suffix (esc(family) | esc(qualifier) |
	// ^ts, the cell key after the row prefix).
	arena   []byte
	refs    []cellRef
	garbage uint32 // arena bytes no ref points to
	// seg is the oldest head log segment that holds a record of a live cell of
	// the row: the log can be truncated up to the smallest seg of all rows.
	seg uint64
	// frozen is the row's frozen cells (headfreeze.go), nil while it has none:
	// a pointer, so that a row never frozen does not pay for the fields.
	frozen *rowBlocks
	// gen changes with every change to the row, so that a freeze encoded
	// outside the lock is swapped in only if the row is as it was.
	gen uint32
	// touched is the head's freeze epoch at the row's last put; queued is set
	// while the row waits in the freeze queue.
	touched uint32
	queued  bool
	// thaws counts the row's thaws (at most maxThawShift): each doubles the
	// live cells it must hold before it freezes by count again, so that a
	// row written out of order (late marks, under random nonces) is not
	// decoded and encoded again at every put.
	thaws uint8
}

// rowBlocks is the frozen cells of a row: blocks (headblock.go), each
// block's cells after the one's before it and all before every live cell of
// the row; last is the suffix of the last of them, cells how many they hold
// and bytes the sum of the blocks' capacities.
type rowBlocks struct {
	blocks [][]byte
	last   []byte
	cells  int
	bytes  int
}

// size is what the frozen cells count towards their row's size.
func (f *rowBlocks) size() int64 {
	if f == nil {
		return 0
	}
	return rowBlocksOverhead + int64(f.bytes) + int64(cap(f.blocks))*blockRefSize + int64(cap(f.last))
}

// frozenCount is the number of the row's frozen cells.
func (r *headRow) frozenCount() int {
	if r.frozen == nil {
		return 0
	}
	return r.frozen.cells
}

// blockList is the row's blocks, nil if none.
func (r *headRow) blockList() [][]byte {
	if r.frozen == nil {
		return nil
	}
	return r.frozen.blocks
}

// cellRef locates one cell in its row's arena: suffix arena[off:off+klen],
// value right after it.
type cellRef struct {
	off, klen, vlen uint32
}

// rowOverhead approximates what a row costs besides its arena, refs, prefix
// and blocks: the headRow itself and its places in the btree and the map.
const rowOverhead = int64(unsafe.Sizeof(headRow{})) + 72

// blockRefSize is what a frozen block costs besides its bytes: its slice
// header in the row's blocks.
const blockRefSize = int64(unsafe.Sizeof([]byte(nil)))

// rowBlocksOverhead is what a row's frozen cells cost besides their blocks:
// the rowBlocks and its allocation's rounding.
const rowBlocksOverhead = int64(unsafe.Sizeof(rowBlocks{})) + 16

// cellRefSize is the size of a cellRef.
const cellRefSize = 12

// newHead returns an empty head that freezes rows as policy says.
func newHead(policy freezePolicy) *head {
	return &head{rows: btreemap.New[[]byte, *headRow](32, bytes.Compare), byPrefix: make(map[string]*headRow),
		freeze: freezeState{policy: policy}}
}

func (r *headRow) suffix(c cellRef) []byte { return r.arena[c.off : c.off+c.klen] }
func (r *headRow) value(c cellRef) []byte {
	return r.arena[c.off+c.klen : c.off+c.klen+c.vlen]
}

// size is what the row counts towards head.bytes.
func (r *headRow) size() int64 {
	return int64(cap(r.arena)) + int64(cap(r.refs))*cellRefSize + int64(len(r.prefix)) + rowOverhead + r.frozen.size()
}

// cellCount is the number of cells the row holds, frozen or not.
func (r *headRow) cellCount() int { return r.frozenCount() + len(r.refs) }

// putLocked puts the cell suffix=value into the row with prefix prefix,
// logged in segment seg; an existing cell of the same key is replaced (the
// last write wins, as in Pebble).
func (h *head) putLocked(prefix, suffix, value []byte, seg uint64) {
	r, ok := h.byPrefix[string(prefix)]
	if !ok {
		r = &headRow{prefix: bytes.Clone(prefix), seg: seg}
		h.rows.ReplaceOrInsert(r.prefix, r)
		h.byPrefix[string(r.prefix)] = r
		h.bytes += r.size()
	}
	before := r.size()
	if r.cellCount() == 0 {
		r.seg = seg
	}
	if r.frozen != nil && bytes.Compare(suffix, r.frozen.last) <= 0 {
		// Not after every frozen cell: the row is live again.
		r.thaw()
	}
	off := uint32(len(r.arena))
	r.arena = append(r.arena, suffix...)
	r.arena = append(r.arena, value...)
	ref := cellRef{off: off, klen: uint32(len(suffix)), vlen: uint32(len(value))}
	if n := len(r.refs); n == 0 || bytes.Compare(suffix, r.suffix(r.refs[n-1])) > 0 {
		r.refs = append(r.refs, ref) // in order: the common case
	} else {
		i, found := slices.BinarySearchFunc(r.refs, suffix, func(e cellRef, k []byte) int {
			return bytes.Compare(r.suffix(e), k)
		})
		if found {
			r.garbage += r.refs[i].klen + r.refs[i].vlen
			r.refs[i] = ref
			h.cells--
		} else {
			r.refs = slices.Insert(r.refs, i, ref)
		}
	}
	h.cells++
	r.compactIfMostlyGarbage()
	h.bytes += r.size() - before
	r.touched = h.freeze.epoch
	h.changedLocked(r)
}

// deleteLocked removes from the row with prefix prefix the cells whose suffix
// starts with under (nil: all) and whose timestamp is <= upTo, and returns how
// many it removed. A row left empty leaves the head.
func (h *head) deleteLocked(prefix, under []byte, upTo int64) int {
	r, ok := h.byPrefix[string(prefix)]
	if !ok {
		return 0
	}
	before := r.size()
	if r.frozen != nil && r.frozenMayMatch(under) {
		r.thaw()
	}
	return h.deleteLiveLocked(r, under, upTo, before)
}

// deleteLiveLocked is deleteLocked on the live cells of row r, whose size was
// before at the start of deleteLocked.
func (h *head) deleteLiveLocked(r *headRow, under []byte, upTo int64, before int64) int {
	kept := r.refs[:0:0]
	removed := 0
	for _, c := range r.refs {
		s := r.suffix(c)
		if bytes.HasPrefix(s, under) && suffixTimestamp(s) <= upTo {
			r.garbage += c.klen + c.vlen
			removed++
			continue
		}
		kept = append(kept, c)
	}
	if removed == 0 {
		// Nothing deleted, but a thaw may have changed the row's size.
		h.bytes += r.size() - before
		h.changedLocked(r)
		return 0
	}
	h.cells -= int64(removed)
	if len(kept) == 0 && r.frozen == nil {
		h.removeLocked(r)
		h.bytes -= before
		return removed
	}
	// A fresh slice: readers hold copies of refs, never r.refs itself, but the
	// old array may be much larger than what is kept.
	r.refs = kept
	r.compactIfMostlyGarbage()
	h.bytes += r.size() - before
	h.changedLocked(r)
	return removed
}

// dropRowsLocked removes every row whose prefix starts with p (a table's
// prefix: DropTable).
func (h *head) dropRowsLocked(p []byte) {
	var doomed []*headRow
	for k, r := range h.rows.Ascend(btreemap.GE(p), btreemap.Max[[]byte]()) {
		if !bytes.HasPrefix(k, p) {
			break
		}
		doomed = append(doomed, r)
	}
	for _, r := range doomed {
		h.removeLocked(r)
		h.bytes -= r.size()
		h.cells -= int64(r.cellCount())
	}
}

// removeLocked takes row r out of the head (its bytes and cells are the
// caller's to account for).
func (h *head) removeLocked(r *headRow) {
	h.rows.Delete(r.prefix)
	delete(h.byPrefix, string(r.prefix))
}

// compactIfMostlyGarbage rebuilds the arena when at least half of it is bytes
// of removed or replaced cells. The old arena is left to readers that hold it.
func (r *headRow) compactIfMostlyGarbage() {
	if r.garbage < 1024 || 2*int(r.garbage) < len(r.arena) {
		return
	}
	arena := make([]byte, 0, len(r.arena)-int(r.garbage))
	refs := make([]cellRef, len(r.refs))
	for i, c := range r.refs {
		off := uint32(len(arena))
		arena = append(arena, r.arena[c.off:c.off+c.klen+c.vlen]...)
		refs[i] = cellRef{off: off, klen: c.klen, vlen: c.vlen}
	}
	r.arena, r.refs, r.garbage = arena, refs, 0
}

// suffixTimestamp is the cell timestamp at the end of a cell key suffix.
func suffixTimestamp(s []byte) int64 {
	return int64(^beUint64(s[len(s)-tsLen:]))
}

func beUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[7]) | uint64(b[6])<<8 | uint64(b[5])<<16 | uint64(b[4])<<24 |
		uint64(b[3])<<32 | uint64(b[2])<<40 | uint64(b[1])<<48 | uint64(b[0])<<56
}

// rowSnapshot is a reader's copy of one head row: the arena as it was (shared,
// never written below its length) and a copy of the refs. A snapshot of a row
// with frozen blocks holds them too until decode turns them, with the live
// cells after them, into a fresh arena and refs.
type rowSnapshot struct {
	prefix []byte
	arena  []byte
	refs   []cellRef
	blocks [][]byte
}

func (s *rowSnapshot) suffix(i int) []byte {
	c := s.refs[i]
	return s.arena[c.off : c.off+c.klen]
}

func (s *rowSnapshot) value(i int) []byte {
	c := s.refs[i]
	return s.arena[c.off+c.klen : c.off+c.klen+c.vlen]
}

// snapshotLocked copies row r for a reader; h.mu must be held (shared is
// enough). The snapshot of a row with frozen blocks needs decode, which is
// best called after h.mu is released.
func snapshotLocked(r *headRow) rowSnapshot {
	s := rowSnapshot{prefix: r.prefix, arena: r.arena[:len(r.arena):len(r.arena)], refs: slices.Clone(r.refs)}
	if r.frozen != nil {
		s.blocks = slices.Clone(r.frozen.blocks)
	}
	return s
}

// decode turns a snapshot with frozen blocks into one of an arena and refs
// alone: the blocks' cells, then the live ones, in a fresh arena.
func (s *rowSnapshot) decode() error {
	if len(s.blocks) == 0 {
		return nil
	}
	arenaLen, count := 0, len(s.refs)
	for _, b := range s.blocks {
		c, a, err := blockHeader(b)
		if err != nil {
			return fmt.Errorf("embedded: head: row %q: %w", s.prefix, err)
		}
		arenaLen, count = arenaLen+a, count+c
	}
	for _, c := range s.refs {
		arenaLen += int(c.klen + c.vlen)
	}
	arena, refs := make([]byte, 0, arenaLen), make([]cellRef, 0, count)
	for _, b := range s.blocks {
		var err error
		if arena, refs, err = decodeBlock(b, arena, refs); err != nil {
			return fmt.Errorf("embedded: head: row %q: %w", s.prefix, err)
		}
	}
	for _, c := range s.refs {
		off := uint32(len(arena))
		arena = append(arena, s.arena[c.off:c.off+c.klen+c.vlen]...)
		refs = append(refs, cellRef{off: off, klen: c.klen, vlen: c.vlen})
	}
	s.arena, s.refs, s.blocks = arena, refs, nil
	return nil
}

// rowAtOrAfter returns a snapshot of the first row whose cells can hold a key
// >= key and < upper: the row key is inside (its prefix is a prefix of key),
// or the first row whose prefix is > key. ok is false when there is none.
// Frozen blocks are decoded after h.mu is released: their decoding costs only
// the reader.
func (h *head) rowAtOrAfter(key, upper []byte) (snap rowSnapshot, ok bool, err error) {
	if snap, ok = h.findRow(key, upper); ok {
		err = snap.decode()
	}
	return snap, ok && err == nil, err
}

func (h *head) findRow(key, upper []byte) (snap rowSnapshot, ok bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for k, r := range h.rows.Descend(btreemap.LE(key), btreemap.Min[[]byte]()) {
		if bytes.HasPrefix(key, k) {
			return snapshotLocked(r), true
		}
		break
	}
	for k, r := range h.rows.Ascend(btreemap.GT(key), btreemap.Max[[]byte]()) {
		if upper != nil && bytes.Compare(k, upper) >= 0 {
			return rowSnapshot{}, false
		}
		return snapshotLocked(r), true
	}
	return rowSnapshot{}, false
}

// headStats is what the head holds, for metrics.
type headStats struct {
	Rows, Cells, Bytes int64
}

func (h *head) stats() headStats {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return headStats{Rows: int64(h.rows.Len()), Cells: h.cells, Bytes: h.bytes}
}

// rowsBySegLocked returns the rows in order of their seg, oldest first, for
// flushing.
func (h *head) rowsBySegLocked() []*headRow {
	rows := make([]*headRow, 0, h.rows.Len())
	for _, r := range h.rows.Ascend(btreemap.Min[[]byte](), btreemap.Max[[]byte]()) {
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b *headRow) int {
		switch {
		case a.seg < b.seg:
			return -1
		case a.seg > b.seg:
			return 1
		}
		return 0
	})
	return rows
}

// minSegLocked is the oldest segment any row needs, or 0 when the head is
// empty.
func (h *head) minSegLocked() uint64 {
	var m uint64
	for _, r := range h.rows.Ascend(btreemap.Min[[]byte](), btreemap.Max[[]byte]()) {
		if m == 0 || r.seg < m {
			m = r.seg
		}
	}
	return m
}
