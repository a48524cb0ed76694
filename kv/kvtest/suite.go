// Package kvtest is the one conformance suite that every kv.Store
// implementation must pass: the embedded store and the real HBase run the same cases,
// so the layers above kv/ can rely on identical behaviour. Each case states one
// rule of kv's contract and asserts exact keys, values and errors.
package kvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// NewStore returns a fresh store with no tables for one test, and arranges (with
// t.Cleanup) for its tables to be dropped and the store to be closed afterwards.
// The cleanup must tolerate a store the test already closed.
type NewStore func(t testing.TB) kv.Store

// testCase is one rule of the contract.
type testCase struct {
	name string
	run  func(t *testing.T, st kv.Store)
}

// Option changes what the suite expects of a store.
type Option func(*config)

type config struct {
	cellsInMemory bool
}

// CellsInMemory is for a store that keeps the cells the suite writes in
// memory behind a log of its own (kv/embedded with a head holding every
// family): a delete drops them there and leaves no tombstone, so the
// tombstone cases expect none.
func CellsInMemory() Option { return func(c *config) { c.cellsInMemory = true } }

// tombstones is the tombstones a delete of cells the suite wrote leaves: want
// on a store that writes them to its files, none on one that keeps them in
// memory.
func (c config) tombstones(want kv.Tombstones) kv.Tombstones {
	if c.cellsInMemory {
		return kv.Tombstones{}
	}
	return want
}

// Run runs every conformance case, in parallel, each against its own fresh store.
func Run(t *testing.T, newStore NewStore, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	for _, tc := range cases(cfg) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

func cases(cfg config) []testCase {
	return []testCase{
		{"missing table is ErrTableNotFound for every operation", testTableNotFound},
		{"EnsureTable creates once and ListTables lists sorted names", testEnsureAndList},
		{"DropTable removes the table and its data", testDropTable},
		{"put then get returns the exact cell", testPutGet},
		{"empty values and binary qualifiers round-trip", testBinaryCells},
		{"rows scan in byte-lexicographic order with 0x00 and 0xFF", testByteOrder},
		{"scan range is half-open and nil bounds are open", testScanRange},
		{"prefix scan of a prefix ending in 0xFF", testPrefixScanFF},
		{"cells within a row are ordered family, qualifier, newest first", testCellOrder},
		{"family selection returns only the chosen families", testFamilySelection},
		{"newer timestamp wins regardless of write order", testNewerWins},
		{"same timestamp keeps the last write", testSameTimestampLastWriteWins},
		{"MaxVersions of family and read cap the versions returned", testMaxVersions},
		{"TimeRange is half-open", testTimeRange},
		{"DeleteColumn removes versions up to its timestamp", testDeleteColumn},
		{"DeleteFamily and DeleteRow remove up to their timestamp", testDeleteFamilyAndRow},
		{"a delete leaves newer versions and later newer puts visible", testDeleteThenNewerPut},
		{"DeleteFamily over all 200 cells of a family leaves 0 point and 1 range tombstone", func(t *testing.T, st kv.Store) { testTombstonesFamilyAll(t, st, cfg) }},
		{"DeleteFamily sparing one cell among 200 leaves 0 point and at most 2 range tombstones", func(t *testing.T, st kv.Store) { testTombstonesFamilySpared(t, st, cfg) }},
		{"DeleteColumn of a column with one version leaves 1 point and 0 range tombstones", func(t *testing.T, st kv.Store) { testTombstonesColumn(t, st, cfg) }},
		{"a batch of DeleteFamily of 100 rows leaves 100 range and 0 point tombstones", func(t *testing.T, st kv.Store) { testTombstonesManyRows(t, st, cfg) }},
		{"DeleteRow up to MaxTimestamp leaves 0 point and 1 range tombstone", func(t *testing.T, st kv.Store) { testTombstonesRow(t, st, cfg) }},
		{"DeleteFamily up to T never removes a cell put above T concurrently", testDeleteFamilyConcurrentPuts},
		{"TTL hides expired cells on get and scan", testTTL},
		{"increment starts from an absent cell", testIncrementFromAbsent},
		{"increment of a cell that is not 8 bytes is ErrInvalidArgument", testIncrementWrongWidth},
		{"8 concurrent incrementers lose no update", testIncrementConcurrent},
		{"check-and-put on absent, equal and different values", testCheckAndPut},
		{"exactly one of 8 check-and-put racers wins", testCheckAndPutRace},
		{"a 10000-cell batch is stored whole", testLargeBatch},
		{"many rows stream through one scan", testManyRowsScan},
		{"column value filter keeps matching rows", testColumnValueFilter},
		{"column value filter and a missing column", testColumnValueFilterMissing},
		{"column value filter on an unread family is rejected", testColumnValueFilterUnreadFamily},
		{"key-only filter empties values", testKeyOnlyFilter},
		{"column range filter bounds qualifiers", testColumnRangeFilter},
		{"row and cell limits end a scan", testLimits},
		{"GetRows answers in request order with empty rows for missing keys", testGetRows},
		{"invalid mutations are rejected and nothing is written", testInvalidMutations},
		{"a cancelled context fails every operation", testContextCancelled},
		{"every operation after Close is ErrClosed", testUseAfterClose},
	}
}

const table = "conformance"

// simpleSpec is a table with families a and b (one version, no TTL).
var simpleSpec = kv.TableSpec{
	Name:     table,
	Families: []kv.FamilySpec{{Name: "a"}, {Name: "b"}},
}

func createTable(t *testing.T, st kv.Store, spec kv.TableSpec) {
	t.Helper()
	created, err := st.EnsureTable(context.Background(), spec)
	if err != nil {
		t.Fatalf("EnsureTable(%s): %v", spec.Name, err)
	}
	if !created {
		t.Fatalf("EnsureTable(%s) on a fresh store reported an existing table", spec.Name)
	}
}

func apply(t *testing.T, st kv.Store, muts ...kv.Mutation) {
	t.Helper()
	if err := st.Apply(context.Background(), table, muts); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func get(t *testing.T, st kv.Store, row string, opts ...kv.ReadOption) kv.Row {
	t.Helper()
	r, err := st.Get(context.Background(), table, []byte(row), opts...)
	if err != nil {
		t.Fatalf("Get(%q): %v", row, err)
	}
	return r
}

func scanAll(t *testing.T, st kv.Store, start, stop []byte, opts ...kv.ReadOption) []kv.Row {
	t.Helper()
	sc := st.Scan(context.Background(), table, start, stop, opts...)
	defer sc.Close()
	var rows []kv.Row
	for sc.Next() {
		rows = append(rows, sc.Row())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("Scan(%q, %q): %v", start, stop, err)
	}
	return rows
}

// put is a shorthand for a put of a string value.
func put(row, family, qualifier string, ts int64, value string) kv.Mutation {
	return kv.Put([]byte(row), family, []byte(qualifier), ts, []byte(value))
}

// cellString renders a cell as family:qualifier@ts=value, with bytes quoted.
func cellString(c kv.Cell) string {
	return fmt.Sprintf("%s:%q@%d=%q", c.Family, c.Qualifier, c.Timestamp, c.Value)
}

func cellStrings(r kv.Row) []string {
	out := make([]string, len(r.Cells))
	for i, c := range r.Cells {
		out[i] = cellString(c)
	}
	return out
}

func rowKeys(rows []kv.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%q", r.Key)
	}
	return out
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %q", what, err, target)
	}
}

