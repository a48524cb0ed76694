package cellenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// Rollup cells: the value of a cell of a rollup table (family
// schema.FamilyRollup; the table, row and qualifier are schema/rollup.go's),
// the windows of resolution res that one data bucket holds, as
// EncodeRollupWindows lays them out below, or a void cell.
//
//	value     = the bucket's windows, EncodeRollupWindows
//	timestamp = the data bucket's last millisecond (as chunk cells), so a bucket
//	            rolled up again (late samples) rewrites the cell in place and the
//	            TTL expires it once every sample it summarises expired

// Void rollup cells. A compactor whose resolution list lacks a resolution
// whose table the store still has (removed from the list, or a process with
// another list compacting the same store) cannot rewrite that table's cell of
// a bucket it compacts, and the cell would then summarise fewer samples than
// the bucket holds once the compactor deletes the bucket's raw cells. So it
// replaces the cell, by check-and-put on the value it read, with a void one:
// a value of 0x00 (which no EncodeRollupWindows value starts with: it counts
// at least one window) and 8 bytes that make each void write unique, so that
// another compactor's check-and-put expecting the value it read before this
// write fails even if that was a void one too. Readers treat a void cell as
// no cell: the bucket is summarised from its data row while raw data is kept.

// AppendVoidRollupValue appends the value of a void rollup cell carrying
// nonce.
func AppendVoidRollupValue(dst []byte, nonce uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 0), nonce)
}

// IsVoidRollupValue reports whether a rollup cell's value is void.
func IsVoidRollupValue(v []byte) bool { return len(v) > 0 && v[0] == 0 }

// Flags of an encoded window. The derived flags say that a field equals
// another to the bit and is not written; the encoder sets each one exactly when
// that holds (min and max are compared with FirstV first), so a value decodes
// only from the bytes EncodeRollupWindows writes for it.
const (
	windowHasStale = 1 << iota
	windowHasSamples
	windowMinIsFirst
	windowMaxIsFirst
	windowMinIsLast
	windowMaxIsLast
	windowNoResets // Resets is +0
	windowSumIsFirst
)

// rollupState is what the windows of a cell are coded relative to: the
// previous window's fields (zero before the first).
type rollupState struct {
	end                       int64
	count                     uint64
	firstOff, lastOff         int64
	lastV, min, max, sum, res float64
}

