package kv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"
)

// MaxTimestamp is the largest cell timestamp a Store accepts, in milliseconds.
// HBase reserves math.MaxInt64 (LATEST_TIMESTAMP) to mean "the server's now", so it
// is not a usable explicit timestamp.
const MaxTimestamp int64 = math.MaxInt64 - 1

// MaxRowKeyLen is the longest row key HBase accepts (Short.MAX_VALUE bytes).
const MaxRowKeyLen = math.MaxInt16

// Sentinel errors. Implementations wrap them with context; callers use errors.Is.
var (
	// ErrTableNotFound: the table does not exist (create it with EnsureTable).
	ErrTableNotFound = errors.New("table not found")
	// ErrUnavailable: the store cannot be reached or is overloaded right now; the
	// operation may succeed if retried later.
	ErrUnavailable = errors.New("store unavailable")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("store closed")
	// ErrInvalidArgument: the request itself is malformed (empty row key, unknown
	// family, negative timestamp, ...); retrying it will not help.
	ErrInvalidArgument = errors.New("invalid argument")
)

// Store is one wide-column store: embedded (Pebble) or Apache HBase.
// All methods are safe for concurrent use.
type Store interface {
	Admin

	// Apply writes mutations to one table. See the package doc for atomicity: on any
	// error the caller must assume none of the batch is stored. When some mutations
	// failed and others did not, the error is a *BatchError naming each failure.
	Apply(ctx context.Context, table string, mutations []Mutation) error

	// Get reads one row. A missing row is a Row with no cells, not an error.
	Get(ctx context.Context, table string, row []byte, opts ...ReadOption) (Row, error)

	// GetRows reads several rows of one table in one round trip where the backend
	// allows it. The result has one Row per requested key, in request order.
	GetRows(ctx context.Context, table string, rows [][]byte, opts ...ReadOption) ([]Row, error)

	// Scan streams the rows with start <= key < stop in ascending key order. A nil
	// start means the first row of the table, a nil stop the end of the table
	// (PrefixEnd gives the stop of a prefix scan). The scan holds a bounded amount of
	// memory however many rows it covers; the caller must Close it.
	Scan(ctx context.Context, table string, start, stop []byte, opts ...ReadOption) Scanner

	// Increment atomically adds delta to the 8-byte big-endian signed integer in
	// (row, family, qualifier), treating an absent cell as 0, and returns the new
	// value. The cell is written with the store's current time as its timestamp.
	// A cell that is not 8 bytes long is an ErrInvalidArgument.
	Increment(ctx context.Context, table string, row []byte, family string, qualifier []byte, delta int64) (int64, error)

	// CheckAndPut applies put (which must be a KindPut mutation) only if the newest
	// visible value of the cell it addresses equals expected, atomically with
	// respect to every other write to that row. A nil or empty expected means "the
	// cell is absent (or empty)", as in HBase. It reports whether put was applied.
	CheckAndPut(ctx context.Context, table string, expected []byte, put Mutation) (bool, error)

	// Ping reports whether the store answers, within ctx's deadline.
	Ping(ctx context.Context) error

	// Close releases the store; it waits for background work to finish. Every call
	// after Close fails with ErrClosed.
	Close() error
}

// Admin manages tables.
type Admin interface {
	// EnsureTable creates the table if it does not exist and reports whether it did.
	// An existing table is left as it is, even if its families differ from spec.
	EnsureTable(ctx context.Context, spec TableSpec) (created bool, err error)
	// DropTable deletes a table and all its data; ErrTableNotFound if it is absent.
	DropTable(ctx context.Context, name string) error
	// ListTables returns the names of the tables of this store, sorted.
	ListTables(ctx context.Context) ([]string, error)
}

// TableSpec describes a table to create. Name is the logical name ("data"); a backend
// may map it to a physical name (kv/hbase adds a prefix).
type TableSpec struct {
	Name     string
	Families []FamilySpec
	// SplitKeys pre-split the table into len(SplitKeys)+1 regions on HBase, so that
	// writes spread over region servers from the start. Sorted, no duplicates.
	SplitKeys [][]byte
}

