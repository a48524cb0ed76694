package provision_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// logs records what a logger was given, one line per record: level, message and
// attributes as key=value.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.Key + "=" + a.Value.String()
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

// take returns the lines logged so far and forgets them.
func (l *logs) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// rollupEnv is one test's store (created with the backend's defaults,
// 5m:90d,1h:5y) and how to open it.
type rollupEnv struct {
	t    *testing.T
	b    schematest.Backend
	st   kv.Store
	logs *logs
	// hbase is whether messages are HBase's (shell commands for tables
	// "tsdb-...": the option is given the default prefix, whatever the test
	// store's real one).
	hbase bool
	// records counts record's puts, so that each has a newer timestamp.
	records int64
}

func (e *rollupEnv) options() []provision.Option {
	opts := []provision.Option{provision.WithLogger(slog.New(e.logs))}
	if e.hbase {
		opts = append(opts, provision.WithHBaseTablePrefix("tsdb-"))
	}
	return opts
}

// tableOptions are the backend's table options with the resolution list text.
func (e *rollupEnv) tableOptions(rollups string) schema.TableOptions {
	e.t.Helper()
	rs, err := schema.ParseRollups(rollups)
	if err != nil {
		e.t.Fatal(err)
	}
	o := e.b.TableOptions
	o.Rollups = rs
	return o
}

// open opens the store with the resolution list text.
func (e *rollupEnv) open(st kv.Store, rollups string, autoCreate bool) error {
	_, err := provision.Open(context.Background(), st, e.b.Settings, e.tableOptions(rollups), autoCreate, e.options()...)
	return err
}

// recorded returns the m:rollups cell as stored ("" when absent).
func (e *rollupEnv) recorded() string {
	e.t.Helper()
	r, err := e.st.Get(context.Background(), schema.TableMeta, []byte(schema.MetaSchemaRow))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range r.Cells {
		if string(c.Qualifier) == schema.QualifierRollups {
			return string(c.Value)
		}
	}
	return ""
}

// record writes the m:rollups cell, as an operator would in the HBase shell.
func (e *rollupEnv) record(text string) {
	e.t.Helper()
	e.records++
	err := e.st.Apply(context.Background(), schema.TableMeta, []kv.Mutation{
		kv.Put([]byte(schema.MetaSchemaRow), schema.FamilyMeta, []byte(schema.QualifierRollups), time.Now().UnixMilli()+1000+e.records, []byte(text)),
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *rollupEnv) rollupTables() []string {
	e.t.Helper()
	tables, err := e.st.ListTables(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.DeleteFunc(tables, func(n string) bool { return !strings.HasPrefix(n, "rollup") })
}

func (e *rollupEnv) wantLogs(want ...string) {
	e.t.Helper()
	e.checkLogs(e.logs.take(), want)
}

// wantLogsInAnyOrder is wantLogs for lines of several goroutines.
func (e *rollupEnv) wantLogsInAnyOrder(want ...string) {
	e.t.Helper()
	got := e.logs.take()
	slices.Sort(got)
	slices.Sort(want)
	e.checkLogs(got, want)
}

func (e *rollupEnv) checkLogs(got, want []string) {
	e.t.Helper()
	if !slices.Equal(got, want) {
		e.t.Errorf("logged\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// pick returns embedded or hbase, as the backend's messages are.
func (e *rollupEnv) pick(embedded, hbase string) string {
	if e.hbase {
		return hbase
	}
	return embedded
}

var rollupTests = []struct {
	name string
	run  func(*rollupEnv)
}{
	{"CreateRecordsTheList", testCreateRecordsTheList},
	{"AStoreWithoutTheListGetsIt", testAStoreWithoutTheListGetsIt},
	{"AddingAResolutionCreatesItsTable", testAddingAResolutionCreatesItsTable},
	{"RemovingAResolutionKeepsItsTable", testRemovingAResolutionKeepsItsTable},
	{"TheIndexTTLWarningReadsTheTablesTTL", testTheIndexTTLWarningReadsTheTablesTTL},
	{"AChangedRetentionIsRefusedUntilRecorded", testAChangedRetentionIsRefusedUntilRecorded},
	{"WithoutAutoCreateTablesMustExist", testWithoutAutoCreateTablesMustExist},
	{"AMalformedListIsReported", testAMalformedListIsReported},
	{"AnInvalidListIsRefused", testAnInvalidListIsRefused},
	{"OpenersWithOneListRace", testOpenersWithOneListRace},
	{"OpenersWithTwoRetentionsRace", testOpenersWithTwoRetentionsRace},
}

// TestRollups runs the resolution list's tests on both backends.
func TestRollups(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range rollupTests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(&rollupEnv{t: t, b: b, logs: &logs{}, hbase: b.Name == "hbase"})
				})
			}
		})
	}
}

