package otsdbimport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/hbase"
	"github.com/hbtsdb/hbtsdb/otsdbformat"
	"github.com/hbtsdb/hbtsdb/otsdbimport"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
	"github.com/hbtsdb/hbtsdb/testing/opentsdbtest"
	"github.com/hbtsdb/hbtsdb/write"
)

// compactionConf makes a TSD compact every row of a past hour within a second
// or two of its put: CompactionQueue flushes when its size is above
// min_flush_threshold, at most max(threshold, size × flush_interval ×
// flush_speed / 3600) rows a round, every flush_interval seconds.
var compactionConf = []string{
	"tsd.storage.enable_compaction = true",
	"tsd.storage.compaction.flush_interval = 1",
	"tsd.storage.compaction.min_flush_threshold = 0",
	"tsd.storage.compaction.flush_speed = 3600",
}

// TestImportFromOpenTSDB puts the corpus (newCorpus) into a real OpenTSDB
// 2.4.1 through its /api/put, stored three ways — as single cells, compacted
// by OpenTSDB's own compaction (with 4-byte tagv UIDs), and appended (salted
// over 4 buckets) — plus an annotation of a series and a global one, and
// imports OpenTSDB's tables into a fresh hbtsdb store on the same HBase. The
// real PromQL engine then returns exactly the points sent, bit for bit, and
// the same answers as a store the same datapoints were put into directly
// through /api/put's decoder; what is not a point is counted by kind.
func TestImportFromOpenTSDB(t *testing.T) {
	for _, tc := range []struct {
		name   string
		conf   []string
		layout otsdbformat.Layout
		// kind is the kind of column the TSD stores the points in; also
		// holds another kind of column points may be in (the compaction
		// scenario's points put after compacting stay single cells).
		kind, also otsdbformat.Kind
	}{
		{"single cells", []string{"tsd.storage.enable_compaction = false"}, otsdbformat.Layout{},
			otsdbformat.KindSingle, otsdbformat.KindSingle},
		{"compacted by OpenTSDB, 4-byte tagv UIDs", append(slices.Clone(compactionConf), "tsd.storage.uid.width.tagv = 4"),
			otsdbformat.Layout{TagvWidth: 4}, otsdbformat.KindCompacted, otsdbformat.KindSingle},
		{"appended, salted", []string{"tsd.storage.enable_compaction = false", "tsd.storage.enable_appends = true",
			"tsd.storage.salt.width = 1", "tsd.storage.salt.buckets = 4"},
			otsdbformat.Layout{SaltWidth: 1, SaltBuckets: 4}, otsdbformat.KindAppended, otsdbformat.KindAppended},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENTSDB_EXTRA_CONF", strings.Join(tc.conf, "\n"))
			tsd := opentsdbtest.Start(t)
			c := newCorpus(time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour))
			for _, b := range c.bodies(500) {
				tsd.Put(t, b)
			}
			src := openSource(t, tsd, tc.layout)
			if tc.kind == otsdbformat.KindCompacted {
				// OpenTSDB queues a row for compaction when a point is put
				// into it, unless it is queued already, and compacts what
				// it reads then: points that land after that read stay
				// single cells until another put queues the row again. So
				// once every put is done, each row gets one more point,
				// and is then compacted with everything before it (the new
				// point may stay a single cell beside the compacted one).
				tsd.Put(t, c.touchRows())
				waitCompacted(t, tsd, src)
			}
			annotate(t, tsd, src, c) // after compaction, which fails on rows with annotations
			d, st := openDB(t, schematest.Backends()[1])
			var stats otsdbimport.Stats
			progress := &importer.Progress{}
			err := otsdbimport.Import(context.Background(), src, otsdbimport.Options{
				Import: importer.Options{Sink: d, Progress: progress, Logger: testLogger(t)}, Stats: &stats})
			if err != nil {
				t.Fatal(err)
			}
			if got := progress.Samples.Load(); got != int64(c.samples()) || progress.Series() != len(c.want) {
				t.Fatalf("%d samples of %d series written, want %d of %d", got, progress.Series(), c.samples(), len(c.want))
			}
			sameSamples(t, c.want, rawSamples(t, d, c))
			if n := rawCells(t, st); n != c.samples() {
				t.Errorf("%d raw cells in the data table, want one per point, %d", n, c.samples())
			}

			// The same datapoints put into hbtsdb directly answer the same.
			direct, _ := openDB(t, schematest.Backends()[0])
			putDirectly(t, direct, c)
			for _, q := range []struct {
				expr string
				step time.Duration
			}{
				{fmt.Sprintf(`{__name__=~".+"}[%ds]`, int(c.end.Sub(c.start).Seconds())), 0},
				{`resets({__name__="app.requests"}[4h])`, 0},
				{`rate({__name__="app.requests"}[5m])`, time.Minute},
				{`sum by (host) ({__name__="sys.cpu.user"})`, 90 * time.Second},
				{`max_over_time({__name__="app.latency-p99"}[1m])`, 30 * time.Second},
				{`{__name__="Temp.Kitchen", room="café"}`, 10 * time.Second},
			} {
				imported := promQL(t, d, q.expr, c.start, c.end, q.step)
				if want := promQL(t, direct, q.expr, c.start, c.end, q.step); imported != want || imported == "" {
					t.Errorf("%s (step %s) over the imported series:\n%s\nover the same datapoints put directly:\n%s", q.expr, q.step, imported, want)
				}
			}
			if got := promQL(t, d, `resets({__name__="app.requests"}[4h])`, c.start, c.end, 0); !strings.HasSuffix(got, ":4000000000000000") {
				t.Errorf("resets of the counter = %s, want 2 (0x4000000000000000)", got)
			}

			// What is not a point is counted, by kind. OpenTSDB's compaction
			// puts the compacted column before it deletes the cells it
			// read, so a row read meanwhile holds points twice: the
			// duplicates are left out, and counted.
			dups := stats.DuplicatePoints.Load()
			if tc.kind == otsdbformat.KindCompacted {
				dups = 0
			}
			if stats.Points.Load() != int64(c.samples()) || stats.Columns[tc.kind].Load() == 0 ||
				stats.Columns[otsdbformat.KindAnnotation].Load() != 2 || stats.GlobalAnnotationRows.Load() != 1 ||
				stats.CorruptColumns.Load()+dups+stats.UnknownUIDRows.Load()+stats.BadKeyRows.Load() != 0 {
				t.Errorf("stats: %s; want %d points in %s columns, 2 annotations, 1 global annotation row, nothing corrupt",
					statsString(&stats), c.samples(), tc.kind)
			}
			for k := range otsdbformat.NumKinds {
				if kind := otsdbformat.Kind(k); kind.HoldsPoints() && kind != tc.kind && kind != tc.also && stats.Columns[k].Load() != 0 {
					t.Errorf("stats: %s; want the points in %s and %s columns only", statsString(&stats), tc.kind, tc.also)
				}
			}
			t.Logf("imported: %s", statsString(&stats))
			if tc.kind == otsdbformat.KindSingle {
				testResumeAndReimport(t, src, c)
			}
		})
	}
}

