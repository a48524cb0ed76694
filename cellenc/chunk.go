package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Chunks: family schema.FamilyChunk of the data table, written by compaction
// (downsample/), which seals a bucket into one chunk cell and deletes the raw
// cells it covers; every reader merges chunk cells with raw cells
// (DecodeDataRow).
//
//	qualifier = offset(4)          big-endian uint32, ms from the row's bucketStart
//	                               to the start of the chunk's window: 0, as a
//	                               chunk cell holds the whole bucket (BucketCell)
//	value     = encoding(1) | data one of:
//	              1..6  one Prometheus chunk (chunkenc.Encoding: EncXOR,
//	                    EncHistogram, EncFloatHistogram, EncXOR2,
//	                    EncHistogramST, EncFloatHistogramST), its bytes as
//	                    chunkenc.Chunk.Bytes returns them;
//	              0x40  a decimal chunk (decimal.go) of floats;
//	              0x41  EncChunks: several chunks, each
//	                    encoding(1) | uvarint length | data, with encoding one of
//	                    1..6 or 0x40; at least two, each of at least one
//	                    sample, ascending and disjoint in time (every sample of
//	                    one is older than every sample of the next)
//	timestamp = the bucket's last millisecond, bucketStart + width - 1
//
// What compaction writes (BucketCell) for a bucket's samples:
//
//   - floats only, none with a start timestamp: one XOR or decimal chunk,
//     whichever is smaller — the same bytes as before histograms existed;
//   - otherwise the bucket's samples cut into runs, and the cell is the run's
//     chunk alone when there is one, an EncChunks cell when there are more. A
//     new run starts where the kind changes (float, integer histogram, float
//     histogram), and where Prometheus' own appender
//     (Appender.AppendHistogram(prev, st, t, h, appendOnly=false)) returns a
//     new chunk that is not a recoding: a counter reset, a schema or
//     zero-threshold change, a change of custom bounds; and where a chunk is
//     full (65535 samples, 16383 for the ST histogram encodings). A float run
//     is XOR2 when one of its samples has a start timestamp, else XOR or
//     decimal, whichever is smaller. A histogram run uses the ST encoding when
//     one of its samples has a start timestamp (an ST chunk holds samples
//     without one too). Prometheus' own chunk encoder
//     (storage.NewSeriesToChunkEncoder) cuts at every change between samples
//     with and without a start timestamp instead; one chunk per run is
//     smaller and decodes the same.
//
// Why one cell holding a sequence rather than one cell per chunk at its own
// qualifier offset: a bucket compacted again (late samples, possibly of
// another kind) may cut its samples differently, and a cell of the first
// layout that the second does not rewrite would stay, older than the newer
// data yet winning over it wherever it overlaps. Deleting it is not an option
// (below). One cell rewritten whole never leaves a stale chunk behind. Why a
// bucket of one run is its chunk alone, not an EncChunks cell of one: the
// common bucket (one kind all hour) pays no container byte or length, and is
// a Prometheus chunk that remote read hands out as it is; and floats keep
// their decimal encoding inside an EncChunks cell, where it is smaller. A
// reader built before EncChunks and the ST encodings refuses such cells
// (ErrMalformed); a reader of today reads every cell written before.
//
// What a chunk gives back: every float and every histogram count and sum bit
// for bit, the start timestamps, the timestamps; and what Prometheus' chunks
// give of the rest, as its own TSDB does: a histogram's counter-reset hint is
// NotCounterReset (GaugeType in a gauge chunk) but for a chunk's first
// sample, whose hint is the chunk's counter-reset header (which Prometheus'
// iterators turn into UnknownCounterReset, not knowing whether the chunk
// before is the one that was cut from; in a cell it is): CounterReset where
// the appender found a reset or the sample said so, UnknownCounterReset at
// the start of a run (the bucket's first histogram, or the first after
// floats), where an explicit NotCounterReset is lost too; a histogram
// whose buckets are a subset of the chunk's comes back with the chunk's
// layout (the missing buckets present and empty); a stale marker histogram
// (Sum = value.StaleNaN) comes back as a histogram holding only that Sum.
//
// Invariants:
//
//   - every sample of a chunk lies in its row's bucket and in its window, so
//     chunk qualifiers sort by time; readers accept several chunk cells per row;
//   - a chunk is rewritten in place: compacting a bucket again (late samples)
//     writes the same qualifier at the same timestamp, which replaces the cell on
//     both backends (HBase keeps the later write of equal coordinates). Nothing
//     ever deletes a chunk column, so no HBase delete marker can hide a rewrite,
//     and no rewrite is hidden by an older version with a newer timestamp (which
//     would happen if the timestamp were the last sample's and a rewrite's last
//     sample were older);
//   - the cell timestamp is the bucket's end, so the family's TTL expires a
//     chunk once every sample it may hold expired; a reader that restricts a scan
//     to a time range must let through cells up to the end of the last bucket it
//     reads (a chunk's samples are older than its cell timestamp);
//   - a chunk and raw cells of the same row may hold the same timestamp (a late
//     sample written again after compaction, or a compaction interrupted before
//     it deleted the raw cells): readers keep the raw sample, whatever the kinds.

