package otsdbformat

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Qualifier bits (Const).
const (
	flagBits   = 4    // Const.FLAG_BITS: flags of a seconds qualifier
	msFlagBits = 6    // Const.MS_FLAG_BITS: flags and reserved bits of a ms qualifier
	flagFloat  = 0x8  // Const.FLAG_FLOAT
	lengthMask = 0x7  // Const.LENGTH_MASK
	flagsMask  = 0xF  // Const.FLAGS_MASK
	msByteFlag = 0xF0 // Const.MS_BYTE_FLAG
)

// First bytes of odd-length qualifiers.
const (
	PrefixAnnotation = 0x01 // Annotation.PREFIX
	PrefixAppend     = 0x05 // AppendDataPoints.APPEND_COLUMN_PREFIX
	PrefixHistogram  = 0x06 // HistogramDataPoint.PREFIX
)

// AppendQualifier is the qualifier of appended data points
// (AppendDataPoints.APPEND_COLUMN_QUALIFIER).
var AppendQualifier = []byte{PrefixAppend, 0x00, 0x00}

// Kind is what a column of the data family holds.
type Kind uint8

// Kinds of column.
const (
	// KindSingle is one data point: a 2-byte (seconds) or 4-byte (ms) qualifier.
	KindSingle Kind = iota
	// KindCompacted is several data points in one column, as compaction writes them.
	KindCompacted
	// KindAppended is appended data points (qualifier 0x05 0x00 0x00).
	KindAppended
	// KindAnnotation is an annotation (prefix 0x01), not a data point.
	KindAnnotation
	// KindHistogram is a histogram data point (prefix 0x06), which hbtsdb does
	// not import.
	KindHistogram
	// KindOther is any other odd-length qualifier.
	KindOther

	// NumKinds is the number of kinds, for arrays indexed by Kind.
	NumKinds = int(KindOther) + 1
)

var kindNames = [NumKinds]string{"single", "compacted", "appended", "annotation", "histogram", "other"}

