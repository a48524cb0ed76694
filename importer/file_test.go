package importer_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// omFile writes an OpenMetrics file of a counter (with a label value holding
// a quote, a backslash and a newline, and an exemplar), a gauge with special
// values, and a classic histogram, n samples each 15s apart from base, and
// returns its path and what it holds.
func omFile(t *testing.T, base int64, n int) (string, dataset) {
	t.Helper()
	want := dataset{}
	var b strings.Builder
	ts := func(ms int64) string { return fmt.Sprintf("%d.%03d", ms/1000, ms%1000) }
	add := func(lbls labels.Labels, line string, ms int64, v float64) {
		want[lbls.String()] = append(want[lbls.String()], point{T: ms, Bits: math.Float64bits(v)})
		fmt.Fprintf(&b, "%s %s %s\n", line, strconv.FormatFloat(v, 'g', -1, 64), ts(ms))
	}
	counter := labels.FromStrings("__name__", "http_requests_total", "code", "200", "path", "/a\"b\\c\nd")
	b.WriteString("# HELP http_requests Requests served.\n# TYPE http_requests counter\n")
	for i := range n {
		ms := base + int64(i)*15_000
		want[counter.String()] = append(want[counter.String()], point{T: ms, Bits: math.Float64bits(float64(i * 3))})
		line := `http_requests_total{code="200",path="/a\"b\\c\nd"} ` + strconv.Itoa(i*3) + " " + ts(ms)
		if i == 0 {
			line += ` # {trace_id="abc"} 1 ` + ts(ms)
		}
		b.WriteString(line + "\n")
	}
	gaugeValues := []float64{-1.5, 1e300, math.Inf(1), math.Inf(-1), 0.1, 42, math.NaN()}
	b.WriteString("# TYPE room_temperature_celsius gauge\n# UNIT room_temperature_celsius celsius\n")
	gauge := labels.FromStrings("__name__", "room_temperature_celsius", "room", "kitchen")
	for i := range n {
		add(gauge, `room_temperature_celsius{room="kitchen"}`, base+int64(i)*15_000, gaugeValues[i%len(gaugeValues)])
	}
	b.WriteString("# TYPE rpc_seconds histogram\n")
	for i := range n {
		ms := base + int64(i)*15_000
		// The OpenMetrics parser normalises le="1" to "1.0", as Prometheus
		// stores it when it scrapes or backfills the file.
		for j, le := range []string{"0.1", "1", "+Inf"} {
			norm := map[string]string{"1": "1.0"}[le]
			if norm == "" {
				norm = le
			}
			add(labels.FromStrings("__name__", "rpc_seconds_bucket", "le", norm), `rpc_seconds_bucket{le="`+le+`"}`, ms, float64(i*(j+1)))
		}
		add(labels.FromStrings("__name__", "rpc_seconds_count"), "rpc_seconds_count", ms, float64(i*3))
		add(labels.FromStrings("__name__", "rpc_seconds_sum"), "rpc_seconds_sum", ms, float64(i)*0.25)
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), "input.om")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// TestImportFileEqualsTheFile imports an OpenMetrics file of five hours ago
// (late cells) and reads it back through the query path, exactly; compaction
// then folds it into chunks like any late data, and importing it again
// changes nothing.
func TestImportFileEqualsTheFile(t *testing.T) {
	for _, b := range []schematest.Backend{embedded(), hbaseBackend()} {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testImportFileEqualsTheFile(t, b)
		})
	}
}

