package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/kvtest"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"go.uber.org/goleak"
)

// The tests talk to a real HBase; testing/hbase/hbase.sh starts one:
//
//	TSDB_TEST_HBASE_ZK=$(testing/hbase/hbase.sh start) go test -race ./kv/hbase/
//
// Without it they skip, unless TSDB_TEST_REQUIRE_HBASE=1 (make test, CI), where they
// fail (see testing/hbasetest).
func testZK(t testing.TB) string {
	t.Helper()
	return hbasetest.ZooKeeper(t)
}

// testLogger logs warnings and errors to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// openTestStore opens a store with a fresh table prefix on the test HBase.
// Cleanup drops the tables under the prefix (through a new store if the test
// closed this one), then closes the store.
func openTestStore(t testing.TB, tune ...func(*Options)) *Store {
	t.Helper()
	zk := testZK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := Options{Quorum: zk, TablePrefix: hbasetest.UniquePrefix("t"), Logger: testLogger(t)}
	for _, f := range tune {
		f(&opts)
	}
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		dropper := s
		if _, err := s.ListTables(ctx); errors.Is(err, kv.ErrClosed) {
			if dropper, err = Open(ctx, opts); err != nil {
				t.Errorf("cleanup: reopen: %v", err)
				return
			}
			defer dropper.Close()
		}
		tables, err := dropper.ListTables(ctx)
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, name := range tables {
			if err := dropper.DropTable(ctx, name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("cleanup: close: %v", err)
		}
	})
	return s
}

// newTestStore is the kvtest.NewStore of this backend.
func newTestStore(t testing.TB) kv.Store {
	return openTestStore(t)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ensure creates a table with one family per name, with default settings.
func ensure(t testing.TB, s *Store, name string, families ...string) {
	t.Helper()
	spec := kv.TableSpec{Name: name}
	for _, f := range families {
		spec.Families = append(spec.Families, kv.FamilySpec{Name: f, MaxVersions: 3})
	}
	created, err := s.EnsureTable(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatalf("EnsureTable(%s) = false on a fresh prefix", name)
	}
}

func apply(t testing.TB, s *Store, table string, muts ...kv.Mutation) {
	t.Helper()
	if err := s.Apply(ctxT(t), table, muts); err != nil {
		t.Fatal(err)
	}
}

func cellsString(row kv.Row) string {
	var parts []string
	for _, c := range row.Cells {
		parts = append(parts, fmt.Sprintf("%s:%s@%d=%s", c.Family, c.Qualifier, c.Timestamp, c.Value))
	}
	return strings.Join(parts, " ")
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		addr, quorum, root string
	}{
		{"127.0.0.1:2181", "127.0.0.1:2181", "/hbase"},
		{"zk1:2181,zk2:2181/hbase-prod", "zk1:2181,zk2:2181", "/hbase-prod"},
		{"zk1,zk2,zk3:2181/a/b", "zk1,zk2,zk3:2181", "/a/b"},
		{"localhost", "localhost", "/hbase"},
		{"[::1]:2181/hbase", "[::1]:2181", "/hbase"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			q, r, err := ParseAddress(tc.addr)
			if err != nil || q != tc.quorum || r != tc.root {
				t.Errorf("ParseAddress(%q) = %q, %q, %v; want %q, %q", tc.addr, q, r, err, tc.quorum, tc.root)
			}
		})
	}
	for _, bad := range []string{
		"", "/hbase", "zk1:2181/", "zk1:2181//x", "zk1:2181/a/", "zk1,,zk2:2181", ",zk1",
		"zk1:abc", "zk1:0", "zk1:70000", "zk1:", ":2181", "::1:2181", "zk 1:2181", "[::1]",
	} {
		t.Run("rejects "+bad, func(t *testing.T) {
			if q, r, err := ParseAddress(bad); err == nil {
				t.Errorf("ParseAddress(%q) = %q, %q, nil; want an error", bad, q, r)
			}
		})
	}
}

func TestShellCommands(t *testing.T) {
	specs := []kv.TableSpec{
		{
			Name: "data",
			Families: []kv.FamilySpec{
				{Name: "r", TTL: time.Hour, Compression: "snappy", InMemoryCompaction: "basic"},
				{Name: "c", MaxVersions: 2, BlockEncoding: "FAST_DIFF", BloomFilter: "ROWCOL"},
			},
			SplitKeys: [][]byte{{0x01}, {0x02}, []byte("a\"b\\#{x}'"), {0x7f, 0xff, 0x00}},
		},
		{
			Name:     "meta",
			Families: []kv.FamilySpec{{Name: "m", TTL: 48 * time.Hour}},
		},
	}
	got := ShellCommands("tsdb-", specs)
	want := `create 'tsdb-data', {NAME => 'r', VERSIONS => 1, TTL => 3600, COMPRESSION => 'SNAPPY', DATA_BLOCK_ENCODING => 'NONE', BLOOMFILTER => 'ROW', IN_MEMORY_COMPACTION => 'BASIC'}, {NAME => 'c', VERSIONS => 2, COMPRESSION => 'NONE', DATA_BLOCK_ENCODING => 'FAST_DIFF', BLOOMFILTER => 'ROWCOL'}, SPLITS => ["\x01", "\x02", "a\x22b\x5C\x23{x}'", "\x7F\xFF\x00"]
create 'tsdb-meta', {NAME => 'm', VERSIONS => 1, TTL => 172800, COMPRESSION => 'NONE', DATA_BLOCK_ENCODING => 'NONE', BLOOMFILTER => 'ROW'}
`
	if got != want {
		t.Errorf("ShellCommands:\n got: %s\nwant: %s", got, want)
	}
	if got := ShellCommands("", specs[1:]); !strings.HasPrefix(got, "create 'tsdb-meta', ") {
		t.Errorf("ShellCommands with the default prefix: %s", got)
	}
}

