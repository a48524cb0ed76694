// Package kvmetrics instruments a kv.Store with Prometheus metrics: every
// operation's latency and errors by backend and operation, and the size of the
// batches written. It wraps the Store interface only, so it works the same over
// every backend (kv/embedded, kv/hbase) and changes nothing of what the store
// does or answers.
//
// Metrics (registered on the Registerer given to New; Wrap instruments a store
// with them, as often as a store is opened again):
//
//	hbtsdb_kv_operation_duration_seconds{backend, operation}  histogram
//	hbtsdb_kv_operation_errors_total{backend, operation}      counter
//	hbtsdb_kv_batch_mutations{backend}                        histogram of Apply's batch sizes
//	hbtsdb_kv_read_rows_total{backend, operation, job}         rows reads returned
//	hbtsdb_kv_read_cells_total{backend, operation, job}        cells reads returned
//	hbtsdb_kv_read_internal_keys_total{backend, operation, job}          keys the store iterated over (kv.ReadWork)
//	hbtsdb_kv_read_internal_keys_deleted_total{backend, operation, job}  of those, covered by range tombstones
//	hbtsdb_kv_read_internal_seeks_total{backend, operation, job}         iterator seeks
//	hbtsdb_kv_tombstones_total{backend, kind}                 tombstones deletes left behind (kv.Tombstones)
//	hbtsdb_kv_head_rows{backend}, hbtsdb_kv_head_cells{backend}, hbtsdb_kv_head_bytes{backend},
//	hbtsdb_kv_head_log_bytes{backend}                           what the open stores' heads hold (kv.HeadStats)
//	hbtsdb_kv_head_flushed_cells_total{backend}                 cells their heads wrote into the files to stay within bounds
//
// operation is apply, get, get_rows, scan (from Scan to Close), increment,
// check_and_put, ping. A context cancelled by the caller is not an error of the
// store and is not counted as one.
//
// The read counters (operation get, get_rows or scan) say what reads cost
// whatever the machine's load: job is the kv.JobLabel pprof label of the read's
// context (ingest, query, compaction; other without one), so that the cost of a
// query or of a compaction round can be read as keys per sample or per row.
// The internal ones count kv.ReadWork, which only the embedded store fills
// (Pebble's iterator statistics); on HBase they stay 0.
//
// The tombstone counter (kind point or range) sums kv.TombstoneCounter over
// the stores Wrap instrumented, read when scraped: the open ones' counts and
// the last counts of those closed, so it keeps growing across a reopen. It
// stays 0 for a store that does not count its tombstones; the wrapper of one
// that does is a kv.TombstoneCounter too.
//
// The head gauges sum kv.HeadReporter over the open stores Wrap instrumented
// that have a head (the embedded store with --storage.head); they stay 0
// otherwise. HeadStats gives the same sums to the ingest summary.
//
// This package imports only kv and client_golang; it must never import a
// backend or a package above kv.
package kvmetrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Operation label values.
const (
	opApply       = "apply"
	opGet         = "get"
	opGetRows     = "get_rows"
	opScan        = "scan"
	opIncrement   = "increment"
	opCheckAndPut = "check_and_put"
	opPing        = "ping"
)

// Metrics are the collectors of the stores Wrap instruments, for one backend.
type Metrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	batch    prometheus.Observer
	// What reads returned and cost, by operation and job.
	readRows, readCells, readKeys, readKeysDeleted, readSeeks *prometheus.CounterVec
	// The tombstones of the wrapped stores.
	tombs *tombstoneSum
	// The open wrapped stores that may have a head.
	headsMu sync.Mutex
	heads   map[*store]kv.HeadReporter
}