// EncodeRollupWindows appends the value of a rollup cell holding ws (ascending
// by End, each End a multiple of res within [bucketStart,
// bucketStart+max(width, resolution)]) to dst:
//
//	uvarint  number of windows
//	per window:
//	  uvarint  End-bucketStart for the first window, (End-prevEnd)/res-1 after
//	  byte     flags (windowHasStale, ..., windowSumIsFirst)
//	  with samples:
//	    varint   Count-prevCount, firstOff-prevFirstOff, lastOff-prevLastOff
//	             (firstOff = FirstT-(End-res), lastOff = End-LastT: the scrape
//	             phase, constant for regular scrapes)
//	    floats   FirstV ^ prev LastV, LastV ^ FirstV, then unless derived:
//	             Min ^ prev Min, Max ^ prev Max, Sum ^ prev Sum, Resets ^ prev
//	             Resets (appendXORFloat)
//	  stale:   uvarint End-StaleT
//	then the integer part (in a cell without the counter part, only when
//	some window holds only integers, Integers):
//	  uvarint  0 (which no histogram part starts with)
//	  bytes    a bitmap of the windows, ceil(windows/8) bytes, bit i%8 of
//	           byte i/8 set when window i has Integers (maybe none)
//	then the histogram part (in a cell without the counter part, only when
//	some window holds histograms, Histograms > 0):
//	  uvarint  number of such windows (maybe 0)
//	  per such window, ascending:
//	    uvarint  its index among the windows minus the previous such
//	             window's index plus one (the first: its index)
//	    uvarint  Histograms
//	    uvarint  End-LastH.T
//	    uvarint  length of LastH's value, then the value as a raw cell holds
//	             it (AppendHistogramSampleValue, start timestamp included)
//	then the counter part, when there are windows and every one has
//	HasCounters (rollup_counters.go):
//	  byte     1, the part's version
//	  per window with float samples (Count > 0), in window order:
//	    uvarint  Count-1-Changes (0 for a counter growing at every scrape)
//	    uvarint  len(ResetValues), then each reset value XORed with the one
//	             before it, the first with FirstV
//	    with Count >= 2:
//	      varint   LastT-PrevT minus that of the previous window with
//	               Count >= 2 in the cell (0 before the first): 0, one
//	               byte, for regular scrapes
//	      float    PrevV ^ LastV
//
// A window of histograms only has flags 0 (or windowHasStale). The parts
// after the windows were added one at a time, and a cell in any earlier
// layout still decodes, to the fields known when it was written: without the
// integer part with Integers false (its sums are not known to be exact, and
// sum_over_time reads raw data), without the counter part with HasCounters
// false. A cell with the counter part has the other two even when empty (an
// all-zero bitmap, a histogram count of 0), which no earlier cell has, so no
// layout reads as another. Windows of which some lack HasCounters (decoded
// from an earlier cell, or merged with a part of one) are written without the
// counter part, as such a cell was: none has counter fields then. A reader
// older than a part refuses a cell with it (trailing bytes).
//
// Bytes a window (TestRollupCellSizes: 15 s scrapes, 1h buckets; the 1h
// figures are one window a cell, so the cell's overhead is the window's),
// without and then with the counter part: a counter growing by integers
// 16.6 then 22.9 at 5m, 29.3 then 39.3 at 1h; a counter of float seconds
// 27.1 then 37.5 at 5m, 38 then 53.8 at 1h; a constant gauge 9.1 then 13.4
// at 5m, 22 then 31 at 1h.
func EncodeRollupWindows(dst []byte, bucketStart int64, res time.Duration, ws []RollupWindow) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ws)))
	var p rollupState
	r := res.Milliseconds()
	for i, w := range ws {
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(w.End-bucketStart))
		} else {
			dst = binary.AppendUvarint(dst, uint64((w.End-p.end)/r-1))
		}
		p.end = w.End
		flags := windowFlags(w)
		dst = append(dst, flags)
		if w.Count > 0 {
			firstOff, lastOff := w.FirstT-(w.End-r), w.End-w.LastT
			dst = binary.AppendVarint(dst, int64(w.Count-p.count))
			dst = binary.AppendVarint(dst, firstOff-p.firstOff)
			dst = binary.AppendVarint(dst, lastOff-p.lastOff)
			p.count, p.firstOff, p.lastOff = w.Count, firstOff, lastOff
			dst = appendXORFloat(dst, p.lastV, w.FirstV)
			dst = appendXORFloat(dst, w.FirstV, w.LastV)
			p.lastV = w.LastV
			if flags&(windowMinIsFirst|windowMinIsLast) == 0 {
				dst = appendXORFloat(dst, p.min, w.Min)
			}
			if flags&(windowMaxIsFirst|windowMaxIsLast) == 0 {
				dst = appendXORFloat(dst, p.max, w.Max)
			}
			if flags&windowSumIsFirst == 0 {
				dst = appendXORFloat(dst, p.sum, w.Sum)
			}
			if flags&windowNoResets == 0 {
				dst = appendXORFloat(dst, p.res, w.Resets)
			}
			p.min, p.max, p.sum, p.res = w.Min, w.Max, w.Sum, w.Resets
		}
		if w.HasStale() {
			dst = binary.AppendUvarint(dst, uint64(w.End-w.StaleT))
		}
	}
	counters := len(ws) > 0 && !slices.ContainsFunc(ws, func(w RollupWindow) bool { return !w.HasCounters })
	dst = appendIntegerBitmap(dst, ws, counters)
	dst = appendHistogramWindows(dst, ws, counters)
	if counters {
		dst = appendRollupCounters(dst, ws)
	}
	return dst
}

