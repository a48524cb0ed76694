package kv

import (
	"bytes"
	"fmt"
)

// ReadOption tunes a Get, GetRows or Scan, in the manner of gohbase's hrpc options.
type ReadOption func(*ReadOptions)

// ReadOptions is the resolved form of a list of ReadOption; backends read it through
// NewReadOptions. The zero value reads every family, the newest version of each
// column, all timestamps, without limits or filters.
type ReadOptions struct {
	// Families to read; empty means all.
	Families []string
	// MinTimestamp and MaxTimestamp bound cell timestamps to the half-open range
	// [MinTimestamp, MaxTimestamp), as HBase's TimeRange does.
	MinTimestamp, MaxTimestamp int64
	// MaxVersions is how many versions of each column to return [1]; a family's own
	// MaxVersions still caps it. Versions beyond the family's MaxVersions are gone:
	// a TimeRange that excludes the newest versions does not bring older ones back
	// (on HBase it might until the next flush; never rely on it).
	MaxVersions int
	// RowLimit ends a scan after this many rows (0: no limit). Get and GetRows
	// ignore RowLimit and CellLimit.
	RowLimit int
	// CellLimit ends a scan once this many cells were returned; the row that reaches
	// the limit is cut short (0: no limit).
	CellLimit int
	// Filters are applied on the server, all of them (logical AND).
	Filters []Filter
}

// NewReadOptions resolves options and checks them, wrapping ErrInvalidArgument.
func NewReadOptions(opts ...ReadOption) (ReadOptions, error) {
	o := ReadOptions{MaxTimestamp: MaxTimestamp + 1, MaxVersions: 1}
	for _, opt := range opts {
		opt(&o)
	}
	if o.MinTimestamp < 0 || o.MinTimestamp >= o.MaxTimestamp {
		return o, fmt.Errorf("%w: empty or negative time range [%d, %d)", ErrInvalidArgument, o.MinTimestamp, o.MaxTimestamp)
	}
	if o.MaxVersions < 1 || o.RowLimit < 0 || o.CellLimit < 0 {
		return o, fmt.Errorf("%w: MaxVersions must be >= 1 and limits >= 0", ErrInvalidArgument)
	}
	for _, f := range o.Filters {
		if err := f.validate(o.Families); err != nil {
			return o, err
		}
	}
	return o, nil
}

// WantsFamily reports whether the options select family f.
func (o ReadOptions) WantsFamily(f string) bool {
	if len(o.Families) == 0 {
		return true
	}
	for _, name := range o.Families {
		if name == f {
			return true
		}
	}
	return false
}

// Families reads only the named column families.
func Families(names ...string) ReadOption {
	return func(o *ReadOptions) { o.Families = append(o.Families, names...) }
}

// TimeRange reads only cells with from <= timestamp < until (milliseconds).
func TimeRange(from, until int64) ReadOption {
	return func(o *ReadOptions) { o.MinTimestamp, o.MaxTimestamp = from, until }
}

// MaxVersions returns up to n versions of each column, newest first.
func MaxVersions(n int) ReadOption {
	return func(o *ReadOptions) { o.MaxVersions = n }
}

// RowLimit ends a scan after n rows.
func RowLimit(n int) ReadOption {
	return func(o *ReadOptions) { o.RowLimit = n }
}

// CellLimit ends a scan after n cells.
func CellLimit(n int) ReadOption {
	return func(o *ReadOptions) { o.CellLimit = n }
}

// WithFilter adds a server-side filter; several filters must all pass.
func WithFilter(f Filter) ReadOption {
	return func(o *ReadOptions) { o.Filters = append(o.Filters, f) }
}

// Filter is a server-side filter: one of ColumnValueFilter, KeyOnlyFilter or
// ColumnRangeFilter.
type Filter interface {
	validate(families []string) error
}

// CompareOp is how a ColumnValueFilter compares.
type CompareOp uint8

// Comparison operators of ColumnValueFilter.
const (
	Equal CompareOp = iota + 1
	NotEqual
)

// ColumnValueFilter keeps a row only if the newest version of one column compares to
// Value with Op — HBase's SingleColumnValueFilter. A row without the column is kept
// unless FilterIfMissing. The column's family must be read (selected by Families,
// or no family selection), or the filter could not see it: NewReadOptions rejects it.
type ColumnValueFilter struct {
	Family          string
	Qualifier       []byte
	Op              CompareOp
	Value           []byte
	FilterIfMissing bool
}

func (f ColumnValueFilter) validate(families []string) error {
	if f.Family == "" {
		return fmt.Errorf("%w: column value filter without a family", ErrInvalidArgument)
	}
	if f.Op != Equal && f.Op != NotEqual {
		return fmt.Errorf("%w: column value filter with unknown operator %d", ErrInvalidArgument, f.Op)
	}
	if !(ReadOptions{Families: families}).WantsFamily(f.Family) {
		return fmt.Errorf("%w: column value filter on family %s, which the read does not select", ErrInvalidArgument, f.Family)
	}
	return nil
}

// Matches applies the filter to the row's newest value of the column (nil, false if
// absent); it defines the semantics both backends implement.
func (f ColumnValueFilter) Matches(value []byte, present bool) bool {
	if !present {
		return !f.FilterIfMissing
	}
	eq := bytes.Equal(value, f.Value)
	if f.Op == Equal {
		return eq
	}
	return !eq
}

// KeyOnlyFilter returns cells with empty values (HBase's KeyOnlyFilter), for reads
// that need only keys, qualifiers and timestamps.
type KeyOnlyFilter struct{}

func (KeyOnlyFilter) validate([]string) error { return nil }

// ColumnRangeFilter keeps only cells whose qualifier lies between Min and Max (in
// every family), HBase's ColumnRangeFilter. A nil bound is open.
type ColumnRangeFilter struct {
	Min          []byte
	MinInclusive bool
	Max          []byte
	MaxInclusive bool
}

func (ColumnRangeFilter) validate([]string) error { return nil }

// Contains reports whether qualifier q lies in the range.
func (f ColumnRangeFilter) Contains(q []byte) bool {
	if f.Min != nil {
		c := bytes.Compare(q, f.Min)
		if c < 0 || (c == 0 && !f.MinInclusive) {
			return false
		}
	}
	if f.Max != nil {
		c := bytes.Compare(q, f.Max)
		if c > 0 || (c == 0 && !f.MaxInclusive) {
			return false
		}
	}
	return true
}
