package write

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/index/lru"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of Options.
const (
	DefaultMaxBatch          = 10_000
	DefaultApplyParallelism  = 4
	DefaultSeenRowsSize      = 1 << 20
	DefaultMetadataCacheSize = 1 << 16
)

// Options tune a Writer. Zero values take the defaults in brackets.
type Options struct {
	// Limits bound what a request may carry. The zero value has no limits at all
	// (any timestamp >= 0, any number of labels...); servers use DefaultLimits().
	Limits Limits
	// MaxBatch is the most mutations one Apply of the data table carries
	// [10,000]; a request with more is split.
	MaxBatch int
	// ApplyParallelism is how many Applies of one request (data chunks, index
	// postings, metadata) run at once [4].
	ApplyParallelism int
	// SeenRowsSize bounds the set of data rows whose promoted tag columns this
	// process wrote, in rows [1<<20]; negative disables it (tags are written with
	// every request).
	SeenRowsSize int
	// MetadataCacheSize bounds the metric metadata this process remembers having
	// stored, in metrics [1<<16]; negative disables it.
	MetadataCacheSize int
	// Now is the clock that validation and metadata cells use [time.Now].
	Now func() time.Time
	// Logger [slog.Default()].
	Logger *slog.Logger
}

// Validate reports every field of o that cannot work, joined (errors.Join):
// those of Limits (see Limits.Validate), and a negative MaxBatch or
// ApplyParallelism (0 means the default). Each error names the field and its
// value. Negative SeenRowsSize and MetadataCacheSize are valid: they disable the
// cache. New calls Validate before it fills in the defaults.
func (o Options) Validate() error {
	errs := []error{o.Limits.Validate()}
	if o.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("write: Options.MaxBatch must not be negative (0 means the default, %d), got %d", DefaultMaxBatch, o.MaxBatch))
	}
	if o.ApplyParallelism < 0 {
		errs = append(errs, fmt.Errorf("write: Options.ApplyParallelism must not be negative (0 means the default, %d), got %d", DefaultApplyParallelism, o.ApplyParallelism))
	}
	return errors.Join(errs...)
}

