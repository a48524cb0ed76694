package cellenc

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// A data row's samples: its chunk cells (family schema.FamilyChunk, chunk.go) and raw
// cells (family schema.FamilyRaw, raw.go), merged. DecodeDataRow is the one decoder of
// data rows: every read path (query's Select, ChunkQuerier, Samples, Last) and the
// compaction that rewrites rows read through it, so that they agree on what a row
// holds. BucketCell is its inverse for chunks.
//
// Invariants:
//
//   - The samples of a row are ascending, one per timestamp.
//   - A row holds one sample per timestamp across both kinds, float and
//     histogram.
//   - A raw sample wins over a chunk's sample of the same timestamp, whatever
//     their kinds: it is a late (or re-sent) sample written after the bucket was
//     compacted.
//   - Chunks of one row may overlap in time (a bucket compacted again merges them
//     into new chunks, but a reader may meet both during the rewrite); for equal
//     timestamps in two chunk cells, the cell that comes later in the row wins,
//     whatever the kinds. Within one cell, chunks are ascending and disjoint
//     (chunk.go).

// RowSamples are the samples DecodeDataRow found in one data row: the one
// decoded-row type, which query reads and serves from and compaction rewrites
// from. Query also builds rows of samples read from rollup windows (BucketStart
// -1 then).
type RowSamples struct {
	// BucketStart is the row's bucket start (ms).
	BucketStart int64
	// Samples are the row's float samples in [mint, maxt], ascending, one per
	// timestamp.
	Samples []Sample
	// Histograms are the row's native histogram samples in [mint, maxt],
	// ascending, one per timestamp, none at a timestamp of Samples (a series
	// holds one sample per timestamp, of either kind).
	Histograms []HistogramSample
	// Chunks is set when the row's samples in [mint, maxt] are exactly those of
	// its only chunk cell (no raw sample in the range, the cell wholly within
	// the range, and all its chunks Prometheus chunks, not decimal ones): the
	// cell's chunks, oldest first, ascending and disjoint in time, which a
	// reader that serves chunks (remote read) may hand out unchanged. They may
	// be of any chunkenc encoding (XOR, XOR2, histogram, float histogram, and
	// their ST forms).
	Chunks []chunkenc.Chunk
	// Chunk is Chunks[0] when Chunks holds exactly one chunk, else nil.
	Chunk chunkenc.Chunk
	// RawCells and ChunkCells count the row's cells of each family that were
	// decoded (raw cells outside [mint, maxt] included).
	RawCells, ChunkCells int
}