// appendHistogramWindows appends the histogram part of a rollup cell: always
// when the cell has the counter part, else only when some window of ws holds
// histograms.
func appendHistogramWindows(dst []byte, ws []RollupWindow, always bool) []byte {
	withH := 0
	for _, w := range ws {
		if w.Histograms > 0 {
			withH++
		}
	}
	if withH == 0 && !always {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(withH))
	next := 0
	for i, w := range ws {
		if w.Histograms == 0 {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(i-next))
		next = i + 1
		dst = binary.AppendUvarint(dst, w.Histograms)
		dst = binary.AppendUvarint(dst, uint64(w.End-w.LastH.T))
		v := AppendHistogramSampleValue(nil, w.LastH)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

// appendIntegerBitmap appends the integer part of a rollup cell: always when
// the cell has the counter part, else only when some window of ws has
// Integers.
func appendIntegerBitmap(dst []byte, ws []RollupWindow, always bool) []byte {
	if !always && !slices.ContainsFunc(ws, func(w RollupWindow) bool { return w.Integers && w.Count > 0 }) {
		return dst
	}
	dst = binary.AppendUvarint(dst, 0)
	bitmap := make([]byte, (len(ws)+7)/8)
	for i, w := range ws {
		if w.Integers && w.Count > 0 {
			bitmap[i/8] |= 1 << (i % 8)
		}
	}
	return append(dst, bitmap...)
}

// windowFlags are the flags EncodeRollupWindows writes for w.
func windowFlags(w RollupWindow) byte {
	var flags byte
	if w.HasStale() {
		flags |= windowHasStale
	}
	if w.Count == 0 {
		return flags
	}
	flags |= windowHasSamples
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	switch {
	case same(w.Min, w.FirstV):
		flags |= windowMinIsFirst
	case same(w.Min, w.LastV):
		flags |= windowMinIsLast
	}
	switch {
	case same(w.Max, w.FirstV):
		flags |= windowMaxIsFirst
	case same(w.Max, w.LastV):
		flags |= windowMaxIsLast
	}
	if math.Float64bits(w.Resets) == 0 {
		flags |= windowNoResets
	}
	if same(w.Sum, w.FirstV) {
		flags |= windowSumIsFirst
	}
	return flags
}

// DecodeRollupWindows decodes a rollup cell's value written by
// EncodeRollupWindows for the same bucketStart and res, appending to dst (whose
// windows it does not look at: the parts of one window in consecutive buckets
// have the same End). It fails, wrapping ErrMalformed, on a value that does
// not decode, or not from bytes EncodeRollupWindows writes (an empty value,
// an overlong varint, a float with a zero byte it would have left out, a flag
// it would have set differently, a layout of parts it never writes), or that
// contradicts itself where that is cheap to tell (a first sample after the
// last, counter fields their samples cannot have: rollupCounters).
func DecodeRollupWindows(dst []RollupWindow, b []byte, bucketStart int64, res time.Duration) ([]RollupWindow, error) {
	d := valueDecoder{b: b}
	n := d.uvarint()
	if d.err != nil {
		return dst, fmt.Errorf("cellenc: rollup cell of bucket %d: %w", bucketStart, d.err)
	}
	if n > uint64(len(b)) {
		return dst, fmt.Errorf("cellenc: rollup cell claims %d windows in %d bytes: %w", n, len(b), ErrMalformed)
	}
	var p rollupState
	r := res.Milliseconds()
	for i := range n {
		var w RollupWindow
		if i == 0 {
			w.End = bucketStart + int64(d.uvarint())
		} else {
			k := d.uvarint()
			if k >= uint64(math.MaxInt64/r) || p.end > math.MaxInt64-int64(k+1)*r {
				d.fail("window end out of range")
			}
			w.End = p.end + int64(k+1)*r
		}
		p.end = w.End
		w.StaleT = -1
		flags := d.byte()
		if flags&windowHasSamples != 0 {
			w.Count = p.count + uint64(d.varint())
			firstOff := p.firstOff + d.varint()
			lastOff := p.lastOff + d.varint()
			p.count, p.firstOff, p.lastOff = w.Count, firstOff, lastOff
			w.FirstT, w.LastT = w.End-r+firstOff, w.End-lastOff
			w.FirstV = d.xorFloat(p.lastV)
			w.LastV = d.xorFloat(w.FirstV)
			p.lastV = w.LastV
			switch {
			case flags&windowMinIsFirst != 0:
				w.Min = w.FirstV
			case flags&windowMinIsLast != 0:
				w.Min = w.LastV
			default:
				w.Min = d.xorFloat(p.min)
			}
			switch {
			case flags&windowMaxIsFirst != 0:
				w.Max = w.FirstV
			case flags&windowMaxIsLast != 0:
				w.Max = w.LastV
			default:
				w.Max = d.xorFloat(p.max)
			}
			if flags&windowSumIsFirst != 0 {
				w.Sum = w.FirstV
			} else {
				w.Sum = d.xorFloat(p.sum)
			}
			if flags&windowNoResets == 0 {
				w.Resets = d.xorFloat(p.res)
			}
			p.min, p.max, p.sum, p.res = w.Min, w.Max, w.Sum, w.Resets
		}
		if flags&windowHasStale != 0 {
			w.StaleT = w.End - int64(d.uvarint())
		}
		if d.err != nil {
			return dst, fmt.Errorf("cellenc: rollup cell of bucket %d: %w", bucketStart, d.err)
		}
		if flags != windowFlags(w) || w.End%r != 0 ||
			(w.Count > 0 && (w.FirstT > w.LastT || w.FirstT <= w.End-r || w.LastT > w.End)) ||
			(flags&windowHasStale != 0 && (!w.HasStale() || w.StaleT <= w.End-r || w.StaleT > w.End || (w.Count > 0 && w.StaleT <= w.LastT))) {
			return dst, fmt.Errorf("cellenc: rollup cell of bucket %d: inconsistent window ending %d: %w", bucketStart, w.End, ErrMalformed)
		}
		dst = append(dst, w)
	}
	ws := dst[len(dst)-int(n):]
	d.rollupParts(ws, r)
	if d.err != nil {
		return dst, fmt.Errorf("cellenc: rollup cell of bucket %d: %w", bucketStart, d.err)
	}
	if d.off != len(b) {
		return dst, fmt.Errorf("cellenc: rollup cell of bucket %d: %d trailing bytes: %w", bucketStart, len(b)-d.off, ErrMalformed)
	}
	for _, w := range ws {
		if w.Count == 0 && w.Histograms == 0 && !w.HasStale() {
			return dst, fmt.Errorf("cellenc: rollup cell of bucket %d: empty window ending %d: %w", bucketStart, w.End, ErrMalformed)
		}
	}
	return dst, nil
}

// rollupParts reads the parts of a rollup cell after its windows into ws,
// in one of the layouts EncodeRollupWindows writes, refusing any other:
//
//	nothing                            } before the counter part: the
//	integer bitmap, some bit set       } integer part only when a window
//	histograms >= 1                    } has Integers, the histogram part
//	integer bitmap, some bit set,      } only when one has histograms
//	  histograms >= 1                  }
//	integer bitmap, histograms >= 0, counter part
//
// Bytes left over after a layout are trailing bytes, DecodeRollupWindows'
// to refuse.
func (d *valueDecoder) rollupParts(ws []RollupWindow, r int64) {
	bitmap, integers := false, false
	if d.off < len(d.b) && d.b[d.off] == 0 {
		bitmap = true
		integers = d.integerBitmap(ws)
	}
	histograms := -1 // no histogram part
	if d.err == nil && d.off < len(d.b) {
		histograms = d.histogramWindows(ws, r)
	}
	switch {
	case d.err != nil:
	case bitmap && histograms >= 0 && d.off < len(d.b):
		if len(ws) == 0 {
			d.fail("counter part of a cell without windows")
			return
		}
		d.rollupCounters(ws)
	case bitmap && !integers:
		d.fail("empty integer bitmap")
	case histograms == 0:
		d.fail("no window with histograms and no counter part")
	}
}

// integerBitmap reads the integer part of a rollup cell into ws (the leading
// 0 included) and reports whether it has a bit set, refusing a bit of a
// window without float samples or past the last window.
func (d *valueDecoder) integerBitmap(ws []RollupWindow) bool {
	d.off++
	n := (len(ws) + 7) / 8
	if len(d.b)-d.off < n {
		d.fail("short integer bitmap")
		return false
	}
	bitmap := d.b[d.off : d.off+n]
	d.off += n
	any := false
	for i := range n * 8 {
		if bitmap[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		if i >= len(ws) || ws[i].Count == 0 {
			d.fail(fmt.Sprintf("integer bit of window %d, which has no float samples", i))
			return false
		}
		ws[i].Integers, any = true, true
	}
	return any
}

// histogramWindows reads the histogram part of a rollup cell into ws and
// returns the number of windows with histograms it has.
func (d *valueDecoder) histogramWindows(ws []RollupWindow, r int64) int {
	m := d.uvarint()
	if d.err == nil && m > uint64(len(ws)) {
		d.fail(fmt.Sprintf("%d windows with histograms of %d", m, len(ws)))
	}
	next := uint64(0)
	for range m {
		i := next + d.uvarint()
		count := d.uvarint()
		off := d.uvarint()
		l := d.uvarint()
		if d.err != nil {
			return 0
		}
		if i >= uint64(len(ws)) || count == 0 || l > uint64(len(d.b)-d.off) {
			d.fail("bad histogram window")
			return 0
		}
		next = i + 1
		v, err := DecodeSampleValue(d.b[d.off : d.off+int(l)])
		if err != nil || (v.H == nil && v.FH == nil) {
			d.fail(fmt.Sprintf("bad last histogram (%v)", err))
			return 0
		}
		d.off += int(l)
		w := &ws[i]
		h := HistogramSample{T: w.End - int64(off), ST: v.ST, H: v.H, FH: v.FH}
		if IsStaleHistogram(h) || h.T <= w.End-r || h.T > w.End || (w.HasStale() && w.StaleT <= h.T) ||
			(w.Count > 0 && (h.T == w.LastT || h.T == w.FirstT)) {
			d.fail(fmt.Sprintf("inconsistent last histogram at %d of the window ending %d", h.T, w.End))
			return 0
		}
		w.Histograms, w.LastH = count, h
	}
	if d.err != nil {
		return 0
	}
	return int(m)
}

// appendXORFloat appends f XORed with prev: a byte lead<<4|n (lead = the
// leading zero bytes of the XOR, n its significant bytes, 0 when equal) and the
// n significant bytes.
func appendXORFloat(dst []byte, prev, f float64) []byte {
	x := math.Float64bits(f) ^ math.Float64bits(prev)
	if x == 0 {
		return append(dst, 0)
	}
	lead := bits.LeadingZeros64(x) / 8
	trail := bits.TrailingZeros64(x) / 8
	n := 8 - lead - trail
	dst = append(dst, byte(lead<<4|n))
	x >>= 8 * trail
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(x>>(8*i)))
	}
	return dst
}

// valueDecoder reads the varints, bytes and XOR-coded floats of a cell value
// (rollup cells, decimal chunks), refusing what their encoders never write; the
// first error sticks, and later reads return zeros.
type valueDecoder struct {
	b   []byte
	off int
	err error
}

func (d *valueDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	// n > 1 with a last byte of 0 is an overlong encoding, which AppendUvarint
	// never writes.
	if n <= 0 || v > math.MaxInt64/2 || n > 1 && d.b[d.off+n-1] == 0 {
		d.err = fmt.Errorf("bad varint at byte %d: %w", d.off, ErrMalformed)
		return 0
	}
	d.off += n
	return v
}

// varint reads a signed varint, refusing what AppendVarint never writes and
// values beyond ±2^61 (no field of a window needs more).
func (d *valueDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 || v > math.MaxInt64/4 || v < math.MinInt64/4 || n > 1 && d.b[d.off+n-1] == 0 {
		d.err = fmt.Errorf("bad varint at byte %d: %w", d.off, ErrMalformed)
		return 0
	}
	d.off += n
	return v
}

// fail records a malformed value, if nothing did before.
func (d *valueDecoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at byte %d: %w", msg, d.off, ErrMalformed)
	}
}