// withDefaults fills in the defaults of the zero fields of o, which Validate
// accepted.
func (o Options) withDefaults() Options {
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.ApplyParallelism == 0 {
		o.ApplyParallelism = DefaultApplyParallelism
	}
	if o.SeenRowsSize == 0 {
		o.SeenRowsSize = DefaultSeenRowsSize
	}
	if o.MetadataCacheSize == 0 {
		o.MetadataCacheSize = DefaultMetadataCacheSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Writer is the ingest pipeline; see the package doc. It is safe for concurrent
// use; one Writer serves every request of a process.
type Writer struct {
	st         kv.Store
	settings   schema.Settings
	width      time.Duration
	registry   *index.Registry
	postings   *index.Postings
	opts       Options
	seenRows   *lru.Cache[rowID, struct{}]
	metadata   *lru.Cache[string, schema.Metadata]
	hostLabels []string
}

// rowID names a data row: a series and a bucket start.
type rowID struct {
	seriesID    uint64
	bucketStart int64
}

// New returns a Writer on st, whose schema was created with settings (the caller
// checks that, see provision.Check). registry and postings are shared with the read
// path; nil makes ones with default options. Invalid settings or options (see
// Options.Validate) fail it with an error naming what is wrong.
func New(st kv.Store, settings schema.Settings, registry *index.Registry, postings *index.Postings, opts Options) (*Writer, error) {
	if err := settings.Validate(); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if registry == nil {
		registry = index.NewRegistry(st, index.RegistryOptions{Now: opts.Now, Logger: opts.Logger})
	}
	if postings == nil {
		postings = index.NewPostings(st, index.PostingsOptions{})
	}
	return &Writer{
		st:         st,
		settings:   settings,
		width:      settings.BucketWidth,
		registry:   registry,
		postings:   postings,
		opts:       opts,
		seenRows:   lru.New[rowID, struct{}](opts.SeenRowsSize),
		metadata:   lru.New[string, schema.Metadata](opts.MetadataCacheSize),
		hostLabels: settings.HostLabels,
	}, nil
}

// Limits returns the limits the Writer validates requests with.
func (w *Writer) Limits() Limits { return w.opts.Limits }

// CheckSeries validates a series' labels as Write does. It returns the labels as
// Write stores them (sorted, without labels whose value is empty), or an error
// wrapping ErrInvalid and ErrInvalidLabels whose text is the Rejection reason Write
// would give.
func (w *Writer) CheckSeries(lbls labels.Labels) (labels.Labels, error) {
	return w.opts.Limits.checkLabels(lbls)
}

// CheckSample validates the timestamp of a sample of series lbls against the limits
// as of now, as Write does. The error wraps ErrInvalid and ErrTooOld or
// ErrOutOfRange; its text is the Rejection reason Write would give.
func (w *Writer) CheckSample(lbls labels.Labels, t int64, now time.Time) error {
	return w.opts.Limits.bounds(now).check(lbls, t)
}

// Write validates req and stores what is valid of it; see WriteAt.
func (w *Writer) Write(ctx context.Context, req *Request) (Result, error) {
	return w.WriteAt(ctx, req, w.opts.Now())
}

// plannedSeries is a valid series of a request with at least one valid sample.
type plannedSeries struct {
	req      int           // index in Request.Series
	lbls     labels.Labels // as stored
	allValid bool          // every sample passed validation
	samples  int           // valid samples
}

// plan is what validate makes of a request: what of it is valid and will be
// written, and the Result so far (its Rejected list).
type plan struct {
	series     []plannedSeries
	bounds     timeBounds        // the sample timestamps the request may carry
	metaMuts   []kv.Mutation     // the metadata entries that changed
	metaStored []schema.Metadata // every valid metadata entry, to remember once stored
	res        Result
}

// WriteAt validates req as of the clock reading now (db's appenders check each
// sample when it is appended and commit later) and stores what is valid of it.
//
// A request over MaxSeriesPerRequest or MaxSamplesPerRequest is refused whole with
// an error wrapping ErrInvalid, and nothing is written. Otherwise every invalid
// series, sample or metadata entry is listed in Result.Rejected (see the package
// doc for the reasons) and the valid rest is written: a partial write, as
// Prometheus' remote-write 2.0 receiver does. WriteAt returns only after the store
// acknowledged every mutation; any store error is returned (wrapping the store's
// error, so kv.ErrUnavailable stays detectable) with a zero Result, and then
// nothing of the request counts as written: the caller retries it whole, which is
// safe because every cell's timestamp comes from the request, so a retry rewrites
// the same cells.
func (w *Writer) WriteAt(ctx context.Context, req *Request, now time.Time) (Result, error) {
	p, err := w.validate(req, now)
	if err != nil {
		return Result{}, err
	}
	ids, err := w.resolve(ctx, p.series)
	if err != nil {
		return Result{}, err
	}
	b := w.build(req, &p, ids)
	return w.store(ctx, &p, b)
}

// validate checks req against the limits as of now. It returns an error wrapping
// ErrInvalid, and no plan, when the request is over MaxSeriesPerRequest or
// MaxSamplesPerRequest; otherwise the plan of the request: its valid series (with
// at least one valid sample), the mutations of its changed metadata, and a Result
// whose Rejected lists every invalid series, sample and metadata entry. It does no
// I/O.
func (w *Writer) validate(req *Request, now time.Time) (plan, error) {
	lim := w.opts.Limits
	if lim.MaxSeriesPerRequest > 0 && len(req.Series) > lim.MaxSeriesPerRequest {
		return plan{}, fmt.Errorf("%w: %d series in the request, over the limit of %d", ErrInvalid, len(req.Series), lim.MaxSeriesPerRequest)
	}
	total := 0
	for i := range req.Series {
		total += len(req.Series[i].Samples)
	}
	if lim.MaxSamplesPerRequest > 0 && total > lim.MaxSamplesPerRequest {
		return plan{}, fmt.Errorf("%w: %d samples in the request, over the limit of %d", ErrInvalid, total, lim.MaxSamplesPerRequest)
	}

	p := plan{bounds: lim.bounds(now), series: make([]plannedSeries, 0, len(req.Series))}
	for i := range req.Series {
		s := &req.Series[i]
		if len(s.Samples) == 0 {
			continue
		}
		lbls, err := lim.checkLabels(s.Labels)
		if err != nil {
			p.res.Rejected = append(p.res.Rejected, Rejection{Series: i, Sample: -1, Samples: len(s.Samples), Reason: err.Error(), Kind: kindOf(err)})
			continue
		}
		valid := 0
		for j := range s.Samples {
			if err := p.bounds.check(s.Labels, s.Samples[j].T); err != nil {
				p.res.Rejected = append(p.res.Rejected, Rejection{Series: i, Sample: j, Samples: 1, Reason: err.Error(), Kind: kindOf(err)})
				continue
			}
			valid++
		}
		if valid > 0 {
			p.series = append(p.series, plannedSeries{req: i, lbls: lbls, allValid: valid == len(s.Samples), samples: valid})
		}
	}
	p.metaMuts, p.metaStored = w.planMetadata(req.Metadata, now, &p.res)
	return p, nil
}

// resolve returns the series IDs of the planned series, in their order, through
// the registry (registering the new ones); nil when there are none.
func (w *Writer) resolve(ctx context.Context, series []plannedSeries) ([]uint64, error) {
	if len(series) == 0 {
		return nil, nil
	}
	ids := make([]uint64, len(series))
	lbls := make([]labels.Labels, len(series))
	for i := range series {
		lbls[i] = series[i].lbls
	}
	if err := w.registry.Resolve(ctx, lbls, ids); err != nil {
		return nil, fmt.Errorf("write: resolve %d series: %w", len(series), err)
	}
	return ids, nil
}

// store writes a request's batch and metadata — the data table in Applies of at
// most Options.MaxBatch mutations, the postings and the metadata, at most
// Options.ApplyParallelism at a time — and returns the request's Result once the
// store acknowledged all of them. On the first error it cancels the writes still
// running and returns that error with a zero Result, and remembers nothing.
// Once acknowledged, it remembers the rows whose tags and the metadata it wrote,
// so that later requests need not write them again.
func (w *Writer) store(ctx context.Context, p *plan, b batch) (Result, error) {
	var jobs []func(ctx context.Context) error
	for start := 0; start < len(b.muts); start += w.opts.MaxBatch {
		chunk := b.muts[start:min(start+w.opts.MaxBatch, len(b.muts))]
		jobs = append(jobs, func(ctx context.Context) error {
			if err := w.st.Apply(ctx, schema.TableData, chunk); err != nil {
				return fmt.Errorf("write: store %d samples: %w", b.samples, err)
			}
			return nil
		})
	}
	if len(b.entries) > 0 {
		jobs = append(jobs, func(ctx context.Context) error {
			if _, err := w.postings.Write(ctx, b.entries); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			return nil
		})
	}
	if len(p.metaMuts) > 0 {
		jobs = append(jobs, func(ctx context.Context) error {
			if err := w.st.Apply(ctx, schema.TableMeta, p.metaMuts); err != nil {
				return fmt.Errorf("write: store metric metadata: %w", err)
			}
			return nil
		})
	}
	if err := run(ctx, jobs, w.opts.ApplyParallelism); err != nil {
		return Result{}, err
	}

	// Acknowledged: remember what need not be written again.
	for _, r := range b.newRows {
		w.seenRows.Add(r, struct{}{})
	}
	for _, m := range p.metaStored {
		w.metadata.Add(m.Metric, m)
	}
	res := p.res
	res.SeriesWritten = len(p.series)
	res.SamplesWritten = b.samples
	res.MetadataWritten = len(p.metaStored)
	return res, nil
}

// batch is what build makes of a request.
type batch struct {
	muts    []kv.Mutation
	entries []index.Entry
	newRows []rowID // rows whose tag columns this batch writes
	samples int
}

// build turns the planned series of a request and their series IDs (ids[i] is
// the ID of pl.series[i]) into the batch to store: data-table mutations, grouped
// by row — the r cell of every valid sample and, for every row this process has
// not written the tags of, its t cells — and one index entry per series per day
// it has samples on. Row keys, qualifiers and values are cut from one buffer per
// request; they are not reused after the request, because a store may still hold
// them when a cancelled Apply returns. It does no I/O.
func (w *Writer) build(req *Request, pl *plan, ids []uint64) batch {
	var b batch
	planned, bounds := pl.series, pl.bounds
	size, samples := 0, 0
	type seriesKey struct {
		host, metric string
		salt         byte
	}
	keys := make([]seriesKey, len(planned))
	for i := range planned {
		p := &planned[i]
		k := seriesKey{host: schema.HostOf(p.lbls, w.hostLabels), metric: p.lbls.Get(model.MetricNameLabel)}
		k.salt = schema.Salt(k.host, w.settings.SaltBuckets)
		keys[i] = k
		rowLen := 1 + schema.EscapedLen(k.host) + schema.EscapedLen(k.metric) + 16
		size += p.samples*(schema.RawQualifierLen+schema.RawValueLen) + rowLen
		samples += p.samples
	}
	// One row key per series is the common case (one sample, or all in one
	// bucket); more are appended as needed.
	buf := make([]byte, 0, size)
	b.muts = make([]kv.Mutation, 0, samples)
	b.samples = samples

	// The rows of the current series this request visited: samples may go back
	// and forth between buckets, and a row's key and tags are made once.
	type visited struct {
		bucketStart int64
		row         []byte
	}
	var rows []visited
	for i := range planned {
		p, k, id := &planned[i], keys[i], ids[i]
		var (
			row     []byte
			lastBS  int64 = -1
			lastDay int64 = -1
		)
		rows = rows[:0]
		for _, smp := range req.Series[p.req].Samples {
			if !p.allValid && !bounds.ok(smp.T) {
				continue
			}
			bs := schema.BucketStart(smp.T, w.width)
			if bs != lastBS {
				lastBS, row = bs, nil
				for _, v := range rows {
					if v.bucketStart == bs {
						row = v.row
						break
					}
				}
				if row == nil {
					start := len(buf)
					buf = schema.DataRowKey(buf, schema.DataKey{Salt: k.salt, Host: k.host, Metric: k.metric, SeriesID: id, BucketStart: bs})
					row = buf[start:len(buf):len(buf)]
					rows = append(rows, visited{bs, row})
					if r := (rowID{id, bs}); !w.seenRows.Contains(r) {
						b.newRows = append(b.newRows, r)
						buf = w.appendTags(&b, buf, row, p.lbls, bs)
					}
				}
			}
			if day := int64(schema.Day(smp.T)); day != lastDay {
				b.entries = append(b.entries, index.Entry{Day: uint32(day), SeriesID: id, Labels: p.lbls})
				lastDay = day
			}
			start := len(buf)
			// The offset is in [0, width): AppendRawQualifier cannot fail.
			buf, _ = schema.AppendRawQualifier(buf, smp.T-bs, w.width)
			buf = schema.AppendRawValue(buf, smp.V)
			q := buf[start : start+schema.RawQualifierLen : start+schema.RawQualifierLen]
			v := buf[start+schema.RawQualifierLen : len(buf) : len(buf)]
			b.muts = append(b.muts, kv.Put(row, schema.FamilyRaw, q, smp.T, v))
		}
	}
	return b
}

// appendTags appends the promoted tag columns of a row — t:<name> = value for
// every label but __name__, which is in the row key — to b.muts, cutting the
// qualifiers and values from buf. Their cell timestamp is the last millisecond of
// the bucket, so that the family's TTL keeps them as long as the row's newest
// possible sample, and a rewrite is idempotent.
func (w *Writer) appendTags(b *batch, buf, row []byte, lbls labels.Labels, bucketStart int64) []byte {
	ts := kv.MaxTimestamp
	if end := w.width.Milliseconds() - 1; bucketStart <= kv.MaxTimestamp-end {
		ts = bucketStart + end
	}
	lbls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		start := len(buf)
		buf = append(buf, l.Name...)
		mid := len(buf)
		buf = append(buf, l.Value...)
		b.muts = append(b.muts, kv.Put(row, schema.FamilyTags, buf[start:mid:mid], ts, buf[mid:len(buf):len(buf)]))
	})
	return buf
}

// run runs jobs, at most parallel at a time, and returns the first error. Each
// job gets a context that is cancelled as soon as one job fails (or ctx is done),
// so the others stop early; a job not started by then is not started at all. A
// single job runs on the calling goroutine.
func run(ctx context.Context, jobs []func(ctx context.Context) error, parallel int) error {
	if len(jobs) == 1 {
		return jobs[0](ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, job := range jobs {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				// Only the first error is returned: when another job failed, this
				// one is dropped; when ctx is done, it says so.
				return fmt.Errorf("write: not stored: %w", err)
			}
			return job(gctx)
		})
	}
	return g.Wait()
}
