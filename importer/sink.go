package importer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/write"
)

// Sink stores write requests; *db.DB is one. Write returns only once what it
// reports as written is durably stored, as for remote write.
type Sink interface {
	Write(ctx context.Context, req *write.Request) (write.Result, error)
}

// Defaults of Options.
const (
	DefaultBatchSamples = 10_000
	DefaultConcurrency  = 4
)

// ErrBadInput is wrapped by every error about the input itself (a line that
// does not parse, a sample without a timestamp, a sample the store rejects as
// invalid); the error names where (file:line, or the slice and series).
var ErrBadInput = errors.New("bad input")

// Options tune an import. The zero value takes the defaults in brackets.
type Options struct {
	// Sink receives the writes; nil is a dry run: everything is read,
	// parsed and counted, nothing written, no checkpoint advanced.
	Sink Sink
	// BatchSamples is the most samples (float and histogram) one write
	// request carries [DefaultBatchSamples]; it must stay within the store's
	// write.Limits.MaxSamplesPerRequest.
	BatchSamples int
	// Concurrency is how many write requests (file) or slices (remote read)
	// are in flight at once [DefaultConcurrency].
	Concurrency int
	// Checkpoint records what is done; nil imports everything and records
	// nothing.
	Checkpoint *Checkpoint
	// Progress, when set, is kept up to date as the import goes (read it from
	// another goroutine).
	Progress *Progress
	// Retryable says which Sink errors are worth another attempt (the store
	// unavailable for a while); nil retries none. A retry sends the same
	// request again, which is idempotent.
	Retryable func(error) bool
	// RetryFor is how long one write is retried before the import fails
	// [DefaultRetryFor]; the wait between attempts doubles from 500ms up to
	// 30s.
	RetryFor time.Duration
	// Logger [slog.Default()].
	Logger *slog.Logger
}

// DefaultRetryFor is the default of Options.RetryFor.
const DefaultRetryFor = 5 * time.Minute

// Validate reports every field of o that cannot work, joined.
func (o Options) Validate() error {
	return errors.Join(
		optcheck.NotNegative("importer: Options.BatchSamples", o.BatchSamples, "0 means the default"),
		optcheck.NotNegative("importer: Options.Concurrency", o.Concurrency, "0 means the default"),
		optcheck.NotNegative("importer: Options.RetryFor", o.RetryFor, "0 means the default"),
	)
}

func (o Options) withDefaults() Options {
	if o.BatchSamples == 0 {
		o.BatchSamples = DefaultBatchSamples
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Progress == nil {
		o.Progress = &Progress{}
	}
	if o.RetryFor == 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Progress is what an import has done so far; every field is safe to read
// while the import runs.
type Progress struct {
	// Done and Total measure the work: bytes of the file, or slices of a
	// remote-read import (those skipped by the checkpoint count as done).
	Done, Total atomic.Int64
	// Samples counts the samples (float and histogram) written (read, on a
	// dry run); Skipped those not written: before the checkpoint, or rejected
	// by the store as older than its raw retention.
	Samples, Skipped atomic.Int64
	// Exemplars counts the exemplars written.
	Exemplars atomic.Int64

	mu     sync.Mutex
	series map[uint64]struct{}
}

// Series is how many distinct series the import has seen.
func (p *Progress) Series() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.series)
}

func (p *Progress) sawSeries(hashes []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.series == nil {
		p.series = map[uint64]struct{}{}
	}
	for _, h := range hashes {
		p.series[h] = struct{}{}
	}
}

