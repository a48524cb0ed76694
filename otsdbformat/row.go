package otsdbformat

import (
	"cmp"
	"slices"
)

// Column is one cell of a data row as read from HBase.
type Column struct {
	Qualifier, Value []byte
	// Timestamp is the HBase cell's timestamp: of two columns holding a point
	// at one time, the newer one's is kept.
	Timestamp int64
}

// RowStats counts what RowDecoder.Decode saw of one row (or, added up, of
// many).
type RowStats struct {
	// Columns counts the columns by kind, corrupt ones included.
	Columns [NumKinds]int
	// Corrupt counts the columns that did not decode; their points are left
	// out.
	Corrupt int
	// Points counts the points returned.
	Points int
	// Duplicates counts the points left out because another column (or an
	// earlier place in a malformed compacted column) held one at the same
	// time.
	Duplicates int
}

// Add adds o to s.
func (s *RowStats) Add(o RowStats) {
	for i := range s.Columns {
		s.Columns[i] += o.Columns[i]
	}
	s.Corrupt += o.Corrupt
	s.Points += o.Points
	s.Duplicates += o.Duplicates
}

// RowDecoder decodes data rows, reusing its memory from row to row. The zero
// value is ready; it is not safe for concurrent use.
type RowDecoder struct {
	pts, tmp []Point
	from     []origin
	idx      []int
}

// origin is where a decoded point came from: its column's timestamp and its
// place in the row.
type origin struct {
	ts  int64
	col int
}

// Decode returns the data points of a row's columns (its family t),
// sorted by offset, one per offset: where columns overlap, the point of the
// column with the newest Timestamp, and of equal timestamps the one met first
// (see the package doc). Columns that do not decode are counted and left
// out; err is the first of their errors (wrapping ErrCorrupt), for the
// caller to report. The points are valid until the next Decode.
func (d *RowDecoder) Decode(cols []Column) (pts []Point, stats RowStats, err error) {
	d.pts, d.from = d.pts[:0], d.from[:0]
	sorted := true
	for i, c := range cols {
		before := len(d.pts)
		var kind Kind
		var cerr error
		d.pts, kind, cerr = DecodeColumn(c.Qualifier, c.Value, d.pts)
		stats.Columns[kind]++
		if cerr != nil {
			stats.Corrupt++
			if err == nil {
				err = cerr
			}
			continue
		}
		for j := before; j < len(d.pts); j++ {
			d.from = append(d.from, origin{ts: c.Timestamp, col: i})
			if j > 0 && d.pts[j].Offset <= d.pts[j-1].Offset {
				sorted = false
			}
		}
	}
	decoded := len(d.pts)
	if !sorted {
		d.merge()
	}
	stats.Points = len(d.pts)
	stats.Duplicates = decoded - len(d.pts)
	return d.pts, stats, err
}

// merge sorts d.pts by offset, newest column first, and keeps the first point
// of each offset.
func (d *RowDecoder) merge() {
	d.idx = d.idx[:0]
	for i := range d.pts {
		d.idx = append(d.idx, i)
	}
	slices.SortStableFunc(d.idx, func(a, b int) int {
		if c := cmp.Compare(d.pts[a].Offset, d.pts[b].Offset); c != 0 {
			return c
		}
		if c := cmp.Compare(d.from[b].ts, d.from[a].ts); c != 0 { // newest first
			return c
		}
		return cmp.Compare(d.from[a].col, d.from[b].col)
	})
	out := d.tmp[:0]
	for _, i := range d.idx {
		if n := len(out); n > 0 && out[n-1].Offset == d.pts[i].Offset {
			continue
		}
		out = append(out, d.pts[i])
	}
	d.pts, d.tmp = out, d.pts
}
