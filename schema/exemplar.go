package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Exemplars: table TableExemplars, family FamilyExemplars.
//
//	row       = the series' data row key (datakey.go) for the bucket of the
//	            exemplar's timestamp: salt(1) | esc(host) 0x00 | esc(metric) 0x00 |
//	            seriesID(8) | ^bucketStart(8)
//	qualifier = slotOffset(4) | index(1)
//	value     = flags(1) | ts(8) | value(8) | labels (cellenc/exemplar.go)
//	timestamp = the exemplar's timestamp (ms)
//
// slotOffset is the offset in ms from the bucket start of the exemplar's slot:
// the bucket is cut into slots of a configured width (write.Options.ExemplarSlot
// [DefaultExemplarSlot]) counted from the bucket start, big-endian. A slot
// holds write.Options.ExemplarsPerSlot [DefaultExemplarsPerSlot] places, index
// 0 .. perSlot-1: an exemplar takes the place its time points to
// (ExemplarIndex: the slot cut into perSlot equal parts), or, when another
// exemplar of the same write request took it, the next free one (a request
// keeps the newest perSlot exemplars of a slot, so all of them get a place).
// The value's layout is cellenc/exemplar.go's.
//
// Invariants:
//
//   - The exemplars of a series lie in its own key range, laid out like its data
//     rows (same salt, same pre-split regions), newest bucket first: the
//     exemplars of a series in [mint, maxt] are one scan (SeriesRowRange).
//   - Bounded: a row (series × bucket) holds at most one cell per (slot, index):
//     at most ceil(bucketWidth / slot) × perSlot exemplars per series per
//     bucket, whatever is written. With the defaults (1h, 10s, 10) that is 3,600
//     per series per hour. A later exemplar for an occupied (slot, index)
//     replaces the stored one when its timestamp is newer (the family keeps one
//     version and the cell timestamp is the exemplar's), and is hidden by it
//     when older; at an equal timestamp the last write wins. Exemplars of
//     different requests meet in one place only when their times are within
//     slot/perSlot (1 s by default) of each other, or when a request moved one
//     to a free place.
//   - Idempotent: the same exemplar (series, timestamp, value, labels) written
//     again in the same position is the same cell (same row, qualifier,
//     timestamp and value). Readers also drop exact duplicates, which two
//     requests can leave at two indexes of one slot.
//   - The slot width and the per-slot bound shape only new cells: readers use
//     the value alone (never the qualifier), so changing them needs no
//     migration; the bound of a bucket written under both is the sum of both.
//   - The family's TTL is the exemplar retention (TableOptions.ExemplarRetention),
//     counted from the exemplar's timestamp.

// TableExemplars is the logical name of the exemplar table.
const TableExemplars = "exemplars"

// FamilyExemplars (exemplar table): one cell per stored exemplar.
const FamilyExemplars = "e"

// Defaults of the exemplar storage.
const (
	// DefaultExemplarRetention is how long exemplars are kept [30 days]: longer
	// than any dashboard usually shows them, much shorter than raw samples,
	// since an exemplar's trace is rarely kept longer by a tracing backend.
	DefaultExemplarRetention = 30 * 24 * time.Hour
	// DefaultExemplarSlot is the slot width [10s]: at most DefaultExemplarsPerSlot
	// exemplars per series per 10 s. A series scraped every 10 s or more slowly
	// keeps every exemplar of a float or classic-histogram series (one per scrape).
	DefaultExemplarSlot = 10 * time.Second
	// DefaultExemplarsPerSlot is how many exemplars of one slot a request may
	// store [10]: client_golang's default NativeHistogramMaxExemplars, so a
	// native histogram's exemplars of one scrape fit.
	DefaultExemplarsPerSlot = 10
	// MaxExemplarsPerSlot is the largest per-slot bound: the index is one byte.
	MaxExemplarsPerSlot = 256
)

// ExemplarQualifierLen is the length of an exemplar qualifier.
const ExemplarQualifierLen = 5

// ExemplarSlotOffset is the qualifier offset of the slot of ts in the bucket
// that starts at bucketStart: the offset of ts rounded down to a multiple of
// slot (counted from the bucket start). slot must be at least a millisecond;
// ts must lie in the bucket.
func ExemplarSlotOffset(ts, bucketStart int64, slot time.Duration) int64 {
	off := ts - bucketStart
	s := slot.Milliseconds()
	if s <= 1 {
		return off
	}
	return off - off%s
}

// AppendExemplarQualifier appends the qualifier of (slotOffset, index) to dst.
// slotOffset must lie in [0, bucket width) (widths fit 32 bits, see
// AppendRawQualifier); it fails, wrapping ErrMalformed, otherwise.
func AppendExemplarQualifier(dst []byte, slotOffset int64, index uint8) ([]byte, error) {
	if slotOffset < 0 || slotOffset > math.MaxUint32 {
		return dst, fmt.Errorf("schema: exemplar slot offset %d outside [0, %d]: %w", slotOffset, uint32(math.MaxUint32), ErrMalformed)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(slotOffset))
	return append(dst, index), nil
}

// ExemplarIndex is the index an exemplar at ts prefers in its slot, which
// starts at slotStart (ms) and is slot wide, when a slot keeps perSlot: the
// slot cut into perSlot equal places, the one ts falls in, in [0, perSlot).
// perSlot must be in [1, MaxExemplarsPerSlot].
func ExemplarIndex(ts, slotStart int64, slot time.Duration, perSlot int) int {
	s := slot.Milliseconds()
	if s <= 0 || perSlot <= 1 {
		return 0
	}
	i := (ts - slotStart) * int64(perSlot) / s
	return int(min(max(i, 0), int64(perSlot-1)))
}

// ParseExemplarQualifier decodes an exemplar qualifier into its slot offset and
// index; one that is not ExemplarQualifierLen bytes wraps ErrMalformed.
func ParseExemplarQualifier(q []byte) (slotOffset int64, index uint8, err error) {
	if len(q) != ExemplarQualifierLen {
		return 0, 0, fmt.Errorf("schema: exemplar qualifier of %d bytes, want %d: %w", len(q), ExemplarQualifierLen, ErrMalformed)
	}
	return int64(binary.BigEndian.Uint32(q)), q[4], nil
}

// QualifierExemplarRetention (meta table, schema row) is the exemplar
// retention the store's exemplar table was created with, as a Prometheus
// duration ("30d") or "0" for forever; see schema/provision.
const QualifierExemplarRetention = "exemplar_retention"
