package downsample

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

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
	// Grace is how long after its end a bucket is sealed and compacted [1h]. A
	// sample that arrives later still lands raw and is folded in by the next
	// pass; a longer grace only makes that rarer.
	Grace time.Duration
	// BatchRows is how many rows are read, written and cleaned in one round trip
	// each [500].
	BatchRows int
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

// Validate refuses options that mean nothing: a negative Grace or BatchRows, a
// resolution list schema.ValidateRollups refuses (without a bucket width:
// NewCompactor checks it against the store's).
func (o Options) Validate() error {
	var errs []error
	if o.Grace < 0 {
		errs = append(errs, fmt.Errorf("downsample: Options.Grace must not be negative (0 means the default, %s), got %s", DefaultGrace, o.Grace))
	}
	if o.BatchRows < 0 {
		errs = append(errs, fmt.Errorf("downsample: Options.BatchRows must not be negative (0 means the default, %d), got %d", DefaultBatchRows, o.BatchRows))
	}
	if err := o.validateRollups(0); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateRollups checks Rollups for a store of the given bucket width (0: not
// checked against one).
func (o Options) validateRollups(bucketWidth time.Duration) error {
	if err := schema.ValidateRollups(o.Rollups, bucketWidth); err != nil {
		return fmt.Errorf("downsample: Options.Rollups %s: %w", schema.FormatRollups(o.Rollups), err)
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
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Compactor rewrites the sealed buckets of a store's data table as chunks; see
// the package doc for the steps and why they are safe. One Compactor may work
// on several salts at once, but two must never work on one salt at once.
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
	if err := opts.validateRollups(settings.BucketWidth); err != nil {
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
	// samples that make no chunk (planRow).
	Skipped int
	// RollupCells is how many rollup cells were written: one per resolution
	// and rewritten row, and one per resolution and skipped row (whose rollup
	// cells are written again by every pass, as its raw cells stay).
	RollupCells int
}

func (s *Stats) add(o Stats) {
	s.Rows += o.Rows
	s.Samples += o.Samples
	s.RawCells += o.RawCells
	s.Skipped += o.Skipped
	s.RollupCells += o.RollupCells
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
	for salt := range c.settings.SaltBuckets {
		st, err := c.CompactSalt(ctx, byte(salt))
		total.add(st)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// CompactSalt compacts the sealed buckets of one salt that still hold raw
// cells: it scans the salt's rows for raw cells older than SealedBefore(now),
// key-only, and rewrites the rows it finds in batches of Options.BatchRows.
// Once the whole salt is done without error, it records the cutoff as the
// salt's watermark (Watermarks).
func (c *Compactor) CompactSalt(ctx context.Context, salt byte) (Stats, error) {
	cutoff := c.SealedBefore(c.opts.Now())
	var total Stats
	if cutoff <= 0 {
		return total, nil
	}
	start, stop := []byte{salt}, kv.PrefixEnd([]byte{salt})
	for {
		keys, next, err := c.sealedRows(ctx, start, stop, cutoff)
		if err != nil {
			return total, fmt.Errorf("downsample: find sealed rows of salt %d: %w", salt, err)
		}
		if len(keys) > 0 {
			st, err := c.compactRows(ctx, keys, cutoff)
			total.add(st)
			if err != nil {
				return total, fmt.Errorf("downsample: compact salt %d: %w", salt, err)
			}
		}
		if next == nil {
			if err := c.recordWatermark(ctx, salt, cutoff); err != nil {
				return total, err
			}
			return total, nil
		}
		start = next
	}
}

// recordWatermark records that salt is compacted up to cutoff: a put whose
// cell timestamp is cutoff (schema/watermark.go), so the cell keeps the
// greatest cutoff ever recorded and writing it again changes nothing.
func (c *Compactor) recordWatermark(ctx context.Context, salt byte, cutoff int64) error {
	row, cell, err := schema.WatermarkCell(schema.LeaseJobCompact, salt, cutoff)
	if err != nil {
		return fmt.Errorf("downsample: watermark of salt %d: %w", salt, err)
	}
	if err := c.st.Apply(ctx, schema.TableMeta, []kv.Mutation{kv.Put(row, cell.Family, cell.Qualifier, cell.Timestamp, cell.Value)}); err != nil {
		return fmt.Errorf("downsample: record the watermark %d of salt %d: %w", cutoff, salt, err)
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
			return nil, fmt.Errorf("downsample: read the watermarks: %w", err)
		}
		for _, cell := range row.Cells {
			if cell.Family != schema.FamilyMeta || string(cell.Qualifier) != schema.QualifierWatermark {
				continue
			}
			ms, err := schema.ParseWatermarkValue(cell.Value)
			if err != nil {
				return nil, fmt.Errorf("downsample: watermark of salt %d (row %q): %w", salt, row.Key, err)
			}
			out[salt] = ms
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("downsample: read the watermarks: %w", err)
	}
	return out, nil
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

// compactRows rewrites the rows of keys (sealed buckets, from sealedRows): one
// read of their chunk and raw cells, one write per rollup table of their
// rollup cells, one write of their chunks, and the deletes of the raw cells
// read, in that order (the package doc says why).
func (c *Compactor) compactRows(ctx context.Context, keys [][]byte, cutoff int64) (Stats, error) {
	rows, err := c.st.GetRows(ctx, schema.TableData, keys, kv.Families(schema.FamilyChunk, schema.FamilyRaw))
	if err != nil {
		return Stats{}, fmt.Errorf("read %d rows: %w", len(keys), err)
	}
	width := c.settings.BucketWidth
	var (
		st      Stats
		rollups = make([][]kv.Mutation, len(c.opts.Rollups))
		chunks  = make([]kv.Mutation, 0, len(rows))
		deletes []kv.Mutation
	)
	for _, row := range rows {
		p, err := c.planRow(row, width, cutoff)
		if err != nil {
			return Stats{}, err
		}
		for i, r := range c.opts.Rollups {
			if put, ok := rollupPut(row.Key, p.bucketStart, width, r.Resolution, p.samples, p.histograms); ok {
				rollups[i] = append(rollups[i], put)
				st.RollupCells++
			}
		}
		switch {
		case p.chunk != nil:
			chunks = append(chunks, *p.chunk)
			deletes = append(deletes, p.deletes...)
			st.Rows++
			st.Samples += len(p.samples) + len(p.histograms)
		case len(p.samples)+len(p.histograms) > 0:
			st.Skipped++
		}
	}
	if st.RollupCells > 0 {
		g, gctx := errgroup.WithContext(ctx)
		for i, r := range c.opts.Rollups {
			if len(rollups[i]) == 0 {
				continue
			}
			table := schema.RollupTable(r.Resolution)
			g.Go(func() error {
				if err := c.st.Apply(gctx, table, rollups[i]); err != nil {
					return fmt.Errorf("write %d rollup cells to %s: %w", len(rollups[i]), table, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return Stats{}, err
		}
		if err := c.step("rollups written"); err != nil {
			return Stats{}, err
		}
	}
	if len(chunks) == 0 {
		c.batchDone(st)
		return st, nil
	}
	if err := c.st.Apply(ctx, schema.TableData, chunks); err != nil {
		return Stats{}, fmt.Errorf("write %d chunks: %w", len(chunks), err)
	}
	if err := c.step("chunks written"); err != nil {
		return Stats{}, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for start := 0; start < len(deletes); start += 10_000 {
		part := deletes[start:min(start+10_000, len(deletes))]
		g.Go(func() error { return c.st.Apply(gctx, schema.TableData, part) })
	}
	if err := g.Wait(); err != nil {
		return Stats{}, fmt.Errorf("delete %d raw cells: %w", len(deletes), err)
	}
	st.RawCells = len(deletes)
	c.batchDone(st)
	if err := c.step("raw deleted"); err != nil {
		return st, err
	}
	return st, nil
}

// rowPlan is what compacting one row takes.
type rowPlan struct {
	bucketStart int64
	// samples and histograms are the bucket's samples of each kind (chunk and
	// raw cells merged), nil when the row is not to be compacted: no raw cells
	// of a sealed bucket.
	samples    []schema.Sample
	histograms []schema.HistogramSample
	// chunk is the put of the bucket's chunk, nil when the row is not to be
	// compacted or stays raw (more samples than a chunk holds).
	chunk *kv.Mutation
	// deletes delete the raw cells read, each up to its own timestamp.
	deletes []kv.Mutation
}

// planRow returns the chunk write and the raw deletes that compact one row,
// and the samples its chunk cell (and its rollup cells) hold, floats and
// histograms, with their start timestamps (schema.BucketCell). A row without raw
// cells of a sealed bucket (compacted meanwhile, or not sealed) gives an empty
// plan; a row with more samples than a chunk holds, or whose samples
// schema.BucketCell refuses, gives its samples but no chunk, and stays raw.
func (c *Compactor) planRow(row kv.Row, width time.Duration, cutoff int64) (rowPlan, error) {
	rs, err := schema.DecodeDataRow(row, width, 0, kv.MaxTimestamp)
	if err != nil {
		return rowPlan{}, fmt.Errorf("decode row %q: %w", row.Key, err)
	}
	if rs.RawCells == 0 || rs.BucketStart+width.Milliseconds() > cutoff {
		return rowPlan{}, nil
	}
	p := rowPlan{bucketStart: rs.BucketStart, samples: rs.Samples, histograms: rs.Histograms}
	if n := len(rs.Samples) + len(rs.Histograms); n > schema.MaxChunkSamples {
		c.opts.Logger.Warn("bucket left raw: more samples than a chunk holds", "row", fmt.Sprintf("%q", row.Key),
			"samples", n, "max", schema.MaxChunkSamples)
		return p, nil
	}
	cell, err := schema.BucketCell(rs.Samples, rs.Histograms, rs.BucketStart, width)
	if err != nil {
		// Not expected of samples DecodeDataRow returned; should Prometheus'
		// histogram appender refuse one, the bucket stays raw (and readable)
		// rather than stopping every later pass over the salt.
		c.opts.Logger.Warn("bucket left raw: its samples do not make a chunk", "row", fmt.Sprintf("%q", row.Key), "err", err)
		return p, nil
	}
	put := kv.Put(row.Key, cell.Family, cell.Qualifier, cell.Timestamp, cell.Value)
	p.chunk = &put
	p.deletes = make([]kv.Mutation, 0, rs.RawCells)
	for _, rc := range row.Cells {
		if rc.Family == schema.FamilyRaw {
			p.deletes = append(p.deletes, kv.DeleteColumn(row.Key, schema.FamilyRaw, rc.Qualifier, rc.Timestamp))
		}
	}
	return p, nil
}

// rollupPut returns the put of the rollup cell of resolution res of the data
// bucket of dataKey, starting at bucketStart, holding samples (schema/rollup.go):
// row = the data row key with the bucket start replaced by its UTC day,
// qualifier = the bucket's offset in that day, value = the bucket's windows,
// timestamp = the bucket's last millisecond, as the chunk cell's, so that
// rolling the bucket up again rewrites the cell in place. ok is false when
// there is nothing to roll up.
func rollupPut(dataKey []byte, bucketStart int64, width, res time.Duration, samples []schema.Sample, histograms []schema.HistogramSample) (kv.Mutation, bool) {
	windows := schema.AggregateWindows(samples, histograms, res)
	if len(windows) == 0 {
		return kv.Mutation{}, false
	}
	return kv.Put(rollupRowKey(dataKey, bucketStart), schema.FamilyRollup, schema.AppendRollupQualifier(nil, bucketStart),
		bucketStart+width.Milliseconds()-1, schema.EncodeRollupWindows(nil, bucketStart, res, windows)), true
}

// rollupRowKey is the rollup row key of the data row dataKey, whose bucket
// starts at bucketStart: schema.DataRowKey of the same series with BucketStart
// the day (schema.RollupRowStart). A data row key ends with ^bucketStart, 8
// bytes (schema/datakey.go), so only those are replaced.
func rollupRowKey(dataKey []byte, bucketStart int64) []byte {
	n := len(dataKey) - 8
	key := make([]byte, n, len(dataKey))
	copy(key, dataKey[:n])
	return binary.BigEndian.AppendUint64(key, ^uint64(schema.RollupRowStart(bucketStart)))
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
