package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
)

func TestRollupsFlagHelp(t *testing.T) {
	code, out, _ := tsdb(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help exited %d", code)
	}
	// kingpin wraps help text: compare with the whitespace collapsed.
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		`--rollups="5m:90d,1h:5y"`,
		"($TSDB_ROLLUPS)",
		"comma-separated resolution:retention pairs in Prometheus' duration syntax (e.g. 5m:90d,1h:5y; retention 0 keeps one forever; \"none\" for no rollups)",
		"A resolution is a whole number of minutes that divides 24h and divides the bucket width or is a multiple of it; at most 8.",
		"Each resolution is a table (rollup-5m, rollup-1h, ...) whose TTL is its retention.",
		"a resolution added gets its table at start, one removed is no longer written (its table is kept until you drop it)",
		"a retention cannot be changed here once its table exists (the error gives the HBase shell commands that do)",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("tsdb serve --help lacks %q:\n%s", want, out)
		}
	}
}

func TestBadRollupsFlag(t *testing.T) {
	store := "--storage=embedded:" + t.TempDir()
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"schema", "create", store, "--rollups=5m"},
			"tsdb schema create: --rollups=\"5m\": schema: rollup \"5m\" is not resolution:retention (as in \"5m:90d,1h:5y\")\n"},
		{[]string{"schema", "create", "--print", "--rollups=5m:forever"},
			"tsdb schema create: --rollups=\"5m:forever\": schema: rollup \"5m:forever\": retention: not a valid duration string: \"forever\"\n"},
		{[]string{"schema", "check", store, "--rollups=30s:1d"},
			"tsdb schema check: --rollups=\"30s:1d\": schema: rollup resolution 30s must be a whole number of minutes that divides 24h\n"},
		// Refused before it listens: the default port may be taken.
		{[]string{"serve", store, "--rollups=90m:1d"},
			"tsdb serve: --rollups=\"90m:1d\": schema: rollup resolution 1h30m must divide the bucket width 1h or be a multiple of it\n"},
		{[]string{"serve", store, "--rollups=5m:1d,10m:1d,15m:1d,20m:1d,30m:1d,1h:1d,2h:1d,3h:1d,4h:1d"},
			"tsdb serve: --rollups=\"5m:1d,10m:1d,15m:1d,20m:1d,30m:1d,1h:1d,2h:1d,3h:1d,4h:1d\": schema: 9 rollups, more than 8\n"},
		{[]string{"compact", "--once", store, "--rollups=5m:1d,5m:2d"},
			"tsdb compact: --rollups=\"5m:1d,5m:2d\": schema: rollup resolutions must be ascending and distinct, 5m after 5m\n"},
		{[]string{"compact", "--once", store, "--schema.bucket-width=2m", "--rollups=5m:1d"},
			"tsdb compact: --rollups=\"5m:1d\": schema: rollup resolution 5m must divide the bucket width 2m or be a multiple of it\n"},
	} {
		code, _, stderr := tsdb(t, tc.args...)
		if code != 1 || stderr != tc.stderr {
			t.Errorf("tsdb %v: exit %d, stderr %q\nwant exit 1 and %q", tc.args, code, stderr, tc.stderr)
		}
	}
}

func TestSchemaCreatePrintRecordsTheRollups(t *testing.T) {
	code, out, stderr := tsdb(t, "schema", "create", "--print", "--storage=hbase:127.0.0.1:1", "--hbase.table-prefix=m-", "--rollups=1h:0,15m:30d")
	if code != 0 {
		t.Fatalf("schema create --print: exit %d, %s", code, stderr)
	}
	for _, want := range []string{
		"create 'm-rollup-15m', {NAME => 'a', VERSIONS => 1, TTL => 2592000, ",
		"create 'm-rollup-1h', {NAME => 'a', VERSIONS => 1, COMPRESSION => ",
		"put 'm-meta', 'schema', 'm:rollups', '15m:30d,1h:0'\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("schema create --print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rollup-5m") {
		t.Errorf("schema create --print --rollups=1h:0,15m:30d creates rollup-5m:\n%s", out)
	}
}

// logLines returns the lines of a logfmt log without their time= field.
func logLines(log string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if _, rest, ok := strings.Cut(l, " "); ok && strings.HasPrefix(l, "time=") {
			l = rest
		}
		out = append(out, l)
	}
	return out
}