func testImportFileEqualsTheFile(t *testing.T, b schematest.Backend) {
	ctx := context.Background()
	const n = 400 // 100 minutes of samples, in buckets sealed long ago
	base := hoursAgo(5)
	path, want := omFile(t, base, n)
	d, st, settings := openDB(t, b)
	progress := &importer.Progress{}
	cp, err := importer.OpenCheckpoint(filepath.Join(t.TempDir(), "cp.json"), "test")
	if err != nil {
		t.Fatal(err)
	}
	opts := importer.Options{Sink: d, BatchSamples: 333, Concurrency: 3, Checkpoint: cp, Progress: progress}
	if err := importer.ImportFile(ctx, path, importer.FormatOpenMetrics, opts); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, base, base+n*15_000); diff(want, got) != "" {
		t.Fatalf("after the import:\n%s", diff(want, got))
	}
	fi, _ := os.Stat(path)
	if got, wantN := progress.Samples.Load(), int64(want.samples()); got != wantN || progress.Series() != len(want) ||
		progress.Exemplars.Load() != 1 || progress.Skipped.Load() != 0 || progress.Done.Load() != fi.Size() {
		t.Fatalf("progress: samples %d (want %d), series %d (want %d), exemplars %d (want 1), skipped %d, done %d of %d",
			got, wantN, progress.Series(), len(want), progress.Exemplars.Load(), progress.Skipped.Load(), progress.Done.Load(), fi.Size())
	}
	if !cp.Complete() || cp.Offset() != fi.Size() {
		t.Fatalf("checkpoint: complete %v offset %d, want complete at %d", cp.Complete(), cp.Offset(), fi.Size())
	}
	m, ok, err := d.Metadata(ctx, "room_temperature_celsius")
	if err != nil || !ok || m != (schema.Metadata{Metric: "room_temperature_celsius", Type: "gauge", Unit: "celsius"}) {
		t.Fatalf("metadata of room_temperature_celsius: %+v %v %v", m, ok, err)
	}

	// Old samples are late cells with late pending marks: the worker compacts them.
	compactAll := func() compact.RoundStats {
		t.Helper()
		w, err := compact.NewWorker(st, settings, compact.WorkerOptions{Owner: "import-test",
			Compact: compact.Options{Rollups: b.TableOptions.Rollups, Apply: kv.ApplyOptions{}.WithDefaults()}})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := w.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	if rs := compactAll(); rs.Samples != want.samples() || rs.Rows == 0 {
		t.Fatalf("compaction after the import: %d samples in %d rows, want %d samples", rs.Samples, rs.Rows, want.samples())
	}
	if got := readAll(t, d, base, base+n*15_000); diff(want, got) != "" {
		t.Fatalf("after compaction:\n%s", diff(want, got))
	}

	// Importing again (no checkpoint) writes the same cells.
	opts.Checkpoint, opts.Progress = nil, nil
	if err := importer.ImportFile(ctx, path, importer.FormatOpenMetrics, opts); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, base, base+n*15_000); diff(want, got) != "" {
		t.Fatalf("after importing again:\n%s", diff(want, got))
	}
	// (On HBase the re-imported cells stay masked by the delete markers of
	// the first compaction, which deleted those very columns at those very
	// timestamps, so this round may find nothing to fold in; either way the
	// answer is the file's.)
	compactAll()
	if got := readAll(t, d, base, base+n*15_000); diff(want, got) != "" {
		t.Fatalf("after compacting again:\n%s", diff(want, got))
	}
}