func TestPlanGroupsPutsByRowAndDeletesByTimestamp(t *testing.T) {
	r1, r2 := []byte("r1"), []byte("r2")
	muts := []kv.Mutation{
		kv.Put(r1, "f", []byte("a"), 5, []byte("1")),
		kv.Put(r1, "f", []byte("b"), 5, []byte("2")), // same row and timestamp: same call
		kv.Put(r2, "f", []byte("a"), 6, []byte("3")),
		kv.Put(r1, "f", []byte("a"), 5, []byte("4")), // overwrites index 0
		kv.DeleteColumn(r2, "f", []byte("a"), 10),
		kv.DeleteColumn(r2, "f", []byte("b"), 10), // merged with the delete above
		kv.Put(r1, "f", []byte("c"), 7, []byte("5")),
		kv.DeleteRow(r1, 100),
		kv.DeleteFamily(r1, "f", 100),
	}
	calls := groupIntoCalls(muts)
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%s:%s@%d%v", c.kind, c.row, c.ts, c.idx))
	}
	want := []string{
		"put:r1@0[0 1 3 6]", "put:r2@0[2]", "delete-column:r2@10[4 5]",
		"delete-row:r1@100[7]", "delete-family:r1@100[8]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("groupIntoCalls:\n got %v\nwant %v", got, want)
	}
	var cells []string
	for _, c := range calls[0].cells {
		cells = append(cells, fmt.Sprintf("%s:%s@%d=%s", c.family, c.qualifier, c.ts, c.value))
	}
	// Two puts of one cell version: the later value, in the place of the first.
	if want := []string{"f:a@5=4", "f:b@5=2", "f:c@7=5"}; !slices.Equal(cells, want) {
		t.Errorf("cells of r1's put:\n got %v\nwant %v", cells, want)
	}
}

func TestOpenUnreachable(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	s, err := Open(ctx, Options{Quorum: "127.0.0.1:1", Logger: testLogger(t)})
	elapsed := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable ZooKeeper succeeded")
	}
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("error %v does not wrap kv.ErrUnavailable", err)
	}
	for _, part := range []string{"127.0.0.1:1", "/hbase", "is HBase running"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	if elapsed > 3*time.Second {
		t.Errorf("Open took %v to fail with a 2s deadline", elapsed)
	}
	t.Logf("Open failed after %v: %v", elapsed.Round(time.Millisecond), err)
	waitGoroutines(t, before)
}

func TestOpenWrongZnodeRoot(t *testing.T) {
	zk := testZK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Open(ctx, Options{Quorum: zk, ZookeeperRoot: "/no-such-hbase", Logger: testLogger(t)})
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "/no-such-hbase") {
		t.Fatalf("Open with a wrong znode root: %v; want ErrUnavailable naming the root", err)
	}
	t.Log(err)
}

// TestMain checks that the package's tests, which open and close many clients,
// leave no goroutine behind: gohbase's region clients and the ZooKeeper client
// must all be gone once a Store is closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitGoroutines checks that no goroutine started since ignore was taken is still
// running; goleak retries for a while, as gohbase's and the ZooKeeper client's
// goroutines take a moment to notice they are done.
func waitGoroutines(t *testing.T, ignore goleak.Option) {
	t.Helper()
	goleak.VerifyNone(t, ignore)
}

