package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/goleak"

	"github.com/hbtsdb/hbtsdb/kv"
)

// lockHelperEnv makes the test binary, re-executed by
// TestOpenLockedByAnotherProcess, try to open the directory it names and print
// the error: a second process.
const lockHelperEnv = "EMBEDDED_TEST_OPEN_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHelperEnv); dir != "" {
		st, err := Open(context.Background(), dir, Options{})
		if err == nil {
			st.Close()
			fmt.Println("opened")
			os.Exit(0)
		}
		fmt.Println(err, errors.Is(err, ErrLocked))
		os.Exit(0)
	}
	// A closed store leaves no goroutine behind: neither Pebble's nor the
	// sweeper's.
	goleak.VerifyTestMain(m)
}

// fakeClock is an injectable Options.Clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openStore opens the store in dir, closed at the end of the test unless the test
// closed it.
func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	st, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

func ensure(t *testing.T, st kv.Store, spec kv.TableSpec) {
	t.Helper()
	if _, err := st.EnsureTable(context.Background(), spec); err != nil {
		t.Fatalf("EnsureTable(%s): %v", spec.Name, err)
	}
}

func mustApply(t *testing.T, st kv.Store, table string, muts ...kv.Mutation) {
	t.Helper()
	if err := st.Apply(context.Background(), table, muts); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// cells renders a row as family:qualifier@ts=value strings.
func cells(t *testing.T, st kv.Store, table, row string, opts ...kv.ReadOption) string {
	t.Helper()
	r, err := st.Get(context.Background(), table, []byte(row), opts...)
	if err != nil {
		t.Fatalf("Get(%s): %v", row, err)
	}
	var out []string
	for _, c := range r.Cells {
		out = append(out, fmt.Sprintf("%s:%s@%d=%s", c.Family, c.Qualifier, c.Timestamp, c.Value))
	}
	return strings.Join(out, " ")
}

// rawKeys counts the cell keys physically present in Pebble (below any read rule).
func rawKeys(t *testing.T, st *Store) int {
	t.Helper()
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsData}, UpperBound: []byte{nsData + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

func put(row, family, qualifier string, ts int64, value string) kv.Mutation {
	return kv.Put([]byte(row), family, []byte(qualifier), ts, []byte(value))
}

func TestSecondOpenInProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, Options{})
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want an error wrapping ErrLocked", err)
	}
	abs, _ := filepath.Abs(dir)
	want := fmt.Sprintf("embedded store %s is already open in this process (lock file %s/LOCK): close it first or use another --storage directory", abs, abs)
	if err.Error() != want {
		t.Fatalf("second Open error:\n got %s\nwant %s", err, want)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Closing releases the lock.
	openStore(t, dir, Options{})
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	openStore(t, dir, Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	want := fmt.Sprintf("embedded store %s is in use by another process (lock file %s/LOCK): stop it or use another --storage directory true\n", dir, dir)
	if string(out) != want {
		t.Fatalf("Open in another process:\n got %s\nwant %s", out, want)
	}
}

func TestSweeperRemovesHiddenCells(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := openStore(t, t.TempDir(), Options{Clock: clk.Now, SweepInterval: -1})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{
		{Name: "ttl", TTL: time.Hour}, {Name: "v", MaxVersions: 2},
	}})
	now := clk.Now().UnixMilli()
	halfHourAgo, twoHoursAgo := now-30*60_000, now-2*3600_000
	mustApply(t, st, "t",
		put("r", "ttl", "fresh", halfHourAgo, "f"),
		put("r", "ttl", "old", twoHoursAgo, "o"),
		put("r", "v", "q", 1, "v1"), put("r", "v", "q", 2, "v2"), put("r", "v", "q", 3, "v3"),
	)
	want := fmt.Sprintf("ttl:fresh@%d=f v:q@3=v3 v:q@2=v2", halfHourAgo)
	if got := cells(t, st, "t", "r", kv.MaxVersions(5)); got != want {
		t.Fatalf("before sweep: got %s, want %s", got, want)
	}
	if n := rawKeys(t, st); n != 5 {
		t.Fatalf("before sweep: %d cells on disk, want 5", n)
	}
	stats, err := st.sweep(context.Background())
	if err != nil || stats != (sweepStats{expired: 1, versions: 1}) {
		t.Fatalf("sweep = %+v, %v; want 1 expired and 1 version removed", stats, err)
	}
	if n := rawKeys(t, st); n != 3 {
		t.Fatalf("after sweep: %d cells on disk, want 3", n)
	}
	if got := cells(t, st, "t", "r", kv.MaxVersions(5)); got != want {
		t.Fatalf("the sweep changed what a read returns: got %s, want %s", got, want)
	}

	// An hour later the fresh cell has expired too: hidden at once, removed by the
	// next sweep.
	clk.Advance(time.Hour)
	if got, want := cells(t, st, "t", "r", kv.MaxVersions(5)), "v:q@3=v3 v:q@2=v2"; got != want {
		t.Fatalf("an hour later: got %s, want %s", got, want)
	}
	if stats, err := st.sweep(context.Background()); err != nil || stats != (sweepStats{expired: 1}) {
		t.Fatalf("second sweep = %+v, %v; want 1 expired", stats, err)
	}
	if n := rawKeys(t, st); n != 2 {
		t.Fatalf("after the second sweep: %d cells on disk, want 2", n)
	}
}