func (d *valueDecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.err = fmt.Errorf("value ends at byte %d: %w", d.off, ErrMalformed)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *valueDecoder) xorFloat(prev float64) float64 {
	h := d.byte()
	if d.err != nil || h == 0 {
		return prev
	}
	lead, n := int(h>>4), int(h&0x0f)
	if n == 0 || lead+n > 8 || d.off+n > len(d.b) {
		d.err = fmt.Errorf("bad float header %#x at byte %d: %w", h, d.off-1, ErrMalformed)
		return 0
	}
	if sig := d.b[d.off : d.off+n]; sig[0] == 0 || sig[n-1] == 0 {
		// appendXORFloat counts zero bytes at either end in lead or leaves them out.
		d.err = fmt.Errorf("float of bytes %x at byte %d is not canonical: %w", sig, d.off-1, ErrMalformed)
		return 0
	}
	var x uint64
	for _, c := range d.b[d.off : d.off+n] {
		x = x<<8 | uint64(c)
	}
	d.off += n
	x <<= 8 * (8 - lead - n)
	return math.Float64frombits(math.Float64bits(prev) ^ x)
}

// The counter part of a rollup cell holds RollupWindow's counter fields, what
// rate, increase and delta (the engine's extrapolatedRate), irate and idelta
// (instantValue), changes and resets need of a window beyond its other
// fields. It is the cell's last part (EncodeRollupWindows has the layout); a
// cell written before it has none, and its windows decode with HasCounters
// false.