func testTableNotFound(t *testing.T, st kv.Store) {
	ctx := context.Background()
	const missing = "no-such-table"
	wantErr(t, "Apply", st.Apply(ctx, missing, []kv.Mutation{put("r", "a", "q", 1, "v")}), kv.ErrTableNotFound)
	_, err := st.Get(ctx, missing, []byte("r"))
	wantErr(t, "Get", err, kv.ErrTableNotFound)
	_, err = st.GetRows(ctx, missing, [][]byte{[]byte("r")})
	wantErr(t, "GetRows", err, kv.ErrTableNotFound)
	sc := st.Scan(ctx, missing, nil, nil)
	if sc.Next() {
		t.Fatal("Scan of a missing table returned a row")
	}
	wantErr(t, "Scan", sc.Err(), kv.ErrTableNotFound)
	sc.Close()
	_, err = st.Increment(ctx, missing, []byte("r"), "a", []byte("q"), 1)
	wantErr(t, "Increment", err, kv.ErrTableNotFound)
	_, err = st.CheckAndPut(ctx, missing, nil, put("r", "a", "q", 1, "v"))
	wantErr(t, "CheckAndPut", err, kv.ErrTableNotFound)
	wantErr(t, "DropTable", st.DropTable(ctx, missing), kv.ErrTableNotFound)
}

func testEnsureAndList(t *testing.T, st kv.Store) {
	ctx := context.Background()
	for _, name := range []string{"zeta", "alpha", "mid"} {
		createTable(t, st, kv.TableSpec{Name: name, Families: []kv.FamilySpec{{Name: "f"}}})
	}
	created, err := st.EnsureTable(ctx, kv.TableSpec{Name: "alpha", Families: []kv.FamilySpec{{Name: "f"}}})
	if err != nil || created {
		t.Fatalf("EnsureTable of an existing table = (%v, %v), want (false, nil)", created, err)
	}
	names, err := st.ListTables(ctx)
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	equalStrings(t, "ListTables", names, []string{"alpha", "mid", "zeta"})
	_, err = st.EnsureTable(ctx, kv.TableSpec{Name: "bad"})
	wantErr(t, "EnsureTable without families", err, kv.ErrInvalidArgument)
}

func testDropTable(t *testing.T, st kv.Store) {
	ctx := context.Background()
	createTable(t, st, simpleSpec)
	apply(t, st, put("r", "a", "q", 1, "v"))
	if err := st.DropTable(ctx, table); err != nil {
		t.Fatalf("DropTable: %v", err)
	}
	names, err := st.ListTables(ctx)
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	equalStrings(t, "ListTables after drop", names, nil)
	_, err = st.Get(ctx, table, []byte("r"))
	wantErr(t, "Get after drop", err, kv.ErrTableNotFound)
	// A table re-created under the same name starts empty.
	createTable(t, st, simpleSpec)
	if r := get(t, st, "r"); len(r.Cells) != 0 {
		t.Fatalf("re-created table still holds %v", cellStrings(r))
	}
}

func testPutGet(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	apply(t, st, put("row1", "a", "q1", 1700000000123, "value-1"), put("row1", "b", "q2", 1700000000124, "value-2"))
	r := get(t, st, "row1")
	if string(r.Key) != "row1" {
		t.Fatalf("Get returned key %q, want row1", r.Key)
	}
	equalStrings(t, "cells", cellStrings(r), []string{
		`a:"q1"@1700000000123="value-1"`,
		`b:"q2"@1700000000124="value-2"`,
	})
	if r := get(t, st, "row2"); string(r.Key) != "row2" || len(r.Cells) != 0 {
		t.Fatalf("Get of a missing row = %q %v, want key row2 and no cells", r.Key, cellStrings(r))
	}
}

func testBinaryCells(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	row := []byte{0x00, 0xFF, 0x00}
	apply(t, st,
		kv.Put(row, "a", []byte{0x00}, 5, []byte{}),
		kv.Put(row, "a", []byte{0x00, 0x00}, 5, []byte{0x00, 0xFF}),
		kv.Put(row, "a", []byte{0xFF, 0xFF, 0xFF, 0xFF}, 5, []byte{0xFF}),
	)
	r := get(t, st, string(row))
	equalStrings(t, "binary cells", cellStrings(r), []string{
		`a:"\x00"@5=""`,
		`a:"\x00\x00"@5="\x00\xff"`,
		`a:"\xff\xff\xff\xff"@5="\xff"`,
	})
}

// orderedKeys are row keys in byte-lexicographic order, with the edge cases of an
// escaping scheme: 0x00 and 0xFF bytes, and keys that are prefixes of others.
var orderedKeys = [][]byte{
	{0x00}, {0x00, 0x00}, {0x00, 0x01}, {0x00, 0xFF}, {0x01},
	[]byte("a"), []byte("a\x00"), []byte("a\x00\x00"), []byte("a\x01"), []byte("ab"), []byte("b"),
	{0x7F}, {0x80}, {0xFE, 0xFF}, {0xFF}, {0xFF, 0x00}, {0xFF, 0xFF}, {0xFF, 0xFF, 0xFF},
}

