package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of Options.
const (
	DefaultGrace     = time.Hour
	DefaultBatchRows = 500
)

// Options tune a Compactor. Zero values take the defaults in brackets.
type Options struct {
	// Grace is how long after its end a bucket is sealed and compacted [1h];
	// at least schema.MinGrace of the store's bucket width (width × 3/20: 9m
	// for 1h buckets), so that every on-time write is stored before a bucket
	// is sealed (schema/late.go). A sample that arrives later still lands raw,
	// as a late cell, and is folded in by the next pass.
	Grace time.Duration
	// BatchRows is how many rows are read, written and cleaned in one round trip
	// each [500].
	BatchRows int
	// Apply bounds the Applies that delete a batch's raw cells and pending
	// marks: at most Apply.MaxBatch mutations each [kv.DefaultApplyBatch,
	// 10,000], Apply.Concurrency at once [kv.DefaultApplyConcurrency, 4]. The
	// writer takes the same options (write.Options.Apply).
	Apply kv.ApplyOptions
	// Sweep makes every pass over a salt also find sealed raw cells by reading
	// the salt's raw family whole (key-only), not only through the pending
	// table: a pass then costs in proportion to every raw cell the salt holds.
	// The first pass over a salt sweeps it anyway (a store written before the
	// pending table existed has unmarked rows); later ones need not, unless
	// writers of a version without the pending table wrote to the store since.
	Sweep bool
	// Now is the clock deciding which buckets are sealed [time.Now].
	Now func() time.Time
	// Logger receives a line per row that cannot be compacted [slog.Default()].
	Logger *slog.Logger
	// Rollups are the resolutions whose rollup cells compaction writes from the
	// samples of each bucket it rewrites, one table each (schema.RollupTable,
	// which must exist: schema.Tables creates one per TableOptions.Rollups); nil
	// writes none. NewCompactor checks them against the store's bucket width
	// (schema.ValidateRollups).
	Rollups []schema.Rollup

	// afterStep, set by tests only, runs after each step of a batch ("rollups
	// written", "chunks written", "raw deleted"); an error ends the pass there,
	// as a crash would.
	afterStep func(step string) error
	// batchDone, set by the Worker, is told what each batch did once it is done.
	batchDone func(Stats)
}