// testResumeAndReimport: a dry run counts and writes nothing; an import
// interrupted after a few batches (its context cancelled) and resumed with
// its checkpoint stores every point once; run again with the finished
// checkpoint it writes nothing, and without it, the same cells.
func testResumeAndReimport(t *testing.T, src otsdbimport.Source, c *corpus) {
	t.Helper()
	cpPath := filepath.Join(t.TempDir(), "cp.json")
	job := src.Job("hbase:test")
	open := func() *otsdbimport.Checkpoint {
		cp, err := otsdbimport.OpenCheckpoint(cpPath, job)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}

	dry := &importer.Progress{}
	var dryStats otsdbimport.Stats
	if err := otsdbimport.Import(context.Background(), src, otsdbimport.Options{
		Import: importer.Options{Progress: dry, Logger: testLogger(t)}, Checkpoint: open(), Stats: &dryStats}); err != nil {
		t.Fatal(err)
	}
	if dry.Samples.Load() != int64(c.samples()) || dry.Series() != len(c.want) || dryStats.Points.Load() != int64(c.samples()) {
		t.Errorf("dry run: %d samples of %d series, want %d of %d", dry.Samples.Load(), dry.Series(), c.samples(), len(c.want))
	}
	if _, err := os.Stat(cpPath); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote the checkpoint %s (%v)", cpPath, err)
	}

	d, st := openDB(t, schematest.Backends()[1])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &cancellingSink{Sink: d, after: 3, cancel: cancel}
	opts := otsdbimport.Options{Import: importer.Options{Sink: sink, BatchSamples: 250, Concurrency: 2,
		Progress: &importer.Progress{}, Logger: testLogger(t)}, Checkpoint: open(), KeyRanges: 3}
	if err := otsdbimport.Import(ctx, src, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted import: %v, want context.Canceled", err)
	}
	first := opts.Import.Progress.Samples.Load()
	var cp struct {
		Done     [][2]string `json:"done"`
		Complete bool        `json:"complete"`
	}
	if b, err := os.ReadFile(cpPath); err != nil || json.Unmarshal(b, &cp) != nil || len(cp.Done) == 0 || cp.Complete {
		t.Fatalf("the checkpoint after the interruption: %s (%v), want done spans and not complete", b, err)
	}
	if first == 0 || first >= int64(c.samples()) {
		t.Fatalf("the interrupted import wrote %d samples of %d: make it stop earlier", first, c.samples())
	}

	opts.Import.Sink, opts.Import.Progress = d, &importer.Progress{}
	opts.Checkpoint, opts.KeyRanges = open(), 5 // cut otherwise: the checkpoint is spans, not ranges
	if err := otsdbimport.Import(context.Background(), src, opts); err != nil {
		t.Fatal(err)
	}
	if again := opts.Import.Progress.Samples.Load(); again >= int64(c.samples()) || first+again < int64(c.samples()) {
		t.Errorf("the resumed import wrote %d samples after %d, want the rest of %d and not all", again, first, c.samples())
	}
	sameSamples(t, c.want, rawSamples(t, d, c))
	if n := rawCells(t, st); n != c.samples() {
		t.Errorf("%d raw cells in the data table after resuming, want one per point, %d", n, c.samples())
	}

	// Finished: run again, it writes nothing.
	before := snapshot(t, st)
	opts.Checkpoint, opts.Import.Progress = open(), &importer.Progress{}
	if err := otsdbimport.Import(context.Background(), src, opts); err != nil || opts.Import.Progress.Samples.Load() != 0 {
		t.Fatalf("import with a finished checkpoint: %v, %d samples written; want nothing", err, opts.Import.Progress.Samples.Load())
	}
	// Without the checkpoint: every point again, onto the same cells.
	st.Puts(schema.TableData, schema.FamilyRaw)
	opts.Checkpoint, opts.Import.Progress = nil, &importer.Progress{}
	if err := otsdbimport.Import(context.Background(), src, opts); err != nil {
		t.Fatal(err)
	}
	if n := st.Puts(schema.TableData, schema.FamilyRaw); n != c.samples() {
		t.Errorf("the import again put %d raw cells, want %d", n, c.samples())
	}
	for table, cs := range snapshot(t, st) {
		if !slices.Equal(cs, before[table]) {
			t.Errorf("table %s: %d cells after importing again, %d before, or other ones", table, len(cs), len(before[table]))
		}
	}
}

