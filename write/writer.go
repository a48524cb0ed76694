package write

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"

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

func (o Options) withDefaults() Options {
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.ApplyParallelism <= 0 {
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
// path; nil makes ones with default options.
func New(st kv.Store, settings schema.Settings, registry *index.Registry, postings *index.Postings, opts Options) (*Writer, error) {
	if err := settings.Validate(); err != nil {
		return nil, fmt.Errorf("write: %w", err)
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
	lim := w.opts.Limits
	var res Result
	if lim.MaxSeriesPerRequest > 0 && len(req.Series) > lim.MaxSeriesPerRequest {
		return res, fmt.Errorf("%w: %d series in the request, over the limit of %d", ErrInvalid, len(req.Series), lim.MaxSeriesPerRequest)
	}
	total := 0
	for i := range req.Series {
		total += len(req.Series[i].Samples)
	}
	if lim.MaxSamplesPerRequest > 0 && total > lim.MaxSamplesPerRequest {
		return res, fmt.Errorf("%w: %d samples in the request, over the limit of %d", ErrInvalid, total, lim.MaxSamplesPerRequest)
	}

	// Validate.
	bounds := lim.bounds(now)
	planned := make([]plannedSeries, 0, len(req.Series))
	for i := range req.Series {
		s := &req.Series[i]
		if len(s.Samples) == 0 {
			continue
		}
		lbls, err := lim.checkLabels(s.Labels)
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Series: i, Sample: -1, Samples: len(s.Samples), Reason: err.Error()})
			continue
		}
		valid := 0
		for j := range s.Samples {
			if err := bounds.check(s.Labels, s.Samples[j].T); err != nil {
				res.Rejected = append(res.Rejected, Rejection{Series: i, Sample: j, Samples: 1, Reason: err.Error()})
				continue
			}
			valid++
		}
		if valid > 0 {
			planned = append(planned, plannedSeries{req: i, lbls: lbls, allValid: valid == len(s.Samples), samples: valid})
		}
	}
	metaMuts, metaStored := w.planMetadata(req.Metadata, now, &res)
	if len(planned) == 0 && len(metaMuts) == 0 {
		res.MetadataWritten = len(metaStored)
		return res, nil
	}

	// Resolve series IDs.
	ids := make([]uint64, len(planned))
	if len(planned) > 0 {
		lbls := make([]labels.Labels, len(planned))
		for i := range planned {
			lbls[i] = planned[i].lbls
		}
		if err := w.registry.Resolve(ctx, lbls, ids); err != nil {
			return Result{}, fmt.Errorf("write: resolve %d series: %w", len(planned), err)
		}
	}

	// Build the mutations of the data table, grouped by row, and the postings.
	b := w.build(req, planned, ids, bounds)

	// Store: data chunks, postings and metadata, concurrently; all must succeed.
	var jobs []func() error
	for start := 0; start < len(b.muts); start += w.opts.MaxBatch {
		chunk := b.muts[start:min(start+w.opts.MaxBatch, len(b.muts))]
		jobs = append(jobs, func() error {
			if err := w.st.Apply(ctx, schema.TableData, chunk); err != nil {
				return fmt.Errorf("write: store %d samples: %w", b.samples, err)
			}
			return nil
		})
	}
	if len(b.entries) > 0 {
		jobs = append(jobs, func() error {
			if _, err := w.postings.Write(ctx, b.entries); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			return nil
		})
	}
	if len(metaMuts) > 0 {
		jobs = append(jobs, func() error {
			if err := w.st.Apply(ctx, schema.TableMeta, metaMuts); err != nil {
				return fmt.Errorf("write: store metric metadata: %w", err)
			}
			return nil
		})
	}
	if err := run(jobs, w.opts.ApplyParallelism); err != nil {
		return Result{}, err
	}

	// Acknowledged: remember what need not be written again.
	for _, r := range b.newRows {
		w.seenRows.Add(r, struct{}{})
	}
	for _, m := range metaStored {
		w.metadata.Add(m.Metric, m)
	}
	res.SeriesWritten = len(planned)
	res.SamplesWritten = b.samples
	res.MetadataWritten = len(metaStored)
	return res, nil
}

// batch is what build makes of a request.
type batch struct {
	muts    []kv.Mutation
	entries []index.Entry
	newRows []rowID // rows whose tag columns this batch writes
	samples int
}

// build turns the valid series and samples of a request into data-table
// mutations, grouped by row: the r cell of every sample and, for every row this
// process has not written the tags of, its t cells. Row keys, qualifiers and
// values are cut from one buffer per request; they are not reused after the
// request, because a store may still hold them when a cancelled Apply returns.
func (w *Writer) build(req *Request, planned []plannedSeries, ids []uint64, bounds timeBounds) batch {
	var b batch
	size, samples := 0, 0
	type seriesKey struct {
		host, metric string
		salt         byte
	}
	keys := make([]seriesKey, len(planned))
	for i := range planned {
		p := &planned[i]
		k := seriesKey{host: schema.HostOf(p.lbls, w.hostLabels), metric: p.lbls.Get("__name__")}
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
		if l.Name == "__name__" {
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

// run runs jobs, at most parallel at a time, and returns the first error. A single
// job runs on the calling goroutine.
func run(jobs []func() error, parallel int) error {
	if len(jobs) == 1 {
		return jobs[0]()
	}
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, parallel)
		mu    sync.Mutex
		first error
	)
	for _, job := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := job(); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}
