package schema

import (
	"fmt"
	"slices"
	"strings"
)

// Series registry rows: table TableSeries.
//
//	forward  row = 0x01 | canonical labels   family "i", qualifier "id", value seriesID(8)
//	reverse  row = 0x02 | seriesID(8)        family "l", qualifier "l",  value canonical labels
//	counter  row = 0x00 "next-id"            family "i", qualifier "next",
//	               value = highest series ID handed out, 8-byte big-endian signed
//	               (the encoding of HBase's Increment)
//
// canonical labels = for each label in ascending name order: esc(name) 0x00 esc(value) 0x00
//
// Series IDs, by the store's format version (settings.go):
//
//	counter IDs         1 .. 2^63-1   handed out by the counter row (format 1; on
//	                                  format 2 only for hash collisions)
//	hash-derived IDs    2^63 .. 2^64-1 = XXH64(forward row key, seed 0) | 1<<63
//	                                  (format 2; index.Registry)
//
// The two ranges are disjoint, and neither holds 0. A hash-derived ID is a
// candidate: the series gets it unless the reverse row of that ID already holds
// another label set (then it takes a counter ID). Either way the forward row
// says which ID a series has; nothing may recompute it from the labels.
//
// Invariants:
//
//   - The canonical encoding is a function of the label set: names sorted, no name
//     twice, no empty name or value (Prometheus treats a label with an empty value
//     as absent; drop such labels before encoding). So equal label sets, and only
//     they, have equal forward rows, which is what lets check-and-put on the forward
//     row decide the race between two writers registering the same series (format
//     1), and what makes a hash-derived ID the same in every process (format 2).
//   - The first byte tells the kind of row, and the kinds do not interleave: the
//     counter sorts first, then every forward row, then every reverse row.
//   - Series IDs start at 1; 0 is never assigned and every decoder rejects it. A
//     writer reserves a block of n IDs with Increment(counter, n) = last: the IDs
//     last-n+1 .. last are its own. IDs are unique, not dense: codecs treat them as
//     opaque 8-byte big-endian numbers (all of 1 .. 2^64-1 is valid).
//   - Nothing deletes or expires series table rows (its families have no TTL):
//     format 2's collision check relies on a reverse row, once written, staying.
//   - DecodeLabels accepts exactly the canonical form, so decoded labels re-encode to
//     the same bytes.

// Kinds of series registry rows: their first byte. The counter row's is 0x00,
// spelled out in SeriesCounterRow.
const (
	SeriesForwardKind byte = 0x01
	SeriesReverseKind byte = 0x02
)

// Series registry columns.
const (
	// SeriesCounterRow is the row key of the series ID counter.
	SeriesCounterRow = "\x00next-id"
	// FamilySeriesID holds the forward mapping and the counter.
	FamilySeriesID = "i"
	// FamilySeriesLabels holds the reverse mapping.
	FamilySeriesLabels = "l"
	// QualifierSeriesID is the forward row's column: the series ID.
	QualifierSeriesID = "id"
	// QualifierSeriesLabels is the reverse row's column: the canonical labels.
	QualifierSeriesLabels = "l"
	// QualifierNextID is the counter row's column.
	QualifierNextID = "next"
)

// Label is one label pair of a series.
type Label struct {
	Name, Value string
}

// LabelsLen is the length of the canonical encoding of lbls, for sizing a buffer.
func LabelsLen(lbls []Label) int {
	n := 0
	for _, l := range lbls {
		n += EscapedLen(l.Name) + EscapedLen(l.Value)
	}
	return n
}