// DecodeDataRow decodes the chunk and raw cells of one data row into its samples
// in [mint, maxt] (inclusive, ms). Cells of other families are ignored. It fails,
// wrapping ErrMalformed, on a cell that does not decode or a raw cell whose
// timestamp is not its qualifier's.
func DecodeDataRow(row kv.Row, width time.Duration, mint, maxt int64) (RowSamples, error) {
	_, bucketStart, err := schema.ParseDataRowTail(row.Key)
	if err != nil {
		return RowSamples{}, err
	}
	out := RowSamples{BucketStart: bucketStart}
	var (
		// raw has room for every raw cell: a row of raw cells only (every row
		// until compaction seals its bucket) decodes into it, and it is the
		// row's Samples, without a copy.
		raw   = make([]Sample, 0, countRawCells(row))
		rawH  []HistogramSample
		cells ChunkCellSamples
		// ends[i] is where the samples of chunk cell i end in cells.Samples
		// and cells.Histograms.
		ends       [][2]int
		cut        bool // a chunk had samples outside [mint, maxt]
		prometheus = true
	)
	var (
		widthMs = width.Milliseconds()
		late    = schema.LateCellTimestamp(bucketStart, width)
	)
	for i := range row.Cells {
		c := &row.Cells[i]
		switch c.Family {
		case schema.FamilyRaw:
			out.RawCells++
			if t, v, ok := rawFloat(c, bucketStart, widthMs, late); ok {
				// The common cell, decoded inline; any other (a histogram,
				// a start timestamp, a malformed cell) as DecodeRawCell does.
				if t >= mint && t <= maxt {
					raw = append(raw, Sample{T: t, V: v})
				}
				continue
			}
			s, err := DecodeRawCell(*c, bucketStart, width)
			if errors.Is(err, ErrHistogramCell) {
				h, err := DecodeRawHistogramCell(*c, bucketStart, width)
				if err != nil {
					return out, err
				}
				if h.T >= mint && h.T <= maxt {
					rawH = append(rawH, h)
				}
				continue
			}
			if err != nil {
				return out, err
			}
			if s.T >= mint && s.T <= maxt {
				raw = append(raw, s)
			}
		case schema.FamilyChunk:
			out.ChunkCells++
			if len(c.Value) == 0 {
				// A bucket whose every chunked sample was deleted
				// (compact/delete.go): no samples.
				continue
			}
			n, nh, nc, total := len(cells.Samples), len(cells.Histograms), len(cells.Chunks), cells.Total
			if cells, err = DecodeChunkCellSamples(cells, c.Value, mint, maxt); err != nil {
				return out, fmt.Errorf("cellenc: chunk of bucket %d: %w", bucketStart, err)
			}
			ends = append(ends, [2]int{len(cells.Samples), len(cells.Histograms)})
			cut = cut || len(cells.Samples)-n+len(cells.Histograms)-nh != cells.Total-total
			for _, chk := range cells.Chunks[nc:] {
				prometheus = prometheus && chk != nil
			}
		}
	}
	fromChunks := cells.Samples
	switch {
	case len(ends) == 1 && len(raw) == 0 && len(rawH) == 0:
		// One chunk cell: its samples are ascending, one per timestamp.
		out.Samples, out.Histograms = cells.Samples, cells.Histograms
	case len(cells.Histograms) > 0 || len(rawH) > 0:
		out.Samples, out.Histograms = mergeKinds(cells, ends, raw, rawH)
	case len(fromChunks) == 0:
		out.Samples = raw
	case len(raw) == 0:
		if len(ends) > 1 {
			slices.SortStableFunc(fromChunks, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
			fromChunks = keepLast(fromChunks)
		}
		out.Samples = fromChunks
	default:
		out.Samples = mergeRaw(fromChunks, raw)
	}
	if len(ends) == 1 && prometheus && !cut && len(raw) == 0 && len(rawH) == 0 &&
		len(out.Samples)+len(out.Histograms) == cells.Total && cells.Total > 0 {
		out.Chunks = cells.Chunks
		if len(out.Chunks) == 1 {
			out.Chunk = out.Chunks[0]
		}
	}
	return out, nil
}

// rawFloat decodes raw cell c of the row at bucketStart as DecodeRawCell does
// when c holds a float sample without a start timestamp and is well formed
// (an offset below widthMs, its timestamp the sample's or late, the bucket's
// last millisecond); ok is false for every other cell, which DecodeRawCell
// then decodes or rejects.
func rawFloat(c *kv.Cell, bucketStart, widthMs, late int64) (t int64, v float64, ok bool) {
	if len(c.Qualifier) != schema.RawQualifierLen || len(c.Value) != RawValueLen {
		return 0, 0, false
	}
	off := int64(binary.BigEndian.Uint32(c.Qualifier))
	t = bucketStart + off
	if off >= widthMs || t != c.Timestamp && c.Timestamp != late {
		return 0, 0, false
	}
	return t, math.Float64frombits(binary.BigEndian.Uint64(c.Value)), true
}

// countRawCells is how many cells of row are raw cells.
func countRawCells(row kv.Row) int {
	n := 0
	for i := range row.Cells {
		if row.Cells[i].Family == schema.FamilyRaw {
			n++
		}
	}
	return n
}

// Len is the number of samples of the row, of both kinds.
func (r *RowSamples) Len() int { return len(r.Samples) + len(r.Histograms) }

// InTimeOrder yields the row's samples of both kinds in time order: (i, false)
// for Samples[i], (i, true) for Histograms[i]. It is the one merge of a row's
// floats and histograms by timestamp, each ascending and none at a timestamp of
// the other.
func (r *RowSamples) InTimeOrder() iter.Seq2[int, bool] {
	return func(yield func(int, bool) bool) {
		fs, hs := r.Samples, r.Histograms
		for i, j := 0, 0; i < len(fs) || j < len(hs); {
			if i < len(fs) && (j >= len(hs) || fs[i].T < hs[j].T) {
				if !yield(i, false) {
					return
				}
				i++
				continue
			}
			if !yield(j, true) {
				return
			}
			j++
		}
	}
}

// HasStartTimestamps reports whether one of the row's float samples has a
// start timestamp.
func (r *RowSamples) HasStartTimestamps() bool {
	for i := range r.Samples {
		if r.Samples[i].ST != 0 {
			return true
		}
	}
	return false
}

// mergeKinds merges the samples of chunk cells (cells, the samples of cell i
// ending at ends[i]) and raw cells into floats and histograms, one sample per
// timestamp across both kinds: a raw sample wins over a chunk's, a later chunk
// cell's over an earlier one's, whatever the kinds.
func mergeKinds(cells ChunkCellSamples, ends [][2]int, raw []Sample, rawH []HistogramSample) ([]Sample, []HistogramSample) {
	type entry struct {
		t     int64
		hist  bool
		i     int
		isRaw bool
	}
	es := make([]entry, 0, len(cells.Samples)+len(cells.Histograms)+len(raw)+len(rawH))
	f, h := 0, 0
	for _, e := range ends {
		for ; f < e[0]; f++ {
			es = append(es, entry{t: cells.Samples[f].T, i: f})
		}
		for ; h < e[1]; h++ {
			es = append(es, entry{t: cells.Histograms[h].T, hist: true, i: h})
		}
	}
	for i, s := range raw {
		es = append(es, entry{t: s.T, i: i, isRaw: true})
	}
	for i, s := range rawH {
		es = append(es, entry{t: s.T, hist: true, i: i, isRaw: true})
	}
	slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.t, b.t) })
	var (
		fs []Sample
		hs []HistogramSample
	)
	for k, e := range es {
		if k+1 < len(es) && es[k+1].t == e.t {
			continue // a later one of the same timestamp wins
		}
		switch {
		case e.hist && e.isRaw:
			hs = append(hs, rawH[e.i])
		case e.hist:
			hs = append(hs, cells.Histograms[e.i])
		case e.isRaw:
			fs = append(fs, raw[e.i])
		default:
			fs = append(fs, cells.Samples[e.i])
		}
	}
	return fs, hs
}

