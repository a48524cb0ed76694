package query

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// readRange returns the time range of a data read of [mint, maxt] (both >= 0):
// chunk cells carry their newest sample's timestamp, so cells up to the end of
// maxt's bucket must pass; raw cells after maxt are cut by the decoder.
func (r *Reader) readRange(mint, maxt int64) kv.ReadOption {
	until := schema.BucketStart(maxt, r.settings.BucketWidth) + r.settings.BucketWidth.Milliseconds()
	if until <= 0 || until > kv.MaxTimestamp {
		until = kv.MaxTimestamp + 1
	}
	return kv.TimeRange(mint, until)
}

// readSeries reads the rows of s overlapping [mint, maxt] (inclusive, ms,
// mint >= 0) and returns their samples, oldest bucket first. One scan; rows
// come newest first and are reversed.
func (r *Reader) readSeries(ctx context.Context, s *series, mint, maxt int64) ([]cellenc.RowSamples, error) {
	width := r.settings.BucketWidth
	start, stop := schema.SeriesRowRange(s.salt, s.host, s.metric, s.id, schema.BucketStart(mint, width), schema.BucketStart(maxt, width))
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyChunk, schema.FamilyRaw), r.readRange(mint, maxt))
	defer sc.Close()
	var rows []cellenc.RowSamples
	for sc.Next() {
		b, err := r.decodeRow(ctx, sc.Row(), mint, maxt)
		if err != nil {
			return nil, fmt.Errorf("query: read series %d (%s): %w", s.id, s.labels, err)
		}
		if b.Len() > 0 {
			rows = append(rows, b)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("query: read series %d (%s): %w", s.id, s.labels, err)
	}
	slices.Reverse(rows)
	return rows, nil
}

// decodeRow decodes one data row into its samples in [mint, maxt], ascending,
// one per timestamp, through cellenc.DecodeDataRow — the one decoder of data rows,
// shared by every read path and by compaction: chunk and raw cells merged, a raw
// cell winning over a chunk's sample of the same timestamp. The row's cells count
// in the ReadStats of ctx.
func (r *Reader) decodeRow(ctx context.Context, row kv.Row, mint, maxt int64) (cellenc.RowSamples, error) {
	countDataRow(ctx, row)
	return cellenc.DecodeDataRow(row, r.settings.BucketWidth, mint, maxt)
}

// general reports whether a row needs the general iterator: it holds
// histograms or start timestamps.
func general(b *cellenc.RowSamples) bool { return len(b.Histograms) > 0 || b.HasStartTimestamps() }

// clampRange clamps a Select's [mint, maxt] to the timestamps hbtsdb stores
// ([0, kv.MaxTimestamp]) and reports whether anything is left.
func clampRange(mint, maxt int64) (int64, int64, bool) {
	mint = max(mint, 0)
	maxt = min(maxt, kv.MaxTimestamp)
	return mint, maxt, maxt >= mint && maxt != math.MinInt64
}