func (k Kind) String() string {
	if int(k) < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// HoldsPoints reports whether columns of kind k hold data points that are
// imported.
func (k Kind) HoldsPoints() bool { return k <= KindAppended }

// Value is a data point's value as OpenTSDB stored it.
type Value struct {
	// Float says the value is a floating-point number, F; otherwise it is the
	// integer I.
	Float bool
	I     int64
	F     float64
}

// Float64 is the value as a float64: an integer converted (rounded to
// nearest when beyond 2^53), a float as it is (a 4-byte float widened
// exactly).
func (v Value) Float64() float64 {
	if v.Float {
		return v.F
	}
	return float64(v.I)
}

func (v Value) String() string {
	if v.Float {
		return fmt.Sprintf("%v(float)", v.F)
	}
	return fmt.Sprintf("%d", v.I)
}

// Point is one data point of a row.
type Point struct {
	// Offset is the point's time after the row's base time, in milliseconds
	// (a seconds point's is whole seconds). A ms qualifier has 22 bits for it,
	// so it can lie beyond the row's hour, as OpenTSDB would read it.
	Offset uint32
	Value  Value
}

// ClassifyQualifier is the kind of a data family column by its qualifier.
// An empty qualifier is KindOther.
func ClassifyQualifier(q []byte) Kind {
	switch {
	case len(q) == 0:
		return KindOther
	case len(q)%2 == 0:
		if len(q) == 2 || (len(q) == 4 && isMs(q[0])) {
			return KindSingle
		}
		return KindCompacted
	case q[0] == PrefixAppend:
		return KindAppended
	case q[0] == PrefixAnnotation:
		return KindAnnotation
	case q[0] == PrefixHistogram:
		return KindHistogram
	}
	return KindOther
}

// DecodeColumn appends the data points of one column of the data family to
// dst, in the column's order (an appended column's sorted and without
// duplicates), and returns them with the column's kind. A column of a kind
// without points adds nothing. A column that does not decode is an error
// wrapping ErrCorrupt, and dst is returned as it came.
func DecodeColumn(qualifier, value []byte, dst []Point) ([]Point, Kind, error) {
	kind := ClassifyQualifier(qualifier)
	n := len(dst)
	var err error
	switch kind {
	case KindSingle:
		dst, err = decodeSingle(qualifier, value, dst)
	case KindCompacted:
		dst, err = decodeCompacted(qualifier, value, dst)
	case KindAppended:
		dst, err = decodeAppended(qualifier, value, dst)
	}
	if err != nil {
		return dst[:n], kind, fmt.Errorf("otsdbformat: %s column %x=%x: %w: %s", kind, qualifier, value, ErrCorrupt, err.Error())
	}
	return dst, kind, nil
}

// isMs reports whether a qualifier starting with b is in milliseconds
// (Internal.inMilliseconds).
func isMs(b byte) bool { return b&msByteFlag == msByteFlag }

// decodeSingle decodes a 2-byte or 4-byte qualifier's one point, fixing a
// seconds point's flags and float as Internal.extractDataPoints and
// ColumnDatapointIterator.checkForFixup do.
func decodeSingle(q, v []byte, dst []Point) ([]Point, error) {
	if len(q) == 4 {
		// A ms point needs no fixing ("since ms support is new"); its value is
		// read as long as its flags say, as RowSeq reads it.
		val, _, err := pointValue(q[3]&flagsMask, v)
		if err != nil {
			return dst, err
		}
		return append(dst, Point{Offset: msOffset(q), Value: val}), nil
	}
	flags := q[1] & flagsMask
	if flags&flagFloat != 0 && flags&lengthMask == 0x3 && len(v) == 8 {
		// Internal.fixFloatingPointValue: a float of 4 bytes stored in 8.
		if v[0]|v[1]|v[2]|v[3] != 0 {
			return dst, fmt.Errorf("a float flagged as 4 bytes in 8 whose first 4 are not zeros")
		}
		v = v[4:]
	}
	if len(v) < 1 || len(v) > 8 {
		return dst, fmt.Errorf("a value of %d bytes", len(v))
	}
	// Internal.fixQualifierFlags: the length is the value's own.
	flags = flags&^lengthMask | byte(len(v)-1)
	val, err := decodeValue(flags, v)
	if err != nil {
		return dst, err
	}
	return append(dst, Point{Offset: secondsOffset(q), Value: val}), nil
}

// decodeCompacted decodes a compacted column (Internal.extractDataPoints):
// every value as long as its flags say, and then one meta byte.
func decodeCompacted(q, v []byte, dst []Point) ([]Point, error) {
	vi := 0
	for qi := 0; qi < len(q); {
		off, flags, qn, err := pointQualifier(q[qi:])
		var val Value
		var vn int
		if err == nil {
			val, vn, err = pointValue(flags, v[vi:])
		}
		if err != nil {
			return dst, fmt.Errorf("point at qualifier byte %d, value byte %d: %s", qi, vi, err.Error())
		}
		dst = append(dst, Point{Offset: off, Value: val})
		qi, vi = qi+qn, vi+vn
	}
	if vi != len(v)-1 {
		return dst, fmt.Errorf("the points take %d bytes of the value's %d, want all but the meta byte", vi, len(v))
	}
	return dst, nil
}

// decodeAppended decodes appended points (AppendDataPoints.parseKeyValue):
// qualifier-value pairs filling the whole value; a later pair at an offset
// replaces an earlier one; sorted by offset.
func decodeAppended(q, v []byte, dst []Point) ([]Point, error) {
	if len(q) != len(AppendQualifier) {
		// AppendDataPoints.parseKeyValue: "it is not an appended cell".
		return dst, fmt.Errorf("an append qualifier of %d bytes, want 3", len(q))
	}
	start := len(dst)
	for vi := 0; vi < len(v); {
		off, flags, qn, err := pointQualifier(v[vi:])
		var val Value
		var vn int
		if err == nil {
			val, vn, err = pointValue(flags, v[vi+qn:])
		}
		if err != nil {
			return dst, fmt.Errorf("point at value byte %d: %s", vi, err.Error())
		}
		dst = append(dst, Point{Offset: off, Value: val})
		vi += qn + vn
	}
	pts := dst[start:]
	// Stable: of equal offsets the last appended is last, and kept.
	slices.SortStableFunc(pts, func(a, b Point) int { return cmp.Compare(a.Offset, b.Offset) })
	out := pts[:0]
	for i, p := range pts {
		if i+1 < len(pts) && pts[i+1].Offset == p.Offset {
			continue
		}
		out = append(out, p)
	}
	return dst[:start+len(out)], nil
}

// pointQualifier reads the 2-byte or 4-byte qualifier that starts q: the
// point's offset, its flags and the qualifier's length.
func pointQualifier(q []byte) (offset uint32, flags byte, n int, err error) {
	if len(q) < 2 {
		return 0, 0, 0, fmt.Errorf("a qualifier of %d bytes", len(q))
	}
	if !isMs(q[0]) {
		return secondsOffset(q), q[1] & flagsMask, 2, nil
	}
	if len(q) < 4 {
		return 0, 0, 0, fmt.Errorf("a millisecond qualifier of %d bytes", len(q))
	}
	return msOffset(q), q[3] & flagsMask, 4, nil
}

// pointValue decodes the value that starts v, as long as flags say, and
// returns it with that length.
func pointValue(flags byte, v []byte) (Value, int, error) {
	n := int(flags&lengthMask) + 1
	if len(v) < n {
		return Value{}, 0, fmt.Errorf("%d value bytes left where the flags 0x%x say %d", len(v), flags, n)
	}
	val, err := decodeValue(flags, v[:n])
	return val, n, err
}

// secondsOffset is a 2-byte qualifier's offset in ms
// (Internal.getOffsetFromQualifier).
func secondsOffset(q []byte) uint32 {
	return uint32(binary.BigEndian.Uint16(q)>>flagBits) * 1000
}

// msOffset is a 4-byte qualifier's offset in ms
// (Internal.getOffsetFromQualifier).
func msOffset(q []byte) uint32 {
	return (binary.BigEndian.Uint32(q) & 0x0FFFFFC0) >> msFlagBits
}

// decodeValue decodes v, exactly as long as flags say, as
// RowSeq.extractIntegerValue and extractFloatingPointValue do.
func decodeValue(flags byte, v []byte) (Value, error) {
	if flags&flagFloat != 0 {
		switch len(v) {
		case 8:
			return Value{Float: true, F: math.Float64frombits(binary.BigEndian.Uint64(v))}, nil
		case 4:
			return Value{Float: true, F: float64(math.Float32frombits(binary.BigEndian.Uint32(v)))}, nil
		}
		return Value{}, fmt.Errorf("a float of %d bytes, not 4 or 8", len(v))
	}
	switch len(v) {
	case 8:
		return Value{I: int64(binary.BigEndian.Uint64(v))}, nil
	case 4:
		return Value{I: int64(int32(binary.BigEndian.Uint32(v)))}, nil
	case 2:
		return Value{I: int64(int16(binary.BigEndian.Uint16(v)))}, nil
	case 1:
		return Value{I: int64(int8(v[0]))}, nil
	}
	return Value{}, fmt.Errorf("an integer of %d bytes, not 1, 2, 4 or 8", len(v))
}