// logRecorder is a slog.Handler that keeps the records it is given.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// sweepLines returns the sweeper's log lines, rendered as message and attributes.
func (h *logRecorder) sweepLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if !strings.HasPrefix(r.Message, "embedded: sweep") {
			continue
		}
		line := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "expired" || a.Key == "versions" {
				line += " " + a.String()
			}
			return true
		})
		out = append(out, line)
	}
	return out
}

func TestBackgroundSweeperRunsAndStopsOnClose(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	logs := &logRecorder{}
	st := openStore(t, t.TempDir(), Options{Clock: clk.Now, SweepInterval: 5 * time.Millisecond, Logger: slog.New(logs)})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f", TTL: time.Minute}}})
	now := clk.Now().UnixMilli()
	var muts []kv.Mutation
	for i := range 10 {
		muts = append(muts, put(fmt.Sprintf("r%d", i), "f", "q", now-int64(i)*30_000, "v"))
	}
	mustApply(t, st, "t", muts...)
	// r0..r2 are within the minute (r2 exactly at its edge: ts + TTL == now is kept);
	// r3..r9 expired.
	deadline := time.Now().Add(10 * time.Second)
	for rawKeys(t, st) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the background sweeper left %d cells, want 3", rawKeys(t, st))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got := logs.sweepLines()
	if len(got) != 1 || got[0] != "DEBUG embedded: sweep removed cells expired=7 versions=0" {
		t.Fatalf("sweeper logs = %q, want one Debug line for 7 expired cells", got)
	}
}

func TestDataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ensure(t, st, kv.TableSpec{Name: "keep", Families: []kv.FamilySpec{{Name: "f", MaxVersions: 2}}})
	ensure(t, st, kv.TableSpec{Name: "drop", Families: []kv.FamilySpec{{Name: "f"}}})
	mustApply(t, st, "keep", put("r\x00", "f", "q", 1, "one"), put("r\x00", "f", "q", 2, "two"), put("r\x00", "f", "q", 3, "three"))
	mustApply(t, st, "drop", put("r", "f", "q", 1, "gone"))
	if _, err := st.Increment(ctx, "keep", []byte("n"), "f", []byte("c"), 41); err != nil {
		t.Fatal(err)
	}
	if err := st.DropTable(ctx, "drop"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	st2 := openStore(t, dir, Options{})
	names, err := st2.ListTables(ctx)
	if err != nil || strings.Join(names, ",") != "keep" {
		t.Fatalf("ListTables after reopen = %v, %v; want [keep]", names, err)
	}
	// The family's MaxVersions came back from the catalog with the data.
	if got, want := cells(t, st2, "keep", "r\x00", kv.MaxVersions(5)), "f:q@3=three f:q@2=two"; got != want {
		t.Fatalf("after reopen: got %s, want %s", got, want)
	}
	if n, err := st2.Increment(ctx, "keep", []byte("n"), "f", []byte("c"), 1); err != nil || n != 42 {
		t.Fatalf("Increment after reopen = %d, %v; want 42", n, err)
	}
	// Table ids are never reused, even for a table created after a reopen.
	ensure(t, st2, kv.TableSpec{Name: "drop", Families: []kv.FamilySpec{{Name: "f"}}})
	if id := st2.tables["drop"].id; id != 3 {
		t.Fatalf("re-created table got id %d, want 3", id)
	}
	if got := cells(t, st2, "drop", "r"); got != "" {
		t.Fatalf("re-created table holds %s", got)
	}
}