// rollupCountersVersion is the first byte of the counter part: a reader
// refuses a part of another version rather than misread it.
const rollupCountersVersion = 1

// appendRollupCounters appends the counter part of a rollup cell holding ws,
// laid out as EncodeRollupWindows says.
func appendRollupCounters(dst []byte, ws []RollupWindow) []byte {
	dst = append(dst, rollupCountersVersion)
	var prevGap int64
	for _, w := range ws {
		if w.Count == 0 {
			continue
		}
		dst = binary.AppendUvarint(dst, w.Count-1-w.Changes)
		dst = binary.AppendUvarint(dst, uint64(len(w.ResetValues)))
		prev := w.FirstV
		for _, v := range w.ResetValues {
			dst = appendXORFloat(dst, prev, v)
			prev = v
		}
		if w.Count >= 2 {
			gap := w.LastT - w.PrevT
			dst = binary.AppendVarint(dst, gap-prevGap)
			prevGap = gap
			dst = appendXORFloat(dst, w.LastV, w.PrevV)
		}
	}
	return dst
}

// rollupCounters reads the counter part of a rollup cell into ws, whose other
// fields are read, and sets HasCounters on each. It refuses a part
// EncodeRollupWindows would not write for windows AggregateWindows makes: a
// version other than rollupCountersVersion, Changes beyond Count-1, more
// resets than changes, PrevT outside [FirstT, LastT) (FirstT itself when
// Count is 2), PrevV not FirstV's bits when Count is 2, and the counter fields
// that contradict the window's other fields (countersConsistent).
func (d *valueDecoder) rollupCounters(ws []RollupWindow) {
	if v := d.byte(); d.err == nil && v != rollupCountersVersion {
		d.off--
		d.fail(fmt.Sprintf("counter part of version %d", v))
		return
	}
	var prevGap int64
	for i := range ws {
		w := &ws[i]
		w.HasCounters = true
		if w.Count == 0 {
			continue
		}
		unchanged := d.uvarint()
		resets := d.uvarint()
		if d.err != nil {
			return
		}
		if unchanged > w.Count-1 || resets > w.Count-1-unchanged || resets > uint64(len(d.b)-d.off) {
			d.fail(fmt.Sprintf("%d unchanged samples and %d resets of %d samples", unchanged, resets, w.Count))
			return
		}
		w.Changes = w.Count - 1 - unchanged
		if resets > 0 {
			w.ResetValues = make([]float64, resets)
			prev := w.FirstV
			for j := range w.ResetValues {
				w.ResetValues[j] = d.xorFloat(prev)
				prev = w.ResetValues[j]
			}
		}
		if w.Count >= 2 {
			gap := prevGap + d.varint()
			if d.err == nil && (gap <= 0 || gap > w.LastT-w.FirstT || w.Count == 2 && gap != w.LastT-w.FirstT) {
				d.fail(fmt.Sprintf("second-to-last sample %d ms before the last of the window ending %d", gap, w.End))
				return
			}
			prevGap = gap
			w.PrevT = w.LastT - gap
			w.PrevV = d.xorFloat(w.LastV)
			if d.err == nil && w.Count == 2 && math.Float64bits(w.PrevV) != math.Float64bits(w.FirstV) {
				d.fail(fmt.Sprintf("second-to-last value of the two of the window ending %d is not the first", w.End))
			}
		}
		if d.err != nil {
			return
		}
		if !countersConsistent(*w) {
			d.fail(fmt.Sprintf("inconsistent counter fields of the window ending %d", w.End))
			return
		}
	}
}