func testByteOrder(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	// Write in reverse order so that insertion order cannot explain the result.
	var muts []kv.Mutation
	for i := len(orderedKeys) - 1; i >= 0; i-- {
		muts = append(muts, kv.Put(orderedKeys[i], "a", []byte("q"), 1, []byte{byte(i)}))
	}
	apply(t, st, muts...)
	rows := scanAll(t, st, nil, nil)
	var want []string
	for _, k := range orderedKeys {
		want = append(want, fmt.Sprintf("%q", k))
	}
	equalStrings(t, "scan order", rowKeys(rows), want)
	for i, r := range rows {
		if len(r.Cells) != 1 || !bytes.Equal(r.Cells[0].Value, []byte{byte(i)}) {
			t.Fatalf("row %q carries %v, want value %d", r.Key, cellStrings(r), i)
		}
	}
}

func putKeys(t *testing.T, st kv.Store, keys ...[]byte) {
	t.Helper()
	var muts []kv.Mutation
	for _, k := range keys {
		muts = append(muts, kv.Put(k, "a", []byte("q"), 1, []byte("v")))
	}
	apply(t, st, muts...)
}

func testScanRange(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	putKeys(t, st, []byte("a"), []byte("b"), []byte("b\x00"), []byte("c"), []byte("d"))
	equalStrings(t, "[b, d)", rowKeys(scanAll(t, st, []byte("b"), []byte("d"))), []string{`"b"`, `"b\x00"`, `"c"`})
	equalStrings(t, "[nil, b\\x00)", rowKeys(scanAll(t, st, nil, []byte("b\x00"))), []string{`"a"`, `"b"`})
	equalStrings(t, "[c, nil)", rowKeys(scanAll(t, st, []byte("c"), nil)), []string{`"c"`, `"d"`})
	equalStrings(t, "[bb, c)", rowKeys(scanAll(t, st, []byte("bb"), []byte("c"))), nil)
}

func testPrefixScanFF(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	putKeys(t, st,
		[]byte{0x01, 0xFE}, []byte{0x01, 0xFF}, []byte{0x01, 0xFF, 0x00}, []byte{0x01, 0xFF, 0xFF, 0x07},
		[]byte{0x02}, []byte{0xFF, 0xFF}, []byte{0xFF, 0xFF, 0x00},
	)
	prefix := []byte{0x01, 0xFF}
	equalStrings(t, "prefix 01 FF", rowKeys(scanAll(t, st, prefix, kv.PrefixEnd(prefix))),
		[]string{`"\x01\xff"`, `"\x01\xff\x00"`, `"\x01\xff\xff\a"`})
	all := []byte{0xFF, 0xFF}
	if kv.PrefixEnd(all) != nil {
		t.Fatalf("PrefixEnd(ff ff) = %x, want nil", kv.PrefixEnd(all))
	}
	equalStrings(t, "prefix FF FF", rowKeys(scanAll(t, st, all, kv.PrefixEnd(all))),
		[]string{`"\xff\xff"`, `"\xff\xff\x00"`})
}

func testCellOrder(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{
		{Name: "b", MaxVersions: 3}, {Name: "a", MaxVersions: 3},
	}})
	apply(t, st,
		put("r", "b", "y", 1, "b-y-1"),
		put("r", "a", "z", 1, "a-z-1"),
		put("r", "b", "x", 2, "b-x-2"),
		put("r", "a", "z", 3, "a-z-3"),
		put("r", "a", "y", 2, "a-y-2"),
		put("r", "a", "z", 2, "a-z-2"),
	)
	equalStrings(t, "cell order", cellStrings(get(t, st, "r", kv.MaxVersions(3))), []string{
		`a:"y"@2="a-y-2"`,
		`a:"z"@3="a-z-3"`,
		`a:"z"@2="a-z-2"`,
		`a:"z"@1="a-z-1"`,
		`b:"x"@2="b-x-2"`,
		`b:"y"@1="b-y-1"`,
	})
}

func testFamilySelection(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}})
	apply(t, st,
		put("r1", "a", "q", 1, "a1"), put("r1", "b", "q", 1, "b1"), put("r1", "c", "q", 1, "c1"),
		put("r2", "b", "q", 1, "b2"),
	)
	equalStrings(t, "get family b", cellStrings(get(t, st, "r1", kv.Families("b"))), []string{`b:"q"@1="b1"`})
	equalStrings(t, "get families a,c", cellStrings(get(t, st, "r1", kv.Families("a", "c"))),
		[]string{`a:"q"@1="a1"`, `c:"q"@1="c1"`})
	// A scan skips rows that have no cell in the selected families.
	rows := scanAll(t, st, nil, nil, kv.Families("a"))
	equalStrings(t, "scan family a", rowKeys(rows), []string{`"r1"`})
	equalStrings(t, "scan family a cells", cellStrings(rows[0]), []string{`a:"q"@1="a1"`})
	err := st.Apply(context.Background(), table, []kv.Mutation{put("r1", "nope", "q", 1, "x")})
	wantErr(t, "put to an unknown family", err, kv.ErrInvalidArgument)
}

func testNewerWins(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	apply(t, st, put("r", "a", "q", 20, "at-20"))
	apply(t, st, put("r", "a", "q", 10, "at-10"))
	equalStrings(t, "newest", cellStrings(get(t, st, "r")), []string{`a:"q"@20="at-20"`})
	apply(t, st, put("r", "a", "q", 30, "at-30"))
	equalStrings(t, "newest after a newer put", cellStrings(get(t, st, "r")), []string{`a:"q"@30="at-30"`})
}

func testSameTimestampLastWriteWins(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a", MaxVersions: 5}}})
	apply(t, st, put("r", "a", "q", 42, "first"))
	apply(t, st, put("r", "a", "q", 42, "second"))
	// Within one batch, the later mutation wins too.
	apply(t, st, put("r", "a", "p", 7, "one"), put("r", "a", "p", 7, "two"))
	equalStrings(t, "same timestamp", cellStrings(get(t, st, "r", kv.MaxVersions(5))), []string{
		`a:"p"@7="two"`,
		`a:"q"@42="second"`,
	})
}

