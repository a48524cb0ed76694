package otsdbformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Byte helpers named as OpenTSDB's tests name theirs (org.hbase.async.Bytes,
// MockBase.concatByteArrays), so that the vectors below read as they do there.

func fromLong(v int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func fromInt(v int32) []byte   { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func fromShort(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// zero is the meta byte of a compacted column that mixes nothing (TestInternal.ZERO).
var zero = []byte{0}

func intPoint(offset uint32, v int64) Point { return Point{Offset: offset, Value: Value{I: v}} }
func floatPoint(offset uint32, v float64) Point {
	return Point{Offset: offset, Value: Value{Float: true, F: v}}
}

func pointsString(pts []Point) string {
	var parts []string
	for _, p := range pts {
		if p.Value.Float {
			parts = append(parts, fmt.Sprintf("%d:%v(bits %x)", p.Offset, p.Value.F, math.Float64bits(p.Value.F)))
		} else {
			parts = append(parts, fmt.Sprintf("%d:%d", p.Offset, p.Value.I))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestDecodeColumn decodes single columns with the byte vectors of OpenTSDB
// 2.4.1's test/core/TestInternal.java, TestAppendDataPoints.java and
// TestCompactionQueue.java (the test each comes from in its name), and the
// value widths RowSeq.extractIntegerValue and extractFloatingPointValue read.
func TestDecodeColumn(t *testing.T) {
	// TestAppendDataPoints' qualifiers: 2s, and 128 ms, both a 1-byte integer.
	dpqS, dpqMs := []byte{0, 0x20}, []byte{0xF0, 0, 0x20, 0}
	dpv, dpv2 := []byte{42}, []byte{24}
	for _, tc := range []struct {
		name      string
		qual, val []byte
		kind      Kind
		want      []Point
	}{
		{"getOffsetFromQualifier: {0x00, 0x37} is 3 s", []byte{0x00, 0x37}, fromLong(7), KindSingle, []Point{intPoint(3000, 7)}},
		{"getOffsetFromQualifierMs1ms: {0xF0, 0, 0, 0x47} is 1 ms", []byte{0xF0, 0, 0, 0x47}, fromLong(7), KindSingle, []Point{intPoint(1, 7)}},
		{"getTimestampFromQualifierMs: {0xF0, 0, 0x02, 0x07} is 8 ms", []byte{0xF0, 0, 0x02, 0x07}, fromLong(5), KindSingle, []Point{intPoint(8, 5)}},
		{"a 1-byte integer is signed", []byte{0x00, 0x00}, []byte{0xFF}, KindSingle, []Point{intPoint(0, -1)}},
		{"a 2-byte integer", []byte{0x00, 0x01}, fromShort(-300), KindSingle, []Point{intPoint(0, -300)}},
		{"a 4-byte integer", []byte{0x00, 0x03}, fromInt(70000), KindSingle, []Point{intPoint(0, 70000)}},
		{"an 8-byte integer", []byte{0x00, 0x07}, fromLong(math.MinInt64), KindSingle, []Point{intPoint(0, math.MinInt64)}},
		{"a 4-byte float (flags 0x0B)", []byte{0x00, 0x1B}, fromInt(int32(math.Float32bits(4.2))), KindSingle,
			[]Point{floatPoint(1000, float64(float32(4.2)))}},
		{"an 8-byte float (flags 0x0F)", []byte{0x00, 0x1F}, fromLong(int64(math.Float64bits(0.1))), KindSingle, []Point{floatPoint(1000, 0.1)}},
		{"a ms float", []byte{0xF0, 0, 0x02, 0x0F}, fromLong(int64(math.Float64bits(-2.5))), KindSingle, []Point{floatPoint(8, -2.5)}},
		{"the last second of an hour, 3599 s", []byte{0xE0, 0xF0}, []byte{1}, KindSingle, []Point{intPoint(3599000, 1)}},
		{"the last ms of an hour, 3599999 ms", fromInt(int32(-0x10000000 | 3599999<<6 | 0x1)), fromShort(2), KindSingle, []Point{intPoint(3599999, 2)}},
		{"extractDataPointsFixQualifierFlags: {0x00, 0x27} says 8 bytes, the value is 4", []byte{0x00, 0x27}, fromInt(5), KindSingle, []Point{intPoint(2000, 5)}},
		{"extractDataPointsFixQualifierFlags: {0x00, 0x43} says 4 bytes, the value is 8", []byte{0x00, 0x43}, fromLong(6), KindSingle, []Point{intPoint(4000, 6)}},
		{"extractDataPointsFixFloatingPointValue: {0x00, 0x0F} an 8-byte float", []byte{0x00, 0x0F}, []byte{0, 0, 0, 0, 0, 0, 0, 1}, KindSingle,
			[]Point{floatPoint(0, math.Float64frombits(1))}},
		{"extractDataPointsFixFloatingPointValue: {0x00, 0x2B} a 4-byte float in 8", []byte{0x00, 0x2B}, []byte{0, 0, 0, 0, 0, 0, 0, 1}, KindSingle,
			[]Point{floatPoint(2000, float64(math.Float32frombits(1)))}},
		{"extractDataPointsFixFloatingPointValue: {0x00, 0x4B} a 4-byte float", []byte{0x00, 0x4B}, []byte{0, 0, 0, 1}, KindSingle,
			[]Point{floatPoint(4000, float64(math.Float32frombits(1)))}},
		{"TestCompactionQueue.fixFloatingPoint: 4.2F stored as a long", []byte{0x00, 0x1B}, fromLong(int64(math.Float32bits(4.2))), KindSingle,
			[]Point{floatPoint(1000, float64(float32(4.2)))}},
		{"a ms point reads the bytes its flags say", []byte{0xF0, 0, 0x02, 0x00}, []byte{3, 9}, KindSingle, []Point{intPoint(8, 3)}},
		{"extractDataPointsCompactSeconds", concat([]byte{0x00, 0x07}, []byte{0x00, 0x27}, []byte{0x00, 0x47}),
			concat(fromLong(4), fromLong(5), fromLong(6), zero), KindCompacted, []Point{intPoint(0, 4), intPoint(2000, 5), intPoint(4000, 6)}},
		{"extractDataPointsCompactSecondsSorting: in the column's order", concat([]byte{0x00, 0x47}, []byte{0x00, 0x07}, []byte{0x00, 0x27}),
			concat(fromLong(6), fromLong(4), fromLong(5), zero), KindCompacted, []Point{intPoint(4000, 6), intPoint(0, 4), intPoint(2000, 5)}},
		{"extractDataPointsCompactMs", concat([]byte{0xF0, 0, 0, 0x07}, []byte{0xF0, 0, 0x02, 0x07}, []byte{0xF0, 0, 0x07, 0x07}),
			concat(fromLong(4), fromLong(5), fromLong(6), zero), KindCompacted, []Point{intPoint(0, 4), intPoint(8, 5), intPoint(28, 6)}},
		{"extractDataPointsCompactSecAndMs", concat([]byte{0x00, 0x07}, []byte{0xF0, 0, 0x02, 0x07}, []byte{0x00, 0x47}),
			concat(fromLong(4), fromLong(5), fromLong(6), []byte{1}), KindCompacted, []Point{intPoint(0, 4), intPoint(8, 5), intPoint(4000, 6)}},
		{"a compacted column of two seconds points in a 4-byte qualifier", concat([]byte{0x00, 0x00}, []byte{0x00, 0x1B}),
			concat([]byte{7}, fromInt(int32(math.Float32bits(1.5))), zero), KindCompacted, []Point{intPoint(0, 7), floatPoint(1000, 1.5)}},
		{"getOffsetFromQualifierMs2: two ms points, 8 and 12", concat([]byte{0xF0, 0, 0x02, 0x07}, []byte{0xF0, 0, 0x03, 0x07}),
			concat(fromLong(1), fromLong(2), zero), KindCompacted, []Point{intPoint(8, 1), intPoint(12, 2)}},
		{"TestAppendDataPoints.parseKeyValue: seconds", AppendQualifier, concat(dpqS, dpv), KindAppended, []Point{intPoint(2000, 42)}},
		{"TestAppendDataPoints.parseKeyValue: ms", AppendQualifier, concat(dpqMs, dpv), KindAppended, []Point{intPoint(128, 42)}},
		{"TestAppendDataPoints.parseKeyValue: some odd offset", []byte{PrefixAppend, 42, 42}, concat(dpqMs, dpv), KindAppended, []Point{intPoint(128, 42)}},
		{"TestAppendDataPoints.parseKeyValue: two", AppendQualifier, concat(dpqMs, dpv, dpqS, dpv2), KindAppended,
			[]Point{intPoint(128, 42), intPoint(2000, 24)}},
		{"TestAppendDataPoints.parseKeyValue: out of order", AppendQualifier, concat(dpqS, dpv2, dpqMs, dpv), KindAppended,
			[]Point{intPoint(128, 42), intPoint(2000, 24)}},
		{"TestAppendDataPoints.parseKeyValue: duplicates", AppendQualifier, concat(dpqMs, dpv, dpqS, dpv2, dpqS, dpv2), KindAppended,
			[]Point{intPoint(128, 42), intPoint(2000, 24)}},
		{"TestAppendDataPoints.parseKeyValue: duplicates and out of order", AppendQualifier,
			concat(dpqS, dpv2, dpqMs, dpv, dpqMs, dpv, dpqS, dpv2, dpqMs, dpv), KindAppended, []Point{intPoint(128, 42), intPoint(2000, 24)}},
		{"an appended point replaces an earlier one at its offset", AppendQualifier, concat(dpqS, dpv, dpqS, dpv2), KindAppended,
			[]Point{intPoint(2000, 24)}},
		{"TestCompactionQueue.appendsAndLaterPuts' append", AppendQualifier,
			concat([]byte{0x00, 0x07}, fromLong(42), []byte{0x00, 0x17}, fromLong(5)), KindAppended, []Point{intPoint(0, 42), intPoint(1000, 5)}},
		{"TestInternal.extractDataPointsMixSecondsMs: an annotation", []byte{0x01, 0x00, 0x02}, []byte("Annotation"), KindAnnotation, nil},
		{"a ms annotation", []byte{0x01, 0x00, 0x00, 0x00, 0x02}, []byte(`{"description":"x"}`), KindAnnotation, nil},
		{"a histogram", []byte{PrefixHistogram, 0x00, 0x02}, []byte{0, 1, 2}, KindHistogram, nil},
		{"another odd-length qualifier", []byte{0x02, 0x00, 0x02}, []byte{1}, KindOther, nil},
		{"an empty qualifier", nil, []byte{1}, KindOther, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, kind, err := DecodeColumn(tc.qual, tc.val, nil)
			if err != nil || kind != tc.kind || pointsString(got) != pointsString(tc.want) {
				t.Fatalf("DecodeColumn(%x, %x) = %s, %s, %v; want %s, %s", tc.qual, tc.val, pointsString(got), kind, err,
					pointsString(tc.want), tc.kind)
			}
		})
	}
}

// TestDecodeColumnCorrupt: what OpenTSDB refuses with an IllegalDataException
// (or an index out of bounds) is ErrCorrupt, saying what is wrong, and adds no
// point.
func TestDecodeColumnCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qual, val []byte
		want      string
	}{
		{"extractDataPointsFixFloatingPointValueCorrupt: a float in 8 bytes whose first 4 are not zeros",
			[]byte{0x00, 0x2B}, []byte{0, 2, 0, 0, 0, 0, 0, 1},
			"otsdbformat: single column 002b=0002000000000001: not OpenTSDB's format: a float flagged as 4 bytes in 8 whose first 4 are not zeros"},
		{"extractDataPointsCompactCorrupt: a value longer than its flags say",
			concat([]byte{0x00, 0x07}, []byte{0xF0, 0x00, 0x02, 0x07}, []byte{0x00, 0x41}), concat(fromLong(4), fromLong(5), fromLong(6), zero),
			"otsdbformat: compacted column 0007f00002070041=000000000000000400000000000000050000000000000006" +
				"00: not OpenTSDB's format: the points take 18 bytes of the value's 25, want all but the meta byte"},
		{"a compacted column without its meta byte", concat([]byte{0x00, 0x07}, []byte{0x00, 0x17}), concat(fromLong(4), fromLong(5)),
			"otsdbformat: compacted column 00070017=00000000000000040000000000000005: not OpenTSDB's format: the points take 16 bytes " +
				"of the value's 16, want all but the meta byte"},
		{"a compacted column cut in a ms qualifier", []byte{0x00, 0x00, 0xF0, 0x00}, []byte{1, 2, 0},
			"otsdbformat: compacted column 0000f000=010200: not OpenTSDB's format: point at qualifier byte 2, value byte 1: " +
				"a millisecond qualifier of 2 bytes"},
		{"a 3-byte integer in a compacted column", concat([]byte{0x00, 0x02}, []byte{0x00, 0x10}), []byte{1, 2, 3, 4, 0},
			"otsdbformat: compacted column 00020010=0102030400: not OpenTSDB's format: point at qualifier byte 0, value byte 0: " +
				"an integer of 3 bytes, not 1, 2, 4 or 8"},
		{"a 2-byte float", []byte{0x00, 0x09}, []byte{1, 2},
			"otsdbformat: single column 0009=0102: not OpenTSDB's format: a float of 2 bytes, not 4 or 8"},
		{"an empty value", []byte{0x00, 0x00}, nil,
			"otsdbformat: single column 0000=: not OpenTSDB's format: a value of 0 bytes"},
		{"a value of 9 bytes", []byte{0x00, 0x07}, make([]byte, 9),
			"otsdbformat: single column 0007=000000000000000000: not OpenTSDB's format: a value of 9 bytes"},
		{"a ms point shorter than its flags", []byte{0xF0, 0, 0, 0x07}, []byte{1},
			"otsdbformat: single column f0000007=01: not OpenTSDB's format: 1 value bytes left where the flags 0x7 say 8"},
		{"appended points cut short", AppendQualifier, concat([]byte{0x00, 0x07}, []byte{1, 2}),
			"otsdbformat: appended column 050000=00070102: not OpenTSDB's format: point at value byte 0: 2 value bytes left " +
				"where the flags 0x7 say 8"},
		{"TestAppendDataPoints.parseKeyValueCorrupt: an append qualifier of 5 bytes", []byte{PrefixAppend, 0, 0, 0, 0}, []byte{0, 0x20, 42},
			"otsdbformat: appended column 0500000000=00202a: not OpenTSDB's format: an append qualifier of 5 bytes, want 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := []Point{intPoint(1, 1)}
			got, _, err := DecodeColumn(tc.qual, tc.val, before)
			if !errors.Is(err, ErrCorrupt) || err.Error() != tc.want || len(got) != 1 {
				t.Fatalf("DecodeColumn(%x, %x) = %s, %v; want the point before it alone and\n%s", tc.qual, tc.val,
					pointsString(got), err, tc.want)
			}
		})
	}
}
