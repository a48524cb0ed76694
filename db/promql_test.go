package db_test

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// skippedPromQLFiles are the files of Prometheus' PromQL acceptance suite
// TestPromQL skips, with why. None: hbtsdb stores native histograms and start
// timestamps, and every file passes (TestNoPromQLFileSkipped keeps it so).
var skippedPromQLFiles = map[string]string{}

// TestNoPromQLFileSkipped fails when a file of the suite is skipped.
func TestNoPromQLFileSkipped(t *testing.T) {
	if len(skippedPromQLFiles) > 0 {
		t.Errorf("PromQL files skipped: %v; every file must pass", skippedPromQLFiles)
	}
}

// TestPromQL runs Prometheus' own PromQL acceptance suite (promqltest) against
// a db.DB on each backend: every file must pass, native histograms (integer,
// float, custom buckets, gauges) and start timestamps included. It runs
// twice: on raw cells as written, and with every bucket compacted into chunks
// (compact.Compactor, grace 0) before each read, which must not change a
// single answer.
func TestPromQL(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, compacted := range []bool{false, true} {
			t.Run(storageName(b, compacted), func(t *testing.T) {
				t.Parallel()
				newStorage, compactedRows := storages(t, b, compacted)
				start := time.Now()
				promqltest.RunBuiltinTestsWithStorage(skipFiles{t}, newEngine(t), newStorage)
				t.Logf("PromQL suite on %s: %s", storageName(b, compacted), time.Since(start).Round(time.Millisecond))
				checkCompacted(t, compacted, compactedRows)
			})
		}
	}
}

// storageName names a backend and whether reads see compacted data.
func storageName(b schematest.Backend, compacted bool) string {
	if compacted {
		return b.Name + "/compacted"
	}
	return b.Name
}

// storages returns promqltest's storage maker for backend b: on raw cells, or,
// with compacted, with every sealed bucket compacted before each querier is
// handed out; the counter counts the rows compacted.
func storages(t *testing.T, b schematest.Backend, compacted bool) (func(testing.TB) storage.Storage, *atomic.Int64) {
	newStorage := embeddedStorages(b)
	if b.Name == "hbase" {
		newStorage = hbaseStorages(t, b)
	}
	rows := new(atomic.Int64)
	if !compacted {
		return newStorage, rows
	}
	return func(t testing.TB) storage.Storage {
		s := newStorage(t).(*storageOn)
		c, err := compact.NewCompactor(s.st, s.settings, compact.Options{
			// Every bucket ends long before the clock: all are sealed.
			Now: func() time.Time { return time.UnixMilli(kv.MaxTimestamp) },
		})
		if err != nil {
			t.Fatal(err)
		}
		return &compactBeforeRead{storageOn: s, c: c, rows: rows}
	}, rows
}

// checkCompacted fails a compacted run whose reads never found anything to
// compact: it would have tested raw cells only.
func checkCompacted(t *testing.T, compacted bool, rows *atomic.Int64) {
	t.Helper()
	if compacted && rows.Load() == 0 {
		t.Error("no bucket was compacted: the suite read raw cells only")
	}
	if compacted {
		t.Logf("%d buckets compacted into chunks before reads", rows.Load())
	}
}

// storageOn is the DB promqltest writes and reads, with the store and settings
// it was opened on.
type storageOn struct {
	*db.DB
	st       kv.Store
	settings schema.Settings
}

// compactBeforeRead compacts every bucket that holds raw cells before each
// querier it hands out, so that the suite's evals read chunks (and the raw cells
// of later loads merged with them).
// Only a querier after a commit compacts: the evals between two loads would
// find nothing new, and each pass costs a scan per salt.
type compactBeforeRead struct {
	*storageOn
	c     *compact.Compactor
	rows  *atomic.Int64
	dirty atomic.Bool // a commit since the last compaction
}

func (s *compactBeforeRead) compact() error {
	if !s.dirty.Swap(false) {
		return nil
	}
	st, err := s.c.Compact(context.Background())
	s.rows.Add(int64(st.Rows))
	return err
}