// snapshot is every cell of the hbtsdb tables an import writes but pending,
// whose late marks carry a nonce of the write (compaction deletes them).
func snapshot(t *testing.T, st kv.Store) map[string][]cell {
	out := map[string][]cell{}
	for _, table := range []string{schema.TableData, schema.TableSeries, schema.TableIndex, schema.TableMeta} {
		out[table] = cells(t, st, table)
	}
	return out
}

// cancellingSink cancels the import's context once after writes have
// succeeded, as a kill between two batches would stop it.
type cancellingSink struct {
	importer.Sink
	after  int32
	n      atomic.Int32
	cancel func()
}

func (s *cancellingSink) Write(ctx context.Context, req *write.Request) (write.Result, error) {
	res, err := s.Sink.Write(ctx, req)
	if err == nil && s.n.Add(1) == s.after {
		s.cancel()
	}
	return res, err
}

// openSource opens the TSD's tables by their names, as tsdb import opentsdb
// does.
func openSource(t testing.TB, tsd *opentsdbtest.TSD, layout otsdbformat.Layout) otsdbimport.Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := hbase.Open(ctx, hbase.Options{Quorum: hbasetest.ZooKeeper(t), ExactTableNames: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return otsdbimport.Source{Store: st, DataTable: tsd.TablePrefix + "tsdb", UIDTable: tsd.TablePrefix + "tsdb-uid", Layout: layout}
}

// annotate adds a global annotation (the row of metric UID 0) through
// OpenTSDB's /api/annotation, and an annotation of a series: the column
// Annotation.syncToStorage writes into the series' data row (qualifier
// Internal.getQualifier(start, Annotation.PREFIX), value the annotation's
// JSON), put into the table directly because OpenTSDB 2.4.1 parses a
// series' TSUID with javax.xml.bind, which the TSD's Java 17 lacks.
func annotate(t *testing.T, tsd *opentsdbtest.TSD, src otsdbimport.Source, c *corpus) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"startTime": c.start.Unix() + 150, "description": "maintenance"})
	if status, body := tsd.Post(t, "/api/annotation", b); status != 200 {
		t.Fatalf("OpenTSDB /api/annotation %s = %d %s", b, status, body)
	}
	ctx := context.Background()
	sc := src.Store.Scan(ctx, src.DataTable, nil, nil, kv.Families(otsdbformat.FamilyData))
	defer sc.Close()
	for sc.Next() {
		key, err := src.Layout.ParseRowKey(sc.Row().Key)
		if err != nil || key.IsGlobalAnnotation() {
			continue
		}
		const offset = 90 // seconds into the row's hour
		note, _ := json.Marshal(map[string]any{"tsuid": fmt.Sprintf("%X%X", key.Metric, key.Tags),
			"startTime": int64(key.BaseTime) + offset, "endTime": 0, "description": "deploy", "notes": "", "custom": nil})
		put := kv.Put(sc.Row().Key, otsdbformat.FamilyData, []byte{otsdbformat.PrefixAnnotation, 0, offset},
			time.Now().UnixMilli(), note)
		if err := src.Store.Apply(ctx, src.DataTable, []kv.Mutation{put}); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no data row to annotate in %s (%v)", src.DataTable, sc.Err())
}