func TestEverythingAfterCloseIsErrClosed(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{})
	ctx := context.Background()
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}})
	mustApply(t, st, "t", put("a", "f", "q", 1, "v"), put("b", "f", "q", 1, "v"))
	// A scan left open across Close is ended, not leaked.
	sc := st.Scan(ctx, "t", nil, nil)
	if !sc.Next() {
		t.Fatalf("scan: %v", sc.Err())
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close with an open scan: %v", err)
	}
	if sc.Next() {
		t.Fatal("scan went on after Close")
	}
	if err := sc.Err(); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("open scan after Close: Err = %v, want ErrClosed", err)
	}
	if err := sc.Close(); err != nil {
		t.Fatalf("Scanner.Close after store Close: %v", err)
	}
	_, err := st.GetRows(ctx, "t", [][]byte{[]byte("a")})
	errs := map[string]error{
		"Close":     st.Close(),
		"DropTable": st.DropTable(ctx, "t"),
		"GetRows":   err,
		"Ping":      st.Ping(ctx),
	}
	for op, err := range errs {
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", op, err)
		}
	}
}

func TestDeleteSeesPutsEarlierInTheBatch(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "a", MaxVersions: 5}, {Name: "b"}}})
	mustApply(t, st, "t", put("r", "a", "x", 1, "old"), put("r", "b", "x", 1, "b"))
	mustApply(t, st, "t",
		put("r", "a", "y", 5, "batched"),
		put("r", "a", "x", 20, "new"),
		kv.DeleteFamily([]byte("r"), "a", 10), // removes x@1 and y@5, not x@20
		put("r", "a", "z", 3, "after"),
	)
	if got, want := cells(t, st, "t", "r", kv.MaxVersions(5)), "a:x@20=new a:z@3=after b:x@1=b"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	mustApply(t, st, "t", put("s", "a", "x", 1, "v"), kv.DeleteRow([]byte("s"), 1))
	if got := cells(t, st, "t", "s"); got != "" {
		t.Fatalf("row deleted in the batch that wrote it holds %s", got)
	}
}