// FamilySpec is a column family's settings. Zero values mean the defaults given.
type FamilySpec struct {
	Name string
	// MaxVersions is how many versions of a column are kept and readable [1].
	MaxVersions int
	// TTL hides and eventually removes cells whose timestamp + TTL is before now.
	// Zero keeps cells forever. It must be a whole number of seconds, HBase's unit.
	TTL time.Duration
	// Compression of HBase store files: NONE, SNAPPY, GZ, LZ4, ZSTD [NONE].
	Compression string
	// BlockEncoding of HBase data blocks: NONE, PREFIX, DIFF, FAST_DIFF, ROW_INDEX_V1 [NONE].
	BlockEncoding string
	// BloomFilter of HBase store files: NONE, ROW, ROWCOL [ROW].
	BloomFilter string
	// InMemoryCompaction is HBase's IN_MEMORY_COMPACTION of the family: NONE,
	// BASIC, EAGER or ADAPTIVE ["": the region server's default, NONE unless
	// hbase.hregion.compacting.memstore.type says otherwise].
	InMemoryCompaction string
}

// Validate reports what is wrong with a table spec, wrapping ErrInvalidArgument.
func (s TableSpec) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("%w: table name is empty", ErrInvalidArgument)
	}
	if len(s.Families) == 0 {
		return fmt.Errorf("%w: table %s has no families", ErrInvalidArgument, s.Name)
	}
	seen := make(map[string]bool, len(s.Families))
	for _, f := range s.Families {
		if f.Name == "" || strings.ContainsAny(f.Name, ":") {
			return fmt.Errorf("%w: table %s: family name %q is empty or contains ':'", ErrInvalidArgument, s.Name, f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("%w: table %s: family %s declared twice", ErrInvalidArgument, s.Name, f.Name)
		}
		seen[f.Name] = true
		if f.MaxVersions < 0 || f.TTL < 0 {
			return fmt.Errorf("%w: table %s: family %s has a negative MaxVersions or TTL", ErrInvalidArgument, s.Name, f.Name)
		}
		if f.TTL%time.Second != 0 {
			return fmt.Errorf("%w: table %s: family %s TTL %s is not a whole number of seconds (HBase counts TTL in seconds)",
				ErrInvalidArgument, s.Name, f.Name, f.TTL)
		}
	}
	for i := 1; i < len(s.SplitKeys); i++ {
		if string(s.SplitKeys[i-1]) >= string(s.SplitKeys[i]) {
			return fmt.Errorf("%w: table %s: split keys not sorted and unique at %d", ErrInvalidArgument, s.Name, i)
		}
	}
	return nil
}

// Family returns the named family of the spec.
func (s TableSpec) Family(name string) (FamilySpec, bool) {
	for _, f := range s.Families {
		if f.Name == name {
			return f, true
		}
	}
	return FamilySpec{}, false
}

// Versions is MaxVersions with its default applied.
func (f FamilySpec) Versions() int {
	if f.MaxVersions <= 0 {
		return 1
	}
	return f.MaxVersions
}

// Cell is one versioned value.
type Cell struct {
	Family    string
	Qualifier []byte
	// Timestamp in milliseconds since the Unix epoch.
	Timestamp int64
	Value     []byte
}

// Row is a row key and its cells, ordered by family, qualifier, then timestamp
// newest first. A Row returned by a Store belongs to the caller.
type Row struct {
	Key   []byte
	Cells []Cell
}

// Scanner iterates over the rows of a Scan. Typical use:
//
//	sc := st.Scan(ctx, table, start, stop)
//	defer sc.Close()
//	for sc.Next() {
//		row := sc.Row()
//	}
//	if err := sc.Err(); err != nil { ... }
type Scanner interface {
	// Next advances to the next row and reports whether there is one.
	Next() bool
	// Row is the current row; it stays valid after Next.
	Row() Row
	// Err is the error that ended the scan early, if any.
	Err() error
	// Close releases the scan; it is safe to call more than once.
	Close() error
}