func testMaxVersions(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a", MaxVersions: 3}, {Name: "b"}}})
	for ts := int64(1); ts <= 5; ts++ {
		apply(t, st, put("r", "a", "q", ts, fmt.Sprintf("a%d", ts)), put("r", "b", "q", ts, fmt.Sprintf("b%d", ts)))
	}
	equalStrings(t, "MaxVersions(10)", cellStrings(get(t, st, "r", kv.MaxVersions(10))), []string{
		`a:"q"@5="a5"`, `a:"q"@4="a4"`, `a:"q"@3="a3"`, `b:"q"@5="b5"`,
	})
	equalStrings(t, "MaxVersions(2)", cellStrings(get(t, st, "r", kv.MaxVersions(2))), []string{
		`a:"q"@5="a5"`, `a:"q"@4="a4"`, `b:"q"@5="b5"`,
	})
	equalStrings(t, "default one version", cellStrings(get(t, st, "r")), []string{`a:"q"@5="a5"`, `b:"q"@5="b5"`})
}

func testTimeRange(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a", MaxVersions: 10}}})
	for ts := int64(100); ts <= 500; ts += 100 {
		apply(t, st, put("r", "a", "q", ts, fmt.Sprint(ts)))
	}
	equalStrings(t, "[200, 400)", cellStrings(get(t, st, "r", kv.TimeRange(200, 400), kv.MaxVersions(10))),
		[]string{`a:"q"@300="300"`, `a:"q"@200="200"`})
	// With one version, the newest cell inside the range is returned.
	equalStrings(t, "[0, 250) newest", cellStrings(get(t, st, "r", kv.TimeRange(0, 250))), []string{`a:"q"@200="200"`})
	rows := scanAll(t, st, nil, nil, kv.TimeRange(501, 1000))
	equalStrings(t, "scan of an empty time range", rowKeys(rows), nil)
}

func testDeleteColumn(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a", MaxVersions: 10}}})
	for ts := int64(1); ts <= 4; ts++ {
		apply(t, st, put("r", "a", "q", ts, fmt.Sprint(ts)), put("r", "a", "other", ts, fmt.Sprint(ts)))
	}
	apply(t, st, kv.DeleteColumn([]byte("r"), "a", []byte("q"), 2))
	equalStrings(t, "after DeleteColumn up to 2", cellStrings(get(t, st, "r", kv.MaxVersions(10))), []string{
		`a:"other"@4="4"`, `a:"other"@3="3"`, `a:"other"@2="2"`, `a:"other"@1="1"`,
		`a:"q"@4="4"`, `a:"q"@3="3"`,
	})
	apply(t, st, kv.DeleteColumn([]byte("r"), "a", []byte("q"), kv.MaxTimestamp))
	equalStrings(t, "after DeleteColumn of all", cellStrings(get(t, st, "r", kv.MaxVersions(10))), []string{
		`a:"other"@4="4"`, `a:"other"@3="3"`, `a:"other"@2="2"`, `a:"other"@1="1"`,
	})
}

func testDeleteFamilyAndRow(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a", MaxVersions: 10}, {Name: "b", MaxVersions: 10}}})
	for ts := int64(1); ts <= 3; ts++ {
		apply(t, st,
			put("r1", "a", "x", ts, "v"), put("r1", "a", "y", ts, "v"), put("r1", "b", "x", ts, "v"),
			put("r2", "a", "x", ts, "v"), put("r2", "b", "x", ts, "v"),
		)
	}
	apply(t, st, kv.DeleteFamily([]byte("r1"), "a", 2))
	equalStrings(t, "r1 after DeleteFamily(a, 2)", cellStrings(get(t, st, "r1", kv.MaxVersions(10))), []string{
		`a:"x"@3="v"`, `a:"y"@3="v"`, `b:"x"@3="v"`, `b:"x"@2="v"`, `b:"x"@1="v"`,
	})
	apply(t, st, kv.DeleteRow([]byte("r2"), 2))
	equalStrings(t, "r2 after DeleteRow(2)", cellStrings(get(t, st, "r2", kv.MaxVersions(10))), []string{
		`a:"x"@3="v"`, `b:"x"@3="v"`,
	})
	apply(t, st, kv.DeleteRow([]byte("r2"), kv.MaxTimestamp))
	equalStrings(t, "rows after deleting r2 whole", rowKeys(scanAll(t, st, nil, nil)), []string{`"r1"`})
}

func testDeleteThenNewerPut(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "a", MaxVersions: 5}}})
	apply(t, st, put("r", "a", "q", 100, "old"), put("r", "a", "q", 2000, "newer"), put("r", "a", "late", 50, "other column"))
	apply(t, st, kv.DeleteColumn([]byte("r"), "a", []byte("q"), 1000))
	equalStrings(t, "after delete", cellStrings(get(t, st, "r", kv.MaxVersions(5))),
		[]string{`a:"late"@50="other column"`, `a:"q"@2000="newer"`})
	// What compaction relies on: a sample written later at a newer timestamp, or
	// at another qualifier with an older one, is visible (kv/doc.go, Deletes).
	apply(t, st, put("r", "a", "q", 1001, "just after"), put("r", "a", "late2", 10, "another column"))
	equalStrings(t, "puts after delete", cellStrings(get(t, st, "r", kv.MaxVersions(5))), []string{
		`a:"late"@50="other column"`,
		`a:"late2"@10="another column"`,
		`a:"q"@2000="newer"`,
		`a:"q"@1001="just after"`,
	})
}

// tombstones returns the store's tombstone counts; every store of this suite
// counts them.
func tombstones(t *testing.T, st kv.Store) kv.Tombstones {
	t.Helper()
	tc, ok := st.(kv.TombstoneCounter)
	if !ok {
		t.Fatalf("%T does not implement kv.TombstoneCounter", st)
	}
	return tc.Tombstones()
}

// applyCounting applies muts and returns the tombstones they left behind.
func applyCounting(t *testing.T, st kv.Store, muts ...kv.Mutation) kv.Tombstones {
	t.Helper()
	before := tombstones(t, st)
	apply(t, st, muts...)
	after := tombstones(t, st)
	return kv.Tombstones{Point: after.Point - before.Point, Range: after.Range - before.Range}
}

// familyCells returns puts of n cells into (row, family), qualifiers q000, q001,
// ..., each at ts.
func familyCells(row, family string, n int, ts int64) []kv.Mutation {
	muts := make([]kv.Mutation, n)
	for i := range muts {
		muts[i] = put(row, family, fmt.Sprintf("q%03d", i), ts, fmt.Sprint(i))
	}
	return muts
}

