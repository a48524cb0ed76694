package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

// importFileFixture writes an OpenMetrics file of series×n gauge samples, 15s
// apart, ending two hours ago, and returns its path and the samples by series.
func importFileFixture(t *testing.T, series, n int) (string, map[string]map[int64]float64) {
	t.Helper()
	want := map[string]map[int64]float64{}
	end := time.Now().Add(-2 * time.Hour).Truncate(time.Second).UnixMilli()
	var b strings.Builder
	b.WriteString("# HELP import_test_value A test value.\n# TYPE import_test_value gauge\n")
	for i := range n {
		ms := end - int64(n-i)*15_000
		for s := range series {
			v := float64(i*series+s) / 4
			fmt.Fprintf(&b, "import_test_value{instance=\"host%d\",le_quote=\"a\\\"b\"} %s %d.%03d\n", s, strconv.FormatFloat(v, 'g', -1, 64), ms/1000, ms%1000)
			key := labels.FromStrings("__name__", "import_test_value", "instance", fmt.Sprint("host", s), "le_quote", `a"b`).String()
			if want[key] == nil {
				want[key] = map[int64]float64{}
			}
			want[key][ms] = v
		}
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), "in.om")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// readStore reads every series of the embedded store in dir through the query
// path, and fails on a sample read twice; rawCells is the number of raw cells
// of its data table, every version counted.
func readStore(t *testing.T, dir string) (samples map[string]map[int64]float64, rawCells int) {
	t.Helper()
	st, err := embedded.Open(context.Background(), dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return readStoreOf(t, st)
}

// readStoreOf is readStore of an open store, which it closes.
func readStoreOf(t *testing.T, st kv.Store) (samples map[string]map[int64]float64, rawCells int) {
	t.Helper()
	ctx := context.Background()
	sc := st.Scan(ctx, schema.TableData, nil, nil, kv.Families(schema.FamilyRaw), kv.MaxVersions(1000))
	for sc.Next() {
		rawCells += len(sc.Row().Cells)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	settings, err := provision.Read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(ctx, db.Options{Store: st, CloseStore: true, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q, err := d.Querier(0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	got := map[string]map[int64]float64{}
	ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		key := ss.At().Labels().String()
		got[key] = map[int64]float64{}
		it = ss.At().Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			if _, dup := got[key][ts]; dup {
				t.Fatalf("series %s: sample at %d read twice", key, ts)
			}
			got[key][ts] = v
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return got, rawCells
}

func sameSamples(t *testing.T, want, got map[string]map[int64]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d series in the store, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("series %s: %d samples in the store, want %d", k, len(g), len(w))
		}
		for ts, v := range w {
			if gv, ok := g[ts]; !ok || math.Float64bits(gv) != math.Float64bits(v) {
				t.Fatalf("series %s at %d: %v (present %v), want %v", k, ts, gv, ok, v)
			}
		}
	}
}

// summaryField is the value of "name: value" in tsdb import's summary.
func summaryField(t *testing.T, out, name string) int64 {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("summary line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %q in the summary:\n%s", name, out)
	return 0
}

// TestImportKilledAndResumed runs tsdb import openmetrics as a real process,
// kills it with SIGKILL once its checkpoint shows progress, and runs it again:
// the second run skips what the checkpoint records, and the store then holds
// every sample of the file once, exactly.
func TestImportKilledAndResumed(t *testing.T) {
	const series, n = 20, 2000
	path, want := importFileFixture(t, series, n)
	dir := filepath.Join(t.TempDir(), "data")
	cp := filepath.Join(t.TempDir(), "import.json")
	args := []string{"import", "openmetrics", path, "--storage=embedded:" + dir, "--checkpoint=" + cp,
		"--batch-samples=500", "--concurrency=1", "--progress=log"}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TSDB_TEST_BE_TSDB=1")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var offset int64
	for offset == 0 {
		select {
		case err := <-exited:
			t.Fatalf("tsdb import exited (%v) before its checkpoint showed progress; log:\n%s", err, logs.String())
		case <-time.After(2 * time.Millisecond): // poll the checkpoint
		}
		var st struct {
			Offset int64 `json:"offset"`
		}
		if b, err := os.ReadFile(cp); err == nil {
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("checkpoint %s: %v: %q", cp, err, b)
			}
			offset = st.Offset
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Offset   int64 `json:"offset"`
		Complete bool  `json:"complete"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Complete || st.Offset >= fi.Size() {
		t.Fatalf("the import finished before it was killed (checkpoint %s): make the file larger", b)
	}
	t.Logf("killed at offset %d of %d", st.Offset, fi.Size())

	code, out, stderr := tsdb(t, args...)
	if code != 0 {
		t.Fatalf("resumed import exited %d:\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "resuming from the checkpoint") {
		t.Fatalf("the resumed import does not say it resumes:\n%s", stderr)
	}
	written, skipped := summaryField(t, out, "samples_written"), summaryField(t, out, "samples_skipped")
	if skipped == 0 || written+skipped != series*n || summaryField(t, out, "series") != series {
		t.Fatalf("resumed import: %d written + %d skipped, want %d in all, more than 0 skipped, over %d series:\n%s",
			written, skipped, series*n, series, out)
	}
	storedOnce(t, want, series*n)(readStore(t, dir))
	// A third run finds the import complete and writes nothing.
	runsAgainWritingNothing(t, args, "imported already")
}

// storedOnce returns a check that the samples read from a store (readStore)
// are want, in one raw cell each (n in all).
func storedOnce(t *testing.T, want map[string]map[int64]float64, n int) func(map[string]map[int64]float64, int) {
	return func(got map[string]map[int64]float64, rawCells int) {
		t.Helper()
		sameSamples(t, want, got)
		if rawCells != n {
			t.Fatalf("%d raw cells in the data table (every version), want one per sample, %d", rawCells, n)
		}
	}
}

// runsAgainWritingNothing runs a finished import again: it must succeed,
// log said and write nothing.
func runsAgainWritingNothing(t *testing.T, args []string, said string) {
	t.Helper()
	code, out, stderr := tsdb(t, args...)
	if code != 0 || summaryField(t, out, "samples_written") != 0 || !strings.Contains(stderr, said) {
		t.Fatalf("the finished import run again exited %d:\n%s%s", code, out, stderr)
	}
}

// TestImportRefusesARunningServersStore: on the embedded store a running tsdb
// serve holds the lock; tsdb import says so and what to do.
func TestImportRefusesARunningServersStore(t *testing.T) {
	path, _ := importFileFixture(t, 1, 1)
	dir := filepath.Join(t.TempDir(), "data")
	s := startServe(t, "--storage=embedded:"+dir)
	s.waitFor(t, "/-/ready", 200)
	code, _, stderr := tsdb(t, "import", "openmetrics", path, "--storage=embedded:"+dir)
	if code != 1 || !strings.Contains(stderr, "another process (a running tsdb serve?) holds the embedded store "+dir+
		"; stop it, run tsdb import, then start it again (on HBase, imports run beside the servers)") {
		t.Fatalf("import into a served store: exit %d, stderr %q", code, stderr)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestImportDryRunCountsAndWritesNothing: --dry-run reads and counts the file
// and creates neither a store nor a checkpoint.
func TestImportDryRunCountsAndWritesNothing(t *testing.T) {
	path, _ := importFileFixture(t, 3, 10)
	dir := filepath.Join(t.TempDir(), "data")
	code, out, stderr := tsdb(t, "import", "openmetrics", path, "--storage=embedded:"+dir, "--dry-run")
	if code != 0 || summaryField(t, out, "samples_read") != 30 || summaryField(t, out, "series") != 3 {
		t.Fatalf("dry run exited %d:\n%s%s", code, out, stderr)
	}
	for _, p := range []string{dir, path + ".tsdb-import.json"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("a dry run made %s (%v)", p, err)
		}
	}
}

// TestImportBadCommandLines: what is wrong is named.
func TestImportBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "remote-read", "http://x/api/v1/read", "--match=up", "--start=yesterday"},
			`tsdb import remote-read: --start: "yesterday" is not a time: give RFC 3339 (2026-01-02T15:04:05Z), Unix seconds, or now`},
		{[]string{"import", "remote-read", "http://x/api/v1/read", "--match=up", "--start=0", "--read-frame-limit=0B"},
			"tsdb import remote-read: --read-frame-limit must be positive, got 0"},
		{[]string{"import", "remote-read", "x:9090", "--match=up{", "--start=10", "--end=5"},
			"tsdb import remote-read: importer: remote-read URL \"x:9090\" is not an http:// or https:// URL\n" +
				"the end 1970-01-01T00:00:05Z is before the start 1970-01-01T00:00:10Z\n" +
				"selector \"up{\": 1:4: parse error: unexpected end of input inside braces"},
		{[]string{"import", "openmetrics", "x.om", "--batch-samples=600000"},
			"tsdb import openmetrics: --batch-samples=600000 is over 500000, the most samples one write may carry"},
		{[]string{"import", "openmetrics", "x.om", "--concurrency=-1"},
			"tsdb import openmetrics: --concurrency must not be negative (0 means the default), got -1"},
	} {
		code, _, stderr := tsdb(t, tc.args...)
		if code != 1 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("tsdb %s: exit %d, stderr %q, want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestImportRemoteReadFromAnotherTsdb imports a file into one store, serves it
// with tsdb serve, and imports that server's remote read into a second store
// with tsdb import remote-read: the second store then holds the file.
func TestImportRemoteReadFromAnotherTsdb(t *testing.T) {
	path, want := importFileFixture(t, 5, 400)
	src, dst := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "dst")
	if code, out, stderr := tsdb(t, "import", "openmetrics", path, "--storage=embedded:"+src); code != 0 {
		t.Fatalf("import into the source exited %d:\n%s%s", code, out, stderr)
	}
	s := startServe(t, "--storage=embedded:"+src, "--compact.enabled=false")
	s.waitFor(t, "/-/ready", 200)
	start := strconv.FormatInt(time.Now().Add(-4*time.Hour).Unix(), 10)
	code, out, stderr := tsdb(t, "import", "remote-read", "http://"+s.addr+"/api/v1/read", "--match=import_test_value",
		"--start="+start, "--slice=25m", "--concurrency=3", "--storage=embedded:"+dst,
		"--checkpoint="+filepath.Join(t.TempDir(), "cp.json"))
	if code != 0 || summaryField(t, out, "samples_written") != 5*400 || summaryField(t, out, "series") != 5 {
		t.Fatalf("remote-read import exited %d:\n%s%s", code, out, stderr)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	got, _ := readStore(t, dst)
	sameSamples(t, want, got)
}
