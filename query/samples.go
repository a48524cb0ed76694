package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// sample is one float sample: a timestamp in ms and a value, bit-exact.
type sample struct {
	t int64
	v float64
}

// bucketSamples are the samples of one data row (one bucket of one series),
// ascending, and whether they came only from one stored chunk, unchanged.
type bucketSamples struct {
	bucketStart int64
	samples     []sample
	// chunk is the row's only chunk cell's data when the row has no raw cell
	// and that chunk lies wholly within the read's [mint, maxt]; ChunkQuerier
	// hands it out as it is.
	chunk chunkenc.Chunk
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
		b, err := r.decodeRow(sc.Row(), mint, maxt)
		if err != nil {
			return nil, fmt.Errorf("query: read series %d (%s): %w", s.id, s.labels, err)
		}
		if len(b.samples) > 0 {
			rows = append(rows, b)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("query: read series %d (%s): %w", s.id, s.labels, err)
	}
	slices.Reverse(rows)
	return rows, nil
}

// decodeRow merges the chunk and raw cells of one data row into samples in
// [mint, maxt], ascending, one per timestamp: a raw cell wins over a chunk's
// sample of the same timestamp (it would be a late sample written after the
// bucket was compacted). It is the one decoder of data rows: Select,
// ChunkQuerier, Samples and Last all read through it.
func (r *Reader) decodeRow(row kv.Row, mint, maxt int64) (bucketSamples, error) {
	_, bucketStart, err := schema.ParseDataRowTail(row.Key)
	if err != nil {
		return bucketSamples{}, err
	}
	b := bucketSamples{bucketStart: bucketStart}
	var (
		fromChunks, raw []sample
		chunks          []chunkenc.Chunk
		cut             bool // a chunk had samples outside [mint, maxt]
	)
	for _, c := range row.Cells {
		switch c.Family {
		case schema.FamilyRaw:
			s, err := r.decodeRaw(c, bucketStart)
			if err != nil {
				return b, err
			}
			if s.t >= mint && s.t <= maxt {
				raw = append(raw, s)
			}
		case schema.FamilyChunk:
			chk, err := decodeChunk(c)
			if err != nil {
				return b, fmt.Errorf("chunk of bucket %d: %w", bucketStart, err)
			}
			chunks = append(chunks, chk)
			n := len(fromChunks)
			if fromChunks, err = appendChunkSamples(fromChunks, chk, mint, maxt); err != nil {
				return b, fmt.Errorf("chunk of bucket %d: %w", bucketStart, err)
			}
			cut = cut || len(fromChunks)-n != chk.NumSamples()
		}
	}
	switch {
	case len(fromChunks) == 0:
		b.samples = raw
	case len(raw) == 0:
		slices.SortStableFunc(fromChunks, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
		b.samples = dedupe(fromChunks)
		if len(chunks) == 1 && !cut && len(b.samples) == chunks[0].NumSamples() {
			b.chunk = chunks[0]
		}
	default:
		b.samples = mergeSamples(fromChunks, raw)
	}
	return b, nil
}

func (r *Reader) decodeRaw(c kv.Cell, bucketStart int64) (sample, error) {
	off, err := schema.DecodeRawQualifier(c.Qualifier, r.settings.BucketWidth)
	if err != nil {
		return sample{}, err
	}
	v, err := schema.DecodeRawValue(c.Value)
	if err != nil {
		return sample{}, err
	}
	if t := bucketStart + off; t != c.Timestamp {
		return sample{}, fmt.Errorf("raw cell at offset %d of bucket %d has timestamp %d: %w", off, bucketStart, c.Timestamp, schema.ErrMalformed)
	}
	return sample{t: c.Timestamp, v: v}, nil
}

// decodeChunk decodes a chunk cell (schema/chunk.go). Only float encodings are
// accepted: hbtsdb stores no histograms.
func decodeChunk(c kv.Cell) (chunkenc.Chunk, error) {
	enc, data, err := schema.DecodeChunkValue(c.Value)
	if err != nil {
		return nil, err
	}
	e := chunkenc.Encoding(enc)
	if e != chunkenc.EncXOR {
		return nil, fmt.Errorf("chunk encoding %s is not a float encoding hbtsdb reads: %w", e, schema.ErrMalformed)
	}
	chk, err := chunkenc.FromData(e, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, schema.ErrMalformed)
	}
	return chk, nil
}

// appendChunkSamples appends the samples of chk in [mint, maxt].
func appendChunkSamples(dst []sample, chk chunkenc.Chunk, mint, maxt int64) ([]sample, error) {
	it := chk.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if t >= mint && t <= maxt {
			dst = append(dst, sample{t, v})
		}
	}
	return dst, it.Err()
}

// mergeSamples merges ascending chunk samples with ascending raw samples, one
// per timestamp, raw winning.
func mergeSamples(chunks, raw []sample) []sample {
	slices.SortStableFunc(chunks, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
	out := make([]sample, 0, len(chunks)+len(raw))
	i, j := 0, 0
	for i < len(chunks) || j < len(raw) {
		switch {
		case j == len(raw) || (i < len(chunks) && chunks[i].t < raw[j].t):
			out = append(out, chunks[i])
			i++
		case i < len(chunks) && chunks[i].t == raw[j].t:
			i++ // the raw sample replaces it
		default:
			out = append(out, raw[j])
			j++
		}
	}
	return dedupe(out)
}

// dedupe keeps the last sample of each run of equal timestamps.
func dedupe(s []sample) []sample {
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && out[n-1].t == x.t {
			out[n-1] = x
			continue
		}
		out = append(out, x)
	}
	return out
}

// clampRange clamps a Select's [mint, maxt] to the timestamps hbtsdb stores
// ([0, kv.MaxTimestamp]) and reports whether anything is left.
func clampRange(mint, maxt int64) (int64, int64, bool) {
	mint = max(mint, 0)
	maxt = min(maxt, kv.MaxTimestamp)
	return mint, maxt, maxt >= mint && maxt != math.MinInt64
}