func (s *compactBeforeRead) Appender(ctx context.Context) storage.Appender {
	return dirtyingAppender{Appender: s.storageOn.Appender(ctx), dirty: &s.dirty}
}

func (s *compactBeforeRead) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return dirtyingAppenderV2{AppenderV2: s.storageOn.AppenderV2(ctx), dirty: &s.dirty}
}

// dirtyingAppender and dirtyingAppenderV2 mark the storage dirty on Commit,
// whether or not it succeeds (a partial commit may have stored samples).
type dirtyingAppender struct {
	storage.Appender
	dirty *atomic.Bool
}

func (a dirtyingAppender) Commit() error {
	defer a.dirty.Store(true)
	return a.Appender.Commit()
}

type dirtyingAppenderV2 struct {
	storage.AppenderV2
	dirty *atomic.Bool
}

func (a dirtyingAppenderV2) Commit() error {
	defer a.dirty.Store(true)
	return a.AppenderV2.Commit()
}

func (s *compactBeforeRead) Querier(mint, maxt int64) (storage.Querier, error) {
	if err := s.compact(); err != nil {
		return nil, err
	}
	return s.storageOn.Querier(mint, maxt)
}

func (s *compactBeforeRead) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	if err := s.compact(); err != nil {
		return nil, err
	}
	return s.storageOn.ChunkQuerier(mint, maxt)
}

// newEngine is promqltest's engine (promqltest.NewTestEngine's options) with
// every experimental parser feature the files use (promqltest.TestParserOpts)
// and start timestamps used by rate() and friends, as start_timestamps.test
// expects.
func newEngine(t *testing.T) *promql.Engine {
	return promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples:               50_000_000,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnableDelayedNameRemoval: true,
		UseStartTimestamps:       true,
		LookbackDelta:            0, // the default, 5m
		Parser:                   parser.NewParser(promqltest.TestParserOpts),
	})
}

// skipFiles runs the suite's files, skipping those of skippedPromQLFiles.
type skipFiles struct{ *testing.T }

func (s skipFiles) Run(name string, f func(t *testing.T)) bool {
	if reason, ok := skippedPromQLFiles[name]; ok {
		return s.T.Run(name, func(t *testing.T) { t.Skip(reason) })
	}
	return s.T.Run(name, f)
}

// openPromQLDB opens a DB as promqltest needs it: it owns its store, and takes
// samples at any age (the files load samples from time 0).
func openPromQLDB(t testing.TB, st kv.Store, settings schema.Settings) *storageOn {
	t.Helper()
	d, err := db.Open(context.Background(), db.Options{
		Store: st, CloseStore: true, Settings: settings,
		Write: write.Options{Limits: write.Limits{MaxAge: 0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &storageOn{DB: d, st: st, settings: settings}
}

// embeddedStorages makes a fresh embedded store per kv.
func embeddedStorages(b schematest.Backend) func(testing.TB) storage.Storage {
	opts := b.TableOptions
	opts.RawRetention = 0
	return func(t testing.TB) storage.Storage {
		st, err := embedded.Open(context.Background(), t.TempDir(), embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		schematest.CreateWith(t, st, b.Settings, opts)
		return openPromQLDB(t, st, b.Settings)
	}
}

// hbaseStorages makes one set of HBase tables for the whole suite and a fresh
// keyspace (keyspace_test.go) on them per kv.
func hbaseStorages(t *testing.T, b schematest.Backend) func(testing.TB) storage.Storage {
	b.TableOptions.RawRetention = 0
	shared := b.Store(t)
	var gen atomic.Uint32
	return func(t testing.TB) storage.Storage {
		ks := &keyspace{Store: shared, prefix: binary.BigEndian.AppendUint32([]byte("g"), gen.Add(1))}
		schematest.CreateWith(t, ks, b.Settings, b.TableOptions)
		return openPromQLDB(t, ks, b.Settings)
	}
}
