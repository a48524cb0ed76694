// Package kvmetrics instruments a kv.Store with Prometheus metrics: every
// operation's latency and errors by backend and operation, and the size of the
// batches written. It wraps the Store interface only, so it works the same over
// every backend (kv/embedded, kv/hbase) and changes nothing of what the store
// does or answers.
//
// Metrics (registered on the Registerer given to New; Wrap instruments a store
// with them, as often as a store is opened again):
//
//	hbtsdb_storage_operation_duration_seconds{backend, operation}  histogram
//	hbtsdb_storage_operation_errors_total{backend, operation}      counter
//	hbtsdb_storage_batch_mutations{backend}                        histogram of Apply's batch sizes
//
// operation is apply, get, get_rows, scan (from Scan to Close), increment,
// check_and_put, ping. A context cancelled by the caller is not an error of the
// store and is not counted as one.
//
// This package imports only kv and client_golang; it must never import a
// backend or a package above kv.
package kvmetrics

import (
	"context"
	"errors"
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
}

// New registers the storage metrics of backend (embedded, hbase: the backend
// label) on reg; one reg takes one New.
func New(backend string, reg prometheus.Registerer) *Metrics {
	constLabels := prometheus.Labels{"backend": backend}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "hbtsdb_storage_operation_duration_seconds",
		Help:        "Time one storage operation took (a scan: from its start to its Close), by operation.",
		Buckets:     []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		ConstLabels: constLabels,
	}, []string{"operation"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "hbtsdb_storage_operation_errors_total",
		Help:        "Storage operations that failed (not those the caller cancelled), by operation.",
		ConstLabels: constLabels,
	}, []string{"operation"})
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "hbtsdb_storage_batch_mutations",
		Help:        "Mutations per Apply (one write batch to the store).",
		Buckets:     prometheus.ExponentialBuckets(1, 4, 10),
		ConstLabels: constLabels,
	})
	reg.MustRegister(duration, errs, batch)
	return &Metrics{duration: duration, errors: errs, batch: batch}
}

// Wrap returns st with its operations measured.
func (m *Metrics) Wrap(st kv.Store) kv.Store {
	return &store{Store: st, m: m}
}

// store is the instrumented kv.Store; Admin and Close pass through.
type store struct {
	kv.Store
	m *Metrics
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
	r, err := s.Store.Get(ctx, table, row, opts...)
	s.m.done(ctx, opGet, start, err)
	return r, err
}

func (s *store) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	start := time.Now()
	r, err := s.Store.GetRows(ctx, table, rows, opts...)
	s.m.done(ctx, opGetRows, start, err)
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
	return &scanner{Scanner: s.Store.Scan(ctx, table, start, stop, opts...), ctx: ctx, m: s.m, start: time.Now()}
}

// scanner measures a scan from its start to its first Close.
type scanner struct {
	kv.Scanner
	ctx    context.Context
	m      *Metrics
	start  time.Time
	closed bool
}

func (sc *scanner) Close() error {
	err := sc.Scanner.Close()
	if !sc.closed {
		sc.closed = true
		sc.m.done(sc.ctx, opScan, sc.start, errors.Join(sc.Scanner.Err(), err))
	}
	return err
}