func testTombstonesFamilyAll(t *testing.T, st kv.Store, cfg config) {
	createTable(t, st, simpleSpec)
	apply(t, st, familyCells("r", "a", 200, 100)...)
	apply(t, st, put("r", "b", "q", 100, "other family"), put("s", "a", "q", 100, "other row"))
	if got, want := applyCounting(t, st, kv.DeleteFamily([]byte("r"), "a", 100)), cfg.tombstones(kv.Tombstones{Range: 1}); got != want {
		t.Fatalf("DeleteFamily of 200 cells left %+v, want %+v", got, want)
	}
	equalStrings(t, "row r", cellStrings(get(t, st, "r")), []string{`b:"q"@100="other family"`})
	equalStrings(t, "row s", cellStrings(get(t, st, "s")), []string{`a:"q"@100="other row"`})
}

func testTombstonesFamilySpared(t *testing.T, st kv.Store, cfg config) {
	createTable(t, st, simpleSpec)
	muts := familyCells("r", "a", 200, 100)
	muts[100] = put("r", "a", "q100", 200, "newer") // in the middle, above the delete
	apply(t, st, muts...)
	got := applyCounting(t, st, kv.DeleteFamily([]byte("r"), "a", 150))
	if cfg.cellsInMemory && got != (kv.Tombstones{}) {
		t.Fatalf("DeleteFamily of cells in memory left %+v, want none", got)
	}
	if !cfg.cellsInMemory && (got.Point != 0 || got.Range < 1 || got.Range > 2) {
		t.Fatalf("DeleteFamily sparing one cell among 200 left %+v, want 0 point and 1 or 2 range tombstones", got)
	}
	equalStrings(t, "row r", cellStrings(get(t, st, "r")), []string{`a:"q100"@200="newer"`})
}

func testTombstonesColumn(t *testing.T, st kv.Store, cfg config) {
	createTable(t, st, simpleSpec)
	apply(t, st, put("r", "a", "q", 100, "gone"), put("r", "a", "p", 100, "kept"))
	if got, want := applyCounting(t, st, kv.DeleteColumn([]byte("r"), "a", []byte("q"), 100)), cfg.tombstones(kv.Tombstones{Point: 1}); got != want {
		t.Fatalf("DeleteColumn of one version left %+v, want %+v", got, want)
	}
	equalStrings(t, "row r", cellStrings(get(t, st, "r")), []string{`a:"p"@100="kept"`})
}

func testTombstonesManyRows(t *testing.T, st kv.Store, cfg config) {
	createTable(t, st, simpleSpec)
	const rows = 100
	var puts, deletes []kv.Mutation
	for r := range rows {
		row := fmt.Sprintf("row-%03d", r)
		puts = append(puts, familyCells(row, "a", 10, 100)...)
		puts = append(puts, put(row, "a", "z", 101, "newer"))
		deletes = append(deletes, kv.DeleteFamily([]byte(row), "a", 100))
	}
	apply(t, st, puts...)
	if got, want := applyCounting(t, st, deletes...), cfg.tombstones(kv.Tombstones{Range: rows}); got != want {
		t.Fatalf("a batch of %d DeleteFamily left %+v, want %+v", rows, got, want)
	}
	rs := scanAll(t, st, nil, nil)
	if len(rs) != rows {
		t.Fatalf("scan returned %d rows, want %d", len(rs), rows)
	}
	for _, r := range rs {
		equalStrings(t, fmt.Sprintf("row %s", r.Key), cellStrings(r), []string{`a:"z"@101="newer"`})
	}
}

func testTombstonesRow(t *testing.T, st kv.Store, cfg config) {
	createTable(t, st, simpleSpec)
	apply(t, st, append(familyCells("r", "a", 20, 100), familyCells("r", "b", 20, 100)...)...)
	apply(t, st, put("s", "a", "q", 1, "other row"))
	if got, want := applyCounting(t, st, kv.DeleteRow([]byte("r"), kv.MaxTimestamp)), cfg.tombstones(kv.Tombstones{Range: 1}); got != want {
		t.Fatalf("DeleteRow of 40 cells left %+v, want %+v", got, want)
	}
	equalStrings(t, "rows", rowKeys(scanAll(t, st, nil, nil)), []string{`"s"`})
}

// testDeleteFamilyConcurrentPuts: writers put cells above T into a row while
// its family is deleted up to T, round after round, between cells at or below
// T (which the embedded store deletes with range deletions around the writers'
// cells). No writer's cell may be lost.
func testDeleteFamilyConcurrentPuts(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	const (
		writers = 8
		each    = 40
		rounds  = 20
		newTs   = 1_000_000 // above every delete
	)
	// oldCells are the cells of round k, at timestamp k, each sorting right
	// after one of the writers' qualifiers.
	oldCells := func(k int64) []kv.Mutation {
		var muts []kv.Mutation
		for w := range writers {
			for i := 0; i < each; i += 4 {
				muts = append(muts, put("r", "a", fmt.Sprintf("w%02d-%04d~", w, i), k, "old"))
			}
		}
		return muts
	}
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				m := put("r", "a", fmt.Sprintf("w%02d-%04d", w, i), newTs+int64(i), fmt.Sprintf("w%d-%d", w, i))
				if err := st.Apply(ctx, table, []kv.Mutation{m}); err != nil {
					errs <- fmt.Errorf("writer %d put %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for k := int64(1); k <= rounds; k++ {
			if err := st.Apply(ctx, table, oldCells(k)); err != nil {
				errs <- fmt.Errorf("round %d: put: %w", k, err)
				return
			}
			if err := st.Apply(ctx, table, []kv.Mutation{kv.DeleteFamily([]byte("r"), "a", k)}); err != nil {
				errs <- fmt.Errorf("round %d: delete: %w", k, err)
				return
			}
		}
	}()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range cellStrings(get(t, st, "r")) {
		got[c] = true
	}
	var lost []string
	for w := range writers {
		for i := range each {
			c := fmt.Sprintf(`a:"w%02d-%04d"@%d="w%d-%d"`, w, i, newTs+i, w, i)
			if !got[c] {
				lost = append(lost, c)
			}
			delete(got, c)
		}
	}
	if len(lost) > 0 || len(got) > 0 {
		t.Fatalf("after the deletes, %d of the writers' %d cells are lost (%v), and %d others remain (%v)",
			len(lost), writers*each, lost, len(got), slices.Sorted(maps.Keys(got)))
	}
}