// ChunkEncodingLen is the length of the encoding byte in front of a chunk value.
const ChunkEncodingLen = 1

// EncChunks is the encoding byte of a chunk cell holding several chunks. It is
// not one of Prometheus' chunkenc encodings (1 to 6 there).
const EncChunks byte = 0x41

// AppendChunkValue appends the value of a chunk cell: the encoding byte, then
// the chunk's bytes.
func AppendChunkValue(dst []byte, encoding byte, data []byte) []byte {
	dst = append(dst, encoding)
	return append(dst, data...)
}

// DecodeChunkValue splits a chunk cell's value into its encoding byte and the
// chunk's bytes (aliasing b). It fails, wrapping ErrMalformed, on an empty value.
func DecodeChunkValue(b []byte) (encoding byte, data []byte, err error) {
	if len(b) < ChunkEncodingLen+1 {
		return 0, nil, fmt.Errorf("schema: chunk value of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	return b[0], b[ChunkEncodingLen:], nil
}

// ChunkCellSamples are the samples of one chunk cell (DecodeChunkCellSamples).
type ChunkCellSamples struct {
	// Samples and Histograms are the cell's samples in [mint, maxt], each
	// ascending.
	Samples    []Sample
	Histograms []HistogramSample
	// Chunks are the cell's chunks, oldest first; an entry is nil for a
	// decimal chunk, which is not a Prometheus chunk.
	Chunks []chunkenc.Chunk
	// Total is how many samples the cell holds, in [mint, maxt] or not.
	Total int
}

// DecodeChunkCellSamples appends the samples in [mint, maxt] of a chunk cell's
// value to dst. It fails, wrapping ErrMalformed, on a value BucketCell cannot
// have written: an unknown encoding, a chunk that does not decode, samples not
// ascending, an EncChunks value of fewer than two chunks, an empty chunk, a
// histogram Prometheus' Validate refuses.
func DecodeChunkCellSamples(dst ChunkCellSamples, value []byte, mint, maxt int64) (ChunkCellSamples, error) {
	enc, data, err := DecodeChunkValue(value)
	if err != nil {
		return dst, err
	}
	if enc != EncChunks {
		last := int64(math.MinInt64)
		return decodeChunk(dst, enc, data, mint, maxt, &last)
	}
	last := int64(math.MinInt64)
	n := 0
	for len(data) > 0 {
		e := data[0]
		l, k := binary.Uvarint(data[1:])
		if k <= 0 || l == 0 || l > uint64(len(data)-1-k) || k != uvarintLen(l) {
			return dst, fmt.Errorf("schema: chunk %d of a multi-chunk cell: bad length: %w", n, ErrMalformed)
		}
		body := data[1+k : 1+k+int(l)]
		data = data[1+k+int(l):]
		if e == EncChunks {
			return dst, fmt.Errorf("schema: chunk %d of a multi-chunk cell is a multi-chunk cell: %w", n, ErrMalformed)
		}
		if dst, err = decodeChunk(dst, e, body, mint, maxt, &last); err != nil {
			return dst, fmt.Errorf("schema: chunk %d of a multi-chunk cell: %w", n, err)
		}
		n++
	}
	if n < 2 {
		return dst, fmt.Errorf("schema: multi-chunk cell of %d chunks: %w", n, ErrMalformed)
	}
	return dst, nil
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

// decodeChunk appends the samples in [mint, maxt] of one chunk of encoding enc
// to dst; *last is the newest timestamp seen before it in the cell, which
// every sample must follow. Prometheus' iterators panic on some malformed
// chunks (a histogram schema they cannot reduce, a bit stream cut short in
// places they do not check): that is ErrMalformed here too.
func decodeChunk(dst ChunkCellSamples, enc byte, data []byte, mint, maxt int64, last *int64) (_ ChunkCellSamples, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schema: chunk of encoding %d: %v: %w", enc, p, ErrMalformed)
		}
	}()
	if enc == EncDecimal {
		n := len(dst.Samples)
		var total int
		var err error
		if dst.Samples, total, err = DecodeDecimalChunk(dst.Samples, data, math.MinInt64, math.MaxInt64); err != nil {
			return dst, err
		}
		if first := dst.Samples[n].T; first <= *last {
			return dst, fmt.Errorf("schema: decimal chunk starting at %d after a sample at %d: %w", first, *last, ErrMalformed)
		}
		*last = dst.Samples[len(dst.Samples)-1].T
		dst.Samples = append(dst.Samples[:n], cutSamples(dst.Samples[n:], mint, maxt)...)
		dst.Chunks = append(dst.Chunks, nil)
		dst.Total += total
		return dst, nil
	}
	e := chunkenc.Encoding(enc)
	if !chunkenc.IsValidEncoding(e) {
		return dst, fmt.Errorf("schema: chunk encoding %d is unknown: %w", enc, ErrMalformed)
	}
	chk, err := chunkenc.FromData(e, data)
	if err != nil {
		return dst, fmt.Errorf("schema: %w: %w", err, ErrMalformed)
	}
	if len(data) < 2 || chk.NumSamples() == 0 {
		return dst, fmt.Errorf("schema: %s chunk of no samples: %w", e, ErrMalformed)
	}
	if want := chunkValueType(e); want != chunkenc.ValFloat {
		if err := checkHistogramLayout(data); err != nil {
			return dst, fmt.Errorf("schema: %s chunk: %w", e, err)
		}
	}
	want := chunkValueType(e)
	// The first sample of a chunk gets the chunk's counter-reset header as
	// its hint: Prometheus' iterators say UnknownCounterReset there, as a
	// TSDB chunk's predecessor may be gone or be a later backfill; a cell's
	// chunks are consecutive, and its first chunk's header is the first
	// sample's own hint (or Unknown), so the header is true here.
	header := histogram.UnknownCounterReset
	if hc, ok := chk.(interface {
		GetCounterResetHeader() chunkenc.CounterResetHeader
	}); ok {
		switch hc.GetCounterResetHeader() {
		case chunkenc.CounterReset:
			header = histogram.CounterReset
		case chunkenc.NotCounterReset:
			header = histogram.NotCounterReset
		case chunkenc.GaugeType:
			header = histogram.GaugeType
		}
	}
	it := chk.Iterator(nil)
	n := 0
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != want {
			return dst, fmt.Errorf("schema: %s chunk holds a %s sample: %w", e, vt, ErrMalformed)
		}
		t := it.AtT()
		if t <= *last {
			return dst, fmt.Errorf("schema: %s chunk: sample at %d after one at %d: %w", e, t, *last, ErrMalformed)
		}
		*last = t
		n++
		if t < mint || t > maxt {
			continue
		}
		switch vt {
		case chunkenc.ValFloat:
			_, v := it.At()
			dst.Samples = append(dst.Samples, Sample{T: t, V: v, ST: it.AtST()})
		case chunkenc.ValHistogram:
			_, h := it.AtHistogram(nil)
			if n == 1 && !value.IsStaleNaN(h.Sum) {
				h.CounterResetHint = header
			}
			if err := h.Validate(); err != nil {
				return dst, fmt.Errorf("schema: %s chunk: histogram at %d: %v: %w", e, t, err, ErrMalformed)
			}
			dst.Histograms = append(dst.Histograms, HistogramSample{T: t, ST: it.AtST(), H: h})
		case chunkenc.ValFloatHistogram:
			_, h := it.AtFloatHistogram(nil)
			if n == 1 && !value.IsStaleNaN(h.Sum) {
				h.CounterResetHint = header
			}
			if err := h.Validate(); err != nil {
				return dst, fmt.Errorf("schema: %s chunk: histogram at %d: %v: %w", e, t, err, ErrMalformed)
			}
			dst.Histograms = append(dst.Histograms, HistogramSample{T: t, ST: it.AtST(), FH: h})
		}
	}
	if err := it.Err(); err != nil {
		return dst, fmt.Errorf("schema: %s chunk: %w: %w", e, err, ErrMalformed)
	}
	if n != chk.NumSamples() {
		return dst, fmt.Errorf("schema: %s chunk of %d samples decodes %d: %w", e, chk.NumSamples(), n, ErrMalformed)
	}
	dst.Chunks = append(dst.Chunks, chk)
	dst.Total += n
	return dst, nil
}