// store gives e a store created with the defaults, 5m:90d,1h:5y.
func (e *rollupEnv) store() kv.Store {
	e.st = e.b.Store(e.t)
	return e.st
}

func testCreateRecordsTheList(e *rollupEnv) {
	e.store()
	if got := e.recorded(); got != "5m:90d,1h:5y" {
		e.t.Errorf("m:rollups after Create = %q", got)
	}
	rs, ok, err := provision.ReadRollups(context.Background(), e.st)
	if err != nil || !ok || !slices.Equal(rs, schema.DefaultRollups()) {
		e.t.Errorf("ReadRollups = %v, %v, %v", rs, ok, err)
	}
	if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-1h", "rollup-5m"}) {
		e.t.Errorf("rollup tables %v", got)
	}
	// Opening with the same list changes nothing and says nothing.
	if err := e.open(e.st, "5m:90d,1h:5y", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs()
}

func testAStoreWithoutTheListGetsIt(e *rollupEnv) {
	ctx := context.Background()
	st := e.store()
	// A store of the layout before resolution lists: the table "rollup", no
	// cell, no rollup-1h. (The cell is deleted up to its own timestamp: a
	// delete marker masks newer puts with older timestamps on HBase.)
	row, err := st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow))
	if err != nil {
		e.t.Fatal(err)
	}
	var ts int64
	for _, c := range row.Cells {
		if string(c.Qualifier) == schema.QualifierRollups {
			ts = c.Timestamp
		}
	}
	if err := st.Apply(ctx, schema.TableMeta, []kv.Mutation{
		kv.DeleteColumn([]byte(schema.MetaSchemaRow), schema.FamilyMeta, []byte(schema.QualifierRollups), ts),
	}); err != nil {
		e.t.Fatal(err)
	}
	if err := st.DropTable(ctx, "rollup-1h"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "rollup", Families: []kv.FamilySpec{{Name: "m5"}, {Name: "h1"}}}); err != nil {
		e.t.Fatal(err)
	}
	if rs, ok, err := provision.ReadRollups(ctx, st); err != nil || ok || rs != nil {
		e.t.Fatalf("ReadRollups without the cell = %v, %v, %v", rs, ok, err)
	}
	if err := e.open(st, "5m:90d,1h:5y", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions recorded rollups=5m:90d,1h:5y",
		"WARN table of an earlier layout (families m5 and h1, never written): nothing uses it table=rollup"+
			e.pick("", " drop_with=disable 'tsdb-rollup'; drop 'tsdb-rollup'"),
		"WARN rollup resolution added, but its table already exists: it keeps the TTL it was created with, which may not be the retention configured "+
			"table=rollup-5m retention=90d"+e.pick("", " check_with=describe 'tsdb-rollup-5m'"),
		"INFO rollup table created table=rollup-1h retention=5y",
	)
	if got := e.recorded(); got != "5m:90d,1h:5y" {
		e.t.Errorf("m:rollups = %q", got)
	}
	if got := e.rollupTables(); !slices.Equal(got, []string{"rollup", "rollup-1h", "rollup-5m"}) {
		e.t.Errorf("rollup tables %v", got)
	}
}

func testAddingAResolutionCreatesItsTable(e *rollupEnv) {
	st := e.store()
	if err := e.open(st, "1h:5y,15m:30d,5m:90d", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d,1h:5y to=5m:90d,15m:30d,1h:5y",
		"INFO rollup table created table=rollup-15m retention=30d",
	)
	if got := e.recorded(); got != "5m:90d,15m:30d,1h:5y" {
		e.t.Errorf("m:rollups = %q", got)
	}
	if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-15m", "rollup-1h", "rollup-5m"}) {
		e.t.Errorf("rollup tables %v", got)
	}
	// Kept forever, through Create this time: longer than the index, whose
	// TTL was fixed from the 5y of the 1h rollups.
	if err := provision.Create(context.Background(), st, e.b.Settings, e.tableOptions("5m:90d,15m:30d,1h:5y,1d:0"), e.options()...); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d,15m:30d,1h:5y to=5m:90d,15m:30d,1h:5y,1d:0",
		"WARN the tag index expires before the rollups now kept: a series whose raw data and index entries expired is not found in them "+
			"table=index ttl=1826d needed=forever"+e.pick("", " alter_with=alter 'tsdb-index', NAME => 'p', TTL => 'FOREVER'; put 'tsdb-meta', 'schema', 'm:index_ttl', '0'"),
		"INFO rollup table created table=rollup-1d retention=forever",
	)
	if err := e.open(st, "5m:90d,15m:30d,1h:5y,1d:0", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs()
}

