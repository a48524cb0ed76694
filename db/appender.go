package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// Compile-time checks of the Prometheus interfaces DB implements.
var (
	_ storage.Appendable         = (*DB)(nil)
	_ storage.AppendableV2       = (*DB)(nil)
	_ storage.Appender           = (*appenderV1)(nil)
	_ storage.AppenderV2         = (*appender)(nil)
	_ storage.ExemplarAppenderV2 = (*appender)(nil)
)

// Errors of appenders, for callers to branch on with errors.Is.
var (
	// ErrHistogramsNotSupported: a native histogram sample was appended; hbtsdb
	// does not store them yet. The error also wraps storage.ErrNativeHistogramsDisabled
	// and storage.ErrOutOfBounds (Prometheus), see the package doc.
	ErrHistogramsNotSupported = errors.New("native histograms are not supported")
	// ErrExemplarsNotSupported: exemplars were appended; hbtsdb does not store them
	// yet. It reaches callers inside a *storage.AppendPartialError (the sample
	// itself is stored) and also wraps storage.ErrExemplarsDisabled.
	ErrExemplarsNotSupported = errors.New("exemplars are not supported")
	// errAppenderDone: the appender was used after Commit or Rollback.
	errAppenderDone = errors.New("db: appender used after Commit or Rollback")
)

// appendError is an error of Append that wraps our own error and the Prometheus
// sentinel that makes Prometheus' remote-write handler answer 400 instead of 500.
type appendError struct {
	err  error
	prom error
}

func (e *appendError) Error() string   { return e.err.Error() }
func (e *appendError) Unwrap() []error { return []error{e.err, e.prom} }

// promError maps a validation error of write to the Prometheus sentinel of the
// same meaning: too old -> storage.ErrTooOldSample, anything else invalid ->
// storage.ErrOutOfBounds.
func promError(err error) error {
	if errors.Is(err, write.ErrTooOld) {
		return &appendError{err: err, prom: storage.ErrTooOldSample}
	}
	return &appendError{err: err, prom: storage.ErrOutOfBounds}
}

// histogramError is the error of appending a native histogram to series ls.
func histogramError(ls labels.Labels) error {
	return &appendError{
		err:  fmt.Errorf("%w (hbtsdb stores float samples only) in series %s: %w", ErrHistogramsNotSupported, ls, storage.ErrNativeHistogramsDisabled),
		prom: storage.ErrOutOfBounds,
	}
}

// errExemplars is why an exemplar is not written.
var errExemplars = fmt.Errorf("%w (hbtsdb does not store them yet): %w", ErrExemplarsNotSupported, storage.ErrExemplarsDisabled)

// exemplarsError reports n exemplars as not written.
func exemplarsError(n int) error {
	pe := &storage.AppendPartialError{ExemplarErrors: make([]storage.ExemplarError, n)}
	for i := range pe.ExemplarErrors {
		pe.ExemplarErrors[i] = storage.ExemplarError{Index: i, Err: errExemplars}
	}
	return pe
}

// AppenderV2 returns an appender that buffers samples and writes them with one
// write.Writer call on Commit. ctx is used by Commit; the clock is read now, and
// every sample is validated against the limits as of this reading, on Append
// and again (identically) on Commit.
func (db *DB) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return db.newAppender(ctx)
}

// Appender is AppenderV2 behind Prometheus' older Appender interface.
func (db *DB) Appender(ctx context.Context) storage.Appender {
	return &appenderV1{a: db.newAppender(ctx)}
}

func (db *DB) newAppender(ctx context.Context) *appender {
	return &appender{db: db, ctx: ctx, now: db.now()}
}

// appender buffers one transaction: series in the order first appended, each with
// its samples in append order.
type appender struct {
	db       *DB
	ctx      context.Context
	now      time.Time
	series   []write.Series
	byHash   map[uint64][]int
	metadata map[string]schema.Metadata
	done     bool
}

// Append buffers a float sample of series ls at t. The returned reference is the
// series' position in this appender: valid as a hint for later Appends of the same
// series in the same appender, checked against ls and ignored otherwise. st (start
// timestamps) is not stored; opts.RejectOutOfOrder is not honoured (hbtsdb accepts
// out-of-order samples). Metadata in opts is stored on Commit; exemplars are not,
// and are reported in a *storage.AppendPartialError while the sample is kept.
func (a *appender) Append(ref storage.SeriesRef, ls labels.Labels, _, t int64, v float64,
	h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.done {
		return 0, errAppenderDone
	}
	if h != nil || fh != nil {
		return 0, histogramError(ls)
	}
	i, err := a.seriesIndex(ref, ls)
	if err != nil {
		return 0, err
	}
	if err := a.db.writer.CheckSample(ls, t, a.now); err != nil {
		return 0, promError(err)
	}
	a.series[i].Samples = append(a.series[i].Samples, schema.Sample{T: t, V: v})
	if !opts.Metadata.IsEmpty() {
		a.addMetadata(opts.MetricFamilyName, ls, opts.Metadata)
	}
	ref = storage.SeriesRef(i + 1)
	if len(opts.Exemplars) > 0 {
		return ref, exemplarsError(len(opts.Exemplars))
	}
	return ref, nil
}

