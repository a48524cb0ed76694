package otsdbformat

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// encodeCompacted writes points as the compacted column OpenTSDB's
// compaction would (Internal.buildQualifier, CompactionQueue
// buildCompactedColumn): a seconds qualifier where the offset is whole seconds
// that fit in 12 bits, a ms one otherwise; integers and floats on 8 bytes; a
// meta byte at the end when there are several.
func encodeCompacted(pts []Point) (q, v []byte) {
	for _, p := range pts {
		flags := byte(0x7)
		if p.Value.Float {
			flags |= flagFloat
			v = binary.BigEndian.AppendUint64(v, math.Float64bits(p.Value.F))
		} else {
			v = binary.BigEndian.AppendUint64(v, uint64(p.Value.I))
		}
		if p.Offset%1000 == 0 && p.Offset/1000 < 1<<12 {
			q = binary.BigEndian.AppendUint16(q, uint16(p.Offset/1000)<<flagBits|uint16(flags))
		} else {
			q = binary.BigEndian.AppendUint32(q, 0xF0000000|p.Offset<<msFlagBits|uint32(flags))
		}
	}
	if len(pts) > 1 {
		v = append(v, 0)
	}
	return q, v
}

// FuzzDecodeColumn: no column makes DecodeColumn panic; a corrupt one adds
// nothing; an appended one comes out sorted without duplicates; and the points
// of any column, written again as a compacted column, decode to the same
// points, bit for bit.
func FuzzDecodeColumn(f *testing.F) {
	f.Add([]byte{0x00, 0x07}, fromLong(4))
	f.Add([]byte{0x00, 0x2B}, []byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0xF0, 0, 0x02, 0x0F}, fromLong(int64(math.Float64bits(-2.5))))
	f.Add(concat([]byte{0x00, 0x07}, []byte{0xF0, 0, 0x02, 0x07}, []byte{0x00, 0x47}), concat(fromLong(4), fromLong(5), fromLong(6), []byte{1}))
	f.Add(AppendQualifier, concat([]byte{0, 0x20}, []byte{24}, []byte{0xF0, 0, 0x20, 0}, []byte{42}, []byte{0, 0x20}, []byte{7}))
	f.Add([]byte{0x01, 0x00, 0x02}, []byte("Annotation"))
	f.Fuzz(func(t *testing.T, q, v []byte) {
		before := []Point{intPoint(1, 1)}
		pts, kind, err := DecodeColumn(q, v, before)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || len(pts) != 1 {
				t.Fatalf("DecodeColumn(%x, %x): %v with %d points, want ErrCorrupt and the point before", q, v, err, len(pts))
			}
			return
		}
		pts = pts[1:]
		if !kind.HoldsPoints() && len(pts) > 0 {
			t.Fatalf("a %s column gave points %s", kind, pointsString(pts))
		}
		for i := 1; kind == KindAppended && i < len(pts); i++ {
			if pts[i].Offset <= pts[i-1].Offset {
				t.Fatalf("appended points not sorted or not unique: %s", pointsString(pts))
			}
		}
		if len(pts) == 0 {
			return
		}
		cq, cv := encodeCompacted(pts)
		again, _, err := DecodeColumn(cq, cv, nil)
		if err != nil || len(again) != len(pts) {
			t.Fatalf("%s written as %x=%x decodes to %s, %v", pointsString(pts), cq, cv, pointsString(again), err)
		}
		for i, p := range pts {
			if !samePoint(again[i], p) {
				t.Fatalf("%s written as %x=%x: point %d decodes to %v, want %v", pointsString(pts), cq, cv, i, again[i], p)
			}
		}
	})
}

// FuzzDecodeRow: columns cut from the input (a byte of qualifier length, one
// of value length and one of cell timestamp each) decode to points sorted by
// offset, one per offset, each that of the newest column holding one there,
// and the counts add up.
func FuzzDecodeRow(f *testing.F) {
	f.Add([]byte{2, 8, 0, 0x00, 0x07, 0, 0, 0, 0, 0, 0, 0, 4, 4, 8, 1, 0xF0, 0x00, 0x00, 0x07, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add([]byte{3, 4, 2, 0, 0x00, 0x10, 0x00, 0x10, 1, 2, 0, 2, 1, 9, 0x00, 0x10, 7, 3, 3, 1, 0x01, 0, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		var row []Column
		for len(data) >= 3 {
			ql, vl, ts := int(data[0]%16), int(data[1]%32), int64(data[2]%4)
			data = data[3:]
			if len(data) < ql+vl {
				break
			}
			row = append(row, Column{Qualifier: data[:ql], Value: data[ql : ql+vl], Timestamp: ts})
			data = data[ql+vl:]
		}
		var d RowDecoder
		pts, stats, err := d.Decode(row)
		if (err != nil) != (stats.Corrupt > 0) || stats.Points != len(pts) {
			t.Fatalf("Decode: %d points, %+v, %v", len(pts), stats, err)
		}
		// want: per offset, the point of the newest column, first met.
		type best struct {
			p  Point
			ts int64
		}
		want := map[uint32]best{}
		decoded := 0
		for _, c := range row {
			cp, _, err := DecodeColumn(c.Qualifier, c.Value, nil)
			if err != nil {
				continue
			}
			decoded += len(cp)
			for _, p := range cp {
				if b, ok := want[p.Offset]; !ok || c.Timestamp > b.ts {
					want[p.Offset] = best{p, c.Timestamp}
				}
			}
		}
		if stats.Points+stats.Duplicates != decoded || len(want) != len(pts) {
			t.Fatalf("%d points + %d duplicates, %d decoded column by column, %d offsets", stats.Points, stats.Duplicates, decoded, len(want))
		}
		for i, p := range pts {
			if i > 0 && p.Offset <= pts[i-1].Offset {
				t.Fatalf("points not sorted or not unique: %s", pointsString(pts))
			}
			if w := want[p.Offset].p; !samePoint(p, w) {
				t.Fatalf("at %d: %v, want %v (the newest column's)", p.Offset, p.Value, w.Value)
			}
		}
	})
}

// samePoint compares points bit for bit (NaN too).
func samePoint(a, b Point) bool {
	return a.Offset == b.Offset && a.Value.Float == b.Value.Float && a.Value.I == b.Value.I &&
		math.Float64bits(a.Value.F) == math.Float64bits(b.Value.F)
}
