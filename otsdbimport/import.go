package otsdbimport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/otsdbformat"
	"github.com/hbtsdb/hbtsdb/promapi/wire"
	"github.com/hbtsdb/hbtsdb/write"
)

// Defaults of Source and Options: OpenTSDB's table names
// (tsd.storage.hbase.data_table, uid_table) and the ranges per worker.
const (
	DefaultDataTable       = "tsdb"
	DefaultUIDTable        = "tsdb-uid"
	DefaultRangesPerWorker = 32
)

// maxCachedSeries bounds a worker's cache of series labels; past it the
// cache starts over.
const maxCachedSeries = 1 << 16

// Source is an OpenTSDB installation's tables.
type Source struct {
	// Store holds the tables under their own names (kv/hbase with
	// ExactTableNames). Required.
	Store kv.Store
	// DataTable and UIDTable are the tables' names [DefaultDataTable,
	// DefaultUIDTable].
	DataTable, UIDTable string
	// Layout is the installation's row key layout.
	Layout otsdbformat.Layout
}

func (s Source) withDefaults() Source {
	if s.DataTable == "" {
		s.DataTable = DefaultDataTable
	}
	if s.UIDTable == "" {
		s.UIDTable = DefaultUIDTable
	}
	s.Layout = s.Layout.WithDefaults()
	return s
}

// Job is the checkpoint job of importing s from the HBase named where (e.g.
// "hbase:zk1:2181/hbase"): the tables and the layout, which give the keys
// their meaning.
func (s Source) Job(where string) string {
	s = s.withDefaults()
	return fmt.Sprintf("opentsdb %s data=%s uid=%s %s", where, s.DataTable, s.UIDTable, s.Layout)
}

// Options tune an import.
type Options struct {
	// Import is how batches are written and counted, as for importer's own
	// imports: Sink (nil: a dry run, nothing written and no checkpoint
	// advanced), BatchSamples, Concurrency (workers reading ranges at once),
	// Progress (Done and Total count key ranges), Retryable and RetryFor
	// (also for a scan that fails: the range is read again from its last
	// checkpointed row), Logger. Its Checkpoint must be nil: see Checkpoint.
	Import importer.Options
	// Checkpoint records the key spans stored and is skipped on a run with
	// it; nil imports everything and records nothing.
	Checkpoint *Checkpoint
	// Stats, when set, counts what is read and skipped (read it from another
	// goroutine while the import runs).
	Stats *Stats
	// KeyRanges is about how many ranges the data table is cut into
	// [DefaultRangesPerWorker × Import.Concurrency]; see plan.
	KeyRanges int
}

// Validate reports every field of o that cannot work, joined.
func (o Options) Validate() error {
	var errs []error
	if err := o.Import.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Import.Checkpoint != nil {
		errs = append(errs, errors.New("otsdbimport: Options.Import.Checkpoint is a file import's: give Options.Checkpoint"))
	}
	return errors.Join(append(errs, optcheck.NotNegative("otsdbimport: Options.KeyRanges", o.KeyRanges, "0 means the default"))...)
}

func (o Options) withDefaults() Options {
	if o.Import.BatchSamples == 0 {
		o.Import.BatchSamples = importer.DefaultBatchSamples
	}
	if o.Import.Concurrency == 0 {
		o.Import.Concurrency = importer.DefaultConcurrency
	}
	if o.Import.Progress == nil {
		o.Import.Progress = &importer.Progress{}
	}
	if o.Import.RetryFor == 0 {
		o.Import.RetryFor = importer.DefaultRetryFor
	}
	if o.Import.Logger == nil {
		o.Import.Logger = slog.Default()
	}
	if o.Stats == nil {
		o.Stats = &Stats{}
	}
	if o.KeyRanges == 0 {
		o.KeyRanges = DefaultRangesPerWorker * o.Import.Concurrency
	}
	return o
}

