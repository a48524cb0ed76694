package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Deleting samples (tsdb delete, POST /api/v1/admin/tsdb/delete_series)
// rewrites the data rows of the deleted range with the machinery compaction
// rewrites them with, under the same leases, so that a delete and a
// compaction never rewrite one salt at once:
//
//  1. the salt's compaction lease is taken (waiting while a worker holds
//     it) and kept while the salt's rows are rewritten (guardedStore);
//  2. per batch of rows (Options.BatchRows): the rollup cells of the rows'
//     buckets are read, then the data rows (chunk and raw cells);
//  3. every rollup cell that summarises a bucket losing samples is
//     check-and-put, expecting what step 2 read: recomputed from the
//     samples left (rollupPut) for the resolutions of Options.Rollups, void
//     (voidRollupPut) for the other tables and where nothing is left, so
//     that a rollup never answers with a deleted sample;
//  4. every chunk cell holding a deleted sample is check-and-put with the
//     chunk of its other samples (cellenc.BucketCell), or an empty value
//     when none is left (readers take an empty chunk cell as no samples:
//     deleting the column would leave an HBase delete marker that hides the
//     next chunk compaction writes for the bucket);
//  5. the raw cells in the range are deleted (a column delete each, at the
//     cell's timestamp), then the exemplars in the range (a column delete
//     each).
//
// A row any of whose check-and-puts failed (a compactor whose lease ran out
// rewrote it meanwhile) is read and rewritten again. Every step is
// idempotent and computed from what is stored now, so a delete that stopped
// part way (crash, store error, lease lost) is finished by running the same
// delete again; until then a query may still see some of the range's
// samples, never lose one outside it.

// DeleteOptions configure Delete. Owner is required; zero values take the
// defaults in brackets.
type DeleteOptions struct {
	// Owner names the deleter in the compaction leases it takes (as
	// WorkerOptions.Owner).
	Owner string
	// LeaseTTL is how long a lease lasts unless renewed [DefaultLeaseTTL].
	LeaseTTL time.Duration
	// Compact gives the resolutions whose rollup cells are recomputed
	// (Rollups; any other rollup table's cells are voided), the batch size
	// (BatchRows), the bounds of the delete Applies (Apply), the clock and
	// the logger.
	Compact Options
	// Salts is how many salts are rewritten at once, each under its own
	// lease [DefaultDeleteSalts].
	Salts int
	// DryRun reads and counts what would be removed and writes nothing
	// (no lease is taken either).
	DryRun bool
	// Progress, when not nil, is called after each batch with the totals so
	// far and how many rows there are in all, one call at a time.
	Progress func(done DeleteStats, rows int)

	// afterStep, set by tests only, runs after each step of a batch
	// ("rollups rewritten", "chunks rewritten", "raw deleted"); an error ends
	// the delete there, as a crash would.
	afterStep func(step string) error
}

// DeleteStats count what a delete removed (or, dry, would remove).
type DeleteStats struct {
	// Series is how many series had samples in the range.
	Series int
	// Rows is how many data rows held samples in the range; Samples how many
	// samples they held there (chunk and raw, one per timestamp).
	Rows, Samples int
	// RawCells is how many raw cells were deleted, Chunks how many chunk cells
	// rewritten, RollupCells how many rollup cells rewritten or voided,
	// Exemplars how many exemplars deleted.
	RawCells, Chunks, RollupCells, Exemplars int
	// Retries counts the rows read again because a check-and-put found them
	// changed.
	Retries int
	// Unindexed is how many series-days, left without samples, lost their
	// tag index entries: set by db.Delete, which removes them after Delete.
	Unindexed int
}

func (s *DeleteStats) add(o DeleteStats) {
	s.Series += o.Series
	s.Rows += o.Rows
	s.Samples += o.Samples
	s.RawCells += o.RawCells
	s.Chunks += o.Chunks
	s.RollupCells += o.RollupCells
	s.Exemplars += o.Exemplars
	s.Retries += o.Retries
	s.Unindexed += o.Unindexed
}

// DefaultDeleteSalts is DeleteOptions.Salts' default: on HBase a delete's
// time goes to round trips (a check-and-put per rewritten cell), which salts
// rewritten at once overlap.
const DefaultDeleteSalts = 4