// seriesIndex finds ls among the buffered series, or validates it and adds it.
func (a *appender) seriesIndex(ref storage.SeriesRef, ls labels.Labels) (int, error) {
	if ref > 0 && int(ref) <= len(a.series) && labels.Equal(a.series[ref-1].Labels, ls) {
		return int(ref - 1), nil
	}
	h := ls.Hash()
	for _, i := range a.byHash[h] {
		if labels.Equal(a.series[i].Labels, ls) {
			return i, nil
		}
	}
	if _, err := a.db.writer.CheckSeries(ls); err != nil {
		return 0, promError(err)
	}
	if a.byHash == nil {
		a.byHash = make(map[uint64][]int)
	}
	i := len(a.series)
	a.series = append(a.series, write.Series{Labels: ls})
	a.byHash[h] = append(a.byHash[h], i)
	return i, nil
}

// addMetadata records the metadata of the metric family of ls.
func (a *appender) addMetadata(family string, ls labels.Labels, m metadata.Metadata) {
	if family == "" {
		family = ls.Get(model.MetricNameLabel)
	}
	if family == "" {
		return
	}
	if a.metadata == nil {
		a.metadata = make(map[string]schema.Metadata)
	}
	a.metadata[family] = schema.Metadata{Metric: family, Type: m.Type, Help: m.Help, Unit: m.Unit}
}

// AppendExemplars reports every exemplar as not written (hbtsdb does not store
// exemplars yet), in a *storage.AppendPartialError.
func (a *appender) AppendExemplars(ref storage.SeriesRef, _ labels.Labels, exemplars []exemplar.Exemplar) (storage.SeriesRef, error) {
	if a.done {
		return 0, errAppenderDone
	}
	if len(exemplars) == 0 {
		return ref, nil
	}
	return ref, exemplarsError(len(exemplars))
}

// Commit writes the buffered samples and metadata and returns when the store
// acknowledged them. An error means nothing of the transaction counts as written:
// a store failure (wrapping storage.ErrUnavailable where the store said so) or,
// which Append's checks make all but impossible, a rejected series or sample
// (wrapping write.ErrInvalid).
func (a *appender) Commit() error {
	if a.done {
		return errAppenderDone
	}
	a.done = true
	if a.db.closed.Load() {
		return fmt.Errorf("db: commit: %w", kv.ErrClosed)
	}
	req := write.Request{Series: a.series}
	for _, m := range a.metadata {
		req.Metadata = append(req.Metadata, m)
	}
	a.series, a.byHash, a.metadata = nil, nil, nil
	if len(req.Series) == 0 && len(req.Metadata) == 0 {
		return nil
	}
	res, err := a.db.writer.WriteAt(a.ctx, &req, a.now)
	if err != nil {
		return fmt.Errorf("db: commit: %w", err)
	}
	return write.RejectionError(res)
}

// Rollback discards the buffered samples. It is safe to call after Commit.
func (a *appender) Rollback() error {
	a.done = true
	a.series, a.byHash, a.metadata = nil, nil, nil
	return nil
}

// appenderV1 is an appender behind Prometheus' older Appender interface.
type appenderV1 struct {
	a *appender
}

func (v *appenderV1) Append(ref storage.SeriesRef, l labels.Labels, t int64, val float64) (storage.SeriesRef, error) {
	return v.a.Append(ref, l, 0, t, val, nil, nil, storage.AOptions{})
}

// SetOptions is ignored: out-of-order samples are always accepted.
func (*appenderV1) SetOptions(*storage.AppendOptions) {}

// AppendExemplar reports the exemplar as not written, with an error wrapping
// ErrExemplarsNotSupported.
func (v *appenderV1) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	if v.a.done {
		return 0, errAppenderDone
	}
	return ref, errExemplars
}

func (*appenderV1) AppendHistogram(_ storage.SeriesRef, l labels.Labels, _ int64, _ *histogram.Histogram, _ *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, histogramError(l)
}

func (*appenderV1) AppendHistogramSTZeroSample(_ storage.SeriesRef, l labels.Labels, _, _ int64, _ *histogram.Histogram, _ *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, histogramError(l)
}

// UpdateMetadata records the metadata of l's metric family, stored on Commit.
func (v *appenderV1) UpdateMetadata(ref storage.SeriesRef, l labels.Labels, m metadata.Metadata) (storage.SeriesRef, error) {
	if v.a.done {
		return 0, errAppenderDone
	}
	if !m.IsEmpty() {
		v.a.addMetadata("", l, m)
	}
	return ref, nil
}

// AppendSTZeroSample is ignored: start timestamps are not stored.
func (v *appenderV1) AppendSTZeroSample(ref storage.SeriesRef, _ labels.Labels, _, _ int64) (storage.SeriesRef, error) {
	return ref, nil
}

func (v *appenderV1) Commit() error   { return v.a.Commit() }
func (v *appenderV1) Rollback() error { return v.a.Rollback() }