// New registers the store metrics of backend (embedded, hbase: the backend
// label) on reg; one reg takes one New.
func New(backend string, reg prometheus.Registerer) *Metrics {
	constLabels := prometheus.Labels{"backend": backend}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "hbtsdb_kv_operation_duration_seconds",
		Help:        "Time one store operation took (a scan: from its start to its Close), by operation.",
		Buckets:     []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		ConstLabels: constLabels,
	}, []string{"operation"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "hbtsdb_kv_operation_errors_total",
		Help:        "Store operations that failed (not those the caller cancelled), by operation.",
		ConstLabels: constLabels,
	}, []string{"operation"})
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "hbtsdb_kv_batch_mutations",
		Help:        "Mutations per Apply (one write batch to the store).",
		Buckets:     prometheus.ExponentialBuckets(1, 4, 10),
		ConstLabels: constLabels,
	})
	m := &Metrics{duration: duration, errors: errs, batch: batch}
	readCounter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: constLabels},
			[]string{"operation", "job"})
		reg.MustRegister(c)
		return c
	}
	m.readRows = readCounter("hbtsdb_kv_read_rows_total",
		"Rows returned by reads (get, get_rows, scan), by operation and by the job (pprof label hbtsdb_job) that read them.")
	m.readCells = readCounter("hbtsdb_kv_read_cells_total",
		"Cells returned by reads, by operation and job.")
	m.readKeys = readCounter("hbtsdb_kv_read_internal_keys_total",
		"Keys the store iterated over to answer reads, skipped ones included (deleted, shadowed, out of range); "+
			"embedded store only (Pebble's iterator statistics), 0 on HBase. By operation and job.")
	m.readKeysDeleted = readCounter("hbtsdb_kv_read_internal_keys_deleted_total",
		"Of hbtsdb_kv_read_internal_keys_total, the keys range tombstones covered.")
	m.readSeeks = readCounter("hbtsdb_kv_read_internal_seeks_total",
		"Iterator seeks of reads; embedded store only, 0 on HBase. By operation and job.")
	reg.MustRegister(duration, errs, batch)
	m.tombs = &tombstoneSum{open: make(map[*store]struct{})}
	for _, kind := range []struct {
		name  string
		count func(kv.Tombstones) int64
	}{
		{"point", func(t kv.Tombstones) int64 { return t.Point }},
		{"range", func(t kv.Tombstones) int64 { return t.Range }},
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "hbtsdb_kv_tombstones_total",
			Help: "Tombstones the store's deletes left behind (kv.Tombstones), by kind: point (one column or cell version; " +
				"embedded: Pebble point deletions, HBase: DeleteColumn markers) or range (many cells; embedded: Pebble " +
				"range deletions, HBase: DeleteFamily markers and row deletes).",
			ConstLabels: prometheus.Labels{"backend": backend, "kind": kind.name},
		}, func() float64 { return float64(kind.count(m.tombs.total())) }))
	}
	m.heads = make(map[*store]kv.HeadReporter)
	for _, g := range []struct {
		name, help string
		value      func(kv.HeadStats) int64
		counter    bool
	}{
		{"hbtsdb_kv_head_rows", "Rows whose fresh cells the store keeps in memory behind its head log (embedded store; 0 without a head).",
			func(h kv.HeadStats) int64 { return h.Rows }, false},
		{"hbtsdb_kv_head_cells", "Cells (raw samples, pending marks) the store's head holds in memory.",
			func(h kv.HeadStats) int64 { return h.Cells }, false},
		{"hbtsdb_kv_head_bytes", "Memory the store's head takes; bounded by --storage.head.max-bytes.",
			func(h kv.HeadStats) int64 { return h.Bytes }, false},
		{"hbtsdb_kv_head_log_bytes", "Size on disk of the head's write-ahead log.",
			func(h kv.HeadStats) int64 { return h.LogBytes }, false},
		{"hbtsdb_kv_head_flushed_cells_total", "Cells the head wrote into the store's files because it was over its memory or log bound " +
			"(0 while compaction keeps up).", func(h kv.HeadStats) int64 { return h.FlushedCells }, true},
	} {
		value := func() float64 { st, _ := m.HeadStats(); return float64(g.value(st)) }
		opts := prometheus.Opts{Name: g.name, Help: g.help, ConstLabels: prometheus.Labels{"backend": backend}}
		if g.counter {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts(opts), value))
		} else {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts), value))
		}
	}
	return m
}

// HeadStats sums the heads of the open stores Wrap instrumented; ok is false
// when none has a head.
func (m *Metrics) HeadStats() (sum kv.HeadStats, ok bool) {
	m.headsMu.Lock()
	defer m.headsMu.Unlock()
	for _, h := range m.heads {
		st, has := h.HeadStats()
		if !has {
			continue
		}
		ok = true
		sum.Rows += st.Rows
		sum.Cells += st.Cells
		sum.Bytes += st.Bytes
		sum.LogBytes += st.LogBytes
		sum.LogSegments += st.LogSegments
		sum.FlushedRows += st.FlushedRows
		sum.FlushedCells += st.FlushedCells
		sum.ReplayedRecords += st.ReplayedRecords
	}
	return sum, ok
}

// tombstoneSum sums the tombstones of the stores Wrap instrumented that count
// them: those open are read when asked, those closed were read at their Close.
type tombstoneSum struct {
	mu     sync.Mutex
	open   map[*store]struct{} // each with tombs set
	closed kv.Tombstones
}

func (t *tombstoneSum) track(s *store) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[s] = struct{}{}
}

// retire keeps the last counts of a closed store (both backends answer
// Tombstones after Close); a second Close changes nothing.
func (t *tombstoneSum) retire(s *store) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.open[s]; !ok {
		return
	}
	delete(t.open, s)
	n := s.Tombstones()
	t.closed.Point += n.Point
	t.closed.Range += n.Range
}

func (t *tombstoneSum) total() kv.Tombstones {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum := t.closed
	for s := range t.open {
		n := s.Tombstones()
		sum.Point += n.Point
		sum.Range += n.Range
	}
	return sum
}

// read is one read under way: its context carries a kv.ReadWork for the store
// to fill.
type read struct {
	op, job string
	work    kv.ReadWork
}

// startRead returns the context a read op passes to the store.
func startRead(ctx context.Context, op string) (context.Context, *read) {
	r := &read{op: op, job: kv.JobOf(ctx)}
	return kv.WithReadWork(ctx, &r.work), r
}