// TestImportFileResumesAtTheCheckpoint: with a checkpoint at a line's start,
// only that line and those after it are written, and the ones before counted
// as skipped.
func TestImportFileResumesAtTheCheckpoint(t *testing.T) {
	ctx := context.Background()
	base := hoursAgo(2)
	content := "# TYPE g gauge\n" +
		fmt.Sprintf("g 1 %d\ng 2 %d\ng 3 %d\ng 4 %d\n", base/1000, base/1000+1, base/1000+2, base/1000+3) + "# EOF\n"
	path := filepath.Join(t.TempDir(), "g.om")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	cp, err := importer.OpenCheckpoint(filepath.Join(t.TempDir(), "cp.json"), "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.SetOffset(int64(strings.Index(content, "g 3"))); err != nil {
		t.Fatal(err)
	}
	// What OpenCheckpoint reads back is what was saved.
	if cp, err = importer.OpenCheckpoint(cp.Path(), "g"); err != nil {
		t.Fatal(err)
	}
	d, _, _ := openDB(t, embedded())
	progress := &importer.Progress{}
	if err := importer.ImportFile(ctx, path, importer.FormatOpenMetrics, importer.Options{Sink: d, Checkpoint: cp, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	want := dataset{`{__name__="g"}`: {{T: base + 2000, Bits: math.Float64bits(3)}, {T: base + 3000, Bits: math.Float64bits(4)}}}
	if got := readAll(t, d, base, base+10_000); diff(want, got) != "" {
		t.Fatal(diff(want, got))
	}
	if progress.Samples.Load() != 2 || progress.Skipped.Load() != 2 {
		t.Fatalf("samples %d skipped %d, want 2 and 2", progress.Samples.Load(), progress.Skipped.Load())
	}
	if _, err := importer.OpenCheckpoint(cp.Path(), "another"); !errors.Is(err, importer.ErrCheckpointMismatch) ||
		err.Error() != fmt.Sprintf(`importer: checkpoint belongs to another import: %s records "g", this import is "another": `+
			"delete it to start over, or give another --checkpoint", cp.Path()) {
		t.Fatalf("checkpoint of another job: %v", err)
	}
}

// TestImportFileBadInputNamesTheLine: every kind of bad input stops the
// import with an error that starts with file:line.
func TestImportFileBadInputNamesTheLine(t *testing.T) {
	ts := strconv.FormatInt(hoursAgo(1)/1000, 10)
	future := strconv.FormatInt(hoursAgo(-2)/1000, 10)
	for _, tc := range []struct {
		name, content, want string
	}{
		{"an unterminated label value", "# TYPE a gauge\na 1 " + ts + "\na{x=\"y} 2 " + ts + "\n# EOF\n",
			`:3: bad input: expected label value, got "\"y} 2 ` + ts + `\n" ("INVALID") while parsing: "a{x=\"y} 2 ` + ts + `\n"`},
		{"a sample without a timestamp", "# TYPE a gauge\na 1 " + ts + "\na 2\n# EOF\n",
			`:3: bad input: sample of {__name__="a"} has no timestamp: an import needs one on every sample ` +
				`(as promtool tsdb create-blocks-from openmetrics)`},
		{"no # EOF", "# TYPE a gauge\na 1 " + ts + "\n", ":3: bad input: data does not end with # EOF"},
		{"a value that is not a number", "a 1 " + ts + "\na x " + ts + "\n# EOF\n",
			`:2: bad input: strconv.ParseFloat: parsing "x": invalid syntax while parsing: "a x"`},
		{"a sample in the future", "# TYPE a gauge\na 1 " + future + "\n# EOF\n",
			":2: bad input: the store rejects timestamp "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.om")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			d, _, _ := openDB(t, embedded())
			err := importer.ImportFile(context.Background(), path, importer.FormatOpenMetrics, importer.Options{Sink: d})
			if !errors.Is(err, importer.ErrBadInput) || !strings.HasPrefix(err.Error(), path+tc.want) {
				t.Fatalf("got  %v\nwant %s%s", err, path, tc.want)
			}
		})
	}
}

// TestImportPrometheusTextFormat imports Prometheus' text format (timestamps
// in milliseconds, blank lines and comments allowed, no # EOF, no newline at
// the end), and a bad line after blank lines is named by its own number.
func TestImportPrometheusTextFormat(t *testing.T) {
	ctx := context.Background()
	base := hoursAgo(2)
	ms := func(i int) string { return strconv.FormatInt(base+int64(i)*1000, 10) }
	content := "# HELP jobs_total Jobs.\n# TYPE jobs_total counter\n" +
		`jobs_total{queue="a\"b\\c\nd"} 1 ` + ms(0) + "\n\n# a comment\n" +
		`jobs_total{queue="a\"b\\c\nd"} 2.5 ` + ms(1) + "\n" +
		"up 1 " + ms(1)
	path := filepath.Join(t.TempDir(), "in.prom")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _, _ := openDB(t, embedded())
	cp, err := importer.OpenCheckpoint(filepath.Join(t.TempDir(), "cp.json"), "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := importer.ImportFile(ctx, path, importer.FormatPrometheus, importer.Options{Sink: d, Checkpoint: cp}); err != nil {
		t.Fatal(err)
	}
	want := dataset{
		`{__name__="jobs_total", queue="a\"b\\c\nd"}`: {{T: base, Bits: math.Float64bits(1)}, {T: base + 1000, Bits: math.Float64bits(2.5)}},
		`{__name__="up"}`: {{T: base + 1000, Bits: math.Float64bits(1)}},
	}
	if got := readAll(t, d, base, base+10_000); diff(want, got) != "" {
		t.Fatal(diff(want, got))
	}
	if !cp.Complete() || cp.Offset() != int64(len(content)+1) {
		t.Fatalf("checkpoint: complete %v at %d, want complete at %d (with the newline the parser needs)", cp.Complete(), cp.Offset(), len(content)+1)
	}

	bad := "a 1 " + ms(0) + "\n\n\n# c\n\na{b=} 1 " + ms(1) + "\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err = importer.ImportFile(ctx, path, importer.FormatPrometheus, importer.Options{Sink: d})
	if want := path + `:6: bad input: expected label value, got "}" ("INVALID") while parsing: "a{b=}"`; err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// failingSink fails the writes it is told to with err, and passes the others
// to the DB.
type failingSink struct {
	d      *db.DB
	err    error
	fail   func(n int) bool // whether write n (from 0) fails
	writes int
}

func (s *failingSink) Write(ctx context.Context, req *write.Request) (write.Result, error) {
	n := s.writes
	s.writes++
	if s.fail(n) {
		return write.Result{}, fmt.Errorf("store: %w", s.err)
	}
	return s.d.Write(ctx, req)
}

// TestImportFileRetriesAndStopsOnStoreFailures: a write failing with an
// error Options.Retryable accepts is tried again and the import completes;
// one failing otherwise fails the import, and the checkpoint keeps only
// what was stored before it.
func TestImportFileRetriesAndStopsOnStoreFailures(t *testing.T) {
	ctx := context.Background()
	base := hoursAgo(5)
	path, want := omFile(t, base, 100)
	errFlaky, errBroken := errors.New("unavailable for a moment"), errors.New("broken")

	d, _, _ := openDB(t, embedded())
	sink := &failingSink{d: d, err: errFlaky, fail: func(n int) bool { return n == 1 || n == 2 }}
	opts := importer.Options{Sink: sink, BatchSamples: 100, Concurrency: 1,
		Retryable: func(err error) bool { return errors.Is(err, errFlaky) }}
	if err := importer.ImportFile(ctx, path, importer.FormatOpenMetrics, opts); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, base, base+100*15_000); diff(want, got) != "" {
		t.Fatalf("after retried writes:\n%s", diff(want, got))
	}

	d, _, _ = openDB(t, embedded())
	sink = &failingSink{d: d, err: errBroken, fail: func(n int) bool { return n >= 3 }}
	cp, err := importer.OpenCheckpoint(filepath.Join(t.TempDir(), "cp.json"), "broken")
	if err != nil {
		t.Fatal(err)
	}
	opts.Sink, opts.Checkpoint = sink, cp
	err = importer.ImportFile(ctx, path, importer.FormatOpenMetrics, opts)
	if !errors.Is(err, errBroken) || errors.Is(err, importer.ErrBadInput) ||
		!strings.HasPrefix(err.Error(), "importer: write "+path+":") {
		t.Fatalf("import into a broken store: %v", err)
	}
	// Three batches of 100 samples stored: the checkpoint is at the start of
	// the fourth's first line, and every sample before it is in the store.
	content, _ := os.ReadFile(path)
	stored := readAll(t, d, base, base+100*15_000)
	if n := stored.samples(); n != 300 || cp.Complete() {
		t.Fatalf("%d samples stored (want 300), checkpoint complete %v", n, cp.Complete())
	}
	lines := strings.SplitAfter(string(content), "\n")
	off, samples := 0, 0
	for _, l := range lines {
		if samples == 300 {
			break
		}
		if !strings.HasPrefix(l, "#") {
			samples++
		}
		off += len(l)
	}
	// The checkpoint ends at the start of the line of sample 301, after any
	// comment lines in between.
	for strings.HasPrefix(string(content[off:]), "#") {
		off += strings.IndexByte(string(content[off:]), '\n') + 1
	}
	if cp.Offset() != int64(off) {
		t.Fatalf("checkpoint at %d, want %d (the line after the 300th sample)", cp.Offset(), off)
	}
}