func testTTL(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{
		{Name: "a", TTL: time.Hour, MaxVersions: 5}, {Name: "b"},
	}})
	now := time.Now().UnixMilli()
	old, fresh := now-2*time.Hour.Milliseconds(), now-time.Minute.Milliseconds()
	apply(t, st,
		put("expired", "a", "q", old, "gone"),
		put("mixed", "a", "q", old, "gone"),
		put("mixed", "a", "q", fresh, "kept"),
		put("mixed", "b", "q", old, "no-ttl"),
	)
	equalStrings(t, "get mixed", cellStrings(get(t, st, "mixed", kv.MaxVersions(5))), []string{
		fmt.Sprintf(`a:"q"@%d="kept"`, fresh),
		fmt.Sprintf(`b:"q"@%d="no-ttl"`, old),
	})
	if r := get(t, st, "expired"); len(r.Cells) != 0 {
		t.Fatalf("expired row still returns %v", cellStrings(r))
	}
	equalStrings(t, "scan skips fully expired rows", rowKeys(scanAll(t, st, nil, nil)), []string{`"mixed"`})
}

func int64Bytes(v int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}

func testIncrementFromAbsent(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	ctx := context.Background()
	for _, step := range []struct{ delta, want int64 }{{5, 5}, {3, 8}, {-10, -2}, {0, -2}} {
		got, err := st.Increment(ctx, table, []byte("counter"), "a", []byte("n"), step.delta)
		if err != nil {
			t.Fatalf("Increment(%d): %v", step.delta, err)
		}
		if got != step.want {
			t.Fatalf("Increment(%d) = %d, want %d", step.delta, got, step.want)
		}
	}
	r := get(t, st, "counter")
	if len(r.Cells) != 1 || !bytes.Equal(r.Cells[0].Value, int64Bytes(-2)) {
		t.Fatalf("counter cell = %v, want the 8-byte big-endian encoding of -2", cellStrings(r))
	}
}

func testIncrementWrongWidth(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	apply(t, st, put("r", "a", "n", 1, "abc"))
	_, err := st.Increment(context.Background(), table, []byte("r"), "a", []byte("n"), 1)
	wantErr(t, "Increment of a 3-byte cell", err, kv.ErrInvalidArgument)
}

func testIncrementConcurrent(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	const workers, each = 8, 25
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]bool{}
		errs []error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v, err := st.Increment(context.Background(), table, []byte("counter"), "a", []byte("n"), 1)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if seen[v] {
					errs = append(errs, fmt.Errorf("value %d returned twice", v))
				}
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent increments: %v", errors.Join(errs...))
	}
	r := get(t, st, "counter")
	if len(r.Cells) != 1 || !bytes.Equal(r.Cells[0].Value, int64Bytes(workers*each)) {
		t.Fatalf("counter = %v, want %d", cellStrings(r), workers*each)
	}
	for v := int64(1); v <= workers*each; v++ {
		if !seen[v] {
			t.Fatalf("no incrementer saw %d: an update was lost", v)
		}
	}
}

func testCheckAndPut(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	ctx := context.Background()
	cas := func(expected []byte, value string) bool {
		t.Helper()
		ok, err := st.CheckAndPut(ctx, table, expected, put("r", "a", "q", 10, value))
		if err != nil {
			t.Fatalf("CheckAndPut(%q -> %q): %v", expected, value, err)
		}
		return ok
	}
	if !cas(nil, "first") {
		t.Fatal("CheckAndPut expecting absence on an absent cell was not applied")
	}
	if cas(nil, "second") {
		t.Fatal("CheckAndPut expecting absence on a present cell was applied")
	}
	if cas([]byte("wrong"), "third") {
		t.Fatal("CheckAndPut with a wrong expected value was applied")
	}
	equalStrings(t, "after failed swaps", cellStrings(get(t, st, "r")), []string{`a:"q"@10="first"`})
	if !cas([]byte("first"), "fourth") {
		t.Fatal("CheckAndPut with the right expected value was not applied")
	}
	equalStrings(t, "after swap", cellStrings(get(t, st, "r")), []string{`a:"q"@10="fourth"`})
	_, err := st.CheckAndPut(ctx, table, nil, kv.DeleteRow([]byte("r"), 10))
	wantErr(t, "CheckAndPut with a delete", err, kv.ErrInvalidArgument)
}

func testCheckAndPutRace(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	const racers = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		errs    []error
	)
	start := make(chan struct{})
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			value := fmt.Sprintf("racer-%d", i)
			ok, err := st.CheckAndPut(context.Background(), table, nil, put("lease", "a", "owner", 1, value))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				winners = append(winners, value)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("racers failed: %v", errors.Join(errs...))
	}
	if len(winners) != 1 {
		t.Fatalf("%d racers won (%v), want exactly 1", len(winners), winners)
	}
	equalStrings(t, "stored owner", cellStrings(get(t, st, "lease")), []string{fmt.Sprintf(`a:"owner"@1=%q`, winners[0])})
}

func testLargeBatch(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	const rowsN, perRow = 100, 100
	muts := make([]kv.Mutation, 0, rowsN*perRow)
	for r := 0; r < rowsN; r++ {
		for c := 0; c < perRow; c++ {
			q := binary.BigEndian.AppendUint32(nil, uint32(c))
			muts = append(muts, kv.Put([]byte(fmt.Sprintf("row-%03d", r)), "a", q, int64(1000+c), int64Bytes(int64(r*perRow+c))))
		}
	}
	apply(t, st, muts...)
	rows := scanAll(t, st, nil, nil)
	if len(rows) != rowsN {
		t.Fatalf("scan returned %d rows, want %d", len(rows), rowsN)
	}
	for r, row := range rows {
		if want := fmt.Sprintf("row-%03d", r); string(row.Key) != want || len(row.Cells) != perRow {
			t.Fatalf("row %d = %q with %d cells, want %s with %d", r, row.Key, len(row.Cells), want, perRow)
		}
		for c, cell := range row.Cells {
			if binary.BigEndian.Uint32(cell.Qualifier) != uint32(c) || cell.Timestamp != int64(1000+c) ||
				!bytes.Equal(cell.Value, int64Bytes(int64(r*perRow+c))) {
				t.Fatalf("row %d cell %d = %s", r, c, cellString(cell))
			}
		}
	}
}