// readDone counts what the read r returned (rows, cells) and what it cost the store.
func (m *Metrics) readDone(r *read, rows, cells int) {
	m.readRows.WithLabelValues(r.op, r.job).Add(float64(rows))
	m.readCells.WithLabelValues(r.op, r.job).Add(float64(cells))
	m.readKeys.WithLabelValues(r.op, r.job).Add(float64(r.work.Keys.Load()))
	m.readKeysDeleted.WithLabelValues(r.op, r.job).Add(float64(r.work.KeysDeleted.Load()))
	m.readSeeks.WithLabelValues(r.op, r.job).Add(float64(r.work.Seeks.Load()))
}

// Wrap returns st with its operations measured.
// It is a kv.TombstoneCounter exactly when st is one.
func (m *Metrics) Wrap(st kv.Store) kv.Store {
	s := &store{Store: st, m: m}
	if h, ok := st.(kv.HeadReporter); ok {
		m.headsMu.Lock()
		m.heads[s] = h
		m.headsMu.Unlock()
	}
	if tc, ok := st.(kv.TombstoneCounter); ok {
		s.tombs = tc
		m.tombs.track(s)
		return s
	}
	return uncounted{s}
}

// store is the instrumented kv.Store; Admin passes through.
type store struct {
	kv.Store
	m     *Metrics
	tombs kv.TombstoneCounter // the store's own, nil if it does not count them
}

// uncounted hides store's Tombstones for a store that does not count them.
type uncounted struct{ kv.Store }

// Tombstones passes the store's own counts through (nil tombs: see uncounted).
func (s *store) Tombstones() kv.Tombstones { return s.tombs.Tombstones() }

// Close closes the store and keeps its last tombstone counts.
func (s *store) Close() error {
	err := s.Store.Close()
	s.m.headsMu.Lock()
	delete(s.m.heads, s)
	s.m.headsMu.Unlock()
	if s.tombs != nil {
		s.m.tombs.retire(s)
	}
	return err
}

// done records one operation that began at start and ended with err.
func (m *Metrics) done(ctx context.Context, op string, start time.Time, err error) {
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		m.errors.WithLabelValues(op).Inc()
	}
}

func (s *store) Apply(ctx context.Context, table string, mutations []kv.Mutation) error {
	start := time.Now()
	err := s.Store.Apply(ctx, table, mutations)
	s.m.batch.Observe(float64(len(mutations)))
	s.m.done(ctx, opApply, start, err)
	return err
}

func (s *store) Get(ctx context.Context, table string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	start := time.Now()
	rctx, rd := startRead(ctx, opGet)
	r, err := s.Store.Get(rctx, table, row, opts...)
	s.m.done(ctx, opGet, start, err)
	rows := 0
	if len(r.Cells) > 0 {
		rows = 1
	}
	s.m.readDone(rd, rows, len(r.Cells))
	return r, err
}

func (s *store) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	start := time.Now()
	rctx, rd := startRead(ctx, opGetRows)
	r, err := s.Store.GetRows(rctx, table, rows, opts...)
	s.m.done(ctx, opGetRows, start, err)
	found, cells := 0, 0
	for _, row := range r {
		if len(row.Cells) > 0 {
			found++
			cells += len(row.Cells)
		}
	}
	s.m.readDone(rd, found, cells)
	return r, err
}

func (s *store) Increment(ctx context.Context, table string, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	start := time.Now()
	v, err := s.Store.Increment(ctx, table, row, family, qualifier, delta)
	s.m.done(ctx, opIncrement, start, err)
	return v, err
}

func (s *store) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	start := time.Now()
	ok, err := s.Store.CheckAndPut(ctx, table, expected, put)
	s.m.done(ctx, opCheckAndPut, start, err)
	return ok, err
}

func (s *store) Ping(ctx context.Context) error {
	start := time.Now()
	err := s.Store.Ping(ctx)
	s.m.done(ctx, opPing, start, err)
	return err
}

func (s *store) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	rctx, rd := startRead(ctx, opScan)
	return &scanner{Scanner: s.Store.Scan(rctx, table, start, stop, opts...), ctx: ctx, m: s.m, start: time.Now(), read: rd}
}

// scanner measures a scan from its start to its first Close, and counts the
// rows and cells it returned.
type scanner struct {
	kv.Scanner
	ctx         context.Context
	m           *Metrics
	start       time.Time
	read        *read
	rows, cells int
	closed      bool
}

func (sc *scanner) Next() bool {
	if !sc.Scanner.Next() {
		return false
	}
	sc.rows++
	sc.cells += len(sc.Scanner.Row().Cells)
	return true
}

func (sc *scanner) Close() error {
	err := sc.Scanner.Close()
	if !sc.closed {
		sc.closed = true
		sc.m.done(sc.ctx, opScan, sc.start, errors.Join(sc.Scanner.Err(), err))
		sc.m.readDone(sc.read, sc.rows, sc.cells)
	}
	return err
}