func TestFamilyVersionCapAppliesBeforeTimeRange(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{SweepInterval: -1})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}})
	mustApply(t, st, "t", put("r", "f", "q", 10, "ten"))
	mustApply(t, st, "t", put("r", "f", "q", 20, "twenty"))
	// Version 10 is beyond MaxVersions 1: hidden even from a range that excludes 20,
	// so a sweep (which deletes it) cannot change the answer.
	for _, when := range []string{"before sweep", "after sweep"} {
		if got := cells(t, st, "t", "r", kv.TimeRange(0, 15)); got != "" {
			t.Fatalf("%s: [0, 15) returned %s, want nothing", when, got)
		}
		if _, err := st.sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIncrementWritesAtClockNow(t *testing.T) {
	clk := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	st := openStore(t, t.TempDir(), Options{Clock: clk.Now})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f", MaxVersions: 3}}})
	ctx := context.Background()
	if _, err := st.Increment(ctx, "t", []byte("r"), "f", []byte("n"), 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, err := st.Increment(ctx, "t", []byte("r"), "f", []byte("n"), 3); err != nil {
		t.Fatal(err)
	}
	got := cells(t, st, "t", "r", kv.MaxVersions(3))
	want := "f:n@1700000001000=\x00\x00\x00\x00\x00\x00\x00\x05 f:n@1700000000000=\x00\x00\x00\x00\x00\x00\x00\x02"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A counter written with a timestamp ahead of the clock keeps being the newest.
	mustApply(t, st, "t", kv.Put([]byte("f"), "f", []byte("n"), 1_800_000_000_000, make([]byte, 8)))
	for range 3 {
		if _, err := st.Increment(ctx, "t", []byte("f"), "f", []byte("n"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := cells(t, st, "t", "f", kv.MaxVersions(3)), "f:n@1800000000000=\x00\x00\x00\x00\x00\x00\x00\x03"; got != want {
		t.Fatalf("future counter: got %q, want %q", got, want)
	}
}

func TestInvalidReadsAndMutationsAreInvalidArgument(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{})
	ctx := context.Background()
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}})
	_, err := st.Get(ctx, "t", []byte("r"), kv.Families("nope"))
	if !errors.Is(err, kv.ErrInvalidArgument) || !strings.Contains(err.Error(), `table t has no family "nope"`) {
		t.Errorf("Get of an unknown family: %v", err)
	}
	_, err = st.Get(ctx, "t", nil)
	if !errors.Is(err, kv.ErrInvalidArgument) {
		t.Errorf("Get of an empty row key: %v", err)
	}
	_, err = st.Increment(ctx, "t", []byte("r"), "nope", []byte("q"), 1)
	if !errors.Is(err, kv.ErrInvalidArgument) {
		t.Errorf("Increment of an unknown family: %v", err)
	}
	err = st.Apply(ctx, "t", []kv.Mutation{put("r", "f", "q", 1, "v"), put("r", "nope", "q", 1, "v"), put("", "f", "q", 1, "v")})
	var be *kv.BatchError
	if !errors.As(err, &be) || be.Total != 3 || len(be.Failed) != 2 || be.Failed[0].Index != 1 || be.Failed[1].Index != 2 {
		t.Fatalf("Apply with two invalid mutations: %v, want a BatchError naming indexes 1 and 2", err)
	}
	if got := cells(t, st, "t", "r"); got != "" {
		t.Fatalf("a rejected batch wrote %s", got)
	}
}

func TestFiltersCombine(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "r"}, {Name: "t", MaxVersions: 3}}})
	mustApply(t, st, "t",
		put("1", "r", "a", 1, "x"), put("1", "r", "b", 1, "y"), put("1", "t", "job", 10, "api"), put("1", "t", "job", 20, "web"),
		put("2", "r", "a", 1, "x"), put("2", "t", "job", 10, "web"),
	)
	scan := func(opts ...kv.ReadOption) string {
		sc := st.Scan(context.Background(), "t", nil, nil, opts...)
		defer sc.Close()
		var out []string
		for sc.Next() {
			row := sc.Row()
			for _, c := range row.Cells {
				out = append(out, fmt.Sprintf("%s/%s:%s@%d=%s", row.Key, c.Family, c.Qualifier, c.Timestamp, c.Value))
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	api := kv.ColumnValueFilter{Family: "t", Qualifier: []byte("job"), Op: kv.Equal, Value: []byte("api"), FilterIfMissing: true}
	// The filter judges the newest version inside the time range; the key-only filter
	// empties the values returned but not the value the column filter compares.
	if got, want := scan(kv.WithFilter(api), kv.WithFilter(kv.KeyOnlyFilter{})), ""; got != want {
		t.Fatalf("job=api, all time: got %q, want %q", got, want)
	}
	got := scan(kv.TimeRange(0, 15), kv.WithFilter(api), kv.WithFilter(kv.KeyOnlyFilter{}),
		kv.WithFilter(kv.ColumnRangeFilter{Min: []byte("b"), MinInclusive: true}))
	if want := "1/r:b@1= 1/t:job@10="; got != want {
		t.Fatalf("job=api before 15, key only, qualifiers >= b: got %q, want %q", got, want)
	}
}