// Import reads src's tables and writes every series' points through
// o.Import.Sink: the UIDs first, then the data table's key ranges,
// o.Import.Concurrency at a time (see the package doc). With o.Checkpoint,
// the spans it records are skipped and those stored are recorded; a
// checkpoint of a finished import imports nothing. It returns ctx's error
// when ctx ends first.
func Import(ctx context.Context, src Source, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if src.Store == nil {
		return errors.New("otsdbimport: Source.Store is nil")
	}
	if err := src.Layout.Validate(); err != nil {
		return err
	}
	src, o = src.withDefaults(), o.withDefaults()
	log := o.Import.Logger
	if o.Checkpoint != nil && o.Checkpoint.Complete() {
		log.Info("the checkpoint says this OpenTSDB import is done already", "checkpoint", o.Checkpoint.Path())
		return nil
	}
	ids, err := loadUIDs(ctx, src)
	if err != nil {
		return err
	}
	ranges := plan(src.Layout, ids.metricUIDs(), o.KeyRanges)
	var done spanSet
	if o.Checkpoint != nil {
		done = o.Checkpoint.doneSpans()
	}
	var work []span
	finished := 0
	for _, r := range ranges {
		parts := done.missing(r)
		if len(parts) == 0 {
			finished++
		}
		work = append(work, parts...)
	}
	o.Import.Progress.Total.Store(int64(finished + len(work)))
	o.Import.Progress.Done.Store(int64(finished))
	if len(done) > 0 {
		log.Info("resuming from the checkpoint", "checkpoint", o.Checkpoint.Path(), "ranges_done", finished,
			"spans_left", len(work))
	}
	log.Info("reading OpenTSDB's data table", "table", src.DataTable, "uid_table", src.UIDTable, "layout", src.Layout.String(),
		"metrics", len(ids.metrics), "tagk", len(ids.tagk), "tagv", len(ids.tagv), "ranges", len(ranges))

	g, gctx := errgroup.WithContext(ctx)
	spans := make(chan span)
	g.Go(func() error {
		defer close(spans)
		for _, sp := range work {
			select {
			case spans <- sp:
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	warned := &warnings{log: log}
	for range min(o.Import.Concurrency, len(work)) {
		g.Go(func() error {
			w := newWorker(src, o, ids, warned)
			for sp := range spans {
				if err := w.importSpan(gctx, sp); err != nil {
					return err
				}
				o.Import.Progress.Done.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.Checkpoint != nil && o.Import.Sink != nil {
		return o.Checkpoint.setComplete()
	}
	return nil
}

// warnings logs the first row of each kind of trouble, once per import.
type warnings struct {
	log  *slog.Logger
	once [4]sync.Once
}

// Kinds of warning.
const (
	warnBadKey = iota
	warnCorrupt
	warnUnknownUID
	warnDuplicates
)

func (w *warnings) warn(kind int, msg string, args ...any) {
	w.once[kind].Do(func() { w.log.Warn(msg, args...) })
}

// worker reads key ranges one at a time, with memory of its own.
type worker struct {
	src    Source
	o      Options
	ids    *uids
	warned *warnings

	dec   otsdbformat.RowDecoder
	cols  []otsdbformat.Column
	names labels.ScratchBuilder
	pairs [][2]string
	cache map[string]labels.Labels
	key   []byte
	b     batch
	// lastDone is the stop of the span last recorded by this scan (nil
	// before one); a batch within one long row records nothing new.
	lastDone []byte
}

func newWorker(src Source, o Options, ids *uids, warned *warnings) *worker {
	return &worker{src: src, o: o, ids: ids, warned: warned, cache: map[string]labels.Labels{}, names: labels.NewScratchBuilder(8),
		b: batch{index: map[string]int{}}}
}

// batch is one write request being built.
type batch struct {
	req         write.Request
	index       map[string]int // series key (metric and tag UIDs) -> index in req.Series
	samples     int
	first, last []byte // the first and last row keys it has points of
}

func (b *batch) reset() {
	clear(b.index)
	b.req.Series = b.req.Series[:0]
	b.samples, b.first, b.last = 0, nil, nil
}

// importSpan imports the rows of sp: scanned, written in batches, and, with
// a checkpoint, recorded as done from sp's start up to the first row not
// wholly written after each batch, and whole at the end. A scan that fails
// with an error Options.Import.Retryable accepts is started again from the
// last row recorded, the wait doubling from 500ms to 30s, for up to
// Options.Import.RetryFor.
func (w *worker) importSpan(ctx context.Context, sp span) error {
	deadline := time.Now().Add(w.o.Import.RetryFor)
	backoff := 500 * time.Millisecond
	from := sp.start
	for attempt := 1; ; attempt++ {
		resume, err := w.scan(ctx, span{from, sp.stop}, sp.start)
		if err == nil {
			return nil
		}
		retry := w.o.Import.Retryable != nil && w.o.Import.Retryable(err) && ctx.Err() == nil &&
			!time.Now().Add(backoff).After(deadline)
		if !retry {
			return err
		}
		w.o.Import.Logger.Warn("reading OpenTSDB's data table failed, reading the range again from its last stored row",
			"table", w.src.DataTable, "from", fmt.Sprintf("%x", resume), "attempt", attempt, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		from = resume
	}
}

// scan reads sp and writes its points; doneFrom is where the span recorded as
// done starts. It returns the key before which every row is stored.
func (w *worker) scan(ctx context.Context, sp span, doneFrom []byte) (resume []byte, err error) {
	w.b.reset()
	w.lastDone = nil
	resume = sp.start
	sc := w.src.Store.Scan(ctx, w.src.DataTable, sp.start, sp.stop, kv.Families(otsdbformat.FamilyData))
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		key, pts, lbls, ok := w.decodeRow(row)
		if !ok {
			continue
		}
		for len(pts) > 0 {
			take := min(w.o.Import.BatchSamples-w.b.samples, len(pts))
			w.add(key, row.Key, lbls, pts[:take])
			pts = pts[take:]
			if w.b.samples < w.o.Import.BatchSamples {
				continue
			}
			next := row.Key // this row is not wholly written yet
			if len(pts) == 0 {
				next = append(row.Key[:len(row.Key):len(row.Key)], 0) // the smallest key after it
			}
			if err := w.flush(ctx, span{doneFrom, next}); err != nil {
				return resume, err
			}
			resume = next
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, kv.ErrTableNotFound) {
			return resume, fmt.Errorf("otsdbimport: OpenTSDB's data table %s is not on this HBase (%w): give its name "+
				"(tsd.storage.hbase.data_table) with --opentsdb.data-table", w.src.DataTable, err)
		}
		return resume, fmt.Errorf("otsdbimport: read %s from %x: %w", w.src.DataTable, resume, err)
	}
	return sp.stop, w.flush(ctx, span{doneFrom, sp.stop})
}

// flush writes the batch and records done as stored.
func (w *worker) flush(ctx context.Context, done span) error {
	if w.b.samples > 0 {
		where := fmt.Sprintf("OpenTSDB rows %x..%x of %s", w.b.first, w.b.last, w.src.DataTable)
		if err := w.o.Import.WriteBatch(ctx, &w.b.req, w.b.samples, where); err != nil {
			return err
		}
	}
	w.b.reset()
	if w.o.Checkpoint == nil || w.o.Import.Sink == nil || (done.stop != nil && bytes.Equal(done.stop, w.lastDone)) {
		return nil
	}
	w.lastDone = done.stop
	return w.o.Checkpoint.addDone(done)
}

// add appends pts of the row rowKey, of series lbls, to the batch.
func (w *worker) add(key otsdbformat.RowKey, rowKey []byte, lbls labels.Labels, pts []otsdbformat.Point) {
	w.key = append(append(w.key[:0], key.Metric...), key.Tags...)
	i, ok := w.b.index[string(w.key)]
	if !ok {
		i = len(w.b.req.Series)
		w.b.req.Series = append(w.b.req.Series, write.Series{Labels: lbls})
		w.b.index[string(w.key)] = i
	}
	s := &w.b.req.Series[i]
	for _, p := range pts {
		s.Samples = append(s.Samples, cellenc.Sample{T: key.Time(p.Offset), V: p.Value.Float64()})
	}
	w.b.samples += len(pts)
	if w.b.first == nil {
		w.b.first = rowKey
	}
	w.b.last = rowKey
}

// decodeRow decodes one data row and the labels of its series, counting it;
// ok is false for a row that is skipped.
func (w *worker) decodeRow(row kv.Row) (key otsdbformat.RowKey, pts []otsdbformat.Point, lbls labels.Labels, ok bool) {
	st := w.o.Stats
	st.Rows.Add(1)
	key, err := w.src.Layout.ParseRowKey(row.Key)
	if err != nil {
		st.BadKeyRows.Add(1)
		w.warned.warn(warnBadKey, "skipping rows whose key is not an OpenTSDB row key of this layout (check the "+
			"--opentsdb.salt.* and --opentsdb.uid.width.* flags)", "table", w.src.DataTable, "layout", w.src.Layout.String(),
			"err", err)
		return key, nil, lbls, false
	}
	w.cols = w.cols[:0]
	for _, c := range row.Cells {
		w.cols = append(w.cols, otsdbformat.Column{Qualifier: c.Qualifier, Value: c.Value, Timestamp: c.Timestamp})
	}
	pts, rs, err := w.dec.Decode(w.cols)
	st.addRow(rs)
	if err != nil {
		w.warned.warn(warnCorrupt, "skipping columns that are not OpenTSDB's format (counted as corrupt)",
			"row", fmt.Sprintf("%x", row.Key), "err", err)
	}
	if rs.Duplicates > 0 {
		w.warned.warn(warnDuplicates, "skipping points another column of their row holds at the same time: the newest "+
			"column's are kept, as OpenTSDB does with tsd.storage.fix_duplicates", "row", fmt.Sprintf("%x", row.Key),
			"duplicates", rs.Duplicates)
	}
	if key.IsGlobalAnnotation() {
		st.GlobalAnnotationRows.Add(1)
		return key, nil, lbls, false
	}
	lbls, missing := w.labels(key)
	if missing != "" {
		st.UnknownUIDRows.Add(1)
		st.UnknownUIDPoints.Add(int64(len(pts)))
		w.warned.warn(warnUnknownUID, "skipping rows whose UIDs the UID table does not name (if every row is so, check "+
			"--opentsdb.uid-table and the --opentsdb.salt.* flags)", "row", fmt.Sprintf("%x", row.Key), "missing", missing)
		return key, nil, lbls, false
	}
	st.Points.Add(int64(len(pts)))
	return key, pts, lbls, len(pts) > 0
}

// labels is the series of key's metric and tags, as /api/put stores the same
// datapoint; missing names the first UID the UID table does not have.
func (w *worker) labels(key otsdbformat.RowKey) (lbls labels.Labels, missing string) {
	w.key = append(append(w.key[:0], key.Metric...), key.Tags...)
	if l, ok := w.cache[string(w.key)]; ok {
		return l, ""
	}
	metric, ok := w.ids.metrics[string(key.Metric)]
	if !ok {
		return lbls, fmt.Sprintf("metric %x", key.Metric)
	}
	w.pairs = w.pairs[:0]
	for i := range w.src.Layout.NumTags(key) {
		k, v := w.src.Layout.Tag(key, i)
		kn, ok := w.ids.tagk[string(k)]
		if !ok {
			return lbls, fmt.Sprintf("tagk %x", k)
		}
		vn, ok := w.ids.tagv[string(v)]
		if !ok {
			return lbls, fmt.Sprintf("tagv %x", v)
		}
		w.pairs = append(w.pairs, [2]string{kn, vn})
	}
	lbls = wire.PutLabels(&w.names, metric, func(yield func(string, string) bool) {
		for _, p := range w.pairs {
			if !yield(p[0], p[1]) {
				return
			}
		}
	})
	if len(w.cache) >= maxCachedSeries {
		clear(w.cache)
	}
	w.cache[string(w.key)] = lbls
	return lbls, ""
}
