package downsample

import (
	"context"
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

	// afterStep, set by tests only, runs after each step of a batch ("chunks
	// written", "raw deleted"); an error ends the pass there, as a crash would.
	afterStep func(step string) error
}

// Validate refuses options that mean nothing: a negative Grace or BatchRows.
func (o Options) Validate() error {
	var errs []error
	if o.Grace < 0 {
		errs = append(errs, fmt.Errorf("downsample: Options.Grace must not be negative (0 means the default, %s), got %s", DefaultGrace, o.Grace))
	}
	if o.BatchRows < 0 {
		errs = append(errs, fmt.Errorf("downsample: Options.BatchRows must not be negative (0 means the default, %d), got %d", DefaultBatchRows, o.BatchRows))
	}
	return errors.Join(errs...)
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
	// Skipped counts the rows left raw: more samples than a chunk holds.
	Skipped int
}

func (s *Stats) add(o Stats) {
	s.Rows += o.Rows
	s.Samples += o.Samples
	s.RawCells += o.RawCells
	s.Skipped += o.Skipped
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
			return total, nil
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

// compactRows rewrites the rows of keys (sealed buckets, from sealedRows): one
// read of their chunk and raw cells, one write of their chunks, one delete of the
// raw cells read.
func (c *Compactor) compactRows(ctx context.Context, keys [][]byte, cutoff int64) (Stats, error) {
	rows, err := c.st.GetRows(ctx, schema.TableData, keys, kv.Families(schema.FamilyChunk, schema.FamilyRaw))
	if err != nil {
		return Stats{}, fmt.Errorf("read %d rows: %w", len(keys), err)
	}
	width := c.settings.BucketWidth
	var (
		st      Stats
		chunks  = make([]kv.Mutation, 0, len(rows))
		deletes []kv.Mutation
	)
	for _, row := range rows {
		muts, rowDeletes, n, err := c.planRow(row, width, cutoff)
		if err != nil {
			return st, err
		}
		if muts == nil {
			if n > 0 {
				st.Skipped++
			}
			continue
		}
		chunks = append(chunks, muts...)
		deletes = append(deletes, rowDeletes...)
		st.Rows++
		st.Samples += n
	}
	if len(chunks) == 0 {
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
	if err := c.step("raw deleted"); err != nil {
		return st, err
	}
	return st, nil
}

// planRow returns the chunk write and the raw deletes that compact one row, and
// the number of samples its chunk holds. A row without raw cells of a sealed
// bucket (compacted meanwhile, or not sealed) gives nil mutations and 0; a row
// with more samples than a chunk holds gives nil mutations and its sample count,
// and stays raw.
func (c *Compactor) planRow(row kv.Row, width time.Duration, cutoff int64) ([]kv.Mutation, []kv.Mutation, int, error) {
	rs, err := schema.DecodeDataRow(row, width, 0, kv.MaxTimestamp)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("decode row %q: %w", row.Key, err)
	}
	if rs.RawCells == 0 || rs.BucketStart+width.Milliseconds() > cutoff {
		return nil, nil, 0, nil
	}
	if len(rs.Samples) > schema.MaxChunkSamples {
		c.opts.Logger.Warn("bucket left raw: more samples than a chunk holds", "row", fmt.Sprintf("%q", row.Key),
			"samples", len(rs.Samples), "max", schema.MaxChunkSamples)
		return nil, nil, len(rs.Samples), nil
	}
	cell, err := schema.BucketChunkCell(rs.Samples, rs.BucketStart, width)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("chunk of row %q: %w", row.Key, err)
	}
	put := []kv.Mutation{kv.Put(row.Key, cell.Family, cell.Qualifier, cell.Timestamp, cell.Value)}
	deletes := make([]kv.Mutation, 0, rs.RawCells)
	for _, rc := range row.Cells {
		if rc.Family == schema.FamilyRaw {
			deletes = append(deletes, kv.DeleteColumn(row.Key, schema.FamilyRaw, rc.Qualifier, rc.Timestamp))
		}
	}
	return put, deletes, len(rs.Samples), nil
}

// step runs the test hook after a step, if any.
func (c *Compactor) step(name string) error {
	if c.opts.afterStep == nil {
		return nil
	}
	return c.opts.afterStep(name)
}