// MutationKind says what a Mutation does.
type MutationKind uint8

// Mutation kinds, mirroring HBase's Put and Delete types. Each delete states what
// it leaves behind, counted by Tombstones (see the package doc, Deletes).
const (
	// KindPut writes Value at (Row, Family, Qualifier, Timestamp). It leaves no
	// tombstone.
	KindPut MutationKind = iota + 1
	// KindDeleteColumn removes every version of (Row, Family, Qualifier) with a
	// timestamp <= Timestamp (HBase DeleteColumns).
	//
	// Cost: HBase writes one DeleteColumn marker (1 point tombstone); the
	// embedded store reads the column and writes one point deletion per version
	// it removes (n versions: n point tombstones, none if the column is empty).
	KindDeleteColumn
	// KindDeleteFamily removes every cell of (Row, Family) with a timestamp <= Timestamp.
	//
	// Cost: HBase writes one DeleteFamily marker (1 range tombstone). The
	// embedded store writes 1 range deletion when Timestamp is MaxTimestamp;
	// below it, it reads the family and writes one range deletion per run of
	// consecutive removed cells (a run of one cell: a point deletion), so a
	// family whose removed cells are not interleaved with newer ones costs 1
	// range tombstone, and one with nothing to remove costs none.
	KindDeleteFamily
	// KindDeleteRow removes every cell of Row with a timestamp <= Timestamp.
	//
	// Cost: as KindDeleteFamily over the whole row; counted as 1 range tombstone
	// on HBase (whose region server expands it into one DeleteFamily marker per
	// family of the table).
	KindDeleteRow
)

func (k MutationKind) String() string {
	switch k {
	case KindPut:
		return "put"
	case KindDeleteColumn:
		return "delete-column"
	case KindDeleteFamily:
		return "delete-family"
	case KindDeleteRow:
		return "delete-row"
	}
	return fmt.Sprintf("mutation-kind(%d)", uint8(k))
}

// Mutation is one change to one row: a put of one cell or a delete. Build it with
// Put, DeleteColumn, DeleteFamily or DeleteRow.
type Mutation struct {
	Kind      MutationKind
	Row       []byte
	Family    string
	Qualifier []byte
	// Timestamp of the cell written, or for deletes the newest timestamp removed;
	// milliseconds in [0, MaxTimestamp].
	Timestamp int64
	Value     []byte
}

// Put writes value at (row, family, qualifier) with the cell timestamp ts (ms).
func Put(row []byte, family string, qualifier []byte, ts int64, value []byte) Mutation {
	return Mutation{Kind: KindPut, Row: row, Family: family, Qualifier: qualifier, Timestamp: ts, Value: value}
}

// DeleteColumn removes all versions of one column with timestamps <= upTo.
func DeleteColumn(row []byte, family string, qualifier []byte, upTo int64) Mutation {
	return Mutation{Kind: KindDeleteColumn, Row: row, Family: family, Qualifier: qualifier, Timestamp: upTo}
}

// DeleteFamily removes all cells of one family of a row with timestamps <= upTo.
func DeleteFamily(row []byte, family string, upTo int64) Mutation {
	return Mutation{Kind: KindDeleteFamily, Row: row, Family: family, Timestamp: upTo}
}

// DeleteRow removes all cells of a row with timestamps <= upTo.
func DeleteRow(row []byte, upTo int64) Mutation {
	return Mutation{Kind: KindDeleteRow, Row: row, Timestamp: upTo}
}

