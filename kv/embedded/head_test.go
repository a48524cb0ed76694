package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/kvtest"
)

// holdAll is a head that holds every family.
func holdAll(string, string) bool { return true }

// TestConformanceWithHead runs the kv conformance suite on a store whose head
// holds every family: reads, versions, TTL, filters, deletes, Increment and
// CheckAndPut answer as from Pebble alone, and deletes leave no tombstone.
func TestConformanceWithHead(t *testing.T) {
	kvtest.Run(t, func(t testing.TB) kv.Store {
		return openStore(t, t.TempDir(), Options{Head: HeadOptions{Holds: holdAll}})
	}, kvtest.CellsInMemory())
}

// TestConformanceWithFrozenHead runs the suite on a head that freezes every
// row after each Apply: every read decodes frozen blocks, every later put
// lands in a live tail or thaws its row, every delete may thaw one.
func TestConformanceWithFrozenHead(t *testing.T) {
	kvtest.Run(t, func(t testing.TB) kv.Store {
		return openStore(t, t.TempDir(), Options{Head: HeadOptions{Holds: holdAll, freezeEachApply: true}})
	}, kvtest.CellsInMemory())
}

var headSpec = kv.TableSpec{Name: "data", Families: []kv.FamilySpec{
	{Name: "r"},                 // held
	{Name: "t", MaxVersions: 2}, // in Pebble
}}

// holdRaw holds family r of table data, as tsdb does.
func holdRaw(table, family string) bool { return table == "data" && family == "r" }

// randomMutations returns n batches of puts and deletes over a few rows of
// headSpec, the same for a seed.
func randomMutations(seed uint64, n int) [][]kv.Mutation {
	rng := rand.New(rand.NewPCG(seed, seed))
	batches := make([][]kv.Mutation, n)
	for i := range batches {
		var b []kv.Mutation
		for range 1 + rng.IntN(40) {
			row := []byte(fmt.Sprintf("row\x00%02d", rng.IntN(12)))
			fam := "r"
			if rng.IntN(4) == 0 {
				fam = "t"
			}
			q := []byte{byte(rng.IntN(3)), byte(rng.IntN(20))}
			ts := int64(rng.IntN(1000))
			switch rng.IntN(20) {
			case 0:
				b = append(b, kv.DeleteFamily(row, fam, ts))
			case 1:
				b = append(b, kv.DeleteColumn(row, fam, q, ts))
			case 2:
				b = append(b, kv.DeleteRow(row, ts))
			case 3:
				b = append(b, kv.DeleteFamily(row, fam, kv.MaxTimestamp))
			default:
				b = append(b, kv.Put(row, fam, q, ts, []byte(fmt.Sprintf("v%d", rng.IntN(1000)))))
			}
		}
		batches[i] = b
	}
	return batches
}

// dump is every cell of table data, every version, as text.
func dump(t *testing.T, st kv.Store) []string {
	t.Helper()
	sc := st.Scan(context.Background(), "data", nil, nil, kv.MaxVersions(10))
	defer sc.Close()
	var out []string
	for sc.Next() {
		r := sc.Row()
		for _, c := range r.Cells {
			out = append(out, fmt.Sprintf("%q %s:%x@%d=%s", r.Key, c.Family, c.Qualifier, c.Timestamp, c.Value))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

func applyAll(t *testing.T, st kv.Store, batches [][]kv.Mutation) {
	t.Helper()
	for i, b := range batches {
		if err := st.Apply(context.Background(), "data", b); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
}

// TestHeadReplayRebuildsTheSameStore writes random puts and deletes to a store
// with a head and to one without, and compares every cell: while open, after a
// Close and reopen (the log replayed), and after a reopen without a head (the
// log written into Pebble and removed).
//
// With freeze, the head freezes every row after each Apply.
func TestHeadReplayRebuildsTheSameStore(t *testing.T) {
	for _, freeze := range []bool{false, true} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("freeze=%v/seed-%d", freeze, seed), func(t *testing.T) {
				testHeadReplay(t, seed, HeadOptions{Holds: holdRaw, freezeEachApply: freeze})
			})
		}
	}
}

func testHeadReplay(t *testing.T, seed uint64, headOpts HeadOptions) {
	batches := randomMutations(seed, 300)
	ref := openStore(t, t.TempDir(), Options{})
	ensure(t, ref, headSpec)
	applyAll(t, ref, batches)
	want := dump(t, ref)
	if len(want) == 0 {
		t.Fatal("the reference store holds nothing: the test would prove nothing")
	}

	dir := t.TempDir()
	st := openStore(t, dir, Options{Head: headOpts})
	ensure(t, st, headSpec)
	applyAll(t, st, batches)
	equalCells(t, "open", dump(t, st), want)
	checkHeadAccounts(t, st.head)
	hs, ok := st.HeadStats()
	if !ok || hs.Cells == 0 {
		t.Fatalf("HeadStats = %+v, %v: the head holds nothing", hs, ok)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, dir, Options{Head: headOpts})
	equalCells(t, "after replay", dump(t, st), want)
	checkHeadAccounts(t, st.head)
	if got, _ := st.HeadStats(); got.Cells != hs.Cells || got.ReplayedRecords == 0 {
		t.Fatalf("after replay HeadStats = %+v, want %d cells from replayed records", got, hs.Cells)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, dir, Options{})
	equalCells(t, "without a head", dump(t, st), want)
	if _, ok := st.HeadStats(); ok {
		t.Fatal("a store opened without a head reports one")
	}
	if _, err := os.Stat(filepath.Join(dir, headDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("head log directory after a reopen without a head: %v, want it gone", err)
	}
}

func equalCells(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s: cell %d = %s, want %s (%d cells, want %d)", what, i, g, w, len(got), len(want))
		}
	}
}

