package cellenc

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// The one encoder from samples to Prometheus chunks. A ChunkEncoder takes
// samples of any kind in time order, each with the chunk encoding it is to go
// into, and cuts a new chunk
//
//   - where the encoding changes (the kind of sample: float, integer histogram,
//     float histogram; or the start-timestamp form of it);
//   - where Prometheus' appender (AppendHistogram / AppendFloatHistogram with
//     appendOnly false) returns a new chunk that is not a recoding: a counter
//     reset, a schema or zero-threshold change, a gauge/counter switch, after a
//     stale marker, a change of custom bounds; a chunk it recodes in place (new
//     buckets) stays one chunk;
//   - where its CutPolicy says the chunk is full.
//
// Two policies, for the two users:
//
//   - CutCompaction (BucketCell, what compaction writes): a chunk is full at
//     MaxChunkSamples samples (maxHistogramSTChunkSamples for the ST histogram
//     encodings, which count them in 14 bits), which a bucket never reaches for
//     floats; a histogram chunk that follows a chunk of another encoding starts
//     afresh (its first sample is not compared with the chunk before).
//   - CutHead (query's chunks for remote read and the histograms Select hands
//     out): as Prometheus' head cuts (tsdb/head_append.go: appendPreprocessor,
//     histogramsAppendPreprocessor, appendHistogram): float chunks of at most
//     HeadChunkSamples; a histogram chunk at the end of its 2h chunk range
//     (HeadChunkRange), earlier when a predicted end from its size is reached,
//     at twice TargetBytesPerHistogramChunk bytes, and not before
//     MinSamplesPerHistogramChunk samples within a range; a new chunk's first
//     histogram is compared with the appender before, whatever its kind. So the
//     histograms a reader decodes are those Prometheus' head would hand out:
//     the chunk's hint on its first sample (UnknownCounterReset unless a
//     gauge), NotCounterReset (or GaugeType) on the others, spans widened to
//     the chunk's layout.

// CutPolicy is when a ChunkEncoder cuts a chunk it finds full; see above.
type CutPolicy int

const (
	// CutCompaction is compaction's policy: chunks as full as the encodings
	// allow, one chunk cell per bucket (BucketCell).
	CutCompaction CutPolicy = iota
	// CutHead is Prometheus' head's policy: the chunks its head would hold.
	CutHead
)

// HeadChunkSamples is the most samples of a float chunk under CutHead: the
// head's samplesPerChunk (120).
const HeadChunkSamples = 120

// HeadChunkRange is the chunk range of Prometheus' head (2h,
// tsdb.DefaultBlockDuration), in ms: under CutHead a histogram chunk is cut at
// the latest at the end of the range its first sample falls in (tsdb's
// rangeForTimestamp).
const HeadChunkRange = 2 * 3600 * 1000

// rangeForTimestamp is tsdb's: the end of t's chunk range.
func rangeForTimestamp(t int64) int64 {
	return (t/HeadChunkRange)*HeadChunkRange + HeadChunkRange
}

// A ChunkEncoder builds chunks from a sequence of samples (ascending, one per
// timestamp) under a CutPolicy. The zero value is not usable: NewChunkEncoder.
type ChunkEncoder struct {
	policy     CutPolicy
	out        []chunks.Meta
	chk        chunkenc.Chunk
	app        chunkenc.Appender
	minT, maxT int64
	// nextAt and computed are the head's series state for histogram chunks
	// (CutHead): when the current chunk is to be cut at the latest, and
	// whether that was predicted from its size yet.
	nextAt   int64
	computed bool
}

// NewChunkEncoder returns an encoder that cuts chunks under policy.
func NewChunkEncoder(policy CutPolicy) *ChunkEncoder {
	return &ChunkEncoder{policy: policy}
}

// Chunks hands out the chunks encoded so far, oldest first, with their time
// ranges, the current one included; the encoder starts afresh after.
func (e *ChunkEncoder) Chunks() []chunks.Meta {
	e.flush()
	out := e.out
	e.out = nil
	return out
}

// cut closes the current chunk, if any, and starts one of encoding enc at t.
func (e *ChunkEncoder) cut(enc chunkenc.Encoding, t int64) error {
	e.flush()
	chk, err := chunkenc.NewEmptyChunk(enc)
	if err != nil {
		return fmt.Errorf("cellenc: new chunk: %w", err)
	}
	app, err := chk.Appender()
	if err != nil {
		return fmt.Errorf("cellenc: %s chunk appender: %w", enc, err)
	}
	e.chk, e.app, e.minT, e.nextAt = chk, app, t, rangeForTimestamp(t)
	return nil
}