// Validate reports what is wrong with a mutation, wrapping ErrInvalidArgument.
func (m Mutation) Validate() error {
	switch {
	case len(m.Row) == 0:
		return fmt.Errorf("%w: %s with an empty row key", ErrInvalidArgument, m.Kind)
	case len(m.Row) > MaxRowKeyLen:
		return fmt.Errorf("%w: %s row key of %d bytes exceeds %d", ErrInvalidArgument, m.Kind, len(m.Row), MaxRowKeyLen)
	case m.Timestamp < 0 || m.Timestamp > MaxTimestamp:
		return fmt.Errorf("%w: %s timestamp %d outside [0, %d]", ErrInvalidArgument, m.Kind, m.Timestamp, MaxTimestamp)
	}
	switch m.Kind {
	case KindPut, KindDeleteColumn, KindDeleteFamily:
		if m.Family == "" {
			return fmt.Errorf("%w: %s without a family", ErrInvalidArgument, m.Kind)
		}
	case KindDeleteRow:
	default:
		return fmt.Errorf("%w: unknown mutation kind %d", ErrInvalidArgument, m.Kind)
	}
	return nil
}

// Tombstones counts what the deletes a store applied left behind, since it was opened.
type Tombstones struct {
	// Point: tombstones or delete markers that each cover one column or one cell version
	// (embedded: Pebble point deletions; HBase: Delete/DeleteColumn markers, one per column).
	Point int64
	// Range: tombstones that cover many cells at once (embedded: Pebble range deletions;
	// HBase: DeleteFamily markers and whole-row deletes, one per row and family).
	Range int64
}

// TombstoneCounter is implemented by stores that count their tombstones (both backends do).
type TombstoneCounter interface{ Tombstones() Tombstones }

// TombstoneTotals adds up Tombstones as a store applies deletes; safe for
// concurrent use. The zero value counts from zero.
type TombstoneTotals struct{ point, ranges atomic.Int64 }

// Add counts n.
func (t *TombstoneTotals) Add(n Tombstones) {
	if n.Point != 0 {
		t.point.Add(n.Point)
	}
	if n.Range != 0 {
		t.ranges.Add(n.Range)
	}
}

// Load returns the totals so far.
func (t *TombstoneTotals) Load() Tombstones {
	return Tombstones{Point: t.point.Load(), Range: t.ranges.Load()}
}

// HeadStats is what a store keeps in memory behind a log of its own instead of
// in its files (the embedded store's head), and what it has moved from there
// into its files to stay within its bounds.
type HeadStats struct {
	Rows, Cells int64 // held now
	Bytes       int64 // memory the held cells take
	LogBytes    int64 // the head's log on disk
	LogSegments int64
	// FlushedRows and FlushedCells were written into the store's files since
	// it was opened, because the head was over its memory or log bound.
	FlushedRows, FlushedCells int64
	// ReplayedRecords is how many log records the store replayed when it opened.
	ReplayedRecords int64
}

// HeadReporter is implemented by stores that may have a head; ok is false
// when this one has none.
type HeadReporter interface {
	HeadStats() (st HeadStats, ok bool)
}

// Exclusive is implemented by stores that one process at a time has open (the
// embedded store holds its directory's lock): what a process caches about the
// store's contents needs no agreement with other processes.
type Exclusive interface {
	Exclusive() bool
}

// BatchError reports which mutations of an Apply failed. Mutations not listed may or
// may not have been applied (HBase applies rows independently).
type BatchError struct {
	Failed []MutationError
	Total  int
}

// MutationError is the failure of the mutation at Index of an Apply batch.
type MutationError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string {
	if len(e.Failed) == 0 {
		return "batch failed"
	}
	return fmt.Sprintf("%d of %d mutations failed, first at index %d: %v",
		len(e.Failed), e.Total, e.Failed[0].Index, e.Failed[0].Err)
}

// Unwrap exposes every failure to errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

// PrefixEnd returns the smallest key greater than every key with the given prefix,
// for use as a scan's stop key. Trailing 0xFF bytes are dropped before incrementing;
// a prefix of only 0xFF bytes (or an empty one) has no end and yields nil, which
// means "to the end of the table".
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