func testRemovingAResolutionKeepsItsTable(e *rollupEnv) {
	st := e.store()
	if err := e.open(st, "5m:90d", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d,1h:5y to=5m:90d",
		"WARN rollup resolution removed: its table is kept with its data and no longer written resolution=1h table=rollup-1h"+
			e.pick("", " drop_with=disable 'tsdb-rollup-1h'; drop 'tsdb-rollup-1h'"),
	)
	if got := e.recorded(); got != "5m:90d" {
		e.t.Errorf("m:rollups = %q", got)
	}
	if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-1h", "rollup-5m"}) {
		e.t.Errorf("rollup tables %v", got)
	}
	// Every resolution removed.
	if err := e.open(st, "none", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d to=none",
		"WARN rollup resolution removed: its table is kept with its data and no longer written resolution=5m table=rollup-5m"+
			e.pick("", " drop_with=disable 'tsdb-rollup-5m'; drop 'tsdb-rollup-5m'"),
	)
	// Added back, with another retention: the kept table's TTL cannot be
	// checked, so the log says so.
	if err := e.open(st, "1h:1y", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=none to=1h:1y",
		"WARN rollup resolution added, but its table already exists: it keeps the TTL it was created with, which may not be the retention configured "+
			"table=rollup-1h retention=1y"+e.pick("", " check_with=describe 'tsdb-rollup-1h'"),
	)
	if got := e.recorded(); got != "1h:1y" {
		e.t.Errorf("m:rollups = %q", got)
	}
}

// The tag index's TTL is fixed when the table is created (from the first
// list: 1826d for 1h:5y) and recorded in m:index_ttl; a list that needs less
// than that, after one that needed even less, is no reason to warn (it once
// compared with the previous list instead of the table's TTL), and one that
// needs more is.
func testTheIndexTTLWarningReadsTheTablesTTL(e *rollupEnv) {
	st := e.store()
	if err := e.open(st, "5m:90d", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d,1h:5y to=5m:90d",
		"WARN rollup resolution removed: its table is kept with its data and no longer written resolution=1h table=rollup-1h"+
			e.pick("", " drop_with=disable 'tsdb-rollup-1h'; drop 'tsdb-rollup-1h'"),
	)
	// 2y of 1d rollups: the index (401d by the list before) keeps 1826d.
	if err := e.open(st, "5m:90d,1d:2y", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d to=5m:90d,1d:2y",
		"INFO rollup table created table=rollup-1d retention=2y",
	)
	// 6y: more than 1826d.
	if err := e.open(st, "5m:90d,2h:6y,1d:2y", true); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=5m:90d,1d:2y to=5m:90d,2h:6y,1d:2y",
		"WARN the tag index expires before the rollups now kept: a series whose raw data and index entries expired is not found in them "+
			"table=index ttl=1826d needed=313w"+e.pick("", " alter_with=alter 'tsdb-index', NAME => 'p', TTL => 189302400; put 'tsdb-meta', 'schema', 'm:index_ttl', '313w'"),
		"INFO rollup table created table=rollup-2h retention=6y",
	)
}

