package write

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/index/lru"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of Options.
const (
	DefaultSeenRowsSize      = 1 << 20
	DefaultMetadataCacheSize = 1 << 16
)

// Options tune a Writer. Zero values take the defaults in brackets.
type Options struct {
	// Limits bound what a request may carry. The zero value has no limits at all
	// (any timestamp >= 0, any number of labels...); servers use DefaultLimits().
	Limits Limits
	// Apply bounds the Applies of one request: Apply.MaxBatch is the most
	// mutations one Apply carries — of the data, exemplar, meta or pending
	// table; a request with more is split [kv.DefaultApplyBatch, 10,000] —
	// and Apply.Concurrency how many of its writes (those Applies and the
	// index postings' write) run at once [kv.DefaultApplyConcurrency, 4].
	// The compactor takes the same options (compact.Options.Apply).
	Apply kv.ApplyOptions
	// SeenRowsSize bounds the set of data rows whose promoted tag columns this
	// process wrote, in rows [1<<20]; negative disables it (tags are written with
	// every request).
	SeenRowsSize int
	// MetadataCacheSize bounds the metric metadata this process remembers having
	// stored, in metrics [1<<16]; negative disables it.
	MetadataCacheSize int
	// ExemplarSlot and ExemplarsPerSlot bound the exemplars stored per series
	// (exemplars.go): at most ExemplarsPerSlot per slot of ExemplarSlot, the
	// newest winning [schema.DefaultExemplarSlot 10s, DefaultExemplarsPerSlot
	// 10; at most schema.MaxExemplarsPerSlot].
	ExemplarSlot     time.Duration
	ExemplarsPerSlot int
	// Now is the clock that validation and metadata cells use [time.Now].
	Now func() time.Time
	// Logger [slog.Default()].
	Logger *slog.Logger
}