// waitCompacted waits until OpenTSDB's compaction has written a compacted
// column into every row, reading the data table again whenever it has not.
func waitCompacted(t testing.TB, tsd *opentsdbtest.TSD, src otsdbimport.Source) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rows, compacted, single := 0, 0, 0
		var left []string
		sc := src.Store.Scan(context.Background(), src.DataTable, nil, nil, kv.Families(otsdbformat.FamilyData))
		for sc.Next() {
			rows++
			kinds := map[otsdbformat.Kind]int{}
			for _, c := range sc.Row().Cells {
				kinds[otsdbformat.ClassifyQualifier(c.Qualifier)]++
			}
			compacted += kinds[otsdbformat.KindCompacted]
			single += kinds[otsdbformat.KindSingle]
			if kinds[otsdbformat.KindCompacted] == 0 {
				left = append(left, fmt.Sprintf("%x: %d single columns", sc.Row().Key, kinds[otsdbformat.KindSingle]))
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		sc.Close()
		if len(left) == 0 && compacted > 0 {
			t.Logf("OpenTSDB compacted its rows: %d rows, %d compacted columns, %d single ones put after", rows, compacted, single)
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(tsd.Log)
			t.Fatalf("OpenTSDB's compaction left %d of %d rows without a compacted column:\n%s\nits log:\n%s", len(left), rows,
				strings.Join(left, "\n"), log)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(250 * time.Millisecond): // then read the table again
		}
	}
}

func statsString(s *otsdbimport.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rows %d, points %d, columns", s.Rows.Load(), s.Points.Load())
	for k := range otsdbformat.NumKinds {
		fmt.Fprintf(&b, " %s %d", otsdbformat.Kind(k), s.Columns[k].Load())
	}
	fmt.Fprintf(&b, ", corrupt %d, duplicates %d, unknown UID rows %d, bad keys %d, global annotation rows %d",
		s.CorruptColumns.Load(), s.DuplicatePoints.Load(), s.UnknownUIDRows.Load(), s.BadKeyRows.Load(),
		s.GlobalAnnotationRows.Load())
	return b.String()
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