func testAChangedRetentionIsRefusedUntilRecorded(e *rollupEnv) {
	ctx := context.Background()
	st := e.store()
	for _, tc := range []struct {
		rollups string
		msg     string
	}{
		{"5m:30d,1h:5y", "schema: rollup 5m: the store keeps it for 90d, this process is configured to keep it for 30d; the retention is the TTL " +
			"of table rollup-5m, set when the table was created, and tsdb cannot change it: start with --rollups=5m:90d,1h:5y" +
			e.pick(" (an embedded store's table TTL cannot be changed)",
				", or change the TTL in the HBase shell with alter 'tsdb-rollup-5m', NAME => 'a', TTL => 2592000 "+
					"and then record the new list with put 'tsdb-meta', 'schema', 'm:rollups', '5m:30d,1h:5y'")},
		{"5m:90d,15m:1d,1h:0", "schema: rollup 1h: the store keeps it for 5y, this process is configured to keep it forever; the retention is the TTL " +
			"of table rollup-1h, set when the table was created, and tsdb cannot change it: start with --rollups=5m:90d,15m:1d,1h:5y" +
			e.pick(" (an embedded store's table TTL cannot be changed)",
				", or change the TTL in the HBase shell with alter 'tsdb-rollup-1h', NAME => 'a', TTL => 'FOREVER' "+
					"and then record the new list with put 'tsdb-meta', 'schema', 'm:rollups', '5m:90d,15m:1d,1h:0'")},
		{"5m:1w,1h:1y", "schema: rollup 5m: the store keeps it for 90d, this process is configured to keep it for 1w; the retention is the TTL " +
			"of table rollup-5m, set when the table was created, and tsdb cannot change it: start with --rollups=5m:90d,1h:5y" +
			e.pick(" (an embedded store's table TTL cannot be changed)",
				", or change the TTL in the HBase shell with alter 'tsdb-rollup-5m', NAME => 'a', TTL => 604800 "+
					"and then record the new list with put 'tsdb-meta', 'schema', 'm:rollups', '5m:1w,1h:1y'") +
			"; schema: rollup 1h: the store keeps it for 5y, this process is configured to keep it for 1y; the retention is the TTL " +
			"of table rollup-1h, set when the table was created, and tsdb cannot change it: start with --rollups=5m:90d,1h:5y" +
			e.pick(" (an embedded store's table TTL cannot be changed)",
				", or change the TTL in the HBase shell with alter 'tsdb-rollup-1h', NAME => 'a', TTL => 31536000 "+
					"and then record the new list with put 'tsdb-meta', 'schema', 'm:rollups', '5m:1w,1h:1y'")},
	} {
		for name, err := range map[string]error{
			"Open":   e.open(st, tc.rollups, true),
			"Create": provision.Create(ctx, st, e.b.Settings, e.tableOptions(tc.rollups), e.options()...),
		} {
			if !errors.Is(err, schema.ErrMismatch) || err.Error() != tc.msg {
				e.t.Errorf("%s with %s = %v\nwant ErrMismatch: %s", name, tc.rollups, err, tc.msg)
			}
		}
		e.wantLogs()
		if got := e.recorded(); got != "5m:90d,1h:5y" {
			e.t.Errorf("m:rollups after a refused %s = %q", tc.rollups, got)
		}
	}
	if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-1h", "rollup-5m"}) {
		e.t.Errorf("rollup tables %v", got)
	}
	// The operator altered the TTL and recorded it: accepted (the recorded
	// list is kept as written until it differs from the configured one).
	e.record("1h:5y,5m:30d")
	if err := e.open(st, "5m:30d,1h:5y", true); err != nil {
		e.t.Fatalf("Open after recording the new retention: %v", err)
	}
	e.wantLogs("INFO rollup resolutions changed from=1h:5y,5m:30d to=5m:30d,1h:5y")
	if got := e.recorded(); got != "5m:30d,1h:5y" {
		e.t.Errorf("m:rollups = %q", got)
	}
}

func testWithoutAutoCreateTablesMustExist(e *rollupEnv) {
	st := e.store()
	err := e.open(st, "5m:90d,15m:30d,1h:5y", false)
	want := "schema: rollup table rollup-15m of --rollups=5m:90d,15m:30d,1h:5y does not exist: run `tsdb schema create` with the same --rollups, " +
		"or enable schema auto-create: schema not created"
	if !errors.Is(err, schema.ErrNotCreated) || err.Error() != want {
		e.t.Errorf("Open without auto-create adding 15m = %v\nwant %s", err, want)
	}
	if got := e.recorded(); got != "5m:90d,1h:5y" {
		e.t.Errorf("m:rollups after a refused Open = %q", got)
	}
	if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-1h", "rollup-5m"}) {
		e.t.Errorf("rollup tables %v", got)
	}
	// Removing needs no table: recorded.
	if err := e.open(st, "1h:5y", false); err != nil {
		e.t.Fatal(err)
	}
	if got := e.recorded(); got != "1h:5y" {
		e.t.Errorf("m:rollups = %q", got)
	}
	e.logs.take()
	// A table that exists is enough, whoever made it (its TTL cannot be read).
	if err := e.open(st, "5m:90d,1h:5y", false); err != nil {
		e.t.Fatal(err)
	}
	e.wantLogs(
		"INFO rollup resolutions changed from=1h:5y to=5m:90d,1h:5y",
		"WARN rollup resolution added, but its table already exists: it keeps the TTL it was created with, which may not be the retention configured "+
			"table=rollup-5m retention=90d"+e.pick("", " check_with=describe 'tsdb-rollup-5m'"),
	)
}

