package otsdbformat

import (
	"errors"
	"math"
	"testing"
)

// cols is a row of columns whose cell timestamp is the next of a counter, as
// TestCompactionQueue.makekv gives each KeyValue kvCount++: a later column
// is newer.
type cols struct{ list []Column }

func (c *cols) add(qual, val []byte) *cols {
	c.list = append(c.list, Column{Qualifier: qual, Value: val, Timestamp: int64(len(c.list))})
	return c
}

// TestDecodeRow merges the columns of rows as OpenTSDB 2.4.1's compaction
// does, with the rows of test/core/TestCompactionQueue.java and
// TestInternal.java (named after their tests).
func TestDecodeRow(t *testing.T) {
	q := func(b ...byte) []byte { return b }
	for _, tc := range []struct {
		name  string
		row   *cols
		want  []Point
		stats RowStats
	}{
		{"emptyRow", &cols{}, nil, RowStats{}},
		{"oneCellRow", new(cols).add(q(0x00, 0x03), []byte{0x00, 0x00, 0x00, 0x2A}), []Point{intPoint(0, 42)},
			RowStats{Columns: [NumKinds]int{KindSingle: 1}, Points: 1}},
		{"TestInternal.extractDataPointsFixQualifierFlags",
			new(cols).add(q(0x00, 0x07), fromLong(4)).add(q(0x00, 0x27), fromInt(5)).add(q(0x00, 0x43), fromLong(6)),
			[]Point{intPoint(0, 4), intPoint(2000, 5), intPoint(4000, 6)}, RowStats{Columns: [NumKinds]int{KindSingle: 3}, Points: 3}},
		{"TestInternal.extractDataPointsMixSecondsMs: the annotation is counted, not decoded",
			new(cols).add(q(0x00, 0x27), fromLong(4)).add(q(0x01, 0x00, 0x02), []byte("Annotation")).add(q(0x00, 0x47), fromLong(6)),
			[]Point{intPoint(2000, 4), intPoint(4000, 6)}, RowStats{Columns: [NumKinds]int{KindSingle: 2, KindAnnotation: 1}, Points: 2}},
		{"TestInternal.extractDataPointsWithNonDataColumnsSort: ms and seconds sorted",
			new(cols).add(q(0x00, 0x47), fromLong(6)).add(q(0xF0, 0x00, 0x02, 0x07), fromLong(5)).add(q(0x00, 0x07), fromLong(4)),
			[]Point{intPoint(0, 4), intPoint(8, 5), intPoint(4000, 6)}, RowStats{Columns: [NumKinds]int{KindSingle: 3}, Points: 3}},
		{"TestInternal.extractDataPointsCompactSecondsSorting",
			new(cols).add(concat(q(0x00, 0x47), q(0x00, 0x07), q(0x00, 0x27)), concat(fromLong(6), fromLong(4), fromLong(5), zero)),
			[]Point{intPoint(0, 4), intPoint(2000, 5), intPoint(4000, 6)}, RowStats{Columns: [NumKinds]int{KindCompacted: 1}, Points: 3}},
		{"msSameAsSecondFix: the newer column's point, in ms, is kept",
			new(cols).add(q(0x00, 0x07), fromLong(4)).add(q(0xF0, 0x00, 0x00, 0x07), fromLong(5)),
			[]Point{intPoint(0, 5)}, RowStats{Columns: [NumKinds]int{KindSingle: 2}, Points: 1, Duplicates: 1}},
		{"overlappingDataPointsFix: the newer 4-byte encoding of the same point is kept",
			new(cols).add(q(0x00, 0x07), fromLong(4)).add(q(0x00, 0x03), fromInt(4)),
			[]Point{intPoint(0, 4)}, RowStats{Columns: [NumKinds]int{KindSingle: 2}, Points: 1, Duplicates: 1}},
		{"a newer column wins whatever its place in the row",
			new(cols).add(q(0x00, 0x07), fromLong(9)).add(q(0x00, 0x03), fromInt(4)).add(q(0x00, 0x00), q(1)),
			[]Point{intPoint(0, 1)}, RowStats{Columns: [NumKinds]int{KindSingle: 3}, Points: 1, Duplicates: 2}},
		{"fixQualifierFlags", new(cols).add(q(0x00, 0x03), fromLong(4)).add(q(0x00, 0x17), fromLong(5)),
			[]Point{intPoint(0, 4), intPoint(1000, 5)}, RowStats{Columns: [NumKinds]int{KindSingle: 2}, Points: 2}},
		{"fixFloatingPoint", new(cols).add(q(0x00, 0x07), fromLong(4)).add(q(0x00, 0x1B), fromLong(int64(math.Float32bits(4.2)))),
			[]Point{intPoint(0, 4), floatPoint(1000, float64(float32(4.2)))}, RowStats{Columns: [NumKinds]int{KindSingle: 2}, Points: 2}},
		{"failedCompactNoop: the compacted column and the cells it was made of",
			new(cols).add(q(0x00, 0x07), fromLong(4)).add(concat(q(0x00, 0x07), q(0x00, 0x17)), concat(fromLong(4), fromLong(5), zero)).
				add(q(0x00, 0x17), fromLong(5)),
			[]Point{intPoint(0, 4), intPoint(1000, 5)},
			RowStats{Columns: [NumKinds]int{KindSingle: 2, KindCompacted: 1}, Points: 2, Duplicates: 2}},
		{"weirdOverlappingCompactedCells",
			new(cols).add(q(0x00, 0x07), fromLong(4)).
				add(concat(q(0x00, 0x07), q(0x00, 0x27)), concat(fromLong(4), fromLong(5), zero)).
				add(concat(q(0x00, 0x07), q(0x00, 0x17)), concat(fromLong(4), fromLong(6), zero)).
				add(q(0x00, 0x17), fromLong(6)).add(q(0x00, 0x27), fromLong(5)),
			[]Point{intPoint(0, 4), intPoint(1000, 6), intPoint(2000, 5)},
			RowStats{Columns: [NumKinds]int{KindSingle: 3, KindCompacted: 2}, Points: 3, Duplicates: 4}},
		{"secondCompactMixedMSAndS: a compacted column and newer single cells of both resolutions",
			new(cols).add(concat(q(0x00, 0x07), q(0xF0, 0x00, 0x02, 0x07)), concat(fromLong(4), fromLong(5), []byte{1})).
				add(q(0x00, 0x27), fromLong(6)).add(q(0xF0, 0x00, 0x07, 0x07), fromLong(7)),
			[]Point{intPoint(0, 4), intPoint(8, 5), intPoint(28, 7), intPoint(2000, 6)},
			RowStats{Columns: [NumKinds]int{KindSingle: 2, KindCompacted: 1}, Points: 4}},
		{"appendsAndLaterPuts",
			new(cols).add(AppendQualifier, concat(q(0x00, 0x07), fromLong(42), q(0x00, 0x17), fromLong(5))).
				add(q(0x00, 0x27), fromLong(3)).add(q(0x00, 0x37), fromLong(2)),
			[]Point{intPoint(0, 42), intPoint(1000, 5), intPoint(2000, 3), intPoint(3000, 2)},
			RowStats{Columns: [NumKinds]int{KindSingle: 2, KindAppended: 1}, Points: 4}},
		{"appendsDuplicatePuts",
			new(cols).add(AppendQualifier, concat(q(0x00, 0x07), fromLong(42), q(0x00, 0x17), fromLong(5))).
				add(q(0x00, 0x07), fromLong(42)).add(q(0x00, 0x17), fromLong(5)),
			[]Point{intPoint(0, 42), intPoint(1000, 5)},
			RowStats{Columns: [NumKinds]int{KindSingle: 2, KindAppended: 1}, Points: 2, Duplicates: 2}},
		{"appendsDuplicateCompacted",
			new(cols).add(AppendQualifier, concat(q(0x00, 0x07), fromLong(42), q(0x00, 0x17), fromLong(5))).
				add(concat(q(0x00, 0x07), q(0x00, 0x17)), concat(fromLong(42), fromLong(5), zero)),
			[]Point{intPoint(0, 42), intPoint(1000, 5)},
			RowStats{Columns: [NumKinds]int{KindCompacted: 1, KindAppended: 1}, Points: 2, Duplicates: 2}},
		{"a malformed compacted column with one offset twice keeps its first",
			new(cols).add(concat(q(0x00, 0x10), q(0x00, 0x10)), concat(q(1), q(2), zero)),
			[]Point{intPoint(1000, 1)}, RowStats{Columns: [NumKinds]int{KindCompacted: 1}, Points: 1, Duplicates: 1}},
		{"annotations, a histogram and others only",
			new(cols).add(q(0x01, 0x00, 0x00), []byte("{}")).add(q(0x02, 0x00, 0x00), q(1)).add(q(0x06, 0x00, 0x00), q(1)).add(q(0x09), q(1)),
			nil, RowStats{Columns: [NumKinds]int{KindAnnotation: 1, KindHistogram: 1, KindOther: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d RowDecoder
			got, stats, err := d.Decode(tc.row.list)
			if pointsString(got) != pointsString(tc.want) || stats != tc.stats || (err != nil) != (tc.stats.Corrupt > 0) {
				t.Fatalf("Decode = %s, %+v, %v; want %s, %+v", pointsString(got), stats, err, pointsString(tc.want), tc.stats)
			}
		})
	}
}

// TestDecodeRowSkipsCorruptColumns: the points of the other columns are
// returned; the first corrupt column is the error.
func TestDecodeRowSkipsCorruptColumns(t *testing.T) {
	row := new(cols).add([]byte{0x00, 0x07}, fromLong(4)).
		add([]byte{0x00, 0x2B}, []byte{0, 2, 0, 0, 0, 0, 0, 1}).
		add([]byte{0x00, 0x37}, fromLong(6)).
		add([]byte{0x00, 0x42}, []byte{1, 2, 3, 4, 5, 6})
	var d RowDecoder
	got, stats, err := d.Decode(row.list)
	want := "otsdbformat: single column 002b=0002000000000001: not OpenTSDB's format: a float flagged as 4 bytes in 8 whose first 4 are not zeros"
	if pointsString(got) != "[0:4 3000:6]" || stats.Corrupt != 2 || stats.Points != 2 || !errors.Is(err, ErrCorrupt) || err.Error() != want {
		t.Fatalf("Decode = %s, %+v, %v; want [0:4 3000:6], 2 corrupt, and %s", pointsString(got), stats, err, want)
	}
	// The decoder's memory is reused: a second row is decoded alone.
	got, stats, err = d.Decode(new(cols).add([]byte{0x00, 0x10}, []byte{9}).list)
	if pointsString(got) != "[1000:9]" || stats.Points != 1 || err != nil {
		t.Fatalf("second Decode = %s, %+v, %v; want [1000:9]", pointsString(got), stats, err)
	}
}

func TestRowStatsAdd(t *testing.T) {
	s := RowStats{Columns: [NumKinds]int{KindSingle: 1}, Points: 1}
	s.Add(RowStats{Columns: [NumKinds]int{KindSingle: 2, KindAppended: 1}, Corrupt: 1, Points: 3, Duplicates: 4})
	if want := (RowStats{Columns: [NumKinds]int{KindSingle: 3, KindAppended: 1}, Corrupt: 1, Points: 4, Duplicates: 4}); s != want {
		t.Fatalf("Add = %+v, want %+v", s, want)
	}
}