// checkHistogramLayout refuses a histogram chunk whose bucket layout (written
// with its first sample, right after the 3-byte header, in Prometheus'
// varbit coding) claims more buckets than the chunk has bits: every sample
// takes at least a bit per bucket, and Prometheus' iterator allocates the
// buckets the layout claims before it reads any, up to 2^32 a span.
func checkHistogramLayout(data []byte) error {
	r := bitReader{b: data, off: 3 * 8}
	switch r.bits(8) {
	case 0:
	case 255:
		r.bits(64)
	}
	r.varbit() // schema
	var buckets uint64
	for range 2 {
		n := r.varbit()
		for i := uint64(0); i < n && !r.eof; i++ {
			buckets += uint64(uint32(r.varbit())) // length, as chunkenc reads it
			r.varbit()                            // offset
			if buckets > uint64(len(data))*8 {
				return fmt.Errorf("a bucket layout of more than %d buckets in %d bytes: %w", buckets, len(data), ErrMalformed)
			}
		}
	}
	return nil
}

// bitReader reads Prometheus' bit streams (most significant bit first) far
// enough for checkHistogramLayout; past the end it reads zeros and sets eof.
type bitReader struct {
	b   []byte
	off int // in bits
	eof bool
}

func (r *bitReader) bits(n int) uint64 {
	var v uint64
	for range n {
		if r.off >= len(r.b)*8 {
			r.eof = true
			return v
		}
		v = v<<1 | uint64(r.b[r.off/8]>>(7-r.off%8)&1)
		r.off++
	}
	return v
}