func testManyRowsScan(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	const n = 3000
	muts := make([]kv.Mutation, n)
	for i := range muts {
		muts[i] = put(fmt.Sprintf("k%05d", i), "a", "q", 1, strings.Repeat("x", 200))
	}
	apply(t, st, muts...)
	sc := st.Scan(context.Background(), table, nil, nil)
	defer sc.Close()
	i := 0
	for sc.Next() {
		if want := fmt.Sprintf("k%05d", i); string(sc.Row().Key) != want {
			t.Fatalf("row %d = %q, want %s", i, sc.Row().Key, want)
		}
		i++
	}
	if err := sc.Err(); err != nil || i != n {
		t.Fatalf("scan ended after %d rows with %v, want %d rows", i, err, n)
	}
}

// tagRows writes rows whose t:job column is api, web or absent.
func tagRows(t *testing.T, st kv.Store) {
	createTable(t, st, kv.TableSpec{Name: table, Families: []kv.FamilySpec{{Name: "r"}, {Name: "t"}}})
	apply(t, st,
		put("1", "r", "v", 1, "one"), put("1", "t", "job", 1, "api"),
		put("2", "r", "v", 1, "two"), put("2", "t", "job", 1, "web"),
		put("3", "r", "v", 1, "three"),
		put("4", "r", "v", 1, "four"), put("4", "t", "job", 1, "api"), put("4", "t", "zone", 1, "eu"),
	)
}

func testColumnValueFilter(t *testing.T, st kv.Store) {
	tagRows(t, st)
	apiOnly := kv.ColumnValueFilter{Family: "t", Qualifier: []byte("job"), Op: kv.Equal, Value: []byte("api"), FilterIfMissing: true}
	rows := scanAll(t, st, nil, nil, kv.WithFilter(apiOnly))
	equalStrings(t, "job=api", rowKeys(rows), []string{`"1"`, `"4"`})
	equalStrings(t, "row 4 cells", cellStrings(rows[1]), []string{`r:"v"@1="four"`, `t:"job"@1="api"`, `t:"zone"@1="eu"`})
	notAPI := kv.ColumnValueFilter{Family: "t", Qualifier: []byte("job"), Op: kv.NotEqual, Value: []byte("api"), FilterIfMissing: true}
	equalStrings(t, "job!=api", rowKeys(scanAll(t, st, nil, nil, kv.WithFilter(notAPI))), []string{`"2"`})
	zone := kv.ColumnValueFilter{Family: "t", Qualifier: []byte("zone"), Op: kv.Equal, Value: []byte("eu"), FilterIfMissing: true}
	equalStrings(t, "job=api and zone=eu", rowKeys(scanAll(t, st, nil, nil, kv.WithFilter(apiOnly), kv.WithFilter(zone))), []string{`"4"`})
	if r := get(t, st, "2", kv.WithFilter(apiOnly)); len(r.Cells) != 0 {
		t.Fatalf("Get of a row the filter rejects returned %v", cellStrings(r))
	}
}

func testColumnValueFilterMissing(t *testing.T, st kv.Store) {
	tagRows(t, st)
	keepMissing := kv.ColumnValueFilter{Family: "t", Qualifier: []byte("job"), Op: kv.Equal, Value: []byte("api")}
	equalStrings(t, "job=api keeping rows without job", rowKeys(scanAll(t, st, nil, nil, kv.WithFilter(keepMissing))),
		[]string{`"1"`, `"3"`, `"4"`})
	dropMissing := keepMissing
	dropMissing.FilterIfMissing = true
	equalStrings(t, "job=api dropping rows without job", rowKeys(scanAll(t, st, nil, nil, kv.WithFilter(dropMissing))),
		[]string{`"1"`, `"4"`})
}

func testColumnValueFilterUnreadFamily(t *testing.T, st kv.Store) {
	tagRows(t, st)
	f := kv.ColumnValueFilter{Family: "t", Qualifier: []byte("job"), Op: kv.Equal, Value: []byte("api")}
	sc := st.Scan(context.Background(), table, nil, nil, kv.Families("r"), kv.WithFilter(f))
	defer sc.Close()
	if sc.Next() {
		t.Fatal("scan with a filter on an unread family returned a row")
	}
	wantErr(t, "filter on an unread family", sc.Err(), kv.ErrInvalidArgument)
}

func testKeyOnlyFilter(t *testing.T, st kv.Store) {
	tagRows(t, st)
	rows := scanAll(t, st, []byte("4"), nil, kv.WithFilter(kv.KeyOnlyFilter{}))
	equalStrings(t, "key only", cellStrings(rows[0]), []string{`r:"v"@1=""`, `t:"job"@1=""`, `t:"zone"@1=""`})
}

