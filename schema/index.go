package schema

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Tag index rows: table TableIndex, family FamilyPostings.
//
//	row       = day(4) | esc(labelName) 0x00 | esc(labelValue) 0x00
//	qualifier = seriesID(8)
//	value     = empty
//
// One row is the posting list of one label pair on one day: a qualifier per series
// that had a sample with that label pair on that day.
//
// Invariants:
//
//   - day is a big-endian uint32 count of whole UTC days since the Unix epoch
//     (Day), so the rows of one day are one contiguous range (IndexDayPrefix) and days
//     sort in time order.
//   - name and value are escaped and terminated (escape.go): rows sort by
//     (day, name, value); all values of one label on one day are one range
//     (IndexLabelPrefix), and so are the values that begin with a given string
//     (IndexValuePrefix, for regex matchers with a literal prefix).
//   - the qualifier is the big-endian series ID, so a posting list comes back sorted
//     by series ID, ready to intersect.
//   - neither name nor value is empty: Prometheus treats a label with an empty value
//     as absent, and such a label is never indexed.
//   - the index family's TTL is a day longer than the longest retention of raw
//     data and rollups (TableOptions.IndexRetention), and
//     postings are written with a timestamp no earlier than DayStart(day)
//     (PostingTimestamp: DayStart(day) plus the index generation, indexgen.go),
//     so a posting outlives every sample of its day.

// dayMillis is the length of a day in milliseconds.
const dayMillis = 24 * 60 * 60 * 1000

// Day is the index day of timestamp ts (milliseconds since the Unix epoch): the number
// of whole UTC days since the epoch. Timestamps below 0 map to day 0 and those after
// the last day a uint32 can count (in the year 11,761,191) to math.MaxUint32, so Day
// is monotonic over every int64.
func Day(ts int64) uint32 {
	if ts < 0 {
		return 0
	}
	d := ts / dayMillis
	if d > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(d)
}

// DayStart is the first millisecond of day.
func DayStart(day uint32) int64 {
	return int64(day) * dayMillis
}

// IndexKey is the decoded form of a tag index row key.
type IndexKey struct {
	// Day counts UTC days since the Unix epoch (see Day).
	Day uint32
	// Name and Value are the label pair; neither is empty.
	Name, Value string
}

// IndexRowKey appends the index row key of k to dst and returns the extended slice;
// it allocates nothing when dst has enough spare capacity.
func IndexRowKey(dst []byte, k IndexKey) []byte {
	dst = IndexLabelPrefix(dst, k.Day, k.Name)
	return AppendEscaped(dst, k.Value)
}

// ParseIndexRowKey decodes an index row key. It fails, wrapping ErrMalformed, on a key
// shorter than a day, bad escaping, an empty name or value, or bytes after the value.
func ParseIndexRowKey(b []byte) (IndexKey, error) {
	var k IndexKey
	if len(b) < 4 {
		return k, fmt.Errorf("schema: index row key of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	k.Day = binary.BigEndian.Uint32(b)
	rest := b[4:]
	name, n, err := Unescape(rest)
	if err != nil {
		return k, fmt.Errorf("schema: index row key label name: %w", err)
	}
	rest = rest[n:]
	value, n, err := Unescape(rest)
	if err != nil {
		return k, fmt.Errorf("schema: index row key label value: %w", err)
	}
	switch {
	case n != len(rest):
		return k, fmt.Errorf("schema: index row key has %d bytes after the label value: %w", len(rest)-n, ErrMalformed)
	case name == "":
		return k, fmt.Errorf("schema: index row key with an empty label name: %w", ErrMalformed)
	case value == "":
		return k, fmt.Errorf("schema: index row key with an empty value for label %q: %w", name, ErrMalformed)
	}
	k.Name, k.Value = name, value
	return k, nil
}

// IndexDayPrefix appends day(4) to dst: the prefix of every index row of one day.
func IndexDayPrefix(dst []byte, day uint32) []byte {
	return binary.BigEndian.AppendUint32(dst, day)
}

// IndexLabelPrefix appends day(4) | esc(name) 0x00 to dst: the prefix of the index
// rows of every value of one label on one day.
func IndexLabelPrefix(dst []byte, day uint32, name string) []byte {
	dst = IndexDayPrefix(dst, day)
	return AppendEscaped(dst, name)
}

// IndexValuePrefix appends day(4) | esc(name) 0x00 | esc(valuePrefix), without a
// terminator, to dst: the prefix of the index rows of the values of one label on one
// day that begin with valuePrefix. With an empty valuePrefix it equals
// IndexLabelPrefix.
func IndexValuePrefix(dst []byte, day uint32, name, valuePrefix string) []byte {
	dst = IndexLabelPrefix(dst, day, name)
	return appendEsc(dst, valuePrefix)
}

// SeriesIDLen is the size of an encoded series ID.
const SeriesIDLen = 8

// AppendSeriesID appends the 8-byte big-endian series ID to dst. The same encoding is
// the index qualifier, the registry's forward value and the reverse row's suffix.
func AppendSeriesID(dst []byte, seriesID uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, seriesID)
}

// DecodeSeriesID decodes an 8-byte big-endian series ID. It fails, wrapping
// ErrMalformed, on another length or on ID 0, which is never assigned.
func DecodeSeriesID(b []byte) (uint64, error) {
	if len(b) != SeriesIDLen {
		return 0, fmt.Errorf("schema: series ID of %d bytes, want %d: %w", len(b), SeriesIDLen, ErrMalformed)
	}
	id := binary.BigEndian.Uint64(b)
	if id == 0 {
		return 0, fmt.Errorf("schema: series ID 0: %w", ErrMalformed)
	}
	return id, nil
}
