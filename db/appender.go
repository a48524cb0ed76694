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
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/cellenc"
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

// errAppenderDone: the appender was used after Commit or Rollback.
var errAppenderDone = errors.New("db: appender used after Commit or Rollback")

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
// storage.ErrOutOfBounds. An invalid histogram's error also wraps Prometheus'
// histogram.Error (write keeps it), which Prometheus' handlers answer 400.
func promError(err error) error {
	if errors.Is(err, write.ErrTooOld) {
		return &appendError{err: err, prom: storage.ErrTooOldSample}
	}
	return &appendError{err: err, prom: storage.ErrOutOfBounds}
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

// Append buffers a sample of series ls at t: a float v, or a native histogram
// when h or fh is set (fh wins when both are, as in Prometheus' TSDB), with its
// start timestamp st (0: unknown). The returned reference is the series'
// position in this appender: valid as a hint for later Appends of the same
// series in the same appender, checked against ls and ignored otherwise.
// opts.RejectOutOfOrder is not honoured (hbtsdb accepts out-of-order
// samples). Metadata in opts is stored on Commit. Exemplars in opts are
// validated and stored on Commit with the sample; invalid ones are reported in
// a *storage.AppendPartialError while the sample is kept, and a stale marker's
// exemplars are dropped, as Prometheus' TSDB does.
func (a *appender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64,
	h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.done {
		return 0, errAppenderDone
	}
	i, err := a.seriesIndex(ref, ls)
	if err != nil {
		return 0, err
	}
	stale := false
	if h != nil || fh != nil {
		if fh != nil {
			h = nil
		}
		hs, err := a.db.writer.CheckHistogram(ls, cellenc.HistogramSample{T: t, ST: st, H: h, FH: fh}, a.now)
		if err != nil {
			return 0, promError(err)
		}
		a.series[i].Histograms = append(a.series[i].Histograms, hs)
		stale = fh != nil && value.IsStaleNaN(fh.Sum) || h != nil && value.IsStaleNaN(h.Sum)
	} else {
		if err := a.db.writer.CheckSample(ls, t, a.now); err != nil {
			return 0, promError(err)
		}
		a.series[i].Samples = append(a.series[i].Samples, cellenc.Sample{T: t, V: v, ST: st})
		stale = value.IsStaleNaN(v)
	}
	if !opts.Metadata.IsEmpty() {
		a.addMetadata(opts.MetricFamilyName, ls, opts.Metadata)
	}
	ref = storage.SeriesRef(i + 1)
	if len(opts.Exemplars) == 0 || stale {
		return ref, nil
	}
	return ref, a.addExemplars(i, ls, opts.Exemplars)
}

// addExemplars validates exemplars of buffered series i (labels ls) and
// buffers the valid ones; the invalid ones are returned in a
// *storage.AppendPartialError (nil when there are none), each wrapping
// storage.ErrOutOfBounds and write.ErrInvalidExemplar.
func (a *appender) addExemplars(i int, ls labels.Labels, exemplars []exemplar.Exemplar) error {
	var pe *storage.AppendPartialError
	for j, e := range exemplars {
		stored, err := a.db.writer.CheckExemplar(ls, e, a.now)
		if err != nil {
			if pe == nil {
				pe = &storage.AppendPartialError{}
			}
			pe.ExemplarErrors = append(pe.ExemplarErrors, storage.ExemplarError{Index: j, Err: promError(err)})
			continue
		}
		a.series[i].Exemplars = append(a.series[i].Exemplars, stored)
	}
	if pe == nil {
		return nil
	}
	return pe
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

// AppendExemplars buffers exemplars of series ls, stored on Commit: the series
// should have samples appended in this appender or stored before (Prometheus:
// "The series identified by ref and/or ls MUST already exist"); the exemplars
// of a series that has neither are dropped on Commit, as the writer does not
// create a series for exemplars alone. Invalid exemplars are reported in a
// *storage.AppendPartialError.
func (a *appender) AppendExemplars(ref storage.SeriesRef, ls labels.Labels, exemplars []exemplar.Exemplar) (storage.SeriesRef, error) {
	if a.done {
		return 0, errAppenderDone
	}
	if len(exemplars) == 0 {
		return ref, nil
	}
	i, err := a.seriesIndex(ref, ls)
	if err != nil {
		return 0, err
	}
	return storage.SeriesRef(i + 1), a.addExemplars(i, ls, exemplars)
}

// Commit writes the buffered samples, histograms, exemplars and metadata and
// returns when the store acknowledged them. An error means nothing of the
// transaction counts as written: a store failure (wrapping
// kv.ErrUnavailable where the store said so) or, which Append's checks
// make all but impossible, a rejected series or sample (wrapping
// write.ErrInvalid; a histogram at the timestamp of a float sample of its
// series in the same transaction is one). Exemplars the writer leaves out
// (those of a series with no samples) do not fail it.
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

// AppendExemplar buffers an exemplar of l (see appender.AppendExemplars); an
// invalid one fails with its reason.
func (v *appenderV1) AppendExemplar(ref storage.SeriesRef, l labels.Labels, e exemplar.Exemplar) (storage.SeriesRef, error) {
	ref, err := v.a.AppendExemplars(ref, l, []exemplar.Exemplar{e})
	if pe, ok := err.(*storage.AppendPartialError); ok && len(pe.ExemplarErrors) == 1 {
		return ref, pe.ExemplarErrors[0].Err
	}
	return ref, err
}

// AppendHistogram buffers a histogram sample (see appender.Append).
func (v *appenderV1) AppendHistogram(ref storage.SeriesRef, l labels.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return v.a.Append(ref, l, 0, t, 0, h, fh, storage.AOptions{})
}

// AppendHistogramSTZeroSample is ignored, as AppendSTZeroSample: hbtsdb stores
// start timestamps with their samples (AppenderV2's st) rather than as
// synthetic zero samples.
func (v *appenderV1) AppendHistogramSTZeroSample(ref storage.SeriesRef, _ labels.Labels, _, _ int64, _ *histogram.Histogram, _ *histogram.FloatHistogram) (storage.SeriesRef, error) {
	if v.a.done {
		return 0, errAppenderDone
	}
	return ref, nil
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

// AppendSTZeroSample is ignored: hbtsdb stores start timestamps with their
// samples (AppenderV2's st) rather than as synthetic zero samples.
func (v *appenderV1) AppendSTZeroSample(ref storage.SeriesRef, _ labels.Labels, _, _ int64) (storage.SeriesRef, error) {
	return ref, nil
}

func (v *appenderV1) Commit() error   { return v.a.Commit() }
func (v *appenderV1) Rollback() error { return v.a.Rollback() }
