package query

import (
	"context"
	"sync/atomic"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// ReadStats counts the cells the Selects of one query read, by where they
// came from: the data table's raw family, its chunk family, and the rollup
// tables. They say which tables answered a query, not only which plan was
// chosen: a query "served from a rollup" that read no rollup cell was not.
// The counts are safe for concurrent use (a query's Selects read in
// parallel).
type ReadStats struct {
	raw, chunk, rollup, funcSeries atomic.Int64
}

// RawCells is the number of raw cells (family r of the data table) read.
func (s *ReadStats) RawCells() int64 { return s.raw.Load() }

// ChunkCells is the number of chunk cells (family c of the data table) read.
func (s *ReadStats) ChunkCells() int64 { return s.chunk.Load() }

// RollupCells is the number of rollup cells (one per series and data bucket,
// of any resolution) read and used: a cell passed over for the data row
// (its bucket has raw cells) does not count.
func (s *ReadStats) RollupCells() int64 { return s.rollup.Load() }

// FuncSeries is the number of series whose range function values the store
// computed from rollup windows (rollupfunc.go) for the engine.
func (s *ReadStats) FuncSeries() int64 { return s.funcSeries.Load() }

type readStatsKey struct{}

// WithReadStats returns ctx carrying a new ReadStats, which every read of the
// Readers' Selects under ctx adds to, and that ReadStats.
func WithReadStats(ctx context.Context) (context.Context, *ReadStats) {
	s := &ReadStats{}
	return context.WithValue(ctx, readStatsKey{}, s), s
}

// ReadStatsFrom returns the ReadStats ctx carries, or nil.
func ReadStatsFrom(ctx context.Context) *ReadStats {
	s, _ := ctx.Value(readStatsKey{}).(*ReadStats)
	return s
}

// countDataRow adds the cells of a data row to the ReadStats of ctx, if any.
func countDataRow(ctx context.Context, row kv.Row) {
	s := ReadStatsFrom(ctx)
	if s == nil {
		return
	}
	var raw, chunk int64
	for i := range row.Cells {
		switch row.Cells[i].Family {
		case schema.FamilyRaw:
			raw++
		case schema.FamilyChunk:
			chunk++
		}
	}
	s.raw.Add(raw)
	s.chunk.Add(chunk)
}

// countRollupCells adds n rollup cells to the ReadStats of ctx, if any.
func countRollupCells(ctx context.Context, n int) {
	if s := ReadStatsFrom(ctx); s != nil {
		s.rollup.Add(int64(n))
	}
}

// add adds the counts of o to s.
func (s *ReadStats) add(o *ReadStats) {
	s.raw.Add(o.raw.Load())
	s.chunk.Add(o.chunk.Load())
	s.rollup.Add(o.rollup.Load())
	s.funcSeries.Add(o.funcSeries.Load())
}