// varbit reads a varbit number (chunkenc's putVarbitUint and putVarbitInt
// share the prefix), returning its raw bits.
func (r *bitReader) varbit() uint64 {
	ones := 0
	for ones < 8 && r.bits(1) == 1 {
		ones++
	}
	return r.bits([]int{0, 3, 6, 9, 12, 18, 25, 56, 64}[ones])
}

// chunkValueType is the kind of sample a chunk of encoding e holds.
func chunkValueType(e chunkenc.Encoding) chunkenc.ValueType {
	switch e {
	case chunkenc.EncHistogram, chunkenc.EncHistogramST:
		return chunkenc.ValHistogram
	case chunkenc.EncFloatHistogram, chunkenc.EncFloatHistogramST:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

// cutSamples returns the samples (ascending) in [mint, maxt].
func cutSamples(s []Sample, mint, maxt int64) []Sample {
	i := 0
	for i < len(s) && s[i].T < mint {
		i++
	}
	j := len(s)
	for j > i && s[j-1].T > maxt {
		j--
	}
	return s[i:j]
}

// MaxChunkSamples is the most samples one chunk cell holds: Prometheus' XOR
// chunk counts its samples in 16 bits. A bucket with more stays raw.
const MaxChunkSamples = 1<<16 - 1

// maxHistogramSTChunkSamples is the most samples of an ST histogram chunk,
// which counts them in 14 bits.
const maxHistogramSTChunkSamples = 1<<14 - 1

// BucketChunkCell returns the chunk cell of a bucket of float samples; it is
// BucketCell without histograms.
func BucketChunkCell(samples []Sample, bucketStart int64, width time.Duration) (kv.Cell, error) {
	return BucketCell(samples, nil, bucketStart, width)
}

// BucketCell returns the chunk cell (family schema.FamilyChunk) that holds a bucket's
// samples — floats and histograms, each ascending, one per timestamp across
// both, all in the bucket starting at bucketStart — as the package doc above
// says: qualifier offset 0, timestamp the bucket's last millisecond. It fails,
// wrapping kv.ErrInvalidArgument, on no samples, samples out of order, two at
// one timestamp, outside the bucket, a histogram sample without exactly one
// of H and FH, or more than MaxChunkSamples in all.
func BucketCell(samples []Sample, histograms []HistogramSample, bucketStart int64, width time.Duration) (kv.Cell, error) {
	withST, err := checkBucketSamples(samples, histograms, bucketStart, width)
	if err != nil {
		return kv.Cell{}, err
	}
	q, err := schema.AppendChunkQualifier(nil, 0, width)
	if err != nil {
		return kv.Cell{}, err
	}
	var value []byte
	if len(histograms) == 0 && !withST {
		value = floatChunkValue(nil, samples)
	} else if value, err = mixedChunkValue(samples, histograms); err != nil {
		return kv.Cell{}, err
	}
	return kv.Cell{Family: schema.FamilyChunk, Qualifier: q, Timestamp: bucketStart + width.Milliseconds() - 1, Value: value}, nil
}

// checkBucketSamples checks BucketCell's arguments, and reports whether a
// float sample has a start timestamp.
func checkBucketSamples(samples []Sample, histograms []HistogramSample, bucketStart int64, width time.Duration) (withST bool, err error) {
	n := len(samples) + len(histograms)
	switch {
	case n == 0:
		return false, fmt.Errorf("schema: a chunk of no samples: %w", kv.ErrInvalidArgument)
	case n > MaxChunkSamples:
		return false, fmt.Errorf("schema: %d samples in bucket %d, more than a chunk holds (%d): %w",
			n, bucketStart, MaxChunkSamples, kv.ErrInvalidArgument)
	}
	end := bucketStart + width.Milliseconds()
	prev := bucketStart - 1
	for _, s := range samples {
		if s.T <= prev || s.T >= end {
			if s.T < bucketStart || s.T >= end {
				return false, fmt.Errorf("schema: sample at %d is not in bucket %d: %w", s.T, bucketStart, kv.ErrInvalidArgument)
			}
			return false, fmt.Errorf("schema: chunk samples not ascending at %d: %w", s.T, kv.ErrInvalidArgument)
		}
		prev = s.T
		withST = withST || s.ST != 0
	}
	j := 0
	for i, h := range histograms {
		if h.T < bucketStart || h.T >= end {
			return false, fmt.Errorf("schema: histogram sample at %d is not in bucket %d: %w", h.T, bucketStart, kv.ErrInvalidArgument)
		}
		if i > 0 && h.T <= histograms[i-1].T {
			return false, fmt.Errorf("schema: chunk histogram samples not ascending at %d: %w", h.T, kv.ErrInvalidArgument)
		}
		if (h.H == nil) == (h.FH == nil) {
			return false, fmt.Errorf("schema: histogram sample at %d holds not exactly one of an integer and a float histogram: %w", h.T, kv.ErrInvalidArgument)
		}
		for j < len(samples) && samples[j].T < h.T {
			j++
		}
		if j < len(samples) && samples[j].T == h.T {
			return false, fmt.Errorf("schema: a float and a histogram sample at %d: %w", h.T, kv.ErrInvalidArgument)
		}
	}
	return withST, nil
}

func anyST(samples []Sample) bool {
	for _, s := range samples {
		if s.ST != 0 {
			return true
		}
	}
	return false
}

// floatChunkValue appends the value of one chunk of floats without start
// timestamps: XOR or decimal, whichever is smaller.
func floatChunkValue(dst []byte, samples []Sample) []byte {
	chk := chunkenc.NewXORChunk()
	app, _ := chk.Appender() // an empty XOR chunk's appender never fails
	for _, s := range samples {
		app.Append(0, s.T, s.V)
	}
	start := len(dst)
	dst = AppendChunkValue(dst, byte(chunkenc.EncXOR), chk.Bytes())
	if dec, ok := AppendDecimalChunk(nil, samples); ok && len(dec) < len(dst)-start {
		dst = append(dst[:start], dec...)
	}
	return dst
}

// mixedChunkValue returns the value of the chunk cell of a bucket with
// histograms or start timestamps (see the package doc above).
func mixedChunkValue(samples []Sample, histograms []HistogramSample) ([]byte, error) {
	var parts [][]byte // each encoding | data
	i, j := 0, 0
	for i < len(samples) || j < len(histograms) {
		if j == len(histograms) || (i < len(samples) && samples[i].T < histograms[j].T) {
			k := i
			for k < len(samples) && (j == len(histograms) || samples[k].T < histograms[j].T) {
				k++
			}
			parts = append(parts, floatRunValue(samples[i:k]))
			i = k
			continue
		}
		k := j
		isInt := histograms[j].H != nil
		for k < len(histograms) && (histograms[k].H != nil) == isInt && (i == len(samples) || histograms[k].T < samples[i].T) {
			k++
		}
		ps, err := histogramRunValues(histograms[j:k], isInt)
		if err != nil {
			return nil, err
		}
		parts = append(parts, ps...)
		j = k
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	size := 1
	for _, p := range parts {
		size += len(p) + binary.MaxVarintLen32
	}
	out := make([]byte, 1, size)
	out[0] = EncChunks
	for _, p := range parts {
		out = append(out, p[0])
		out = binary.AppendUvarint(out, uint64(len(p)-1))
		out = append(out, p[1:]...)
	}
	return out, nil
}

// floatRunValue returns encoding | data of one chunk of floats: XOR2 when one
// has a start timestamp, else XOR or decimal.
func floatRunValue(samples []Sample) []byte {
	if !anyST(samples) {
		return floatChunkValue(nil, samples)
	}
	chk := chunkenc.NewXOR2Chunk()
	app, _ := chk.Appender()
	for _, s := range samples {
		app.Append(s.ST, s.T, s.V)
	}
	return AppendChunkValue(nil, byte(chunkenc.EncXOR2), chk.Bytes())
}

// histogramRunValues returns the chunks (encoding | data each) of a run of
// histogram samples of one kind, cut where Prometheus' appender cuts.
func histogramRunValues(hs []HistogramSample, isInt bool) ([][]byte, error) {
	withST := false
	for _, h := range hs {
		withST = withST || h.ST != 0
	}
	vt := chunkenc.ValFloatHistogram
	if isInt {
		vt = chunkenc.ValHistogram
	}
	capacity := MaxChunkSamples
	if withST {
		capacity = maxHistogramSTChunkSamples
	}
	var (
		out       [][]byte
		chk       chunkenc.Chunk
		app, prev chunkenc.Appender
	)
	flush := func() {
		if chk != nil && chk.NumSamples() > 0 {
			out = append(out, AppendChunkValue(nil, byte(chk.Encoding()), chk.Bytes()))
		}
	}
	for _, h := range hs {
		if chk == nil || chk.NumSamples() >= capacity {
			flush()
			var err error
			if chk, err = vt.NewChunk(false, withST); err != nil {
				return nil, fmt.Errorf("schema: new %s chunk: %w", vt, err)
			}
			prev = app
			if app, err = chk.Appender(); err != nil {
				return nil, fmt.Errorf("schema: %s chunk appender: %w", vt, err)
			}
		}
		var (
			next    chunkenc.Chunk
			recoded bool
			err     error
		)
		// The appender may set the spans and buckets of what it is given
		// to new slices (it never writes into the old ones): a shallow copy.
		if isInt {
			c := *h.H
			next, recoded, app, err = app.AppendHistogram(prev, h.ST, h.T, &c, false)
		} else {
			c := *h.FH
			next, recoded, app, err = app.AppendFloatHistogram(prev, h.ST, h.T, &c, false)
		}
		if err != nil {
			return nil, fmt.Errorf("schema: histogram sample at %d: %w: %w", h.T, err, kv.ErrInvalidArgument)
		}
		prev = nil
		if next != nil {
			if !recoded {
				flush()
			}
			chk = next
		}
	}
	flush()
	return out, nil
}