func testAMalformedListIsReported(e *rollupEnv) {
	st := e.store()
	for value, msg := range map[string]string{
		"5m":         `schema: meta row m:rollups = "5m": schema: rollup "5m" is not resolution:retention (as in "5m:90d,1h:5y"): malformed`,
		"5m:0,5m:1d": `schema: meta row m:rollups = "5m:0,5m:1d": schema: rollup resolutions must be ascending and distinct, 5m after 5m: malformed`,
		"7m:1d":      `schema: meta row m:rollups = "7m:1d": schema: rollup resolution 7m must be a whole number of minutes that divides 24h: malformed`,
	} {
		e.record(value)
		err := e.open(st, "5m:90d,1h:5y", true)
		if !errors.Is(err, schema.ErrMalformed) || err.Error() != msg {
			e.t.Errorf("Open with m:rollups %q = %v\nwant %s", value, err, msg)
		}
		if _, _, err := provision.ReadRollups(context.Background(), st); !errors.Is(err, schema.ErrMalformed) || err.Error() != msg {
			e.t.Errorf("ReadRollups of %q = %v", value, err)
		}
	}
}

func testAnInvalidListIsRefused(e *rollupEnv) {
	st := e.store()
	for _, tc := range []struct {
		rollups []schema.Rollup
		msg     string
	}{
		{[]schema.Rollup{{Resolution: 90 * time.Minute}},
			"schema: rollup resolution 1h30m must divide the bucket width 1h or be a multiple of it: invalid argument"},
		{[]schema.Rollup{{Resolution: 5 * time.Minute}, {Resolution: time.Minute}},
			"schema: rollup resolutions must be ascending and distinct, 1m after 5m: invalid argument"},
	} {
		o := e.b.TableOptions
		o.Rollups = tc.rollups
		_, err := provision.Open(context.Background(), st, e.b.Settings, o, true, e.options()...)
		if !errors.Is(err, kv.ErrInvalidArgument) || err.Error() != tc.msg {
			e.t.Errorf("Open with %v = %v\nwant %s", tc.rollups, err, tc.msg)
		}
	}
	e.wantLogs()
	if got := e.recorded(); got != "5m:90d,1h:5y" {
		e.t.Errorf("m:rollups = %q", got)
	}
}

// openers is how many processes race in the race tests.
const openers = 4

func testOpenersWithOneListRace(e *rollupEnv) {
	for round := range 2 {
		sts := e.b.Stores(e.t, openers)
		e.st = sts[0]
		errs := make([]error, openers)
		var wg sync.WaitGroup
		for i := range openers {
			wg.Go(func() { errs[i] = e.open(sts[i], "5m:90d,15m:30d,1h:5y", true) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				e.t.Errorf("round %d: opener %d: %v", round, i, err)
			}
		}
		// One opener changed the list and one created the table.
		e.wantLogsInAnyOrder(
			"INFO rollup resolutions changed from=5m:90d,1h:5y to=5m:90d,15m:30d,1h:5y",
			"INFO rollup table created table=rollup-15m retention=30d",
		)
		if got := e.recorded(); got != "5m:90d,15m:30d,1h:5y" {
			e.t.Errorf("round %d: m:rollups = %q", round, got)
		}
		if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-15m", "rollup-1h", "rollup-5m"}) {
			e.t.Errorf("round %d: rollup tables %v", round, got)
		}
	}
}

func testOpenersWithTwoRetentionsRace(e *rollupEnv) {
	lists := [2]string{"5m:90d,30m:3d,1h:5y", "5m:90d,30m:10d,1h:5y"}
	for round := range 2 {
		sts := e.b.Stores(e.t, openers)
		e.st = sts[0]
		errs := make([]error, openers)
		var wg sync.WaitGroup
		for i := range openers {
			wg.Go(func() { errs[i] = e.open(sts[i], lists[i%2], true) })
		}
		wg.Wait()
		stored := e.recorded()
		winner := slices.Index(lists[:], stored)
		if winner < 0 {
			e.t.Fatalf("round %d: m:rollups = %q, neither list", round, stored)
		}
		for i, err := range errs {
			if i%2 == winner && err != nil || i%2 != winner && !errors.Is(err, schema.ErrMismatch) {
				e.t.Errorf("round %d: opener %d with %s (recorded %s): %v", round, i, lists[i%2], stored, err)
			}
		}
		e.wantLogsInAnyOrder(
			fmt.Sprintf("INFO rollup resolutions changed from=5m:90d,1h:5y to=%s", stored),
			fmt.Sprintf("INFO rollup table created table=rollup-30m retention=%s", []string{"3d", "10d"}[winner]),
		)
		if got := e.rollupTables(); !slices.Equal(got, []string{"rollup-1h", "rollup-30m", "rollup-5m"}) {
			e.t.Errorf("round %d: rollup tables %v", round, got)
		}
	}
}