// TestHeadKeepsItsBounds: a head over MaxBytes writes its oldest rows into
// Pebble, every cell stays readable, the log is truncated behind them, and a
// family delete of rows that lived only in the head leaves no tombstone.
//
// Without freeze, no row is frozen; with it, every row is frozen after each
// Apply, so that what is flushed is frozen blocks, and the bound is smaller,
// for the rows take less.
func TestHeadKeepsItsBounds(t *testing.T) {
	for _, freeze := range []bool{false, true} {
		t.Run(fmt.Sprint("freeze=", freeze), func(t *testing.T) {
			o := HeadOptions{Holds: holdRaw, MaxBytes: 64 << 10, SegmentSize: 16 << 10, FreezeCells: -1, FreezeAfter: -1}
			if freeze {
				// 64 frozen rows take about 27 KiB.
				o.MaxBytes, o.freezeEachApply = 16<<10, true
			}
			testHeadBounds(t, o)
		})
	}
}

func testHeadBounds(t *testing.T, headOpts HeadOptions) {
	dir := t.TempDir()
	st := openStore(t, dir, Options{Head: headOpts})
	ensure(t, st, headSpec)
	ctx := context.Background()
	var want []string
	for r := range 64 {
		row := []byte(fmt.Sprintf("row-%02d", r))
		var b []kv.Mutation
		for i := range 100 {
			v := fmt.Sprintf("value-%02d-%03d", r, i)
			b = append(b, kv.Put(row, "r", []byte{0, byte(i)}, int64(1000+i), []byte(v)))
			want = append(want, fmt.Sprintf("%q r:00%02x@%d=%s", row, i, 1000+i, v))
		}
		applyAll(t, st, [][]kv.Mutation{b})
	}
	if err := st.maintainHead(); err != nil {
		t.Fatal(err)
	}
	hs, _ := st.HeadStats()
	if hs.Bytes > headOpts.MaxBytes || hs.FlushedRows == 0 || hs.FlushedCells != 100*hs.FlushedRows {
		t.Fatalf("HeadStats after maintenance = %+v: want at most %d bytes held and whole rows flushed", hs, headOpts.MaxBytes)
	}
	checkHeadAccounts(t, st.head)
	if hs.Rows+hs.FlushedRows != 64 {
		t.Fatalf("HeadStats = %+v: held + flushed rows != 64", hs)
	}
	equalCells(t, "after flushing", dump(t, st), want)
	if hs.LogSegments > 1+int64(hs.LogBytes/(16<<10)) {
		t.Fatalf("HeadStats = %+v: segments not truncated", hs)
	}

	// Rows still in the head: their family deletes leave no tombstone; rows
	// flushed: theirs do.
	var inHead, flushed [][]byte
	for r := range 64 {
		row := []byte(fmt.Sprintf("row-%02d", r))
		st.head.mu.RLock()
		held := st.head.hasRowLocked(rowPrefix(st.tables["data"].prefix, row))
		st.head.mu.RUnlock()
		if held {
			inHead = append(inHead, row)
		} else {
			flushed = append(flushed, row)
		}
	}
	if len(inHead) == 0 || len(flushed) == 0 {
		t.Fatalf("%d rows in the head, %d flushed: want both", len(inHead), len(flushed))
	}
	before := st.Tombstones()
	for _, row := range inHead {
		if err := st.Apply(ctx, "data", []kv.Mutation{kv.DeleteFamily(row, "r", 1099)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := st.Tombstones(); got != before {
		t.Fatalf("deleting %d rows held in the head left tombstones %+v -> %+v", len(inHead), before, got)
	}
	if err := st.Apply(ctx, "data", []kv.Mutation{kv.DeleteFamily(flushed[0], "r", 1099)}); err != nil {
		t.Fatal(err)
	}
	if got := st.Tombstones(); got.Range != before.Range+1 {
		t.Fatalf("deleting a flushed row left %+v -> %+v, want one range tombstone", before, got)
	}
	if got := len(dump(t, st)); got != 100*(len(flushed)-1) {
		t.Fatalf("%d cells left, want %d", got, 100*(len(flushed)-1))
	}
}

// A compressed record decodes to the same puts, ordered by row and family,
// and of two puts of one cell the later is still applied last.
func TestCompressedHeadRecordRoundTrip(t *testing.T) {
	puts := []kv.Mutation{
		kv.Put([]byte("b"), "r", []byte{1}, 10, []byte("b1")),
		kv.Put([]byte("a"), "r", []byte{1}, 10, []byte("first")),
		kv.Put([]byte("b"), "r", []byte{2}, 20, []byte("b2")),
		kv.Put([]byte("a"), "r", []byte{1}, 10, []byte("second")),
		kv.Put([]byte("a\x00"), "p", nil, kv.MaxTimestamp, nil),
	}
	rec := compressedHeadRecord(7, puts)
	id, got, err := decodeHeadOps(rec)
	if err != nil || id != 7 {
		t.Fatalf("decodeHeadOps = %d, %v", id, err)
	}
	var lines []string
	for _, m := range got {
		lines = append(lines, fmt.Sprintf("%q %s %x @%d = %q", m.Row, m.Family, m.Qualifier, m.Timestamp, m.Value))
	}
	want := []string{
		`"a" r 01 @10 = "first"`,
		`"a" r 01 @10 = "second"`,
		`"a\x00" p  @9223372036854775806 = ""`,
		`"b" r 01 @10 = "b1"`,
		`"b" r 02 @20 = "b2"`,
	}
	equalCells(t, "decoded", lines, want)
	if _, _, err := decodeHeadOps(rec[:len(rec)-3]); !errors.Is(err, errBadHeadRecord) {
		t.Fatalf("a truncated compressed record: %v, want errBadHeadRecord", err)
	}
}