func TestSchemaRollupsEmbedded(t *testing.T) {
	store := "--storage=embedded:" + t.TempDir()
	code, _, stderr := tsdb(t, "schema", "create", store)
	if code != 0 {
		t.Fatalf("schema create: exit %d: %s", code, stderr)
	}
	if got := logLines(stderr); len(got) != 6 || got[0] != `level=INFO msg="raw retention recorded" retention=400d` ||
		got[1] != `level=INFO msg="exemplar retention recorded" retention=30d` ||
		got[2] != `level=INFO msg="rollup resolutions recorded" rollups=5m:90d,1h:5y` ||
		got[3] != `level=INFO msg="rollup table created" table=rollup-5m retention=90d` ||
		got[4] != `level=INFO msg="rollup table created" table=rollup-1h retention=5y` {
		t.Errorf("schema create logged:\n%s", stderr)
	}
	code, out, stderr := tsdb(t, "schema", "check", "--print", store)
	want := "format_version: 2 (hash-derived series IDs; this binary supports 1 to 2)\nbucket_width: 1h0m0s\nsalt_buckets: 1\nrollups: 5m:90d,1h:5y\nraw_retention: 400d\nexemplar_retention: 30d\ntables: data exemplars index meta pending rollup-1h rollup-5m series\n"
	if code != 0 || !strings.HasSuffix(out, want) {
		t.Fatalf("schema check --print: exit %d, %q (stderr %s); want it to end with %q", code, out, stderr, want)
	}

	// Adding 15m creates its table; removing 1h keeps it.
	code, _, stderr = tsdb(t, "schema", "create", store, "--rollups=5m:90d,15m:30d")
	if code != 0 {
		t.Fatalf("schema create with 15m: exit %d: %s", code, stderr)
	}
	wantLog := []string{
		`level=INFO msg="rollup resolutions changed" from=5m:90d,1h:5y to=5m:90d,15m:30d`,
		`level=WARN msg="rollup resolution removed: its table is kept with its data and no longer written" resolution=1h table=rollup-1h`,
		`level=INFO msg="rollup table created" table=rollup-15m retention=30d`,
	}
	if got := logLines(stderr); len(got) != 4 || strings.Join(got[:3], "\n") != strings.Join(wantLog, "\n") {
		t.Errorf("schema create with 15m logged:\n%s\nwant first:\n%s", stderr, strings.Join(wantLog, "\n"))
	}
	code, out, _ = tsdb(t, "schema", "check", "--print", store)
	want = "rollups: 5m:90d,15m:30d\nrollups_configured: 5m:90d,1h:5y (tsdb serve records it at start)\nraw_retention: 400d\nexemplar_retention: 30d\n" +
		"tables: data exemplars index meta pending rollup-15m rollup-1h rollup-5m series\n"
	if code != 0 || !strings.HasSuffix(out, want) {
		t.Fatalf("schema check --print: exit %d, %q; want it to end with %q", code, out, want)
	}

	// A changed retention: what serve would refuse, check refuses.
	code, _, stderr = tsdb(t, "schema", "check", store, "--rollups=5m:30d,15m:30d")
	want = "tsdb schema check: schema: rollup 5m: the store keeps it for 90d, this process is configured to keep it for 30d; " +
		"the retention is the TTL of table rollup-5m, set when the table was created, and tsdb cannot change it: " +
		"start with --rollups=5m:90d,15m:30d (an embedded store's table TTL cannot be changed)\n"
	if code != 1 || stderr != want {
		t.Errorf("schema check with a changed retention: exit %d, stderr %q\nwant exit 1 and %q", code, stderr, want)
	}
	code, _, stderr = tsdb(t, "serve", store, "--listen=127.0.0.1:0", "--compact.enabled=false", "--rollups=5m:30d,15m:30d")
	if code != 1 || !strings.HasSuffix(stderr, "\ntsdb serve: "+strings.TrimPrefix(want, "tsdb schema check: ")) {
		t.Errorf("serve with a changed retention: exit %d, stderr %q", code, stderr)
	}
}