// AppendLabels appends the canonical encoding of lbls to dst. lbls need not be
// sorted (AppendLabels sorts a copy if they are not, leaving lbls as they are); it
// allocates nothing for sorted labels and a dst with spare capacity. It fails,
// wrapping ErrMalformed, on an empty label set, an empty name or value, or a name
// given twice, and then returns dst unchanged.
func AppendLabels(dst []byte, lbls []Label) ([]byte, error) {
	if len(lbls) == 0 {
		return dst, fmt.Errorf("schema: empty label set: %w", ErrMalformed)
	}
	if !slices.IsSortedFunc(lbls, compareLabelNames) {
		lbls = slices.Clone(lbls)
		slices.SortFunc(lbls, compareLabelNames)
	}
	for i, l := range lbls {
		switch {
		case l.Name == "":
			return dst, fmt.Errorf("schema: label with an empty name (value %q): %w", l.Value, ErrMalformed)
		case l.Value == "":
			return dst, fmt.Errorf("schema: label %q with an empty value: %w", l.Name, ErrMalformed)
		case i > 0 && lbls[i-1].Name == l.Name:
			return dst, fmt.Errorf("schema: label %q given twice: %w", l.Name, ErrMalformed)
		}
	}
	for _, l := range lbls {
		dst = AppendEscaped(dst, l.Name)
		dst = AppendEscaped(dst, l.Value)
	}
	return dst, nil
}

func compareLabelNames(a, b Label) int { return strings.Compare(a.Name, b.Name) }

// DecodeLabels decodes a canonical label encoding. It fails, wrapping ErrMalformed,
// on anything AppendLabels would not have written: bad escaping, a name without a
// value, names out of order or repeated, empty names or values, an empty input.
// The strings share one allocation.
func DecodeLabels(b []byte) ([]Label, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("schema: empty label set: %w", ErrMalformed)
	}
	// Count the labels first so that the slice is allocated once: every label ends
	// with exactly two terminators, and escaped bytes contain no 0x00.
	zeros := 0
	for _, c := range b {
		if c == fieldEnd {
			zeros++
		}
	}
	if zeros%2 != 0 || b[len(b)-1] != fieldEnd {
		return nil, fmt.Errorf("schema: labels: a name without a value: %w", ErrMalformed)
	}
	lbls := make([]Label, 0, zeros/2)
	s := string(b)
	for len(s) > 0 {
		name, n, err := unescape(s)
		if err != nil {
			return nil, fmt.Errorf("schema: label name: %w", err)
		}
		s = s[n:]
		value, n, err := unescape(s)
		if err != nil {
			return nil, fmt.Errorf("schema: value of label %q: %w", name, err)
		}
		s = s[n:]
		switch {
		case name == "":
			return nil, fmt.Errorf("schema: label with an empty name: %w", ErrMalformed)
		case value == "":
			return nil, fmt.Errorf("schema: label %q with an empty value: %w", name, ErrMalformed)
		case len(lbls) > 0 && lbls[len(lbls)-1].Name >= name:
			return nil, fmt.Errorf("schema: label %q after %q: names out of order or repeated: %w", name, lbls[len(lbls)-1].Name, ErrMalformed)
		}
		lbls = append(lbls, Label{Name: name, Value: value})
	}
	return lbls, nil
}

// SeriesForwardRow appends the forward registry row key of a label set,
// 0x01 | canonical labels, to dst. It fails as AppendLabels does.
func SeriesForwardRow(dst []byte, lbls []Label) ([]byte, error) {
	out, err := AppendLabels(append(dst, SeriesForwardKind), lbls)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// ParseSeriesForwardRow decodes the labels of a forward registry row key. It fails,
// wrapping ErrMalformed, on another kind of row or a non-canonical label encoding.
func ParseSeriesForwardRow(b []byte) ([]Label, error) {
	if len(b) == 0 || b[0] != SeriesForwardKind {
		return nil, fmt.Errorf("schema: not a forward series row: %w", ErrMalformed)
	}
	return DecodeLabels(b[1:])
}

// SeriesReverseRow appends the reverse registry row key of a series,
// 0x02 | seriesID(8), to dst.
func SeriesReverseRow(dst []byte, seriesID uint64) []byte {
	return AppendSeriesID(append(dst, SeriesReverseKind), seriesID)
}

// ParseSeriesReverseRow decodes the series ID of a reverse registry row key. It
// fails, wrapping ErrMalformed, on another kind of row, a wrong length or ID 0.
func ParseSeriesReverseRow(b []byte) (uint64, error) {
	if len(b) == 0 || b[0] != SeriesReverseKind {
		return 0, fmt.Errorf("schema: not a reverse series row: %w", ErrMalformed)
	}
	return DecodeSeriesID(b[1:])
}