// flush hands out the current chunk.
func (e *ChunkEncoder) flush() {
	if e.chk != nil && e.chk.NumSamples() > 0 {
		e.out = append(e.out, chunks.Meta{Chunk: e.chk, MinTime: e.minT, MaxTime: e.maxT})
	}
	e.chk, e.app = nil, nil
}

// floatFull is the policy's decision to cut a float chunk before its next
// sample.
func (e *ChunkEncoder) floatFull() bool {
	if e.policy == CutHead {
		return e.chk.NumSamples() >= HeadChunkSamples
	}
	return e.chk.NumSamples() >= MaxChunkSamples
}

// histogramFull is the policy's decision to cut a histogram chunk before a
// sample at t. Under CutHead it is the head's, by time and size
// (histogramsAppendPreprocessor).
func (e *ChunkEncoder) histogramFull(t int64) bool {
	n := e.chk.NumSamples()
	if e.policy == CutCompaction {
		switch e.chk.Encoding() {
		case chunkenc.EncHistogramST, chunkenc.EncFloatHistogramST:
			return n >= maxHistogramSTChunkSamples
		}
		return n >= MaxChunkSamples
	}
	size := len(e.chk.Bytes())
	const target = chunkenc.TargetBytesPerHistogramChunk
	nextRangeStart := e.nextAt
	if e.computed {
		nextRangeStart = rangeForTimestamp(e.minT)
	}
	if !e.computed && size >= target/4 {
		e.nextAt = computeChunkEndTime(e.minT, e.maxT, e.nextAt, float64(target)/float64(size))
		e.computed = true
	}
	return (t >= e.nextAt || size >= 2*target) && (n >= chunkenc.MinSamplesPerHistogramChunk || t >= nextRangeStart)
}

// computeChunkEndTime is tsdb's: the end of a chunk started at start that is
// 1/ratioToFull full at cur, so that the rest of the range up to maxT holds
// equally sized chunks.
func computeChunkEndTime(start, cur, maxT int64, ratioToFull float64) int64 {
	n := float64(maxT-start) / (float64(cur-start+1) * ratioToFull)
	if n <= 1 {
		return maxT
	}
	return int64(float64(start) + float64(maxT-start)/math.Floor(n))
}

// AppendFloat appends a float sample (start timestamp st, 0 unknown) to a
// chunk of encoding enc (EncXOR, or EncXOR2 to keep st).
func (e *ChunkEncoder) AppendFloat(enc chunkenc.Encoding, st, t int64, v float64) error {
	if e.chk == nil || e.chk.Encoding() != enc || e.floatFull() {
		if err := e.cut(enc, t); err != nil {
			return err
		}
	}
	e.app.Append(st, t, v)
	e.maxT = t
	return nil
}

// AppendHistogram appends an integer (h) or float (fh) histogram sample to a
// chunk of encoding enc (a histogram encoding of its kind, the ST form to keep
// st); the sample is copied first, as the appender may change its spans.
func (e *ChunkEncoder) AppendHistogram(enc chunkenc.Encoding, st, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	var prev chunkenc.Appender
	if e.chk == nil || e.chk.Encoding() != enc || e.histogramFull(t) {
		// The new chunk's first sample is compared with the appender
		// before (its counter-reset header): as the head does, or, under
		// CutCompaction, when the chunk before is of the same encoding.
		if e.policy == CutHead || (e.chk != nil && e.chk.Encoding() == enc) {
			prev = e.app
		}
		if err := e.cut(enc, t); err != nil {
			return err
		}
		e.computed = false
	}
	var (
		next    chunkenc.Chunk
		recoded bool
		err     error
	)
	if h != nil {
		next, recoded, e.app, err = e.app.AppendHistogram(prev, st, t, h.Copy(), false)
	} else {
		next, recoded, e.app, err = e.app.AppendFloatHistogram(prev, st, t, fh.Copy(), false)
	}
	if err != nil {
		return fmt.Errorf("cellenc: histogram sample at %d: %w", t, err)
	}
	switch {
	case next == nil:
	case recoded:
		e.chk = next
	default:
		// A counter reset or a layout the chunk cannot take: the appender
		// started a new chunk (the head keeps its computed flag).
		app := e.app
		e.flush()
		e.chk, e.app, e.minT, e.nextAt = next, app, t, rangeForTimestamp(t)
	}
	e.maxT = t
	return nil
}