// rollupCells counts the cells of the rollup table of res in the embedded store
// in dir, and the samples their windows summarise.
func rollupCells(t *testing.T, dir string, res time.Duration) (cells int, samples uint64) {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, dir, embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc := st.Scan(ctx, schema.RollupTable(res), nil, nil)
	defer sc.Close()
	for sc.Next() {
		_, day, err := schema.ParseDataRowTail(sc.Row().Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sc.Row().Cells {
			bucket, err := schema.DecodeRollupQualifier(c.Qualifier, day)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := cellenc.DecodeRollupWindows(nil, c.Value, bucket, res)
			if err != nil {
				t.Fatal(err)
			}
			cells++
			for _, w := range ws {
				samples += w.Count
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cells, samples
}

// tsdb compact writes the rollups of --rollups, whose tables must exist.
func TestDownsampleWritesRollups(t *testing.T) {
	s := newOldStore(t)
	rollups := "--rollups=5m:90d,15m:0,1h:5y" // 15m kept forever, so that the 2024 cells are visible
	code, _, stderr := tsdb(t, "compact", "--once", s.storage(), "--retention.raw=0", rollups)
	want := "tsdb compact: schema: rollup table rollup-15m of --rollups=5m:90d,15m:0,1h:5y does not exist: " +
		"run `tsdb schema create` with the same --rollups, or enable schema auto-create: schema not created\n"
	if code != 1 || stderr != want {
		t.Fatalf("compact with a resolution without its table: exit %d, stderr %q\nwant %q", code, stderr, want)
	}
	if code, _, stderr := tsdb(t, "schema", "create", s.storage(), "--retention.raw=0", rollups); code != 0 {
		t.Fatalf("schema create: exit %d: %s", code, stderr)
	}
	code, out, stderr := tsdb(t, "compact", "--once", s.storage(), "--retention.raw=0", rollups)
	if code != 0 || !strings.Contains(out, "\nrollup_cells_written: 36\n") {
		t.Fatalf("compact --once: exit %d, stdout %s\nstderr %s\nwant 36 rollup cells (12 rows, 3 resolutions)", code, out, stderr)
	}
	if cells, samples := rollupCells(t, s.dir, 15*time.Minute); cells != oldRows || samples != oldSamples {
		t.Errorf("rollup-15m holds %d cells of %d samples, want %d of %d", cells, samples, oldRows, oldSamples)
	}
	if sealedRaw, _, chunks := s.check(t); sealedRaw != 0 || chunks != oldRows {
		t.Errorf("after compact: %d raw cells in sealed buckets and %d chunks; want 0 and %d", sealedRaw, chunks, oldRows)
	}
}

// tsdb serve creates the tables of resolutions added and its worker writes
// their rollups.
func TestServeWritesRollups(t *testing.T) {
	s := newOldStore(t)
	srv := startServe(t, s.storage(), "--retention.raw=0", "--rollups=5m:90d,15m:0,1h:5y")
	srv.waitLog(t, `msg="compaction round"`)
	if err := srv.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, srv.log())
	}
	log := srv.log()
	for _, want := range []string{
		`level=INFO msg="rollup resolutions changed" from=5m:90d,1h:5y to=5m:90d,15m:0,1h:5y`,
		`level=INFO msg="rollup table created" table=rollup-15m retention=forever`,
		`rollups=5m:90d,15m:0,1h:5y`,
		`rollup_cells=36 `,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, log)
		}
	}
	if cells, samples := rollupCells(t, s.dir, 15*time.Minute); cells != oldRows || samples != oldSamples {
		t.Errorf("rollup-15m holds %d cells of %d samples, want %d of %d", cells, samples, oldRows, oldSamples)
	}
}

// TestQueryResolutionFlag: --query.resolution takes auto, raw or one of the
// store's rollups, and says what is wrong otherwise.
func TestQueryResolutionFlag(t *testing.T) {
	store := "--storage=embedded:" + t.TempDir()
	code, _, stderr := tsdb(t, "serve", store, "--query.resolution=fast")
	if want := "tsdb: --query.resolution: resolution \"fast\" is not auto, raw or a rollup resolution such as 5m (see tsdb --help)\n"; code == 0 || stderr != want {
		t.Errorf("--query.resolution=fast: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, _, stderr = tsdb(t, "serve", store, "--query.resolution=10m", "--listen=127.0.0.1:0")
	if want := "tsdb serve: --query.resolution: resolution 10m is not one of the store's rollups (5m:90d,1h:5y)\n"; code != 1 || stderr != want {
		t.Errorf("--query.resolution=10m: exit %d, stderr %q, want %q", code, stderr, want)
	}
}