func testColumnRangeFilter(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	var muts []kv.Mutation
	for _, q := range []string{"a", "b", "c", "d"} {
		muts = append(muts, put("r", "a", q, 1, q), put("r", "b", q, 1, q))
	}
	apply(t, st, muts...)
	f := kv.ColumnRangeFilter{Min: []byte("b"), MinInclusive: true, Max: []byte("d"), MaxInclusive: false}
	equalStrings(t, "[b, d)", cellStrings(get(t, st, "r", kv.WithFilter(f))), []string{
		`a:"b"@1="b"`, `a:"c"@1="c"`, `b:"b"@1="b"`, `b:"c"@1="c"`,
	})
	open := kv.ColumnRangeFilter{Min: []byte("c"), MinInclusive: false}
	equalStrings(t, "(c, ∞)", cellStrings(get(t, st, "r", kv.Families("a"), kv.WithFilter(open))), []string{`a:"d"@1="d"`})

	// Bounds that are prefixes of other qualifiers, with 0x00 bytes, several
	// versions of a bound, over several rows of a scan and wide rows.
	muts = muts[:0]
	for _, r := range []string{"s1", "s2", "s3"} {
		for _, q := range []string{"b", "b\x00", "b\x00\x00", "ba", "c"} {
			muts = append(muts, put(r, "a", q, 1, q), put(r, "a", q, 2, q+"'"), put(r, "b", q, 1, q))
		}
		for i := range 300 {
			muts = append(muts, put(r, "a", fmt.Sprintf("w%03d", i), 1, "w"))
		}
	}
	apply(t, st, muts...)
	between := kv.ColumnRangeFilter{Min: []byte("b"), MinInclusive: false, Max: []byte("ba"), MaxInclusive: true}
	var got []string
	for _, r := range scanAll(t, st, []byte("s1"), []byte("s4"), kv.WithFilter(between)) {
		got = append(got, string(r.Key)+" "+strings.Join(cellStrings(r), " "))
	}
	var want []string
	for _, r := range []string{"s1", "s2", "s3"} {
		want = append(want, r+` a:"b\x00"@2="b\x00'" a:"b\x00\x00"@2="b\x00\x00'" a:"ba"@2="ba'" b:"b\x00"@1="b\x00" b:"b\x00\x00"@1="b\x00\x00" b:"ba"@1="ba"`)
	}
	equalStrings(t, "(b, ba] over three rows", got, want)
	wide := kv.ColumnRangeFilter{Min: []byte("w150"), MinInclusive: true, Max: []byte("w150"), MaxInclusive: true}
	equalStrings(t, "[w150, w150] of a wide row", cellStrings(get(t, st, "s2", kv.WithFilter(wide))), []string{`a:"w150"@1="w"`})
}

func testLimits(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	var muts []kv.Mutation
	for _, r := range []string{"r1", "r2", "r3"} {
		for _, q := range []string{"x", "y", "z"} {
			muts = append(muts, put(r, "a", q, 1, r+q))
		}
	}
	apply(t, st, muts...)
	equalStrings(t, "RowLimit(2)", rowKeys(scanAll(t, st, nil, nil, kv.RowLimit(2))), []string{`"r1"`, `"r2"`})
	rows := scanAll(t, st, nil, nil, kv.CellLimit(4))
	equalStrings(t, "CellLimit(4) rows", rowKeys(rows), []string{`"r1"`, `"r2"`})
	equalStrings(t, "CellLimit(4) last row", cellStrings(rows[1]), []string{`a:"x"@1="r2x"`})
}

func testGetRows(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	apply(t, st, put("a", "a", "q", 1, "A"), put("c", "a", "q", 1, "C"))
	rows, err := st.GetRows(context.Background(), table, [][]byte{[]byte("c"), []byte("b"), []byte("a")})
	if err != nil {
		t.Fatalf("GetRows: %v", err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s=%v", r.Key, cellStrings(r)))
	}
	equalStrings(t, "GetRows", got, []string{`c=[a:"q"@1="C"]`, `b=[]`, `a=[a:"q"@1="A"]`})
}

func testInvalidMutations(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	ctx := context.Background()
	for _, m := range []kv.Mutation{
		kv.Put(nil, "a", []byte("q"), 1, []byte("v")),
		kv.Put([]byte("r"), "a", []byte("q"), -1, []byte("v")),
		kv.Put([]byte("r"), "", []byte("q"), 1, []byte("v")),
		{Kind: 99, Row: []byte("r"), Family: "a"},
	} {
		err := st.Apply(ctx, table, []kv.Mutation{put("ok", "a", "q", 1, "v"), m})
		wantErr(t, fmt.Sprintf("Apply of %+v", m), err, kv.ErrInvalidArgument)
	}
	equalStrings(t, "rows after rejected batches", rowKeys(scanAll(t, st, nil, nil)), nil)
}

func testContextCancelled(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	apply(t, st, put("r", "a", "q", 1, "v"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantErr(t, "Apply", st.Apply(ctx, table, []kv.Mutation{put("r2", "a", "q", 1, "v")}), context.Canceled)
	_, err := st.Get(ctx, table, []byte("r"))
	wantErr(t, "Get", err, context.Canceled)
	sc := st.Scan(ctx, table, nil, nil)
	for sc.Next() {
	}
	wantErr(t, "Scan", sc.Err(), context.Canceled)
	sc.Close()
	_, err = st.Increment(ctx, table, []byte("n"), "a", []byte("q"), 1)
	wantErr(t, "Increment", err, context.Canceled)
	wantErr(t, "Ping", st.Ping(ctx), context.Canceled)
	// A scan whose context is cancelled midway stops with the context's error.
	var muts []kv.Mutation
	for i := 0; i < 500; i++ {
		muts = append(muts, put(fmt.Sprintf("m%04d", i), "a", "q", 1, "v"))
	}
	apply(t, st, muts...)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	sc = st.Scan(ctx2, table, nil, nil)
	defer sc.Close()
	n := 0
	for sc.Next() {
		if n++; n == 1 {
			cancel2()
		}
	}
	wantErr(t, "Scan cancelled midway", sc.Err(), context.Canceled)
	if n >= 501 {
		t.Fatalf("cancelled scan went on to the end (%d rows)", n)
	}
}

func testUseAfterClose(t *testing.T, st kv.Store) {
	createTable(t, st, simpleSpec)
	ctx := context.Background()
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping before Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantErr(t, "Apply", st.Apply(ctx, table, []kv.Mutation{put("r", "a", "q", 1, "v")}), kv.ErrClosed)
	_, err := st.Get(ctx, table, []byte("r"))
	wantErr(t, "Get", err, kv.ErrClosed)
	sc := st.Scan(ctx, table, nil, nil)
	if sc.Next() {
		t.Fatal("Scan after Close returned a row")
	}
	wantErr(t, "Scan", sc.Err(), kv.ErrClosed)
	_, err = st.Increment(ctx, table, []byte("n"), "a", []byte("q"), 1)
	wantErr(t, "Increment", err, kv.ErrClosed)
	_, err = st.CheckAndPut(ctx, table, nil, put("r", "a", "q", 1, "v"))
	wantErr(t, "CheckAndPut", err, kv.ErrClosed)
	_, err = st.EnsureTable(ctx, simpleSpec)
	wantErr(t, "EnsureTable", err, kv.ErrClosed)
	_, err = st.ListTables(ctx)
	wantErr(t, "ListTables", err, kv.ErrClosed)
	wantErr(t, "Ping", st.Ping(ctx), kv.ErrClosed)
}