// Validate reports every field of o that cannot work, joined (errors.Join):
// those of Limits (see Limits.Validate), and a negative Apply.MaxBatch or
// Apply.Concurrency (0 means the default). Each error names the field and its
// value. Negative SeenRowsSize and MetadataCacheSize are valid: they disable the
// cache. New calls Validate before it fills in the defaults.
func (o Options) Validate() error {
	errs := []error{o.Limits.Validate(), o.Apply.Validate("write: Options.Apply")}
	if err := o.validateExemplars(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withDefaults fills in the defaults of the zero fields of o, which Validate
// accepted.
func (o Options) withDefaults() Options {
	o.Apply = o.Apply.WithDefaults()
	if o.SeenRowsSize == 0 {
		o.SeenRowsSize = DefaultSeenRowsSize
	}
	if o.MetadataCacheSize == 0 {
		o.MetadataCacheSize = DefaultMetadataCacheSize
	}
	if o.ExemplarSlot == 0 {
		o.ExemplarSlot = schema.DefaultExemplarSlot
	}
	if o.ExemplarsPerSlot == 0 {
		o.ExemplarsPerSlot = schema.DefaultExemplarsPerSlot
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
	st       kv.Store
	settings schema.Settings
	width    time.Duration
	registry *index.Registry
	postings *index.Postings
	opts     Options
	seenRows *lru.Cache[rowID, struct{}]
	metadata *lru.Cache[string, schema.Metadata]
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
		st:       st,
		settings: settings,
		width:    settings.BucketWidth,
		registry: registry,
		postings: postings,
		opts:     opts,
		seenRows: lru.New[rowID, struct{}](opts.SeenRowsSize),
		metadata: lru.New[string, schema.Metadata](opts.MetadataCacheSize),
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

// validSeries is a valid series of a request with at least one valid float
// sample, histogram sample or exemplar.
type validSeries struct {
	req      int           // index in Request.Series
	lbls     labels.Labels // as stored
	allValid bool          // every float sample passed validation
	samples  int           // valid float samples
	// more holds the series' histograms and exemplars, nil when it has none:
	// a pointer keeps the float-only entry small (one per series of a request).
	more *validExtras
}

// validExtras is what a valid series has beside float samples.
type validExtras struct {
	histograms []cellenc.HistogramSample // valid histogram samples, as stored
	exemplars  []exemplar.Exemplar       // valid exemplars, as stored
}

// histograms returns the series' valid histogram samples, as stored.
func (p *validSeries) histograms() []cellenc.HistogramSample {
	if p.more == nil {
		return nil
	}
	return p.more.histograms
}

// exemplars returns the series' valid exemplars, as stored.
func (p *validSeries) exemplars() []exemplar.Exemplar {
	if p.more == nil {
		return nil
	}
	return p.more.exemplars
}

// exemplarsOnly reports whether the series has nothing to store but
// exemplars: it is looked up, not registered (an exemplar alone does not
// create a series, as in Prometheus' TSDB).
func (p *validSeries) exemplarsOnly() bool { return p.samples == 0 && len(p.histograms()) == 0 }

// validRequest is what validate makes of a request: what of it is valid and will be
// written, and the Result so far (its Rejected list).
type validRequest struct {
	series     []validSeries
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
	ids, err := w.resolve(ctx, &p)
	if err != nil {
		return Result{}, err
	}
	// On time or late is decided by the clock as the cells are built, not as
	// of now (the validation's reading, which an appender took earlier): what
	// matters is when the cells reach the store (schema/late.go).
	b := w.build(req, &p, ids, w.opts.Now().UnixMilli())
	return w.store(ctx, &p, b)
}

// validate checks req against the limits as of now. It returns an error wrapping
// ErrInvalid, and no validRequest, when the request is over MaxSeriesPerRequest or
// MaxSamplesPerRequest; otherwise what is valid of the request: its valid series (with
// at least one valid sample), the mutations of its changed metadata, and a Result
// whose Rejected lists every invalid series, sample and metadata entry. It does no
// I/O.
func (w *Writer) validate(req *Request, now time.Time) (validRequest, error) {
	lim := w.opts.Limits
	if lim.MaxSeriesPerRequest > 0 && len(req.Series) > lim.MaxSeriesPerRequest {
		return validRequest{}, fmt.Errorf("%w: %d series in the request, over the limit of %d", ErrInvalid, len(req.Series), lim.MaxSeriesPerRequest)
	}
	total := 0
	for i := range req.Series {
		total += len(req.Series[i].Samples) + len(req.Series[i].Histograms)
	}
	if lim.MaxSamplesPerRequest > 0 && total > lim.MaxSamplesPerRequest {
		return validRequest{}, fmt.Errorf("%w: %d samples in the request, over the limit of %d", ErrInvalid, total, lim.MaxSamplesPerRequest)
	}

	p := validRequest{bounds: lim.bounds(now), series: make([]validSeries, 0, len(req.Series))}
	for i := range req.Series {
		s := &req.Series[i]
		if len(s.Samples) == 0 && len(s.Histograms) == 0 && len(s.Exemplars) == 0 {
			continue
		}
		lbls, err := lim.checkLabels(s.Labels)
		if err != nil {
			if n := len(s.Samples) + len(s.Histograms); n > 0 {
				p.res.Rejected = append(p.res.Rejected, Rejection{Series: i, Sample: -1, Samples: n, Reason: err.Error(), Kind: kindOf(err)})
			} else {
				p.res.RejectedExemplars = append(p.res.RejectedExemplars, Rejection{Series: i, Sample: -1, Reason: err.Error(), Kind: kindOf(err)})
			}
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
		ps := validSeries{req: i, lbls: lbls, allValid: valid == len(s.Samples), samples: valid}
		if len(s.Histograms) > 0 || len(s.Exemplars) > 0 {
			ps.more = &validExtras{}
			if len(s.Histograms) > 0 {
				ps.more.histograms = p.validHistograms(lim, i, s, &ps)
			}
			if len(s.Exemplars) > 0 {
				ps.more.exemplars = p.validExemplars(i, s)
			}
		}
		if ps.samples > 0 || len(ps.histograms()) > 0 || len(ps.exemplars()) > 0 {
			p.series = append(p.series, ps)
		}
	}
	p.metaMuts, p.metaStored = w.validMetadata(req.Metadata, now, &p.res)
	return p, nil
}

// validHistograms validates the histogram samples of series s (request index
// i, validated as ps) and returns the valid ones as they are stored; it adds a
// Rejection for each invalid one. It returns s.Histograms itself when all are
// stored unchanged, the common case.
func (p *validRequest) validHistograms(lim Limits, i int, s *Series, ps *validSeries) []cellenc.HistogramSample {
	// Float timestamps of the series, to find histograms that duplicate them:
	// only when the series has both kinds, which is rare.
	var floats map[int64]struct{}
	if ps.samples > 0 {
		floats = make(map[int64]struct{}, ps.samples)
		for _, smp := range s.Samples {
			if ps.allValid || p.bounds.ok(smp.T) {
				floats[smp.T] = struct{}{}
			}
		}
	}
	var out []cellenc.HistogramSample // nil while every histogram so far is stored unchanged
	for j, hs := range s.Histograms {
		stored := hs
		err := p.bounds.check(s.Labels, hs.T)
		if err == nil {
			stored, err = lim.checkHistogram(s.Labels, hs)
		}
		if err == nil {
			if _, dup := floats[hs.T]; dup {
				err = histogramError(s.Labels, hs.T, " duplicates a float sample at the same timestamp", ErrDuplicateSample)
			}
		}
		if err != nil {
			p.res.Rejected = append(p.res.Rejected, Rejection{Series: i, Sample: len(s.Samples) + j, Samples: 1, Reason: err.Error(), Kind: kindOf(err)})
			if out == nil {
				out = append(make([]cellenc.HistogramSample, 0, len(s.Histograms)), s.Histograms[:j]...)
			}
			continue
		}
		changed := stored.H != hs.H || stored.FH != hs.FH
		if changed && out == nil {
			out = append(make([]cellenc.HistogramSample, 0, len(s.Histograms)), s.Histograms[:j]...)
		}
		if out != nil {
			out = append(out, stored)
		}
	}
	if out == nil {
		return s.Histograms
	}
	return out
}

// validExemplars validates the exemplars of series s (request index i) and
// returns the valid ones as they are stored; each invalid one is added to
// RejectedExemplars.
func (p *validRequest) validExemplars(i int, s *Series) []exemplar.Exemplar {
	out := make([]exemplar.Exemplar, 0, len(s.Exemplars))
	for j, e := range s.Exemplars {
		stored, err := p.bounds.checkExemplar(s.Labels, e)
		if err != nil {
			p.res.RejectedExemplars = append(p.res.RejectedExemplars, Rejection{Series: i, Sample: j, Reason: err.Error(), Kind: kindOf(err)})
			continue
		}
		out = append(out, stored)
	}
	return out
}

// resolve returns the series IDs of the valid series, in their order, through
// the registry (registering the new ones); nil when there are none. Series
// with nothing but exemplars are looked up, not registered: one that is not
// known gets ID 0, and its exemplars are added to p.res.RejectedExemplars.
func (w *Writer) resolve(ctx context.Context, p *validRequest) ([]uint64, error) {
	series := p.series
	if len(series) == 0 {
		return nil, nil
	}
	ids := make([]uint64, len(series))
	lbls := make([]labels.Labels, 0, len(series))
	var lookup []int // positions of exemplar-only series
	for i := range series {
		if series[i].exemplarsOnly() {
			lookup = append(lookup, i)
			continue
		}
		lbls = append(lbls, series[i].lbls)
	}
	if len(lookup) == 0 {
		if err := w.registry.Resolve(ctx, lbls, ids); err != nil {
			return nil, fmt.Errorf("write: resolve %d series: %w", len(series), err)
		}
		return ids, nil
	}
	if len(lbls) > 0 {
		resolved := make([]uint64, len(lbls))
		if err := w.registry.Resolve(ctx, lbls, resolved); err != nil {
			return nil, fmt.Errorf("write: resolve %d series: %w", len(lbls), err)
		}
		k := 0
		for i := range series {
			if !series[i].exemplarsOnly() {
				ids[i] = resolved[k]
				k++
			}
		}
	}
	// After Resolve, so that a series whose samples are in this request is
	// found in the cache.
	lbls = lbls[:0]
	for _, i := range lookup {
		lbls = append(lbls, series[i].lbls)
	}
	found := make([]uint64, len(lookup))
	if err := w.registry.Lookup(ctx, lbls, found); err != nil {
		return nil, fmt.Errorf("write: look up %d series of exemplars: %w", len(lookup), err)
	}
	for k, i := range lookup {
		ids[i] = found[k]
		if found[k] == 0 {
			s := &series[i]
			p.res.RejectedExemplars = append(p.res.RejectedExemplars, Rejection{Series: s.req, Sample: -1, Kind: ErrInvalidExemplar,
				Reason: fmt.Sprintf("%d exemplars not stored: series %s has no samples stored, and exemplars alone do not create a series",
					len(s.exemplars()), describe(s.lbls))})
		}
	}
	return ids, nil
}

// store writes a request's mutations and metadata — the data table in Applies of at
// most Options.Apply.MaxBatch mutations, the postings and the metadata, at most
// Options.Apply.Concurrency at a time — and returns the request's Result once the
// store acknowledged all of them. On the first error it cancels the writes still
// running and returns that error with a zero Result, and remembers nothing.
// Once acknowledged, it remembers the rows whose tags and the metadata it wrote,
// so that later requests need not write them again.
func (w *Writer) store(ctx context.Context, p *validRequest, b mutationSet) (Result, error) {
	if b.onTimeDeadline > 0 {
		// On-time cells must be stored before their bucket may be sealed
		// (schema/late.go): past the deadline the request fails, retriably,
		// and its retry writes them as late cells.
		left := time.Duration(b.onTimeDeadline-w.opts.Now().UnixMilli()) * time.Millisecond
		dctx, cancel := context.WithTimeoutCause(ctx, left, errOnTimeDeadline)
		defer cancel()
		ctx = dctx
	}
	if err := w.storeCells(ctx, p, b); err != nil {
		if errors.Is(context.Cause(ctx), errOnTimeDeadline) {
			return Result{}, fmt.Errorf("write: %w: %w (%w)", errOnTimeDeadline, kv.ErrUnavailable, err)
		}
		return Result{}, err
	}
	if len(b.lateMarks) > 0 {
		// After the late cells, so that a compaction that reads (and then
		// deletes) a mark has read the cells it marks (schema/pending.go).
		marks := kv.NewWrites(w.st, w.opts.Apply)
		marks.Apply(schema.TablePending, b.lateMarks, fmt.Sprintf("write: mark %d rows with late samples for compaction", len(b.lateMarks)))
		if err := marks.Run(ctx); err != nil {
			return Result{}, err
		}
	}

	// Acknowledged: remember what need not be written again.
	for _, r := range b.newRows {
		w.seenRows.Add(r, struct{}{})
	}
	for _, m := range p.metaStored {
		w.metadata.Add(m.Metric, m)
	}
	res := p.res
	res.SeriesWritten = b.series
	res.SamplesWritten = b.samples
	res.HistogramsWritten = b.histograms
	res.ExemplarsWritten = b.exemplars
	res.MetadataWritten = len(p.metaStored)
	return res, nil
}

// errOnTimeDeadline is the cause of a write whose on-time cells were not
// stored by their deadline.
var errOnTimeDeadline = errors.New("on-time samples not stored within their bucket's on-time window; a retry stores them as late samples")

// storeCells writes everything of a mutationSet but its late marks, at most
// Options.Apply.Concurrency writes at a time (see store).
func (w *Writer) storeCells(ctx context.Context, p *validRequest, b mutationSet) error {
	writes := kv.NewWrites(w.st, w.opts.Apply)
	if len(b.muts) > 0 {
		writes.Apply(schema.TableData, b.muts, fmt.Sprintf("write: store %d samples", b.samples+b.histograms))
	}
	if len(b.exMuts) > 0 {
		writes.Apply(schema.TableExemplars, b.exMuts, fmt.Sprintf("write: store %d exemplars", b.exemplars))
	}
	if len(b.entries) > 0 {
		writes.Go(func(ctx context.Context) error {
			if _, err := w.postings.Write(ctx, b.entries); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			return nil
		})
	}
	if len(p.metaMuts) > 0 {
		writes.Apply(schema.TableMeta, p.metaMuts, "write: store metric metadata")
	}
	if len(b.onTimeMarks) > 0 {
		writes.Apply(schema.TablePending, b.onTimeMarks, fmt.Sprintf("write: mark %d new rows for compaction", len(b.onTimeMarks)))
	}
	return writes.Run(ctx)
}

// mutationSet is what build makes of a request.
type mutationSet struct {
	muts    []kv.Mutation // data table
	exMuts  []kv.Mutation // exemplar table
	entries []index.Entry
	newRows []rowID // rows whose tag columns this set writes
	// onTimeMarks and lateMarks are the pending table's marks (schema/pending.go)
	// of the rows this set writes on-time cells into for the first time in
	// this process, and of the rows it writes late cells into.
	onTimeMarks, lateMarks []kv.Mutation
	// onTimeDeadline is when (ms, by Options.Now) the store must have
	// acknowledged the set's on-time cells (schema.OnTimeDeadline of its
	// earliest on-time bucket); 0 when it has none.
	onTimeDeadline int64
	series         int // series with float or histogram samples
	samples        int // float samples
	histograms     int // histogram samples
	exemplars      int
}

// histogramValueLen estimates the bytes of a histogram's raw cell value, to
// size the request's buffer.
const histogramValueLen = 64

// build turns the valid series of a request and their series IDs (ids[i] is
// the ID of pl.series[i]; 0 for an exemplar-only series that is not known)
// into the mutationSet to store: data-table mutations, grouped by row — the r cell
// of every valid float and histogram sample and, for every row this process
// has not written the tags of, its t cells — one index entry per series per
// day it has samples on, the exemplar table's mutations
// (appendExemplarMutations, once per series), and the pending table's marks.
// A sample is on time or late by nowMs (ms, schema/late.go): a late one's
// cell timestamp is its bucket's last millisecond, and its row gets a late
// mark; a row that this process writes on-time cells into for the first time
// gets an on-time mark (with its tags). Row keys, qualifiers and values are
// cut from one buffer per request; they are not reused after the request,
// because a store may still hold them when a cancelled Apply returns. It does
// no I/O.
func (w *Writer) build(req *Request, pl *validRequest, ids []uint64, nowMs int64) mutationSet {
	var b mutationSet
	valid, bounds := pl.series, pl.bounds
	size, samples := 0, 0
	keys := make([]schema.Placement, len(valid))
	for i := range valid {
		p := &valid[i]
		k := w.settings.PlacementOf(p.lbls)
		keys[i] = k
		rowLen := 1 + schema.EscapedLen(k.Host) + schema.EscapedLen(k.Metric) + 16
		size += p.samples*(schema.RawQualifierLen+cellenc.RawValueLen) + rowLen +
			len(p.histograms())*(schema.RawQualifierLen+histogramValueLen)
		samples += p.samples + len(p.histograms())
	}
	// One row key per series is the common case (one sample, or all in one
	// bucket); more are appended as needed.
	buf := make([]byte, 0, size)
	b.muts = make([]kv.Mutation, 0, samples)

	// The rows of the current series this request visited: samples may go back
	// and forth between buckets, and a row's key and tags are made once.
	type visited struct {
		bucketStart int64
		row         []byte
		cellTS      int64 // the row's late cell timestamp; -1 when its cells are on time
	}
	var (
		rows    []visited
		row     []byte
		lastBS  int64
		lastTS  int64
		lastDay int64
		nonce   uint64 // of this request's late marks, drawn at the first
	)
	// rowOf returns the row key of sample time t of series i, its bucket start
	// and the cell timestamp of the sample (t on time, else its bucket's last
	// millisecond), making the key, the row's tags, its pending mark and the
	// day's postings entry when this request has not yet.
	rowOf := func(i int, t int64) ([]byte, int64, int64) {
		p, k, id := &valid[i], keys[i], ids[i]
		bs := schema.BucketStart(t, w.width)
		if bs != lastBS {
			lastBS, row = bs, nil
			for _, v := range rows {
				if v.bucketStart == bs {
					row, lastTS = v.row, v.cellTS
					break
				}
			}
			if row == nil {
				start := len(buf)
				buf = schema.DataRowKey(buf, k.DataKey(id, bs))
				row = buf[start:len(buf):len(buf)]
				onTime := schema.IsOnTime(bs, w.width, nowMs)
				lastTS = -1
				if !onTime {
					lastTS = schema.LateCellTimestamp(bs, w.width)
					if nonce == 0 {
						nonce = newNonce()
					}
					buf = w.appendMark(&b.lateMarks, buf, row, bs, true, schema.AppendPendingLateQualifier(nil, nonce))
				} else if dl := schema.OnTimeDeadline(bs, w.width); b.onTimeDeadline == 0 || dl < b.onTimeDeadline {
					b.onTimeDeadline = dl
				}
				rows = append(rows, visited{bs, row, lastTS})
				if r := (rowID{id, bs}); !w.seenRows.Contains(r) {
					b.newRows = append(b.newRows, r)
					buf = w.appendTags(&b, buf, row, p.lbls, bs)
					if onTime {
						buf = w.appendMark(&b.onTimeMarks, buf, row, bs, false, schema.PendingOnTimeQualifier)
					}
				}
			}
		}
		if day := int64(schema.Day(t)); day != lastDay {
			b.entries = append(b.entries, index.Entry{Day: uint32(day), SeriesID: id, Labels: p.lbls})
			lastDay = day
		}
		if lastTS >= 0 {
			return row, bs, lastTS
		}
		return row, bs, t
	}
	for i := range valid {
		p, id := &valid[i], ids[i]
		if id == 0 {
			continue // exemplars of a series that is not stored (see resolve)
		}
		row, rows, lastBS, lastDay = nil, rows[:0], -1, -1
		for _, smp := range req.Series[p.req].Samples {
			if !p.allValid && !bounds.ok(smp.T) {
				continue
			}
			row, bs, ts := rowOf(i, smp.T)
			start := len(buf)
			// The offset is in [0, width): AppendRawQualifier cannot fail.
			buf, _ = schema.AppendRawQualifier(buf, smp.T-bs, w.width)
			buf = cellenc.AppendSampleValue(buf, smp)
			q := buf[start : start+schema.RawQualifierLen : start+schema.RawQualifierLen]
			v := buf[start+schema.RawQualifierLen : len(buf) : len(buf)]
			b.muts = append(b.muts, kv.Put(row, schema.FamilyRaw, q, ts, v))
		}
		for _, hs := range p.histograms() {
			row, bs, ts := rowOf(i, hs.T)
			start := len(buf)
			buf, _ = schema.AppendRawQualifier(buf, hs.T-bs, w.width)
			buf = cellenc.AppendHistogramSampleValue(buf, hs)
			q := buf[start : start+schema.RawQualifierLen : start+schema.RawQualifierLen]
			v := buf[start+schema.RawQualifierLen : len(buf) : len(buf)]
			b.muts = append(b.muts, kv.Put(row, schema.FamilyRaw, q, ts, v))
		}
		if !p.exemplarsOnly() {
			b.series++
			b.samples += p.samples
			b.histograms += len(p.histograms())
		}
		if ex := p.exemplars(); len(ex) > 0 {
			var n int
			b.exMuts, buf, n = w.appendExemplarMutations(b.exMuts, buf, keys[i].DataKey(id, 0), ex)
			b.exemplars += n
		}
	}
	return b
}

// appendMark appends to marks the put of the pending table's mark of the data
// row row (bucket start bucketStart), late or on time, in column qualifier,
// cutting its key from buf (schema/pending.go).
func (w *Writer) appendMark(marks *[]kv.Mutation, buf, row []byte, bucketStart int64, late bool, qualifier []byte) []byte {
	start := len(buf)
	// row is a data row key DataRowKey just made: PendingRowKey cannot fail.
	buf, _ = schema.PendingRowKey(buf, row, late)
	key := buf[start:len(buf):len(buf)]
	*marks = append(*marks, kv.Put(key, schema.FamilyPending, qualifier, schema.PendingMarkTimestamp(bucketStart, w.width), nil))
	return buf
}

// newNonce returns a random, non-zero nonce for a request's late marks.
func newNonce() uint64 {
	for {
		if n := rand.Uint64(); n != 0 {
			return n
		}
	}
}

// appendTags appends the promoted tag columns of a row — t:<name> = value for
// every label but __name__, which is in the row key — to b.muts, cutting the
// qualifiers and values from buf. Their cell timestamp is the last millisecond of
// the bucket, so that the family's TTL keeps them as long as the row's newest
// possible sample, and a rewrite is idempotent.
func (w *Writer) appendTags(b *mutationSet, buf, row []byte, lbls labels.Labels, bucketStart int64) []byte {
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

// CheckHistogram validates a histogram sample of series lbls as Write does, as
// of the clock reading now: its timestamp, then the histogram (see
// validate.go). It returns the sample as Write stores it (a copy at a lower
// resolution when its schema is above 8 or it has more than
// Limits.MaxHistogramBuckets buckets), or an error wrapping ErrInvalid and
// ErrTooOld, ErrOutOfRange or ErrInvalidHistogram (and Prometheus'
// histogram.Error when histogram.Validate refused it), whose text is the
// Rejection reason Write would give. Duplicates of float samples are Write's
// to find.
func (w *Writer) CheckHistogram(lbls labels.Labels, hs cellenc.HistogramSample, now time.Time) (cellenc.HistogramSample, error) {
	if err := w.opts.Limits.bounds(now).check(lbls, hs.T); err != nil {
		return hs, err
	}
	return w.opts.Limits.checkHistogram(lbls, hs)
}

// CheckExemplar validates an exemplar of series lbls as Write does, as of the
// clock reading now. It returns the exemplar as Write stores it (labels with
// an empty value dropped), or an error wrapping ErrInvalid and
// ErrInvalidExemplar whose text is the Rejection reason Write would give.
func (w *Writer) CheckExemplar(lbls labels.Labels, e exemplar.Exemplar, now time.Time) (exemplar.Exemplar, error) {
	return w.opts.Limits.bounds(now).checkExemplar(lbls, e)
}
