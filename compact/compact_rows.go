package compact

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// compactRows compacts one batch of rows (sealed buckets), in this order (the
// package doc says why):
//
//  1. read the rollup cells the batch will rewrite (what each resolution's
//     cell of each bucket holds now);
//  2. read the data rows: chunk and raw cells;
//  3. check-and-put each rollup cell, expecting what step 1 read — a void one
//     (cellenc.AppendVoidRollupValue) in the tables of the resolutions the
//     store has and this compactor does not write (Compactor.resolutions);
//  4. check-and-put each chunk cell, expecting what step 2 read, for the rows
//     whose rollup cells were all written;
//  5. delete the raw cells read, for the rows whose cells were all written:
//     one family delete per row below the bucket's last millisecond, and a
//     column delete per cell read at that millisecond (schema/late.go);
//  6. delete the pending marks read, for the same rows and the rows with no
//     raw cell left.
//
// Steps 5 and 6 are each Applies of at most Options.Apply.MaxBatch
// mutations, Options.Apply.Concurrency at once (kv.ApplyBatches).
//
// A row whose check-and-put failed (another compactor rewrote a cell since
// this one read it) is left whole, its marks too, for the next pass.
//
// resolutions are those of Options.Rollups, then the retired ones
// (Compactor.resolutions).
func (c *Compactor) compactRows(ctx context.Context, targets []target, cutoff int64, resolutions []time.Duration) (Stats, error) {
	var st Stats
	keys := make([][]byte, len(targets))
	for i, t := range targets {
		keys[i] = t.row
		st.CellsRead += len(t.marks)
	}
	current, n, err := c.readRollupCells(ctx, keys, resolutions)
	if err != nil {
		return st, err
	}
	st.CellsRead += n
	rows, err := c.st.GetRows(ctx, schema.TableData, keys, kv.Families(schema.FamilyChunk, schema.FamilyRaw))
	if err != nil {
		return st, fmt.Errorf("read %d rows: %w", len(keys), err)
	}
	st.RowsRead = len(rows)
	work := make([]rowWork, len(rows))
	for i, row := range rows {
		st.CellsRead += len(row.Cells)
		if work[i], err = c.prepareRow(row, cutoff); err != nil {
			return st, err
		}
	}

	// Step 3: the rollup cells.
	failed := make([]bool, len(rows))
	var rollups []casOp
	for i := range work {
		p := &work[i]
		if !p.sealed {
			continue
		}
		for r, res := range resolutions {
			var put kv.Mutation
			if r < len(c.opts.Rollups) {
				var ok bool
				if put, ok = rollupPut(rows[i].Key, p.bucketStart, c.settings.BucketWidth, res, p.samples, p.histograms); !ok {
					continue
				}
			} else {
				put = voidRollupPut(rows[i].Key, p.bucketStart, c.settings.BucketWidth)
			}
			rollups = append(rollups, casOp{row: i, table: schema.RollupTable(res), put: put,
				expected: current[r][string(put.Row)+"\x00"+string(put.Qualifier)]})
		}
	}
	if len(rollups) > 0 {
		written, err := c.checkAndPutAll(ctx, rollups, failed)
		if err != nil {
			return st.reads(), fmt.Errorf("write %d rollup cells: %w", len(rollups), err)
		}
		st.RollupCells += written
		if err := c.step("rollups written"); err != nil {
			return st.reads(), err
		}
	}

	// Step 4: the chunk cells.
	var chunks []casOp
	for i := range work {
		if p := &work[i]; p.chunk != nil && !failed[i] {
			chunks = append(chunks, casOp{row: i, table: schema.TableData, put: *p.chunk, expected: p.chunkExpected})
		}
	}
	if len(chunks) > 0 {
		if _, err := c.checkAndPutAll(ctx, chunks, failed); err != nil {
			return st.reads(), fmt.Errorf("write %d chunks: %w", len(chunks), err)
		}
		if err := c.step("chunks written"); err != nil {
			return st.reads(), err
		}
	}

	// Steps 5 and 6: the raw cells and the marks.
	var deletes, unmark []kv.Mutation
	for i := range work {
		p := &work[i]
		switch {
		case failed[i]:
			st.Conflicts++
			continue
		case p.chunk != nil:
			deletes = append(deletes, p.deletes...)
			st.Rows++
			st.Samples += len(p.samples) + len(p.histograms)
			st.RawCells += p.rawCells
		case len(p.samples)+len(p.histograms) > 0:
			st.Skipped++
		}
		t := targets[i]
		for _, q := range t.marks {
			unmark = append(unmark, kv.DeleteColumn(t.markRow, schema.FamilyPending, q, schema.PendingMarkTimestamp(p.bucketStart, c.settings.BucketWidth)))
		}
	}
	// The marks go once the raw cells they mark are gone (schema/pending.go):
	// two rounds of Applies, one after the other.
	if err := kv.ApplyBatches(ctx, c.st, schema.TableData, deletes, c.opts.Apply); err != nil {
		return st.reads(), fmt.Errorf("delete the raw cells of %d rows: %w", st.Rows, err)
	}
	if err := kv.ApplyBatches(ctx, c.st, schema.TablePending, unmark, c.opts.Apply); err != nil {
		return st.reads(), fmt.Errorf("delete %d pending marks: %w", len(unmark), err)
	}
	c.batchDone(st)
	if len(deletes) > 0 {
		if err := c.step("raw deleted"); err != nil {
			return st, err
		}
	}
	return st, nil
}

