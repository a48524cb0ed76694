package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// sample is one float sample: a timestamp in ms and a value, bit-exact.
type sample struct {
	t int64
	v float64
}

// bucketSamples are the samples of one data row (one bucket of one series),
// ascending, and whether they came only from stored chunks, unchanged.
//
// A row of float samples without start timestamps (the common row) fills
// samples only: 16 bytes a sample, no interface, no allocation per sample.
// Start timestamps and native histograms go beside it, so that only the rows
// that hold them pay for them: sts, when not nil, holds the start timestamp of
// each of samples (same length, 0 unknown), and histograms the row's
// histogram samples (ascending, none at a timestamp of samples).
type bucketSamples struct {
	bucketStart int64
	samples     []sample
	sts         []int64
	histograms  []cellenc.HistogramSample
	// chunks are the chunks of the row's only chunk cell when they hold
	// exactly the row's samples in the read's [mint, maxt] (no raw cell, the
	// cell wholly within the range: cellenc.RowSamples.Chunks), oldest first,
	// disjoint; ChunkQuerier hands them out as they are.
	chunks []chunkenc.Chunk
}

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
func (r *Reader) readSeries(ctx context.Context, s *series, mint, maxt int64) ([]bucketSamples, error) {
	width := r.settings.BucketWidth
	start, stop := schema.SeriesRowRange(s.salt, s.host, s.metric, s.id, schema.BucketStart(mint, width), schema.BucketStart(maxt, width))
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyChunk, schema.FamilyRaw), r.readRange(mint, maxt))
	defer sc.Close()
	var rows []bucketSamples
	for sc.Next() {
		b, err := r.decodeRow(ctx, sc.Row(), mint, maxt)
		if err != nil {
			return nil, fmt.Errorf("query: read series %d (%s): %w", s.id, s.labels, err)
		}
		if b.len() > 0 {
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
// cell winning over a chunk's sample of the same timestamp.
//
// A row of raw cells only (every row until compaction seals its bucket) is
// decoded here, cell by cell with cellenc.DecodeRawCell, straight into the
// samples handed out: the samples are DecodeDataRow's (the raw cells in
// [mint, maxt], in qualifier order, which is time order), without its
// intermediate slice. The row's cells count in the ReadStats of ctx.
func (r *Reader) decodeRow(ctx context.Context, row kv.Row, mint, maxt int64) (bucketSamples, error) {
	countDataRow(ctx, row)
	if b, ok, err := r.decodeRawRow(row, mint, maxt); ok || err != nil {
		return b, err
	}
	rs, err := cellenc.DecodeDataRow(row, r.settings.BucketWidth, mint, maxt)
	if err != nil {
		return bucketSamples{}, err
	}
	b := bucketSamples{bucketStart: rs.BucketStart, chunks: rs.Chunks, samples: make([]sample, len(rs.Samples)),
		histograms: rs.Histograms}
	for i, x := range rs.Samples {
		b.samples[i] = sample{t: x.T, v: x.V}
		if x.ST != 0 {
			b.setST(i, x.ST)
		}
	}
	return b, nil
}

// len is the number of samples of the row, of both kinds.
func (b *bucketSamples) len() int { return len(b.samples) + len(b.histograms) }

// setST records the start timestamp of samples[i], making sts when it is the
// row's first; samples must already hold i.
func (b *bucketSamples) setST(i int, st int64) {
	if b.sts == nil {
		b.sts = make([]int64, 0, cap(b.samples))
	}
	for len(b.sts) < len(b.samples) {
		b.sts = append(b.sts, 0)
	}
	b.sts[i] = st
}

// general reports whether the row needs the general iterator: it holds
// histograms or start timestamps.
func (b *bucketSamples) general() bool { return b.sts != nil || len(b.histograms) > 0 }

// clampRange clamps a Select's [mint, maxt] to the timestamps hbtsdb stores
// ([0, kv.MaxTimestamp]) and reports whether anything is left.
func clampRange(mint, maxt int64) (int64, int64, bool) {
	mint = max(mint, 0)
	maxt = min(maxt, kv.MaxTimestamp)
	return mint, maxt, maxt >= mint && maxt != math.MinInt64
}

// decodeRawRow decodes a row without chunk cells; ok is false when the row has
// a chunk cell (DecodeDataRow then merges them). A histogram cell
// (cellenc.ErrHistogramCell) goes to the row's histograms, a float's start
// timestamp to its sts: the float cell without one costs what it always did.
func (r *Reader) decodeRawRow(row kv.Row, mint, maxt int64) (b bucketSamples, ok bool, err error) {
	n := 0
	for i := range row.Cells {
		switch row.Cells[i].Family {
		case schema.FamilyChunk:
			return b, false, nil
		case schema.FamilyRaw:
			n++
		}
	}
	_, b.bucketStart, err = schema.ParseDataRowTail(row.Key)
	if err != nil {
		return b, true, err
	}
	if n == 0 {
		return b, true, nil
	}
	b.samples = make([]sample, 0, n)
	for i := range row.Cells {
		c := &row.Cells[i]
		if c.Family != schema.FamilyRaw {
			continue
		}
		x, err := cellenc.DecodeRawCell(*c, b.bucketStart, r.settings.BucketWidth)
		if err != nil {
			if errors.Is(err, cellenc.ErrHistogramCell) {
				if err := b.appendHistogramCell(c, mint, maxt, r.settings.BucketWidth); err != nil {
					return b, true, err
				}
				continue
			}
			return b, true, err
		}
		if x.T >= mint && x.T <= maxt {
			b.samples = append(b.samples, sample{t: x.T, v: x.V})
			if x.ST != 0 || b.sts != nil {
				b.setST(len(b.samples)-1, x.ST)
			}
		}
	}
	return b, true, nil
}

// appendHistogramCell decodes a raw histogram cell of the row into
// b.histograms when it lies in [mint, maxt].
func (b *bucketSamples) appendHistogramCell(c *kv.Cell, mint, maxt int64, width time.Duration) error {
	h, err := cellenc.DecodeRawHistogramCell(*c, b.bucketStart, width)
	if err != nil {
		return err
	}
	if h.T >= mint && h.T <= maxt {
		b.histograms = append(b.histograms, h)
	}
	return nil
}
