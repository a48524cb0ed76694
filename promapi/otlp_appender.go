package promapi

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// otlpAppendable is the storage.AppendableV2 that Prometheus' OTLP write handler
// appends to. Each appender buffers one OTLP request, as translated by
// Prometheus' otlptranslator, into one write.Request, and Commit writes it with
// the store's Writer through writeAndTally: the remote-write path, with its
// validation, limits, tally and acknowledgement (Commit returns once the store
// has acknowledged every sample, or fails and nothing counts as written).
type otlpAppendable struct{ h *writeHandler }

// errAppenderDone: an OTLP appender was used after Commit or Rollback.
var errAppenderDone = errors.New("promapi: otlp appender used after Commit or Rollback")

// AppenderV2 returns an appender for one request; ctx is the request's context,
// which carries its otlpOutcome and tally.
func (a otlpAppendable) AppenderV2(ctx context.Context) storage.AppenderV2 {
	if o := outcomeOf(ctx); o != nil {
		o.translated()
	}
	return &otlpAppender{h: a.h, ctx: ctx}
}

// otlpAppender buffers one translated OTLP request: series in the order first
// appended, each with its samples in append order.
type otlpAppender struct {
	h        *writeHandler
	ctx      context.Context
	req      write.Request
	byHash   map[uint64][]int
	metadata map[string]schema.Metadata
	done     bool
}

// Append buffers a sample of series ls at t (milliseconds): a float v, or a
// native histogram when h or fh is set (fh wins), with its start timestamp st
// (0: unknown), its exemplars and its metric family's metadata. Nothing is
// validated here: the writer validates the whole request on Commit and says
// what it rejected and why, as for remote write. The returned reference is the
// series' position in this appender, a hint checked against ls.
func (a *otlpAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64,
	h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.done {
		return 0, errAppenderDone
	}
	i := a.seriesIndex(ref, ls)
	s := &a.req.Series[i]
	switch {
	case fh != nil:
		s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: t, ST: st, FH: fh})
	case h != nil:
		s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: t, ST: st, H: h})
	default:
		s.Samples = append(s.Samples, cellenc.Sample{T: t, V: v, ST: st})
	}
	s.Exemplars = append(s.Exemplars, opts.Exemplars...)
	if !opts.Metadata.IsEmpty() {
		family := opts.MetricFamilyName
		if family == "" {
			family = ls.Get(model.MetricNameLabel)
		}
		if family != "" {
			if a.metadata == nil {
				a.metadata = make(map[string]schema.Metadata)
			}
			a.metadata[family] = schema.Metadata{Metric: family, Type: opts.Metadata.Type,
				Help: opts.Metadata.Help, Unit: opts.Metadata.Unit}
		}
	}
	return storage.SeriesRef(i + 1), nil
}

// seriesIndex finds ls among the buffered series, or adds it.
func (a *otlpAppender) seriesIndex(ref storage.SeriesRef, ls labels.Labels) int {
	if ref > 0 && int(ref) <= len(a.req.Series) && labels.Equal(a.req.Series[ref-1].Labels, ls) {
		return int(ref - 1)
	}
	h := ls.Hash()
	for _, i := range a.byHash[h] {
		if labels.Equal(a.req.Series[i].Labels, ls) {
			return i
		}
	}
	if a.byHash == nil {
		a.byHash = make(map[uint64][]int)
	}
	i := len(a.req.Series)
	a.req.Series = append(a.req.Series, write.Series{Labels: ls})
	a.byHash[h] = append(a.byHash[h], i)
	return i
}

// Commit writes the buffered request and returns once the store acknowledged
// it. Any error means the request is not acknowledged: the store failed, there
// is none (yet), or the writer rejected the request whole or some of its
// series or samples (write.RejectionError; the valid rest is stored, as for
// remote write, and the answer is 400 naming the first rejections). The
// error is also recorded in the request's otlpOutcome, which decides the
// status code. Invalid exemplars are logged and do not fail the request, as
// with remote write.
func (a *otlpAppender) Commit() error {
	if a.done {
		return errAppenderDone
	}
	a.done = true
	for _, m := range a.metadata {
		a.req.Metadata = append(a.req.Metadata, m)
	}
	req := a.req
	a.req, a.byHash, a.metadata = write.Request{}, nil, nil
	if len(req.Series) == 0 && len(req.Metadata) == 0 {
		return nil
	}
	o := outcomeOf(a.ctx)
	wr, err := a.h.writer()
	if err != nil {
		return o.fail(err)
	}
	res, _, err := writeAndTally(a.ctx, wr, &req)
	if err != nil {
		return o.fail(err)
	}
	if len(res.RejectedExemplars) > 0 {
		a.h.logger.Warn("otlp: exemplars not stored", "count", len(res.RejectedExemplars),
			"first", res.RejectedExemplars[0].Reason)
	}
	return o.fail(write.RejectionError(res))
}

// Rollback discards the buffered request. It is safe to call after Commit.
func (a *otlpAppender) Rollback() error {
	a.done = true
	a.req, a.byHash, a.metadata = write.Request{}, nil, nil
	return nil
}

// otlpOutcome is what the appenders of one OTLP request report to its
// handler, through the request's context: whether the body was decoded and
// translated (Prometheus' handler asks for an appender only then), and the
// error of the write, which decides the answer's status (statusOf) in place of
// the 500 that Prometheus' handler gives every error it does not know.
type otlpOutcome struct {
	mu      sync.Mutex
	decoded bool
	err     error
}

type outcomeKey struct{}

// outcomeOf returns the otlpOutcome of ctx's request; nil outside the OTLP
// endpoint, where its methods do nothing.
func outcomeOf(ctx context.Context) *otlpOutcome {
	o, _ := ctx.Value(outcomeKey{}).(*otlpOutcome)
	return o
}

func (o *otlpOutcome) translated() {
	o.mu.Lock()
	o.decoded = true
	o.mu.Unlock()
}

// fail records err, unless nil (the first error of the request wins), and
// returns it.
func (o *otlpOutcome) fail(err error) error {
	if o == nil || err == nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = err
	}
	return err
}

func (o *otlpOutcome) result() (decoded bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.decoded, o.err
}