// Validate refuses options that mean nothing: a negative Grace, BatchRows,
// Apply.MaxBatch or Apply.Concurrency, a resolution list
// schema.ValidateRollups refuses (without a bucket width: NewCompactor checks
// it and Grace against the store's).
func (o Options) Validate() error {
	var errs []error
	errs = append(errs,
		optcheck.NotNegative("compact: Options.Grace", o.Grace, optcheck.Default(DefaultGrace)),
		optcheck.NotNegative("compact: Options.BatchRows", o.BatchRows, optcheck.Default(DefaultBatchRows)),
		o.Apply.Validate("compact: Options.Apply"),
	)
	if err := o.validateRollups(0); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateForStore checks Rollups and Grace against a store of the given
// bucket width.
func (o Options) validateForStore(bucketWidth time.Duration) error {
	if err := o.validateRollups(bucketWidth); err != nil {
		return err
	}
	grace := o.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	if least := schema.MinGrace(bucketWidth); grace < least {
		return fmt.Errorf("compact: Options.Grace must be at least %s in a store of %s buckets, got %s: "+
			"writers store samples as on time until %s after their bucket's end, and a bucket is sealed only once they are stored",
			least, bucketWidth, grace, schema.OnTimeWindow(bucketWidth))
	}
	return nil
}

// validateRollups checks Rollups for a store of the given bucket width (0: not
// checked against one).
func (o Options) validateRollups(bucketWidth time.Duration) error {
	if err := schema.ValidateRollups(o.Rollups, bucketWidth); err != nil {
		return fmt.Errorf("compact: Options.Rollups %s: %w", schema.FormatRollups(o.Rollups), err)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.BatchRows == 0 {
		o.BatchRows = DefaultBatchRows
	}
	o.Apply = o.Apply.WithDefaults()
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Compactor rewrites the sealed buckets of a store's data table as chunks; see
// the package doc for the steps and why they are safe. Several Compactors, in
// one process or in many, may work on one salt at once: every cell they write
// is a check-and-put on what they read (the worker's leases only keep them
// from doing the same work twice).
type Compactor struct {
	st       kv.Store
	settings schema.Settings
	opts     Options
}

// NewCompactor returns a compactor of st, whose schema was created with settings.
func NewCompactor(st kv.Store, settings schema.Settings, opts Options) (*Compactor, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := opts.validateForStore(settings.BucketWidth); err != nil {
		return nil, err
	}
	return &Compactor{st: st, settings: settings, opts: opts.withDefaults()}, nil
}

// Stats count what a pass did.
type Stats struct {
	// Rows is how many data rows were rewritten as a chunk.
	Rows int
	// Samples is how many samples those chunks hold.
	Samples int
	// RawCells is how many raw cells were deleted.
	RawCells int
	// Skipped counts the rows left raw: more samples than a chunk holds, or
	// samples that make no chunk (prepareRow).
	Skipped int
	// RollupCells is how many rollup cells were written: one per resolution
	// and rewritten row, and one per resolution and skipped row (whose rollup
	// cells are written again by every pass that finds it marked); void cells
	// in the tables of resolutions the store has and Options.Rollups lacks
	// count too.
	RollupCells int
	// Conflicts counts the rows left for the next pass because a cell this
	// pass would have written had changed since it was read (another
	// compactor of the same salt): nothing of such a row is deleted.
	Conflicts int
	// RowsRead is how many data rows were read; CellsRead how many cells
	// (data, rollup and pending) they and their marks held: the work of the
	// pass, whatever it found to do.
	RowsRead, CellsRead int
}

func (s *Stats) add(o Stats) {
	s.Rows += o.Rows
	s.Samples += o.Samples
	s.RawCells += o.RawCells
	s.Skipped += o.Skipped
	s.RollupCells += o.RollupCells
	s.Conflicts += o.Conflicts
	s.RowsRead += o.RowsRead
	s.CellsRead += o.CellsRead
}

// resolutions returns the resolutions of Options.Rollups, then those whose
// rollup tables the store has but Options.Rollups lacks ("retired"): a
// resolution removed from the list (its table is kept until an operator drops
// it), or one of another process's list. Compaction voids the retired ones'
// cells of the buckets it compacts (compactRows).
func (c *Compactor) resolutions(ctx context.Context) ([]time.Duration, error) {
	tables, err := c.st.ListTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("compact: list the rollup tables: %w", err)
	}
	out := make([]time.Duration, 0, len(c.opts.Rollups))
	for _, r := range c.opts.Rollups {
		out = append(out, r.Resolution)
	}
	for _, t := range tables {
		res, ok := schema.ParseRollupTable(t)
		if ok && !slices.ContainsFunc(c.opts.Rollups, func(r schema.Rollup) bool { return r.Resolution == res }) {
			out = append(out, res)
		}
	}
	return out, nil
}

// SealedBefore is the compaction cutoff at now: every bucket that ends at or
// before it is sealed. It is the start of the bucket that holds now - Grace.
func (c *Compactor) SealedBefore(now time.Time) int64 {
	return schema.BucketStart(now.Add(-c.opts.Grace).UnixMilli(), c.settings.BucketWidth)
}

// Compact compacts every sealed bucket of the whole store that still holds raw
// cells, salt after salt.
func (c *Compactor) Compact(ctx context.Context) (Stats, error) {
	var total Stats
	for salt := range c.settings.Salts {
		st, err := c.CompactSalt(ctx, byte(salt))
		total.add(st)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// CompactSalt compacts the sealed buckets of one salt that still hold raw
// cells. It finds them through the pending table (schema/pending.go): the
// on-time marks of the buckets from the salt's watermark to SealedBefore(now),
// then the late marks of every bucket before it, read in batches of
// Options.BatchRows, oldest bucket first, each batch compacted (compactRows)
// and its marks deleted. Then, in a store that got its pending table after it
// held data (until a sweep has sealed the bucket of that moment), or with
// Options.Sweep, it sweeps the salt: reads its raw family whole, key-only,
// for the rows no mark names. Once the whole salt is done without error or
// conflict, it records the cutoff as the salt's watermark (Watermarks).
func (c *Compactor) CompactSalt(ctx context.Context, salt byte) (Stats, error) {
	cutoff := c.SealedBefore(c.opts.Now())
	var total Stats
	if cutoff <= 0 {
		return total, nil
	}
	from, swept, err := c.progress(ctx, salt)
	if err != nil {
		return total, err
	}
	resolutions, err := c.resolutions(ctx)
	if err != nil {
		return total, err
	}
	onTimeStart, onTimeStop := schema.PendingOnTimeRange(salt, from, cutoff)
	lateStart, lateStop := schema.PendingLateRange(salt, cutoff)
	for _, r := range [][2][]byte{{onTimeStart, onTimeStop}, {lateStart, lateStop}} {
		start, stop := r[0], r[1]
		for bytes.Compare(start, stop) < 0 {
			targets, next, err := c.markedRows(ctx, start, stop)
			if err != nil {
				return total, fmt.Errorf("compact: find the marked rows of salt %d: %w", salt, err)
			}
			if len(targets) > 0 {
				st, err := c.compactRows(ctx, targets, cutoff, resolutions)
				total.add(st)
				if err != nil {
					return total, fmt.Errorf("compact: compact salt %d: %w", salt, err)
				}
			}
			if next == nil {
				break
			}
			start = next
		}
	}
	sweep, err := c.needsSweep(ctx, swept)
	if err != nil {
		return total, err
	}
	if sweep {
		st, err := c.sweepSalt(ctx, salt, cutoff, resolutions)
		total.add(st)
		if err != nil {
			return total, err
		}
	}
	if total.Conflicts > 0 {
		// Those rows keep their marks, some below the cutoff: the next pass
		// must scan from here again.
		return total, nil
	}
	return total, c.recordWatermark(ctx, salt, schema.QualifierWatermark, cutoff)
}

// progress returns what the salt's watermark row records (0 for what it does
// not): its watermark — every on-time mark below it is deleted, so a pass
// scans from there — and the cutoff of its last sweep.
func (c *Compactor) progress(ctx context.Context, salt byte) (watermark, swept int64, err error) {
	r, err := c.st.Get(ctx, schema.TableMeta, schema.WatermarkRow(nil, schema.LeaseJobCompact, salt), kv.Families(schema.FamilyMeta))
	if err != nil {
		return 0, 0, fmt.Errorf("compact: read the watermark row of salt %d: %w", salt, err)
	}
	for _, cell := range r.Cells {
		var dst *int64
		switch string(cell.Qualifier) {
		case schema.QualifierWatermark:
			dst = &watermark
		case schema.QualifierSwept:
			dst = &swept
		default:
			continue
		}
		if *dst, err = schema.ParseWatermarkValue(cell.Value); err != nil {
			return 0, 0, fmt.Errorf("compact: %s of salt %d: %w", cell.Qualifier, salt, err)
		}
	}
	return watermark, swept, nil
}

// target is a data row to compact, and the pending marks that named it.
type target struct {
	row []byte
	// markRow and marks are the row's pending row key and the columns of its
	// marks read; nil for a row found by a sweep.
	markRow []byte
	marks   [][]byte
}

// markedRows returns the data rows named by up to BatchRows pending rows in
// [start, stop), with their marks, and where the next batch starts (nil:
// none).
func (c *Compactor) markedRows(ctx context.Context, start, stop []byte) ([]target, []byte, error) {
	sc := c.st.Scan(ctx, schema.TablePending, start, stop, kv.Families(schema.FamilyPending), kv.RowLimit(c.opts.BatchRows))
	defer sc.Close()
	var (
		targets []target
		last    []byte
		n       int // pending rows read, named rows or not
	)
	for sc.Next() {
		r := sc.Row()
		last = r.Key
		n++
		dataKey, _, _, err := schema.PendingDataRowKey(r.Key)
		if err != nil {
			c.opts.Logger.Warn("pending row ignored: it names no data row", "row", fmt.Sprintf("%q", r.Key), "err", err)
			continue
		}
		t := target{row: dataKey, markRow: r.Key}
		for _, cell := range r.Cells {
			t.marks = append(t.marks, cell.Qualifier)
		}
		targets = append(targets, t)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if n < c.opts.BatchRows {
		return targets, nil, nil
	}
	return targets, append(append([]byte(nil), last...), 0x00), nil
}

// needsSweep reports whether a pass over a salt last swept at cutoff swept (0:
// never) must sweep it: with Options.Sweep, or in a store that got its
// pending table when it already held data (the meta row's
// schema.QualifierPendingSince), until a sweep of the salt has sealed the
// bucket that holds that moment: every raw cell written before the table
// existed is then compacted.
func (c *Compactor) needsSweep(ctx context.Context, swept int64) (bool, error) {
	if c.opts.Sweep {
		return true, nil
	}
	meta, err := c.st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow), kv.Families(schema.FamilyMeta))
	if err != nil {
		return false, fmt.Errorf("compact: read the meta row: %w", err)
	}
	for _, cell := range meta.Cells {
		if string(cell.Qualifier) != schema.QualifierPendingSince {
			continue
		}
		since, err := schema.ParsePendingSince(cell.Value)
		if err != nil {
			return false, fmt.Errorf("compact: %w", err)
		}
		width := c.settings.BucketWidth
		return swept < schema.BucketStart(since, width)+width.Milliseconds(), nil
	}
	return false, nil
}

// sweepSalt compacts every row of salt with raw cells of a bucket sealed by
// cutoff, found by a key-only scan of the salt's raw family, in batches of
// BatchRows, and records the sweep.
func (c *Compactor) sweepSalt(ctx context.Context, salt byte, cutoff int64, resolutions []time.Duration) (Stats, error) {
	var total Stats
	start, stop := []byte{salt}, kv.PrefixEnd([]byte{salt})
	for {
		keys, next, err := c.sealedRows(ctx, start, stop, cutoff)
		if err != nil {
			return total, fmt.Errorf("compact: sweep salt %d: %w", salt, err)
		}
		if len(keys) > 0 {
			targets := make([]target, len(keys))
			for i, k := range keys {
				targets[i] = target{row: k}
			}
			st, err := c.compactRows(ctx, targets, cutoff, resolutions)
			total.add(st)
			if err != nil {
				return total, fmt.Errorf("compact: sweep salt %d: %w", salt, err)
			}
		}
		if next == nil {
			return total, c.recordWatermark(ctx, salt, schema.QualifierSwept, cutoff)
		}
		start = next
	}
}

// sealedRows returns the keys of up to BatchRows rows in [start, stop) with raw
// cells older than cutoff, and where the next batch starts (nil: none).
func (c *Compactor) sealedRows(ctx context.Context, start, stop []byte, cutoff int64) ([][]byte, []byte, error) {
	sc := c.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyRaw), kv.TimeRange(0, cutoff),
		kv.WithFilter(kv.KeyOnlyFilter{}), kv.RowLimit(c.opts.BatchRows))
	defer sc.Close()
	var keys [][]byte
	for sc.Next() {
		keys = append(keys, sc.Row().Key)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(keys) < c.opts.BatchRows {
		return keys, nil, nil
	}
	last := keys[len(keys)-1]
	return keys, append(append([]byte(nil), last...), 0x00), nil
}

// recordWatermark records that salt is compacted (QualifierWatermark) or swept
// (QualifierSwept) up to cutoff: a put whose cell timestamp is cutoff
// (schema/watermark.go), so the cell keeps the greatest cutoff ever recorded
// and writing it again changes nothing.
func (c *Compactor) recordWatermark(ctx context.Context, salt byte, qualifier string, cutoff int64) error {
	cellOf := schema.WatermarkCell
	if qualifier == schema.QualifierSwept {
		cellOf = schema.SweptCell
	}
	row, cell, err := cellOf(schema.LeaseJobCompact, salt, cutoff)
	if err != nil {
		return fmt.Errorf("compact: %s of salt %d: %w", qualifier, salt, err)
	}
	if err := c.st.Apply(ctx, schema.TableMeta, []kv.Mutation{kv.Put(row, cell.Family, cell.Qualifier, cell.Timestamp, cell.Value)}); err != nil {
		return fmt.Errorf("compact: record the %s %d of salt %d: %w", qualifier, cutoff, salt, err)
	}
	return nil
}

// Watermarks returns, per salt, the cutoff up to which a pass over the salt
// last completed (the greatest one recorded by any compactor of the store):
// every bucket that ends at or before it was compacted, and rolled up, by that
// pass, so now - grace - watermark is roughly how far compaction lags. Salts
// no pass completed yet are absent.
func (c *Compactor) Watermarks(ctx context.Context) (map[byte]int64, error) {
	return readWatermarks(ctx, c.st)
}

// readWatermarks reads the compaction watermarks of st (see Watermarks).
func readWatermarks(ctx context.Context, st kv.Store) (map[byte]int64, error) {
	prefix := schema.WatermarkJobPrefix(nil, schema.LeaseJobCompact)
	sc := st.Scan(ctx, schema.TableMeta, prefix, kv.PrefixEnd(prefix), kv.Families(schema.FamilyMeta))
	defer sc.Close()
	out := map[byte]int64{}
	for sc.Next() {
		row := sc.Row()
		_, salt, err := schema.ParseWatermarkRow(row.Key)
		if err != nil {
			return nil, fmt.Errorf("compact: read the watermarks: %w", err)
		}
		for _, cell := range row.Cells {
			if cell.Family != schema.FamilyMeta || string(cell.Qualifier) != schema.QualifierWatermark {
				continue
			}
			ms, err := schema.ParseWatermarkValue(cell.Value)
			if err != nil {
				return nil, fmt.Errorf("compact: watermark of salt %d (row %q): %w", salt, row.Key, err)
			}
			out[salt] = ms
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("compact: read the watermarks: %w", err)
	}
	return out, nil
}

// batchDone tells the Worker's progress, if any, what a batch did.
func (c *Compactor) batchDone(st Stats) {
	if c.opts.batchDone != nil {
		c.opts.batchDone(st)
	}
}

// step runs the test hook after a step, if any.
func (c *Compactor) step(name string) error {
	if c.opts.afterStep == nil {
		return nil
	}
	return c.opts.afterStep(name)
}
