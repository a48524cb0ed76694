package otsdbimport

import (
	"sync/atomic"

	"github.com/hbtsdb/hbtsdb/otsdbformat"
)

// Stats counts what an import read of OpenTSDB's tables and what it left
// out; every field is safe to read while the import runs. What was written
// is in importer.Progress (Options.Import.Progress).
type Stats struct {
	// Rows counts the data rows read (skipped ones included).
	Rows atomic.Int64
	// Points counts the points decoded from the rows imported.
	Points atomic.Int64
	// Columns counts the data table's columns by kind (corrupt ones
	// included): the single, compacted and appended ones hold the points;
	// annotations, histograms and others are skipped.
	Columns [otsdbformat.NumKinds]atomic.Int64
	// CorruptColumns counts the columns that did not decode (skipped).
	CorruptColumns atomic.Int64
	// DuplicatePoints counts the points skipped because another column of
	// their row held one at the same time (the newest column's is kept).
	DuplicatePoints atomic.Int64
	// UnknownUIDRows counts the rows skipped because the UID table does not
	// name their metric or a tag's UID; UnknownUIDPoints their points.
	UnknownUIDRows, UnknownUIDPoints atomic.Int64
	// BadKeyRows counts the rows skipped because their key is not an
	// OpenTSDB row key of the layout given.
	BadKeyRows atomic.Int64
	// GlobalAnnotationRows counts the rows of global annotations (metric UID
	// zero), which hold no points.
	GlobalAnnotationRows atomic.Int64
}

// addRow counts one decoded row.
func (s *Stats) addRow(rs otsdbformat.RowStats) {
	for k, n := range rs.Columns {
		if n > 0 {
			s.Columns[k].Add(int64(n))
		}
	}
	if rs.Corrupt > 0 {
		s.CorruptColumns.Add(int64(rs.Corrupt))
	}
	if rs.Duplicates > 0 {
		s.DuplicatePoints.Add(int64(rs.Duplicates))
	}
}
