package schema

import (
	"encoding/binary"
	"fmt"
)

// The index generation and the unindex intents: table TableMeta, family
// FamilyMeta. They let a delete remove tag index postings (IndexRowKey) of
// series left with no samples on a day, although every process caches which
// postings it wrote and an HBase delete marker hides every later put at or
// below its timestamp:
//
//	row "index-generation"                      m:g = generation(8)  (Increment's encoding)
//	row "unindex" 0x00 | day(4) | seriesID(8)   m:g = generation(8)
//
// Invariants:
//
//   - a posting of day d written under generation g has the cell timestamp
//     PostingTimestamp(d, g) = DayStart(d) + g; the generation only grows
//     (Increment), and stays below MaxIndexGeneration, so a posting's
//     timestamp stays within its day (the index TTL counts from it);
//   - a delete removes the postings of a series-day written under
//     generations up to g with column deletes up to PostingTimestamp(d, g),
//     after the generation was raised above g: postings written later are
//     newer than the marker and are not hidden by it;
//   - an unindex row records such a removal before it starts (crash safety):
//     the series-day and the generation its deletes go up to. It is deleted
//     once the postings are; a delete finishes any it finds first.

// Names of the index generation row and its column, and the unindex rows' prefix.
const (
	IndexGenerationRow  = "index-generation"
	QualifierGeneration = "g"
	UnindexRowPrefix    = "unindex\x00"
)

// MaxIndexGeneration bounds the index generation: a posting's timestamp,
// DayStart(day) + generation, stays within its day.
const MaxIndexGeneration = dayMillis - 1

// PostingTimestamp is the cell timestamp of a posting of day written under
// index generation gen (0 <= gen <= MaxIndexGeneration).
func PostingTimestamp(day uint32, gen int64) int64 {
	return DayStart(day) + gen
}

// DecodeIndexGeneration decodes the index generation cell's value (an 8-byte
// big-endian counter, as Increment writes it); an absent cell (nil) is
// generation 0. It fails, wrapping ErrMalformed, on another length or a value
// outside [0, MaxIndexGeneration].
func DecodeIndexGeneration(v []byte) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("schema: index generation of %d bytes, want 8: %w", len(v), ErrMalformed)
	}
	g := int64(binary.BigEndian.Uint64(v))
	if g < 0 || g > MaxIndexGeneration {
		return 0, fmt.Errorf("schema: index generation %d outside [0, %d]: %w", g, MaxIndexGeneration, ErrMalformed)
	}
	return g, nil
}

// AppendIndexGeneration appends gen in the index generation's encoding.
func AppendIndexGeneration(dst []byte, gen int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(gen))
}

// UnindexRow appends the unindex row key of a series-day to dst.
func UnindexRow(dst []byte, day uint32, seriesID uint64) []byte {
	dst = append(dst, UnindexRowPrefix...)
	dst = binary.BigEndian.AppendUint32(dst, day)
	return AppendSeriesID(dst, seriesID)
}

// ParseUnindexRow decodes an unindex row key. It fails, wrapping
// ErrMalformed, on another prefix or length, or series ID 0.
func ParseUnindexRow(b []byte) (day uint32, seriesID uint64, err error) {
	if len(b) != len(UnindexRowPrefix)+4+SeriesIDLen || string(b[:len(UnindexRowPrefix)]) != UnindexRowPrefix {
		return 0, 0, fmt.Errorf("schema: %q is no unindex row key: %w", b, ErrMalformed)
	}
	rest := b[len(UnindexRowPrefix):]
	seriesID, err = DecodeSeriesID(rest[4:])
	if err != nil {
		return 0, 0, fmt.Errorf("schema: unindex row key: %w", err)
	}
	return binary.BigEndian.Uint32(rest), seriesID, nil
}