// ErrHistogramCell is DecodeRawCell's answer for a raw cell that holds a native
// histogram sample (histogram.go) rather than a float one: decode it with
// DecodeRawHistogramCell.
var ErrHistogramCell = errors.New("cellenc: raw cell holds a histogram sample")

// DecodeRawCell decodes one raw cell holding a float sample, of the row whose
// bucket starts at bucketStart (RawCellTime: on-time or late). A cell holding a
// histogram sample fails with ErrHistogramCell.
func DecodeRawCell(c kv.Cell, bucketStart int64, width time.Duration) (Sample, error) {
	t, err := RawCellTime(c, bucketStart, width)
	if err != nil {
		return Sample{}, err
	}
	if len(c.Value) == RawValueLen {
		return Sample{T: t, V: math.Float64frombits(binary.BigEndian.Uint64(c.Value))}, nil
	}
	if len(c.Value) >= minHistogramValueLen {
		return Sample{}, ErrHistogramCell
	}
	v, err := DecodeSampleValue(c.Value)
	if err != nil {
		return Sample{}, err
	}
	return Sample{T: t, V: v.F, ST: v.ST}, nil
}

// RawCellTime returns the sample timestamp of a raw cell of the row whose
// bucket starts at bucketStart: the bucket start plus its qualifier's offset.
// The cell's timestamp must be that (an on-time cell) or the bucket's last
// millisecond (a late cell, schema/late.go), else the error wraps ErrMalformed.
func RawCellTime(c kv.Cell, bucketStart int64, width time.Duration) (int64, error) {
	off, err := schema.DecodeRawQualifier(c.Qualifier, width)
	if err != nil {
		return 0, err
	}
	t := bucketStart + off
	if t != c.Timestamp && c.Timestamp != schema.LateCellTimestamp(bucketStart, width) {
		return 0, fmt.Errorf("cellenc: raw cell at offset %d of bucket %d has timestamp %d, neither its sample's nor the bucket's last millisecond: %w",
			off, bucketStart, c.Timestamp, ErrMalformed)
	}
	return t, nil
}

// DecodeRawHistogramCell decodes one raw cell holding a histogram sample (see
// DecodeRawCell). A float cell fails, wrapping ErrMalformed.
func DecodeRawHistogramCell(c kv.Cell, bucketStart int64, width time.Duration) (HistogramSample, error) {
	t, err := RawCellTime(c, bucketStart, width)
	if err != nil {
		return HistogramSample{}, err
	}
	off := t - bucketStart
	if len(c.Value) < minHistogramValueLen {
		return HistogramSample{}, fmt.Errorf("cellenc: raw cell at offset %d of bucket %d holds a float, not a histogram: %w", off, bucketStart, ErrMalformed)
	}
	v, err := DecodeSampleValue(c.Value)
	if err != nil {
		return HistogramSample{}, fmt.Errorf("cellenc: raw cell at offset %d of bucket %d: %w", off, bucketStart, err)
	}
	return HistogramSample{T: t, ST: v.ST, H: v.H, FH: v.FH}, nil
}

// mergeRaw merges chunk samples (any order) with ascending raw samples, one per
// timestamp, raw winning.
func mergeRaw(chunks, raw []Sample) []Sample {
	slices.SortStableFunc(chunks, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
	chunks = keepLast(chunks)
	out := make([]Sample, 0, len(chunks)+len(raw))
	i, j := 0, 0
	for i < len(chunks) || j < len(raw) {
		switch {
		case j == len(raw) || (i < len(chunks) && chunks[i].T < raw[j].T):
			out = append(out, chunks[i])
			i++
		case i < len(chunks) && chunks[i].T == raw[j].T:
			i++ // the raw sample replaces it
		default:
			out = append(out, raw[j])
			j++
		}
	}
	return keepLast(out)
}

// keepLast keeps the last sample of each run of equal timestamps.
func keepLast(s []Sample) []Sample {
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && out[n-1].T == x.T {
			out[n-1] = x
			continue
		}
		out = append(out, x)
	}
	return out
}