// store writes one batch through o.Sink (nothing on a dry run) and counts it.
// A sample the store rejects as too old is skipped and counted; any other
// rejection is an error wrapping ErrBadInput that says where (where names the
// batch's origin, e.g. "file.om:10-250").
func (o Options) store(ctx context.Context, b *batch, where string) error {
	if b.samples == 0 && len(b.req.Metadata) == 0 {
		return nil
	}
	hashes := make([]uint64, len(b.req.Series))
	for i, s := range b.req.Series {
		hashes[i] = s.Labels.Hash()
	}
	o.Progress.sawSeries(hashes)
	if o.Sink == nil {
		o.Progress.Samples.Add(int64(b.samples))
		return nil
	}
	res, err := o.write(ctx, &b.req, where)
	if err != nil {
		if errors.Is(err, write.ErrInvalid) {
			return fmt.Errorf("%s: %w: %w", where, ErrBadInput, err)
		}
		return fmt.Errorf("importer: write %s: %w", where, err)
	}
	skipped := 0
	for _, r := range res.Rejected {
		if !errors.Is(r.Kind, write.ErrTooOld) {
			return fmt.Errorf("%s: %w: the store rejects %s", where, ErrBadInput, r.Reason)
		}
		if skipped == 0 {
			o.Logger.Warn("samples older than the store's raw retention skipped", "where", where, "reason", r.Reason)
		}
		skipped += r.Samples
	}
	o.Progress.Skipped.Add(int64(skipped))
	o.Progress.Samples.Add(int64(res.SamplesWritten + res.HistogramsWritten))
	o.Progress.Exemplars.Add(int64(res.ExemplarsWritten))
	return nil
}

// WriteBatch writes req, a batch of samples samples (float and histogram),
// as this package's imports write theirs: through o.Sink (nothing on a dry
// run, when o.Sink is nil), again while the store is unavailable
// (o.Retryable, o.RetryFor), its samples and series counted in o.Progress,
// samples older than the store's raw retention skipped and counted, any
// other rejection an error wrapping ErrBadInput. where names the batch's
// origin in errors and logs. It is for importers of other sources
// (otsdbimport) that share this write path; set o.Progress to read the
// counts.
func (o Options) WriteBatch(ctx context.Context, req *write.Request, samples int, where string) error {
	o = o.withDefaults()
	return o.store(ctx, &batch{req: *req, samples: samples}, where)
}

// write writes req through o.Sink, again while it fails with an error
// o.Retryable accepts, for up to o.RetryFor.
func (o Options) write(ctx context.Context, req *write.Request, where string) (write.Result, error) {
	deadline := time.Now().Add(o.RetryFor)
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		res, err := o.Sink.Write(ctx, req)
		if err == nil || o.Retryable == nil || !o.Retryable(err) || time.Now().Add(backoff).After(deadline) {
			return res, err
		}
		o.Logger.Warn("write failed, retrying", "where", where, "attempt", attempt, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// batch is one write request being built: series by their labels.
type batch struct {
	req     write.Request
	index   map[string]int // labels.Bytes -> index in req.Series
	text    map[string]int // a series' text in the file -> index in req.Series
	samples int
	buf     []byte
}

func newBatch() *batch { return &batch{index: map[string]int{}, text: map[string]int{}} }

// seriesOfText returns the request's series whose text in a file is text, or
// nil when the batch has none yet (then add it with seriesWithText).
func (b *batch) seriesOfText(text []byte) *write.Series {
	if i, ok := b.text[string(text)]; ok {
		return &b.req.Series[i]
	}
	return nil
}

// seriesWithText is series, remembering that text names lbls.
func (b *batch) seriesWithText(text []byte, lbls labels.Labels) *write.Series {
	s := b.series(lbls)
	b.text[string(text)] = b.index[string(b.buf)]
	return s
}

// series returns the request's series of lbls, added when new.
func (b *batch) series(lbls labels.Labels) *write.Series {
	b.buf = lbls.Bytes(b.buf[:0])
	i, ok := b.index[string(b.buf)]
	if !ok {
		i = len(b.req.Series)
		b.req.Series = append(b.req.Series, write.Series{Labels: lbls.Copy()})
		b.index[string(b.buf)] = i
	}
	return &b.req.Series[i]
}