// reads is st with only what was read: what a batch that did not finish
// counts (its writes are done again by the next pass).
func (st Stats) reads() Stats { return Stats{RowsRead: st.RowsRead, CellsRead: st.CellsRead} }

// casOp is one check-and-put of a batch, for the batch's row at index row.
type casOp struct {
	row      int
	table    string
	put      kv.Mutation
	expected []byte
}

// casParallelism is how many check-and-puts of a batch run at once: enough
// round trips in flight to hide HBase's latency, few enough that a batch does
// not crowd out the writes of ingest.
const casParallelism = 32

// checkAndPutAll runs the ops of the rows not failed yet, casParallelism at a
// time, sets failed[op.row] for every op whose cell no longer held
// op.expected, and returns how many it wrote. A store error ends it.
func (c *Compactor) checkAndPutAll(ctx context.Context, ops []casOp, failed []bool) (int, error) {
	won := make([]bool, len(ops))
	ran := make([]bool, len(ops))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(casParallelism)
	for i := range ops {
		op := &ops[i]
		if failed[op.row] {
			continue
		}
		ran[i] = true
		g.Go(func() error {
			var err error
			won[i], err = c.st.CheckAndPut(gctx, op.table, op.expected, op.put)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	written := 0
	for i := range ops {
		switch {
		case won[i]:
			written++
		case ran[i]:
			failed[ops[i].row] = true
		}
	}
	return written, nil
}

// readRollupCells reads, for every resolution of resolutions, what the rollup
// cells of the buckets of the data rows keys hold now: per resolution, a map
// from rollup row key + 0x00 + qualifier to value (absent: no cell). It reads
// only the columns of those buckets (one read per resolution) and returns how
// many cells it read.
func (c *Compactor) readRollupCells(ctx context.Context, keys [][]byte, resolutions []time.Duration) ([]map[string][]byte, int, error) {
	out := make([]map[string][]byte, len(resolutions))
	if len(resolutions) == 0 || len(keys) == 0 {
		return out, 0, nil
	}
	var (
		rowKeys  [][]byte
		seen     = make(map[string]bool, len(keys))
		min, max []byte
	)
	for _, k := range keys {
		_, bs, err := schema.ParseDataRowTail(k)
		if err != nil {
			return nil, 0, fmt.Errorf("rollup cells of row %q: %w", k, err)
		}
		rk := rollupRowKey(k, bs)
		if !seen[string(rk)] {
			seen[string(rk)] = true
			rowKeys = append(rowKeys, rk)
		}
		q := schema.AppendRollupQualifier(nil, bs)
		if min == nil || bytes.Compare(q, min) < 0 {
			min = q
		}
		if max == nil || bytes.Compare(q, max) > 0 {
			max = q
		}
	}
	cols := kv.ColumnRangeFilter{Min: min, MinInclusive: true, Max: max, MaxInclusive: true}
	n := 0
	for r, res := range resolutions {
		table := schema.RollupTable(res)
		rows, err := c.st.GetRows(ctx, table, rowKeys, kv.Families(schema.FamilyRollup), kv.WithFilter(cols))
		if err != nil {
			return nil, n, fmt.Errorf("read the rollup cells of %d rows from %s: %w", len(rowKeys), table, err)
		}
		m := make(map[string][]byte, len(keys))
		for _, row := range rows {
			for _, cell := range row.Cells {
				m[string(row.Key)+"\x00"+string(cell.Qualifier)] = cell.Value
				n++
			}
		}
		out[r] = m
	}
	return out, n, nil
}

// rowWork is what compacting one row takes.
type rowWork struct {
	bucketStart int64
	// sealed is whether the row is to be compacted: it has raw cells and its
	// bucket is sealed.
	sealed bool
	// samples and histograms are the bucket's samples of each kind (chunk and
	// raw cells merged) when sealed.
	samples    []cellenc.Sample
	histograms []cellenc.HistogramSample
	// chunk is the put of the bucket's chunk, nil when the row is not to be
	// compacted or stays raw (more samples than a chunk holds);
	// chunkExpected is what the chunk cell held when read (nil: absent).
	chunk         *kv.Mutation
	chunkExpected []byte
	// deletes delete the raw cells read: one family delete up to the bucket's
	// last millisecond - 1 when any was older, and a column delete of each
	// cell at the last millisecond; rawCells is how many cells they delete.
	deletes  []kv.Mutation
	rawCells int
}

// prepareRow returns the chunk write and the raw deletes that compact one row,
// and the samples its chunk cell (and its rollup cells) hold, floats and
// histograms, with their start timestamps (cellenc.BucketCell). A row without raw
// cells of a sealed bucket (compacted meanwhile, or not sealed) gives a plan
// with no samples; a row with more samples than a chunk holds, or whose samples
// cellenc.BucketCell refuses, gives its samples but no chunk, and stays raw.
func (c *Compactor) prepareRow(row kv.Row, cutoff int64) (rowWork, error) {
	width := c.settings.BucketWidth
	rs, err := cellenc.DecodeDataRow(row, width, 0, kv.MaxTimestamp)
	if err != nil {
		return rowWork{}, fmt.Errorf("decode row %q: %w", row.Key, err)
	}
	p := rowWork{bucketStart: rs.BucketStart}
	if rs.RawCells == 0 || rs.BucketStart+width.Milliseconds() > cutoff {
		return p, nil
	}
	p.sealed, p.samples, p.histograms = true, rs.Samples, rs.Histograms
	if n := len(rs.Samples) + len(rs.Histograms); n > cellenc.MaxChunkSamples {
		c.opts.Logger.Warn("bucket left raw: more samples than a chunk holds", "row", fmt.Sprintf("%q", row.Key),
			"samples", n, "max", cellenc.MaxChunkSamples)
		return p, nil
	}
	cell, err := cellenc.BucketCell(rs.Samples, rs.Histograms, rs.BucketStart, width)
	if err != nil {
		// Not expected of samples DecodeDataRow returned; should Prometheus'
		// histogram appender refuse one, the bucket stays raw (and readable)
		// rather than stopping every later pass over the salt.
		c.opts.Logger.Warn("bucket left raw: its samples do not make a chunk", "row", fmt.Sprintf("%q", row.Key), "err", err)
		return p, nil
	}
	put := kv.Put(row.Key, cell.Family, cell.Qualifier, cell.Timestamp, cell.Value)
	p.chunk = &put
	last := schema.LateCellTimestamp(rs.BucketStart, width)
	older := false
	for _, rc := range row.Cells {
		switch {
		case rc.Family == schema.FamilyChunk && bytes.Equal(rc.Qualifier, cell.Qualifier):
			p.chunkExpected = rc.Value
		case rc.Family != schema.FamilyRaw:
		case rc.Timestamp >= last:
			p.deletes = append(p.deletes, kv.DeleteColumn(row.Key, schema.FamilyRaw, rc.Qualifier, rc.Timestamp))
			p.rawCells++
		default:
			older = true
			p.rawCells++
		}
	}
	if older {
		// Every raw cell below the bucket's last millisecond is on time, and
		// this read has them all: no writer puts one any more (schema/late.go).
		p.deletes = append(p.deletes, kv.DeleteFamily(row.Key, schema.FamilyRaw, last-1))
	}
	return p, nil
}

// rollupPut returns the put of the rollup cell of resolution res of the data
// bucket of dataKey, starting at bucketStart, holding samples (cellenc/rollupcell.go; its row and qualifier schema/rollup.go):
// row = the data row key with the bucket start replaced by its UTC day,
// qualifier = the bucket's offset in that day, value = the bucket's windows,
// timestamp = the bucket's last millisecond, as the chunk cell's, so that
// rolling the bucket up again rewrites the cell in place. ok is false when
// there is nothing to roll up.
func rollupPut(dataKey []byte, bucketStart int64, width, res time.Duration, samples []cellenc.Sample, histograms []cellenc.HistogramSample) (kv.Mutation, bool) {
	windows := cellenc.AggregateWindows(samples, histograms, res)
	if len(windows) == 0 {
		return kv.Mutation{}, false
	}
	return kv.Put(rollupRowKey(dataKey, bucketStart), schema.FamilyRollup, schema.AppendRollupQualifier(nil, bucketStart),
		bucketStart+width.Milliseconds()-1, cellenc.EncodeRollupWindows(nil, bucketStart, res, windows)), true
}

// voidRollupPut returns the put of a void rollup cell (cellenc.AppendVoidRollupValue)
// of the data bucket of dataKey starting at bucketStart: the column and
// timestamp rollupPut writes, a fresh nonce.
func voidRollupPut(dataKey []byte, bucketStart int64, width time.Duration) kv.Mutation {
	return kv.Put(rollupRowKey(dataKey, bucketStart), schema.FamilyRollup, schema.AppendRollupQualifier(nil, bucketStart),
		bucketStart+width.Milliseconds()-1, cellenc.AppendVoidRollupValue(nil, rand.Uint64()))
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