// maxDeleteAttempts bounds how often a row whose check-and-put failed is read
// and rewritten again before the delete gives up on it (and says so).
const maxDeleteAttempts = 10

// Delete removes the samples with timestamps in [mint, maxt] (inclusive, ms)
// from the data rows rows (data row keys, any order, any salts) of st, whose
// schema was created with settings, together with their part of chunk and
// rollup cells and their exemplars; see the comment above DeleteOptions for
// the steps. DeleteOptions.Salts salts are done at once, each under its
// compaction lease; the first error ends the others.
func Delete(ctx context.Context, st kv.Store, settings schema.Settings, opts DeleteOptions, rows [][]byte, mint, maxt int64) (DeleteStats, error) {
	var total DeleteStats
	if mint > maxt {
		return total, fmt.Errorf("compact: delete: start %d after end %d: %w", mint, maxt, kv.ErrInvalidArgument)
	}
	if !opts.DryRun {
		if err := schema.ValidLeaseOwner(opts.Owner); err != nil {
			return total, fmt.Errorf("compact: DeleteOptions.Owner: %w", err)
		}
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Salts == 0 {
		opts.Salts = DefaultDeleteSalts
	}
	if opts.Salts < 0 {
		return total, fmt.Errorf("compact: DeleteOptions.Salts must not be negative (0 means the default, %d), got %d", DefaultDeleteSalts, opts.Salts)
	}
	if opts.LeaseTTL < MinLeaseTTL {
		return total, fmt.Errorf("compact: DeleteOptions.LeaseTTL must be at least %s, got %s", MinLeaseTTL, opts.LeaseTTL)
	}
	copts := opts.Compact
	copts.afterStep = opts.afterStep
	c, err := NewCompactor(st, settings, copts)
	if err != nil {
		return total, err
	}
	resolutions, err := c.resolutions(ctx)
	if err != nil {
		return total, err
	}
	keysBySalt := make(map[byte][][]byte)
	for _, k := range rows {
		if len(k) == 0 {
			return total, fmt.Errorf("compact: delete: an empty row key: %w", kv.ErrInvalidArgument)
		}
		keysBySalt[k[0]] = append(keysBySalt[k[0]], k)
	}
	salts := make([]byte, 0, len(keysBySalt))
	for s := range keysBySalt {
		salts = append(salts, s)
	}
	slices.Sort(salts)
	l := &leaser{st: st, job: schema.LeaseJobCompact, owner: opts.Owner, ttl: opts.LeaseTTL, now: c.opts.Now}
	// A series' rows are all in one salt (its host's), so each salt counts
	// its own series.
	var (
		mu     sync.Mutex
		bySalt = make(map[byte]DeleteStats, len(salts)) // per salt, what it did so far
	)
	report := func(salt byte, s DeleteStats) {
		mu.Lock()
		defer mu.Unlock()
		bySalt[salt] = s
		if opts.Progress != nil {
			var done DeleteStats
			for _, d := range bySalt {
				done.add(d)
			}
			opts.Progress(done, len(rows))
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Salts)
	for _, salt := range salts {
		keys := slices.CompactFunc(slices.SortedFunc(slices.Values(keysBySalt[salt]), bytes.Compare), bytes.Equal)
		g.Go(func() error {
			s, err := deleteSalt(gctx, c, l, salt, keys, mint, maxt, resolutions, opts.DryRun, make(map[uint64]bool),
				func(s DeleteStats) { report(salt, s) })
			report(salt, s)
			if err != nil {
				return fmt.Errorf("compact: delete in salt %d: %w", salt, err)
			}
			return nil
		})
	}
	err = g.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, s := range bySalt {
		total.add(s)
	}
	return total, err
}

// deleteSalt deletes [mint, maxt] from the rows keys of one salt: under the
// salt's lease unless dry.
func deleteSalt(ctx context.Context, c *Compactor, l *leaser, salt byte, keys [][]byte, mint, maxt int64,
	resolutions []time.Duration, dry bool, seen map[uint64]bool, progress func(DeleteStats)) (DeleteStats, error) {
	if dry {
		return c.deleteBatches(ctx, keys, mint, maxt, resolutions, true, seen, progress)
	}
	h, err := waitForLease(ctx, l, salt, c.opts.Logger)
	if err != nil {
		return DeleteStats{}, err
	}
	defer func() {
		if rerr := h.release(ctx); rerr != nil {
			c.opts.Logger.Warn("lease not released; it expires by itself", "salt", salt, "err", rerr)
		}
	}()
	workCtx, stop := h.keep(ctx)
	defer stop()
	guarded := *c
	guarded.st = &guardedStore{Store: c.st, lease: h}
	st, err := guarded.deleteBatches(workCtx, keys, mint, maxt, resolutions, false, seen, progress)
	if cause := context.Cause(workCtx); err != nil && ctx.Err() == nil && errors.Is(cause, ErrLeaseLost) && !errors.Is(err, ErrLeaseLost) {
		err = fmt.Errorf("%w (%w)", cause, err)
	}
	return st, err
}

// waitForLease takes the compaction lease of salt, waiting while another
// worker holds it (a compaction round of the salt, or another delete): it
// asks again every leaser.keepTick until it gets it or ctx ends.
func waitForLease(ctx context.Context, l *leaser, salt byte, logger *slog.Logger) (*lease, error) {
	logged := false
	for {
		h, holder, err := l.acquire(ctx, salt)
		if err != nil {
			return nil, err
		}
		if h != nil {
			return h, nil
		}
		if !logged {
			logger.Info("delete waits for the compaction lease of a salt", "salt", salt, "owner", holder.Owner,
				"until", time.UnixMilli(holder.Expiry).UTC())
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the compaction lease of salt %d: %w", salt, context.Cause(ctx))
		case <-time.After(l.keepTick()):
		}
	}
}

// deleteBatches runs deleteRows over keys in batches of Options.BatchRows,
// reading again the rows whose check-and-puts failed.
func (c *Compactor) deleteBatches(ctx context.Context, keys [][]byte, mint, maxt int64, resolutions []time.Duration,
	dry bool, seen map[uint64]bool, progress func(DeleteStats)) (DeleteStats, error) {
	var total DeleteStats
	for start := 0; start < len(keys); start += c.opts.BatchRows {
		batch := keys[start:min(start+c.opts.BatchRows, len(keys))]
		for attempt := 1; len(batch) > 0; attempt++ {
			if attempt > maxDeleteAttempts {
				return total, fmt.Errorf("%d rows changed under each of %d attempts to rewrite them, the first %q",
					len(batch), maxDeleteAttempts, batch[0])
			}
			st, again, err := c.deleteRows(ctx, batch, mint, maxt, resolutions, dry, seen)
			total.add(st)
			if err != nil {
				return total, err
			}
			total.Retries += len(again)
			batch = again
		}
		progress(total)
	}
	return total, nil
}

// rowDelete is what deleting [mint, maxt] from one data row takes.
type rowDelete struct {
	// samples is how many of the row's samples lie in the range; 0: nothing
	// to do.
	samples int
	// chunks are the check-and-puts of the row's chunk cells holding deleted
	// samples; rollups those of its rollup cells.
	chunks, rollups []casOp
	// deletes are the column deletes of the row's raw cells in the range.
	deletes []kv.Mutation
}

// deleteRows deletes [mint, maxt] from one batch of rows: the steps of the
// comment above DeleteOptions. again are the rows to read and rewrite again
// (a check-and-put failed). seen are the series counted in DeleteStats.Series
// so far, which it adds to.
func (c *Compactor) deleteRows(ctx context.Context, keys [][]byte, mint, maxt int64, resolutions []time.Duration,
	dry bool, seen map[uint64]bool) (st DeleteStats, again [][]byte, err error) {
	current, _, err := c.readRollupCells(ctx, keys, resolutions)
	if err != nil {
		return st, nil, err
	}
	rows, err := c.st.GetRows(ctx, schema.TableData, keys, kv.Families(schema.FamilyChunk, schema.FamilyRaw))
	if err != nil {
		return st, nil, fmt.Errorf("read %d rows: %w", len(keys), err)
	}
	work := make([]rowDelete, len(rows))
	var rollups []casOp
	for i, row := range rows {
		if work[i], err = c.prepareDelete(i, row, mint, maxt, resolutions, current); err != nil {
			return st, nil, err
		}
		rollups = append(rollups, work[i].rollups...)
	}
	exemplars, err := c.exemplarDeletes(ctx, keys, mint, maxt)
	if err != nil {
		return st, nil, err
	}
	count := func(key []byte) {
		if id, _, err := schema.ParseDataRowTail(key); err == nil && !seen[id] {
			seen[id] = true
			st.Series++
		}
	}
	if dry {
		for i, w := range work {
			if w.samples > 0 {
				count(keys[i])
				st.Rows++
				st.Samples += w.samples
				st.RawCells += len(w.deletes)
				st.Chunks += len(w.chunks)
				st.RollupCells += len(w.rollups)
			}
		}
		st.Exemplars = len(exemplars)
		return st, nil, nil
	}

	failed := make([]bool, len(rows))
	if len(rollups) > 0 {
		if _, err := c.checkAndPutAll(ctx, rollups, failed); err != nil {
			return st, nil, fmt.Errorf("rewrite %d rollup cells: %w", len(rollups), err)
		}
		if err := c.step("rollups rewritten"); err != nil {
			return st, nil, err
		}
	}
	var chunks []casOp
	for i := range work {
		if !failed[i] {
			chunks = append(chunks, work[i].chunks...)
		}
	}
	if len(chunks) > 0 {
		if _, err := c.checkAndPutAll(ctx, chunks, failed); err != nil {
			return st, nil, fmt.Errorf("rewrite %d chunk cells: %w", len(chunks), err)
		}
		if err := c.step("chunks rewritten"); err != nil {
			return st, nil, err
		}
	}
	var deletes []kv.Mutation
	for i, w := range work {
		if failed[i] {
			again = append(again, keys[i])
			continue
		}
		if w.samples == 0 {
			continue
		}
		deletes = append(deletes, w.deletes...)
		count(keys[i])
		st.Rows++
		st.Samples += w.samples
		st.RawCells += len(w.deletes)
		st.Chunks += len(w.chunks)
		st.RollupCells += len(w.rollups)
	}
	// A batch that did not finish counts nothing: the next run does its
	// writes again.
	if err := kv.ApplyBatches(ctx, c.st, schema.TableData, deletes, c.opts.Apply); err != nil {
		return DeleteStats{}, nil, fmt.Errorf("delete %d raw cells: %w", len(deletes), err)
	}
	if err := kv.ApplyBatches(ctx, c.st, schema.TableExemplars, exemplars, c.opts.Apply); err != nil {
		return DeleteStats{}, nil, fmt.Errorf("delete %d exemplars: %w", len(exemplars), err)
	}
	st.Exemplars = len(exemplars)
	if err := c.step("raw deleted"); err != nil {
		return st, nil, err
	}
	return st, again, nil
}

// prepareDelete returns what deleting [mint, maxt] from row (the i-th of its
// batch) takes, given the rollup cells current (readRollupCells) of the
// resolutions.
func (c *Compactor) prepareDelete(i int, row kv.Row, mint, maxt int64, resolutions []time.Duration,
	current []map[string][]byte) (rowDelete, error) {
	width := c.settings.BucketWidth
	rs, err := cellenc.DecodeDataRow(row, width, 0, kv.MaxTimestamp)
	if err != nil {
		return rowDelete{}, fmt.Errorf("decode row %q: %w", row.Key, err)
	}
	var w rowDelete
	keepS := slices.DeleteFunc(slices.Clone(rs.Samples), func(s cellenc.Sample) bool { return s.T >= mint && s.T <= maxt })
	keepH := slices.DeleteFunc(slices.Clone(rs.Histograms), func(h cellenc.HistogramSample) bool { return h.T >= mint && h.T <= maxt })
	w.samples = len(rs.Samples) - len(keepS) + len(rs.Histograms) - len(keepH)
	if w.samples == 0 {
		return w, nil
	}
	var chunkCells []kv.Cell
	for _, cell := range row.Cells {
		switch cell.Family {
		case schema.FamilyRaw:
			t, err := cellenc.RawCellTime(cell, rs.BucketStart, width)
			if err != nil {
				return rowDelete{}, fmt.Errorf("row %q: %w", row.Key, err)
			}
			if t >= mint && t <= maxt {
				w.deletes = append(w.deletes, kv.DeleteColumn(row.Key, schema.FamilyRaw, cell.Qualifier, cell.Timestamp))
			}
		case schema.FamilyChunk:
			chunkCells = append(chunkCells, cell)
		}
	}
	for _, cell := range chunkCells {
		put, ok, err := chunkWithout(row.Key, cell, width, mint, maxt)
		if err != nil {
			return rowDelete{}, err
		}
		if ok {
			w.chunks = append(w.chunks, casOp{row: i, table: schema.TableData, put: put, expected: cell.Value})
		}
	}
	for r, res := range resolutions {
		put := voidRollupPut(row.Key, rs.BucketStart, width)
		cur, ok := current[r][string(put.Row)+"\x00"+string(put.Qualifier)]
		if !ok || cellenc.IsVoidRollupValue(cur) {
			// No cell (the bucket was not rolled up: readers summarise it
			// from its data row) or a void one: nothing summarises the
			// deleted samples.
			continue
		}
		if r < len(c.opts.Rollups) {
			if p, ok := rollupPut(row.Key, rs.BucketStart, width, res, keepS, keepH); ok {
				put = p
			}
		}
		w.rollups = append(w.rollups, casOp{row: i, table: schema.RollupTable(res), put: put, expected: cur})
	}
	return w, nil
}

// chunkWithout returns the put that rewrites chunk cell cell of the data row
// key without its samples in [mint, maxt]; ok is false when it holds none
// there. A cell left with no sample is rewritten with an empty value, which
// readers take as no samples (cellenc.DecodeDataRow) and compaction as an
// absent cell (a check-and-put expecting nothing matches it).
func chunkWithout(key []byte, cell kv.Cell, width time.Duration, mint, maxt int64) (kv.Mutation, bool, error) {
	if len(cell.Value) == 0 {
		return kv.Mutation{}, false, nil
	}
	rs, err := cellenc.DecodeDataRow(kv.Row{Key: key, Cells: []kv.Cell{cell}}, width, 0, kv.MaxTimestamp)
	if err != nil {
		return kv.Mutation{}, false, fmt.Errorf("decode the chunk of row %q: %w", key, err)
	}
	keepS := slices.DeleteFunc(slices.Clone(rs.Samples), func(s cellenc.Sample) bool { return s.T >= mint && s.T <= maxt })
	keepH := slices.DeleteFunc(slices.Clone(rs.Histograms), func(h cellenc.HistogramSample) bool { return h.T >= mint && h.T <= maxt })
	if len(keepS) == len(rs.Samples) && len(keepH) == len(rs.Histograms) {
		return kv.Mutation{}, false, nil
	}
	if len(keepS)+len(keepH) == 0 {
		return kv.Put(key, schema.FamilyChunk, cell.Qualifier, cell.Timestamp, []byte{}), true, nil
	}
	nc, err := cellenc.BucketCell(keepS, keepH, rs.BucketStart, width)
	if err != nil {
		return kv.Mutation{}, false, fmt.Errorf("rewrite the chunk of row %q: %w", key, err)
	}
	return kv.Put(key, nc.Family, cell.Qualifier, cell.Timestamp, nc.Value), true, nil
}

// exemplarDeletes returns the column deletes of the exemplars of the data rows
// keys (the exemplar table's rows have the data rows' keys) whose timestamps
// lie in [mint, maxt]: an exemplar's cell timestamp is its own.
func (c *Compactor) exemplarDeletes(ctx context.Context, keys [][]byte, mint, maxt int64) ([]kv.Mutation, error) {
	rows, err := c.st.GetRows(ctx, schema.TableExemplars, keys, kv.Families(schema.FamilyExemplars), kv.TimeRange(mint, maxt+1))
	if err != nil {
		return nil, fmt.Errorf("read the exemplars of %d rows: %w", len(keys), err)
	}
	var out []kv.Mutation
	for _, row := range rows {
		for _, cell := range row.Cells {
			if cell.Timestamp >= mint && cell.Timestamp <= maxt {
				out = append(out, kv.DeleteColumn(row.Key, schema.FamilyExemplars, cell.Qualifier, cell.Timestamp))
			}
		}
	}
	return out, nil
}
