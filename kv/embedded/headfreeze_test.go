package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/RaduBerinde/btreemap"
)

// checkHeadAccounts fails unless h.bytes and h.cells are the sums of what its
// rows report, and every row keeps the frozen-before-live invariant.
func checkHeadAccounts(t *testing.T, h *head) {
	t.Helper()
	h.mu.RLock()
	defer h.mu.RUnlock()
	var size, cells int64
	for _, r := range h.rows.Ascend(btreemap.Min[[]byte](), btreemap.Max[[]byte]()) {
		size += r.size()
		cells += int64(r.cellCount())
		if r.cellCount() == 0 {
			t.Errorf("row %q holds no cell but is in the head", r.prefix)
		}
		if f := r.frozen; f != nil && len(r.refs) > 0 && bytes.Compare(r.suffix(r.refs[0]), f.last) <= 0 {
			t.Errorf("row %q: live cell %x not after the last frozen %x", r.prefix, r.suffix(r.refs[0]), f.last)
		}
		if f := r.frozen; f != nil && (len(f.blocks) == 0 || f.cells == 0) {
			t.Errorf("row %q: frozen cells %+v without blocks or cells", r.prefix, f)
		}
	}
	if size != h.bytes || cells != h.cells {
		t.Errorf("head accounts %d bytes, %d cells; its rows %d bytes, %d cells", h.bytes, h.cells, size, cells)
	}
}

// rawSuffix is the suffix of a raw sample's cell: family r, a 4-byte offset
// qualifier, the timestamp.
func rawSuffix(offset uint32, ts int64) []byte {
	return appendTimestamp(appendColumn(nil, "r", binary.BigEndian.AppendUint32(nil, offset)), ts)
}

func floatValue(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }

// TestHeadBlockRoundTrip: a block decodes to the cells it was encoded from, in
// order, for cells like raw samples and for arbitrary ones.
func TestHeadBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	samples := func(n int, value func(i int) []byte) []blockCell {
		cells := make([]blockCell, n)
		for i := range cells {
			cells[i] = blockCell{suffix: rawSuffix(uint32(i*15000), 1_700_000_000_000+int64(i)*15000), value: value(i)}
		}
		return cells
	}
	cases := []struct {
		name  string
		cells []blockCell
	}{
		{"one cell", samples(1, func(int) []byte { return floatValue(1) })},
		{"a counter", samples(240, func(i int) []byte { return floatValue(float64(i * 3)) })},
		{"a constant gauge", samples(240, func(int) []byte { return floatValue(0.5) })},
		{"random floats", samples(100, func(int) []byte { return floatValue(rng.Float64()) })},
		{"empty values", samples(50, func(int) []byte { return nil })},
		{"values of changing lengths", samples(60, func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, i%5) })},
		{"large values", samples(8, func(int) []byte { return randBytes(70_000) })},
		{"equal suffixes but the timestamp", func() []blockCell {
			var cells []blockCell
			for i := range 30 {
				cells = append(cells, blockCell{suffix: appendTimestamp(appendColumn(nil, "p", []byte("q")), kv64(100-i)), value: randBytes(rng.IntN(3))})
			}
			return cells
		}()},
		{"random suffixes", func() []blockCell {
			var cells []blockCell
			for range 200 {
				cells = append(cells, blockCell{suffix: randBytes(tsLen + rng.IntN(20)), value: randBytes(rng.IntN(20))})
			}
			return cells
		}()},
		{"suffixes of a timestamp alone", []blockCell{{suffix: make([]byte, tsLen)}, {suffix: bytes.Repeat([]byte{0xff}, tsLen), value: []byte{0}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			block, err := encodeBlock(c.cells)
			if err != nil {
				t.Fatal(err)
			}
			if cap(block) != len(block) {
				t.Errorf("block of %d bytes has capacity %d", len(block), cap(block))
			}
			prefix := []byte("before")
			arena, refs, err := decodeBlock(block, prefix, []cellRef{{}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(arena[:len(prefix)], prefix) || len(refs) != 1+len(c.cells) {
				t.Fatalf("decoded %d refs after 1, want %d; arena prefix %q", len(refs)-1, len(c.cells), arena[:len(prefix)])
			}
			s := rowSnapshot{arena: arena, refs: refs}
			for i, want := range c.cells {
				if got := s.suffix(i + 1); !bytes.Equal(got, want.suffix) {
					t.Fatalf("cell %d suffix %x, want %x", i, got, want.suffix)
				}
				if got := s.value(i + 1); !bytes.Equal(got, want.value) {
					t.Fatalf("cell %d value %x, want %x", i, got, want.value)
				}
			}
			n, a, err := blockHeader(block)
			if want := len(arena) - len(prefix); err != nil || n != len(c.cells) || a != want {
				t.Fatalf("blockHeader = %d cells, %d bytes, %v; want %d, %d", n, a, err, len(c.cells), want)
			}
			for _, cut := range []int{1, len(block) / 2, len(block) - 1} {
				if _, _, err := decodeBlock(block[:cut], nil, nil); !errors.Is(err, errBadHeadBlock) {
					t.Fatalf("block cut at %d of %d: %v, want errBadHeadBlock", cut, len(block), err)
				}
			}
		})
	}
	if _, err := encodeBlock([]blockCell{{suffix: []byte("short")}}); err == nil {
		t.Fatal("a suffix shorter than a timestamp encoded")
	}
}

func kv64(i int) int64 { return int64(i) }

// TestHeadBlockIsSmall: a row of 240 raw samples of a counter takes under 2
// bytes a sample once frozen (1.2 when written); the test fails if the codec
// loses its point.
func TestHeadBlockIsSmall(t *testing.T) {
	var cells []blockCell
	for i := range 240 {
		cells = append(cells, blockCell{suffix: rawSuffix(uint32(i*15000), 1_700_000_000_000+int64(i)*15000), value: floatValue(float64(i * 7))})
	}
	block, err := encodeBlock(cells)
	if err != nil {
		t.Fatal(err)
	}
	if per := float64(len(block)) / 240; per > 2 {
		t.Fatalf("%.1f bytes a sample frozen, want at most 2", per)
	}
}

// headCells is every cell of the head as text (row/column@ts=value), as a
// reader sees them.
func headCells(t *testing.T, h *head) []string {
	t.Helper()
	var out []string
	it := &headIter{h: h}
	for ok := it.First(); ok; ok = it.Next() {
		v, _ := it.ValueAndErr()
		s := it.row.suffix(it.i)
		out = append(out, fmt.Sprintf("%s/%x@%d=%s", it.row.prefix, s[:len(s)-tsLen], suffixTimestamp(s), v))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFrozenRowSemantics: puts after a frozen row's cells go to its live
// tail, puts at or before them thaw it (the last write still wins), deletes
// of frozen cells thaw it and remove exactly what they match, and the head's
// accounts stay exact throughout.
func TestFrozenRowSemantics(t *testing.T) {
	h := newHead(freezePolicy{})
	prefix := []byte("row")
	col := func(q string) []byte { return appendColumn(nil, "r", []byte(q)) }
	put := func(q string, ts int64, v string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.putLocked(prefix, appendTimestamp(col(q), ts), []byte(v), 1)
	}
	del := func(under []byte, upTo int64) int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.deleteLocked(prefix, under, upTo)
	}
	freeze := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := h.freezeAllLocked(); err != nil {
			t.Fatal(err)
		}
	}
	row := func() *headRow {
		h.mu.RLock()
		defer h.mu.RUnlock()
		return h.byPrefix[string(prefix)]
	}
	check := func(what string, frozen, live int, want ...string) {
		t.Helper()
		checkHeadAccounts(t, h)
		equalCells(t, what, headCells(t, h), want)
		if r := row(); r == nil && (frozen > 0 || live > 0) || r != nil && (r.frozenCount() != frozen || len(r.refs) != live) {
			t.Fatalf("%s: row %+v, want %d frozen and %d live cells", what, r, frozen, live)
		}
	}
	// Column "b" sorts after "a"; within a column, newer timestamps first.
	c := func(q string, ts int64, v string) string { return fmt.Sprintf("row/%x@%d=%s", col(q), ts, v) }
	put("a", 2, "a2")
	put("a", 1, "a1")
	put("b", 5, "b5")
	freeze()
	check("frozen", 3, 0, c("a", 2, "a2"), c("a", 1, "a1"), c("b", 5, "b5"))

	put("b", 4, "b4") // after every frozen cell: the live tail
	put("c", 9, "c9")
	check("tail", 3, 2, c("a", 2, "a2"), c("a", 1, "a1"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"))
	freeze()
	if r := row(); len(r.blockList()) != 1 {
		t.Fatalf("%d blocks after a second freeze, want 1 (merged)", len(r.blockList()))
	}
	check("two blocks", 5, 0, c("a", 2, "a2"), c("a", 1, "a1"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"))

	put("a", 1, "a1'") // an overwrite of a frozen cell: thaws, the last write wins
	check("overwrite", 0, 5, c("a", 2, "a2"), c("a", 1, "a1'"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"))
	freeze()
	put("a", 3, "a3") // before the last frozen cell: thaws
	check("late put", 0, 6, c("a", 3, "a3"), c("a", 2, "a2"), c("a", 1, "a1'"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"))
	freeze()

	if n := del(col("d"), 100); n != 0 {
		t.Fatalf("a delete of a column after every frozen cell removed %d", n)
	}
	check("delete of nothing, not thawed", 6, 0, c("a", 3, "a3"), c("a", 2, "a2"), c("a", 1, "a1'"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"))
	if n := del(col("a"), 2); n != 2 {
		t.Fatalf("a delete of column a up to 2 removed %d, want 2", n)
	}
	check("column delete", 0, 4, c("a", 3, "a3"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"))
	freeze()
	put("d", 1, "d1")
	check("tail after a thaw and a freeze", 4, 1, c("a", 3, "a3"), c("b", 5, "b5"), c("b", 4, "b4"), c("c", 9, "c9"), c("d", 1, "d1"))
	if n := del(appendEscaped(nil, []byte("r")), 4); n != 3 {
		t.Fatalf("a family delete up to 4 removed %d, want 3 (a@3, b@4, d@1)", n)
	}
	check("family delete", 0, 2, c("b", 5, "b5"), c("c", 9, "c9"))
	freeze()
	if n := del(nil, math.MaxInt64); n != 2 {
		t.Fatalf("a row delete removed %d, want 2", n)
	}
	check("row delete", 0, 0)
	if h.bytes != 0 || h.cells != 0 || h.rows.Len() != 0 {
		t.Fatalf("an empty head accounts %d bytes, %d cells, %d rows", h.bytes, h.cells, h.rows.Len())
	}
}

// TestFreezePass: the maintenance pass freezes rows whose live cells reached
// the count, and idle rows of at least minBlockCells after the age, and swaps
// nothing into a row that changed while it encoded.
func TestFreezePass(t *testing.T) {
	h := newHead(freezePolicy{cells: 10, after: time.Minute})
	put := func(row string, n int) {
		h.mu.Lock()
		defer h.mu.Unlock()
		base := 0
		if r := h.byPrefix[row]; r != nil {
			base = r.cellCount()
		}
		for i := range n {
			h.putLocked([]byte(row), rawSuffix(uint32(base+i), int64(base+i)), floatValue(float64(i)), 1)
		}
	}
	put("long", 12)
	put("short", minBlockCells)
	put("tiny", minBlockCells-1)
	before := headCells(t, h)
	now := time.Now()
	if n, err := h.freezePass(now); err != nil || n != 1 {
		t.Fatalf("first pass froze %d rows (%v), want the long one", n, err)
	}
	if h.byPrefix["long"].frozenCount() != 12 || h.byPrefix["short"].frozenCount() != 0 || h.byPrefix["tiny"].frozenCount() != 0 {
		t.Fatal("the first pass froze the wrong row")
	}
	checkHeadAccounts(t, h)
	equalCells(t, "after the first pass", headCells(t, h), before)

	// A row written after a scan is idle at the second scan after it, not at
	// the first.
	put("later", minBlockCells)
	if n, _ := h.freezePass(now.Add(30 * time.Second)); n != 0 {
		t.Fatalf("a pass before FreezeAfter froze %d rows", n)
	}
	if n, _ := h.freezePass(now.Add(time.Minute)); n != 1 || h.byPrefix["short"].frozenCount() != minBlockCells {
		t.Fatalf("the next scan froze %d rows, want the short one, idle since before the first", n)
	}
	if n, _ := h.freezePass(now.Add(2 * time.Minute)); n != 1 || h.byPrefix["later"].frozenCount() != minBlockCells {
		t.Fatalf("the scan after froze %d rows, want the one written after the first", n)
	}
	if r := h.byPrefix["tiny"]; r.frozenCount() != 0 {
		t.Fatalf("an idle row of %d cells froze: fewer than minBlockCells take less live", r.frozenCount())
	}
	checkHeadAccounts(t, h)
	after := headCells(t, h)
	if len(after) != len(before)+minBlockCells {
		t.Fatalf("%d cells after the idle passes, want %d", len(after), len(before)+minBlockCells)
	}

	// A row's last block takes the cells frozen after it while it holds fewer
	// than mergeBelow cells; after that they make a block of their own.
	put("many", mergeBelow)
	put("many", 5)
	h.freezePass(now.Add(2 * time.Minute))
	put("many", 5)
	h.mu.Lock()
	if err := h.freezeAllLocked(); err != nil {
		t.Fatal(err)
	}
	h.mu.Unlock()
	if r := h.byPrefix["many"]; len(r.blockList()) != 2 || r.frozenCount() != mergeBelow+10 {
		t.Fatalf("row of %d frozen cells in %d blocks, want %d in 2", r.frozenCount(), len(r.blockList()), mergeBelow+10)
	}
	checkHeadAccounts(t, h)
	if n := len(headCells(t, h)); n != len(after)+mergeBelow+10 {
		t.Fatalf("%d cells, want %d", n, len(after)+mergeBelow+10)
	}

	// A row that changes between the snapshot and the swap keeps its cells
	// live.
	put("long", 10)
	r := h.byPrefix["long"]
	h.mu.RLock()
	ft, err := encodeTail(r, r.gen, r.arena, slices.Clone(r.refs), r.lastBlock())
	h.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	put("long", 1)
	h.mu.Lock()
	swapped := h.swapLocked(ft)
	h.mu.Unlock()
	if swapped || len(r.refs) != 11 {
		t.Fatalf("a stale freeze swapped in: %v, %d live cells", swapped, len(r.refs))
	}
	checkHeadAccounts(t, h)
}

// BenchmarkHeadReadRow reads every cell of a row of 240 raw samples through
// a head iterator, live and frozen: the cost a reader of a frozen row pays.
//
//	go test -run '^$' -bench HeadReadRow ./kv/embedded/
func BenchmarkHeadReadRow(b *testing.B) {
	for _, frozen := range []bool{false, true} {
		b.Run(fmt.Sprint("frozen=", frozen), func(b *testing.B) {
			h := newHead(freezePolicy{})
			h.mu.Lock()
			for i := range 240 {
				h.putLocked([]byte("row"), rawSuffix(uint32(i*15000), 1_700_000_000_000+int64(i)*15000), floatValue(float64(i*7)), 1)
			}
			if frozen {
				if err := h.freezeAllLocked(); err != nil {
					b.Fatal(err)
				}
			}
			h.mu.Unlock()
			b.ResetTimer()
			for range b.N {
				it := &headIter{h: h}
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if n != 240 {
					b.Fatalf("%d cells, want 240", n)
				}
			}
		})
	}
}