func TestOpenCloseLeavesNoGoroutines(t *testing.T) {
	zk := testZK(t)
	before := goleak.IgnoreCurrent()
	ctx := ctxT(t)
	s, err := Open(ctx, Options{Quorum: zk, TablePrefix: hbasetest.UniquePrefix("t"), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ensure(t, s, "g", "f")
	apply(t, s, "g", kv.Put([]byte("row"), "f", []byte("q"), 1, []byte("v")))
	if _, err := s.Get(ctx, "g", []byte("row")); err != nil {
		t.Fatal(err)
	}
	sc := s.Scan(ctx, "g", nil, nil)
	for sc.Next() {
	}
	sc.Close()
	if err := s.DropTable(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

func TestClosedStore(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "c", "f")
	sc := s.Scan(ctx, "c", nil, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if sc.Next() || !errors.Is(sc.Err(), kv.ErrClosed) {
		t.Errorf("scanner opened before Close: Next after Close gives err %v, want ErrClosed", sc.Err())
	}
	sc.Close()
	checks := map[string]error{
		"Apply":     s.Apply(ctx, "c", []kv.Mutation{kv.Put([]byte("r"), "f", nil, 1, nil)}),
		"Ping":      s.Ping(ctx),
		"DropTable": s.DropTable(ctx, "c"),
		"EnsureTable": func() error {
			_, err := s.EnsureTable(ctx, kv.TableSpec{Name: "d", Families: []kv.FamilySpec{{Name: "f"}}})
			return err
		}(),
		"Scan": func() error {
			sc := s.Scan(ctx, "c", nil, nil)
			defer sc.Close()
			sc.Next()
			return sc.Err()
		}(),
	}
	for name, err := range checks {
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestPing(t *testing.T) {
	s := openTestStore(t)
	if err := s.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

func TestTables(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	spec := kv.TableSpec{
		Name: "data",
		Families: []kv.FamilySpec{
			{Name: "r", TTL: time.Hour, Compression: "NONE", BlockEncoding: "FAST_DIFF"},
			{Name: "c", BloomFilter: "ROWCOL"},
		},
		SplitKeys: [][]byte{{0x04}, {0x08}, {0x0c}},
	}
	start := time.Now()
	created, err := s.EnsureTable(ctx, spec)
	if err != nil || !created {
		t.Fatalf("EnsureTable = %v, %v; want true, nil", created, err)
	}
	t.Logf("created a table of 2 families and 4 regions in %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	created, err = s.EnsureTable(ctx, spec)
	if err != nil || created {
		t.Fatalf("EnsureTable of an existing table = %v, %v; want false, nil", created, err)
	}
	t.Logf("EnsureTable of an existing table took %v", time.Since(start).Round(time.Millisecond))
	ensure(t, s, "index", "i")
	tables, err := s.ListTables(ctx)
	if err != nil || !slices.Equal(tables, []string{"data", "index"}) {
		t.Fatalf("ListTables = %v, %v; want [data index]", tables, err)
	}

	// Writes land in every pre-split region and read back in key order. (Family r
	// has a TTL of an hour: the cells must be recent.)
	var muts []kv.Mutation
	now := time.Now().UnixMilli()
	for i := range 16 {
		muts = append(muts, kv.Put([]byte{byte(i), 'k'}, "r", []byte("q"), now, []byte{byte(i)}))
	}
	apply(t, s, "data", muts...)
	sc := s.Scan(ctx, "data", nil, nil)
	n := 0
	for sc.Next() {
		if k := sc.Row().Key; k[0] != byte(n) {
			t.Errorf("row %d has key %x", n, k)
		}
		n++
	}
	if sc.Err() != nil || n != 16 {
		t.Errorf("scan over 4 regions: %d rows, err %v; want 16", n, sc.Err())
	}
	sc.Close()

	start = time.Now()
	if err := s.DropTable(ctx, "data"); err != nil {
		t.Fatal(err)
	}
	t.Logf("dropped a table of 4 regions in %v", time.Since(start).Round(time.Millisecond))
	if err := s.DropTable(ctx, "data"); !errors.Is(err, kv.ErrTableNotFound) {
		t.Errorf("DropTable of a missing table: %v, want ErrTableNotFound", err)
	}
	if err := s.Apply(ctx, "data", muts[:1]); !errors.Is(err, kv.ErrTableNotFound) {
		t.Errorf("Apply to a dropped table: %v, want ErrTableNotFound", err)
	}
	if _, err := s.Get(ctx, "nope", []byte("r")); !errors.Is(err, kv.ErrTableNotFound) {
		t.Errorf("Get from a missing table: %v, want ErrTableNotFound", err)
	}
	// A table of the same name created again is usable despite gohbase's cache of
	// the dropped table's regions.
	ensure(t, s, "data", "r")
	apply(t, s, "data", muts[:1]...)
	row, err := s.Get(ctx, "data", muts[0].Row)
	if err != nil || len(row.Cells) != 1 {
		t.Errorf("Get from a recreated table: %v, %v", cellsString(row), err)
	}
	tables, err = s.ListTables(ctx)
	if err != nil || !slices.Equal(tables, []string{"data", "index"}) {
		t.Fatalf("ListTables = %v, %v; want [data index]", tables, err)
	}
}

func TestEnsureTableRejects(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	for name, spec := range map[string]kv.TableSpec{
		"no families":         {Name: "x"},
		"bad table name":      {Name: "a b", Families: []kv.FamilySpec{{Name: "f"}}},
		"unknown compression": {Name: "y", Families: []kv.FamilySpec{{Name: "f", Compression: "NOPE"}}},
	} {
		if _, err := s.EnsureTable(ctx, spec); !errors.Is(err, kv.ErrInvalidArgument) {
			t.Errorf("%s: EnsureTable = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// TestDeleteHidesOlderPutsWrittenLater pins HBase's delete semantics that
// kv/doc.go documents: without NEW_VERSION_BEHAVIOR, a delete up to T hides a
// put at a timestamp <= T written after it (until a major compaction), and leaves
// a later put at a newer timestamp visible.
func TestDeleteHidesOlderPutsWrittenLater(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "tomb", "f")
	row, q := []byte("row"), []byte("q")
	apply(t, s, "tomb", kv.Put(row, "f", q, 5, []byte("old")))
	apply(t, s, "tomb", kv.DeleteColumn(row, "f", q, 10))
	apply(t, s, "tomb", kv.Put(row, "f", q, 5, []byte("hidden")))
	got, err := s.Get(ctx, "tomb", row)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 0 {
		t.Fatalf("put at 5 after a delete up to 10: row is %q, want it hidden", cellsString(got))
	}
	apply(t, s, "tomb", kv.Put(row, "f", q, 11, []byte("new")))
	if got, err = s.Get(ctx, "tomb", row); err != nil || cellsString(got) != "f:q@11=new" {
		t.Fatalf("put at 11 after a delete up to 10: row is %q (%v), want f:q@11=new", cellsString(got), err)
	}
}

func TestApplyInOneBatch(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "b", "f", "g")
	for n, tc := range []struct {
		name string
		muts []kv.Mutation
		want string
	}{
		{"put then delete of the cell", []kv.Mutation{
			kv.Put(nil, "f", []byte("a"), 5, []byte("1")),
			kv.DeleteColumn(nil, "f", []byte("a"), 10),
		}, ""},
		{"delete then put with a newer timestamp", []kv.Mutation{
			kv.DeleteColumn(nil, "f", []byte("a"), 10),
			kv.Put(nil, "f", []byte("a"), 15, []byte("2")),
		}, "f:a@15=2"},
		{"two puts of one cell", []kv.Mutation{
			kv.Put(nil, "f", []byte("a"), 5, []byte("3")),
			kv.Put(nil, "f", []byte("a"), 5, []byte("4")),
		}, "f:a@5=4"},
		{"family and row deletes", []kv.Mutation{
			kv.Put(nil, "f", []byte("a"), 5, []byte("5")),
			kv.Put(nil, "f", []byte("b"), 20, []byte("6")),
			kv.Put(nil, "g", []byte("a"), 5, []byte("7")),
			kv.DeleteFamily(nil, "f", 10),
		}, "f:b@20=6 g:a@5=7"},
		{"row delete up to a timestamp", []kv.Mutation{
			kv.Put(nil, "f", []byte("a"), 30, []byte("8")),
			kv.DeleteRow(nil, 25),
		}, "f:a@30=8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has a row of its own: a delete's tombstone outlives the case.
			row := fmt.Appendf(nil, "row%d", n)
			for i := range tc.muts {
				tc.muts[i].Row = row
			}
			apply(t, s, "b", tc.muts...)
			got, err := s.Get(ctx, "b", row)
			if err != nil {
				t.Fatal(err)
			}
			if cellsString(got) != tc.want {
				t.Errorf("row is %q, want %q", cellsString(got), tc.want)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "e", "f")
	muts := []kv.Mutation{
		kv.Put([]byte("a"), "f", []byte("q"), 1, []byte("v")),
		kv.Put([]byte("b"), "nofamily", []byte("q"), 1, []byte("v")),
		kv.Put([]byte("c"), "f", []byte("q"), 1, []byte("v")),
	}
	err := s.Apply(ctx, "e", muts)
	var be *kv.BatchError
	if !errors.As(err, &be) || !errors.Is(err, kv.ErrInvalidArgument) {
		t.Fatalf("Apply with an unknown family: %v; want a BatchError wrapping ErrInvalidArgument", err)
	}
	if len(be.Failed) != 1 || be.Failed[0].Index != 1 || be.Total != 3 {
		t.Errorf("BatchError %+v; want only index 1 of 3", be)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error message spans lines: %q", err)
	}
	t.Log(err)

	invalid := []kv.Mutation{muts[0], kv.Put(nil, "f", nil, 1, nil), {Kind: 99, Row: []byte("x")}}
	err = s.Apply(ctx, "e", invalid)
	if !errors.As(err, &be) || !errors.Is(err, kv.ErrInvalidArgument) || len(be.Failed) != 2 {
		t.Fatalf("Apply with invalid mutations: %v; want a BatchError of 2", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Apply(cctx, "e", muts[:1]); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a cancelled context: %v; want context.Canceled", err)
	}
}

func TestApplyInChunks(t *testing.T) {
	s := openTestStore(t, func(o *Options) { o.MaxBatchCalls = 7 })
	ctx := ctxT(t)
	ensure(t, s, "k", "f")
	var muts []kv.Mutation
	for i := range 30 {
		muts = append(muts, kv.Put([]byte(fmt.Sprintf("r%02d", i%10)), "f", []byte{byte(i)}, int64(i), []byte{byte(i)}))
	}
	for i := range 10 {
		muts = append(muts, kv.DeleteColumn([]byte(fmt.Sprintf("r%02d", i)), "f", []byte{byte(i)}, 100))
	}
	apply(t, s, "k", muts...)
	sc := s.Scan(ctx, "k", nil, nil)
	defer sc.Close()
	rows, cells := 0, 0
	for sc.Next() {
		rows++
		cells += len(sc.Row().Cells)
	}
	if sc.Err() != nil || rows != 10 || cells != 20 {
		t.Errorf("after 40 mutations in chunks of 7: %d rows, %d cells, err %v; want 10 rows, 20 cells", rows, cells, sc.Err())
	}

	err := s.Apply(ctx, "missing", muts[:25])
	var be *kv.BatchError
	if !errors.As(err, &be) || !errors.Is(err, kv.ErrTableNotFound) || len(be.Failed) != 25 {
		t.Fatalf("Apply of 25 to a missing table: %v; want a BatchError of 25 wrapping ErrTableNotFound", err)
	}
	notSent := 0
	for i, f := range be.Failed {
		if f.Index != i {
			t.Fatalf("failure %d has index %d", i, f.Index)
		}
		if errors.Is(f.Err, errNotSent) {
			notSent++
		}
	}
	// 25 puts over 10 rows are 10 calls (one per row); the first chunk of 7 calls
	// carries rows r00-r06; the puts of r07, r08 and r09 (6 of them) are not sent.
	if notSent != 6 {
		t.Errorf("%d mutations not sent, want 6 (the puts of the rows after the first chunk of 7)", notSent)
	}
}

func TestIncrementAndCheckAndPut(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "s", "f")
	row := []byte("counter")
	for i, want := range []int64{5, 8, -2} {
		v, err := s.Increment(ctx, "s", row, "f", []byte("n"), []int64{5, 3, -10}[i])
		if err != nil || v != want {
			t.Fatalf("Increment #%d = %d, %v; want %d", i, v, err, want)
		}
	}
	apply(t, s, "s", kv.Put(row, "f", []byte("short"), 1, []byte("abc")))
	if _, err := s.Increment(ctx, "s", row, "f", []byte("short"), 1); !errors.Is(err, kv.ErrInvalidArgument) {
		t.Errorf("Increment of a 3-byte cell: %v; want ErrInvalidArgument", err)
	} else {
		t.Log(err)
	}

	put := kv.Put([]byte("id"), "f", []byte("q"), 1, []byte("one"))
	for i, tc := range []struct {
		expected []byte
		put      kv.Mutation
		want     bool
	}{
		{nil, put, true},
		{nil, put, false},
		{[]byte("two"), put, false},
		{[]byte("one"), kv.Put(put.Row, "f", put.Qualifier, 2, []byte("two")), true},
	} {
		ok, err := s.CheckAndPut(ctx, "s", tc.expected, tc.put)
		if err != nil || ok != tc.want {
			t.Fatalf("CheckAndPut #%d = %v, %v; want %v", i, ok, err, tc.want)
		}
	}
	if _, err := s.CheckAndPut(ctx, "s", nil, kv.DeleteRow(put.Row, 1)); !errors.Is(err, kv.ErrInvalidArgument) {
		t.Errorf("CheckAndPut of a delete: %v; want ErrInvalidArgument", err)
	}
}

func TestReads(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "r", "f", "t")
	var muts []kv.Mutation
	for i := range 20 {
		row := []byte(fmt.Sprintf("row%02d", i))
		for ts := int64(1); ts <= 3; ts++ {
			muts = append(muts, kv.Put(row, "f", []byte("a"), ts, []byte(fmt.Sprintf("%d.%d", i, ts))))
		}
		muts = append(muts, kv.Put(row, "f", []byte("b"), 1, []byte("b")))
		muts = append(muts, kv.Put(row, "t", []byte("job"), 1, []byte([]string{"api", "db"}[i%2])))
	}
	apply(t, s, "r", muts...)

	row, err := s.Get(ctx, "r", []byte("row03"), kv.MaxVersions(2), kv.Families("f"))
	if err != nil || cellsString(row) != "f:a@3=3.3 f:a@2=3.2 f:b@1=b" {
		t.Errorf("Get = %q, %v", cellsString(row), err)
	}
	row, err = s.Get(ctx, "r", []byte("row03"), kv.TimeRange(2, 3), kv.Families("f"))
	if err != nil || cellsString(row) != "f:a@2=3.2" {
		t.Errorf("Get in [2, 3) = %q, %v", cellsString(row), err)
	}
	row, err = s.Get(ctx, "r", []byte("nope"))
	if err != nil || len(row.Cells) != 0 || string(row.Key) != "nope" {
		t.Errorf("Get of a missing row = %+v, %v", row, err)
	}
	rows, err := s.GetRows(ctx, "r", [][]byte{[]byte("row05"), []byte("nope"), []byte("row01"), []byte("row05")}, kv.Families("t"))
	if err != nil || len(rows) != 4 {
		t.Fatalf("GetRows = %v, %v", rows, err)
	}
	for i, want := range []string{"t:job@1=db", "", "t:job@1=db", "t:job@1=db"} {
		if cellsString(rows[i]) != want {
			t.Errorf("GetRows[%d] = %q, want %q", i, cellsString(rows[i]), want)
		}
	}

	scan := func(start, stop []byte, opts ...kv.ReadOption) []string {
		t.Helper()
		sc := s.Scan(ctx, "r", start, stop, opts...)
		defer sc.Close()
		var keys []string
		for sc.Next() {
			keys = append(keys, fmt.Sprintf("%s(%d)", sc.Row().Key, len(sc.Row().Cells)))
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	for _, tc := range []struct {
		name        string
		start, stop string
		opts        []kv.ReadOption
		want        string
	}{
		{"range", "row03", "row06", nil, "row03(3) row04(3) row05(3)"},
		{"row limit", "row10", "", []kv.ReadOption{kv.RowLimit(2)}, "row10(3) row11(3)"},
		{"cell limit cuts the row", "row10", "", []kv.ReadOption{kv.CellLimit(5)}, "row10(3) row11(2)"},
		{"column value filter", "row00", "row06", []kv.ReadOption{kv.WithFilter(kv.ColumnValueFilter{
			Family: "t", Qualifier: []byte("job"), Op: kv.Equal, Value: []byte("db"), FilterIfMissing: true,
		})}, "row01(3) row03(3) row05(3)"},
		{"not equal, key only, one family", "row00", "row04", []kv.ReadOption{kv.Families("t"), kv.WithFilter(kv.ColumnValueFilter{
			Family: "t", Qualifier: []byte("job"), Op: kv.NotEqual, Value: []byte("db"),
		}), kv.WithFilter(kv.KeyOnlyFilter{})}, "row00(1) row02(1)"},
		{"column range", "row00", "row02", []kv.ReadOption{kv.WithFilter(kv.ColumnRangeFilter{
			Min: []byte("b"), MinInclusive: true,
		})}, "row00(2) row01(2)"},
		{"empty range", "row05", "row05", nil, ""},
		{"prefix", "row1", string(kv.PrefixEnd([]byte("row1"))), []kv.ReadOption{kv.RowLimit(100)}, "row10(3) row11(3) row12(3) row13(3) row14(3) row15(3) row16(3) row17(3) row18(3) row19(3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var start, stop []byte
			if tc.start != "" {
				start = []byte(tc.start)
			}
			if tc.stop != "" {
				stop = []byte(tc.stop)
			}
			if got := strings.Join(scan(start, stop, tc.opts...), " "); got != tc.want {
				t.Errorf("scan = %s\n           want %s", got, tc.want)
			}
		})
	}
	sc := s.Scan(ctx, "r", nil, nil, kv.WithFilter(kv.KeyOnlyFilter{}), kv.RowLimit(1))
	if !sc.Next() || len(sc.Row().Cells[0].Value) != 0 {
		t.Errorf("key-only scan returned values: %q", cellsString(sc.Row()))
	}
	sc.Close()
}

// TestScanLargeRows checks that rows larger than gohbase's 2 MiB per-response limit,
// which HBase sends in pieces, come back whole and in order.
func TestScanLargeRows(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "big", "f")
	value := bytes.Repeat([]byte("x"), 256<<10)
	const rows, cols = 4, 12 // 3 MiB a row
	for r := range rows {
		var muts []kv.Mutation
		for c := range cols {
			muts = append(muts, kv.Put([]byte{'r', byte('0' + r)}, "f", []byte{byte('a' + c)}, 1, value))
		}
		apply(t, s, "big", muts...)
	}
	sc := s.Scan(ctx, "big", nil, nil)
	defer sc.Close()
	n := 0
	for sc.Next() {
		row := sc.Row()
		if len(row.Cells) != cols || row.Key[1] != byte('0'+n) {
			t.Errorf("row %d: key %q with %d cells, want %d", n, row.Key, len(row.Cells), cols)
		}
		for i, c := range row.Cells {
			if c.Qualifier[0] != byte('a'+i) || !bytes.Equal(c.Value, value) {
				t.Errorf("row %d cell %d: qualifier %q, %d bytes", n, i, c.Qualifier, len(c.Value))
			}
		}
		n++
	}
	if sc.Err() != nil || n != rows {
		t.Errorf("%d rows, err %v; want %d", n, sc.Err(), rows)
	}
}

func TestScanCancel(t *testing.T) {
	s := openTestStore(t)
	ensure(t, s, "sc", "f")
	var muts []kv.Mutation
	for i := range 100 {
		muts = append(muts, kv.Put([]byte(fmt.Sprintf("%03d", i)), "f", nil, 1, nil))
	}
	apply(t, s, "sc", muts...)
	ctx, cancel := context.WithCancel(context.Background())
	sc := s.Scan(ctx, "sc", nil, nil)
	defer sc.Close()
	if !sc.Next() {
		t.Fatal(sc.Err())
	}
	cancel()
	for sc.Next() {
	}
	if !errors.Is(sc.Err(), context.Canceled) {
		t.Errorf("scan after cancel: %v, want context.Canceled", sc.Err())
	}
}

var _ io.Closer = (*Store)(nil)

func TestConformance(t *testing.T) {
	kvtest.Run(t, newTestStore)
}

func BenchmarkStore(b *testing.B) {
	kvtest.Bench(b, newTestStore)
}

func TestGohbaseLoggerLowersCancelledErrors(t *testing.T) {
	var buf bytes.Buffer
	l := gohbaseLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Error("failed looking up region", "err", context.Canceled)
	l.Error("failed looking up region", "err", fmt.Errorf("lookup: %w", context.Canceled))
	l.Debug("debug is still off")
	l.Error("dial failed", "err", errors.New("connection refused"))
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "connection refused") || !strings.Contains(got, "component=gohbase") {
		t.Errorf("logged:\n%s\nwant only the connection refused error", got)
	}
}

// opaqueError is an error that hides its cause, as gohbase's region.ServerError does.
type opaqueError struct{ msg string }

func (e opaqueError) Error() string { return e.msg }

// fakeRegionClient marshals like gohbase's region client in its log records.
type fakeRegionClient struct{ inFlight uint32 }

func (c fakeRegionClient) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"RegionServerAddress":"localhost:16020","ClientType":"MasterService","InFlight":%d}`, c.inFlight)), nil
}

func TestGohbaseLoggerLowersIdleTimeouts(t *testing.T) {
	// A real read-deadline error, as gohbase's region client sees it.
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	if err := client.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	_, timeout := client.Read(make([]byte, 1))
	if ne, ok := timeout.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", timeout)
	}

	var buf bytes.Buffer
	l := gohbaseLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Error("error occured, closing region client", "client", fakeRegionClient{0}, "err", fmt.Errorf("region.ServerError: %w", timeout))
	// gohbase's region.ServerError embeds the error without Unwrap.
	l.Error("error occured, closing region client", "client", fakeRegionClient{0}, "err", opaqueError{"region.ServerError: " + timeout.Error()})
	if got := buf.String(); got != "" {
		t.Errorf("idle timeout logged:\n%s\nwant nothing at Info", got)
	}
	l.Error("error occured, closing region client", "client", fakeRegionClient{3}, "err", timeout)
	l.Error("error occured, closing region client", "client", fakeRegionClient{0}, "err", errors.New("connection reset by peer"))
	got := buf.String()
	if strings.Count(got, "\n") != 2 || !strings.Contains(got, "i/o timeout") || !strings.Contains(got, "connection reset by peer") {
		t.Errorf("logged:\n%s\nwant the timeout with 3 calls in flight and the reset, both at Error", got)
	}
}

// TestConnTrackerHandsOutTCPConns checks that gohbase gets the *net.TCPConn
// itself (net.Buffers.WriteTo is then one writev, not one Write per buffer that
// another goroutine's request could interleave) and that closed connections are
// forgotten at the next dial and open ones closed by closeAll.
func TestConnTrackerHandsOutTCPConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr := newConnTracker()
	ctx := context.Background()
	first, err := tr.dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first.(*net.TCPConn); !ok {
		t.Fatalf("dial returned a %T, want *net.TCPConn", first)
	}
	first.Close()
	second, err := tr.dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, tracked := tr.conns[first]; tracked || len(tr.conns) != 1 {
		t.Fatalf("after closing the first connection and dialing again, %d tracked (first tracked: %v)", len(tr.conns), tracked)
	}
	tr.closeAll()
	if !isClosed(second) {
		t.Fatal("closeAll left the second connection open")
	}
	if _, err := tr.dial(ctx, "tcp", ln.Addr().String()); !errors.Is(err, errStoreClosed) {
		t.Fatalf("dial after closeAll: %v", err)
	}
}

func TestRegionBoundsGroupSplitsAtKnownBoundariesAndSize(t *testing.T) {
	var b regionBounds
	table := []byte("t")
	b.learn(table, []byte("b"), nil, []byte("d"), []byte("b"))
	var calls []*mutateCall
	for _, r := range []string{"a", "a1", "b", "c", "d", "e"} {
		calls = append(calls, &mutateCall{row: []byte(r)})
	}
	show := func(groups [][]*mutateCall) string {
		var parts []string
		for _, g := range groups {
			var rows []string
			for _, c := range g {
				rows = append(rows, string(c.row))
			}
			parts = append(parts, strings.Join(rows, " "))
		}
		return strings.Join(parts, " | ")
	}
	if got, want := show(b.group(table, calls, 10)), "a a1 | b c | d e"; got != want {
		t.Errorf("group by boundaries b, d: %q, want %q", got, want)
	}
	if got, want := show(b.group(table, calls, 1)), "a | a1 | b | c | d | e"; got != want {
		t.Errorf("group of at most 1: %q, want %q", got, want)
	}
	if got, want := show(b.group([]byte("other"), calls, 4)), "a a1 b c | d e"; got != want {
		t.Errorf("group of a table without boundaries: %q, want %q", got, want)
	}
	if !b.known(table) || b.known([]byte("other")) {
		t.Error("known: want true for the table learnt, false for another")
	}
}

// TestApplyPutsAcrossRegions writes rows of a pre-split table, whose puts go as
// one Multi RPC per region, twice: with nothing known of the regions, and with a
// made-up boundary and a forgotten real one (as after a split and a merge).
func TestApplyPutsAcrossRegions(t *testing.T) {
	s := openTestStore(t, func(o *Options) { o.MaxBatchCalls = 50 })
	ctx := ctxT(t)
	spec := kv.TableSpec{Name: "split", Families: []kv.FamilySpec{{Name: "f", MaxVersions: 3}},
		SplitKeys: [][]byte{[]byte("g"), []byte("p")}}
	if _, err := s.EnsureTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	htable, err := s.tableName("split")
	if err != nil {
		t.Fatal(err)
	}
	write := func(ts int64) {
		t.Helper()
		var muts []kv.Mutation
		for i := range 260 {
			row := []byte{byte('a' + i%26), byte('0' + i/26)}
			muts = append(muts, kv.Put(row, "f", []byte("q"), ts, []byte{byte(i)}),
				kv.Put(row, "f", []byte("r"), ts+1, []byte{byte(i)}))
		}
		apply(t, s, "split", muts...)
		sc := s.Scan(ctx, "split", nil, nil, kv.TimeRange(ts, ts+2))
		defer sc.Close()
		rows, cells := 0, 0
		for sc.Next() {
			rows++
			cells += len(sc.Row().Cells)
		}
		if sc.Err() != nil || rows != 260 || cells != 520 {
			t.Fatalf("after 520 puts at %d over 260 rows: %d rows, %d cells, err %v", ts, rows, cells, sc.Err())
		}
	}
	write(10)
	s.bounds.mu.Lock()
	got := s.bounds.tables[string(htable)]
	s.bounds.mu.Unlock()
	if want := [][]byte{[]byte("g"), []byte("p")}; !slices.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("region boundaries learnt: %q, want %q", got, want)
	}
	s.bounds.mu.Lock()
	s.bounds.tables[string(htable)] = [][]byte{[]byte("g"), []byte("k")}
	s.bounds.mu.Unlock()
	write(20)
}

func TestPlanReplacesAnEarlierVersionOfACellInALongRow(t *testing.T) {
	row := []byte("r")
	var muts []kv.Mutation
	for i := range 2 * linearCells {
		muts = append(muts, kv.Put(row, "f", []byte{byte(i)}, 5, []byte{byte(i)}))
	}
	muts = append(muts,
		kv.Put(row, "f", []byte{1}, 5, []byte("early")),     // found by the map
		kv.Put([]byte("s"), "f", []byte{1}, 5, []byte("x")), // another row between
		kv.Put(row, "f", []byte{1}, 6, []byte("newer")),     // another version: a cell of its own
	)
	calls := groupIntoCalls(muts)
	if len(calls) != 2 || len(calls[0].cells) != 2*linearCells+1 || len(calls[0].idx) != 2*linearCells+2 {
		t.Fatalf("groupIntoCalls: %d calls, first with %d cells and %d mutations", len(calls), len(calls[0].cells), len(calls[0].idx))
	}
	if c := calls[0].cells[1]; string(c.value) != "early" || c.ts != 5 {
		t.Errorf("cell 1 = %s@%d, want the later value early@5", c.value, c.ts)
	}
	if c := calls[0].cells[2*linearCells]; string(c.value) != "newer" || c.ts != 6 {
		t.Errorf("last cell = %s@%d, want newer@6", c.value, c.ts)
	}
}

// TestExactTableNames: a store with ExactTableNames reads and writes the HBase
// tables by their own names (as tsdb import opentsdb reads OpenTSDB's "tsdb"
// and "tsdb-uid"), and lists every table, those of prefixed stores included.
func TestExactTableNames(t *testing.T) {
	s := openTestStore(t)
	ctx := ctxT(t)
	ensure(t, s, "tsdb", "t")
	apply(t, s, "tsdb", kv.Put([]byte("row"), "t", []byte("q"), 1, []byte("v")))

	exact, err := Open(ctx, Options{Quorum: testZK(t), ExactTableNames: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	name := s.opts.TablePrefix + "tsdb"
	row, err := exact.Get(ctx, name, []byte("row"))
	if err != nil || cellsString(row) != "t:q@1=v" {
		t.Fatalf("Get(%s) through the exact-name store = %s, %v; want the cell the prefixed store wrote", name, cellsString(row), err)
	}
	tables, err := exact.ListTables(ctx)
	if err != nil || !slices.Contains(tables, name) {
		t.Fatalf("ListTables of the exact-name store = %v, %v; want %s among them", tables, err, name)
	}
	if _, err := exact.Get(ctx, "tsdb-no-such-table", []byte("row")); !errors.Is(err, kv.ErrTableNotFound) {
		t.Errorf("Get from a missing table: %v, want ErrTableNotFound", err)
	}

	_, err = Open(ctx, Options{Quorum: testZK(t), ExactTableNames: true, TablePrefix: "x-"})
	if want := `hbase: table prefix "x-" with ExactTableNames: give one or the other`; err == nil || err.Error() != want {
		t.Errorf("Open with a prefix and ExactTableNames: %v, want %q", err, want)
	}
}
