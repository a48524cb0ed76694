package schema

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// The pending table: the data rows whose raw cells compaction has not folded
// in yet, in the order compaction takes them, so that a compaction round reads
// what it compacts and nothing else (not every fresh raw cell of the store).
//
//	row       = salt(1) | bucketStart(8) | dataRowKey without its salt
//	family    = FamilyPending
//	qualifier = 0x00              an on-time writer's mark: the row has raw cells
//	            0x01 | nonce(8)   a late writer's mark, one per write request
//	value     = empty
//	timestamp = the bucket's last millisecond (LateCellTimestamp)
//
// Writers (write/) put an on-time mark the first time a process writes a row
// (with the row's tag cells), and a late mark, under a fresh random nonce,
// after each request that stored late cells in the row (late.go). The
// compaction of a salt scans [PendingSaltStart, PendingCutoff(cutoff)): the
// rows of every sealed bucket that has raw cells, oldest bucket first. Once it
// has compacted a data row it deletes exactly the marks it read, each its own
// column, so a late mark written since (always another column: a new nonce)
// stays and brings the row back to the next pass.
//
// Invariants:
//
//   - The key orders marks by salt, then bucket start (big-endian, bucket
//     starts are >= 0), then the data row key: a salt's sealed marks are one
//     range below its cutoff, and a round reads them oldest first.
//   - The data row key is recovered exactly: PendingDataRowKey(PendingRowKey(k))
//     == k; the bucket start in the key is the data row's own.
//   - A late mark's column is never written twice (the nonce is random, 64
//     bits), so the deletion of a column read can never hide a later mark, on
//     HBase either, where a delete marker also hides later puts of its column.
//   - The table is pre-split like the data table (one region per salt), and its
//     family's TTL is the raw retention: a mark outlives no raw cell it points
//     at.

// TablePending is the pending table's logical name.
const TablePending = "pending"

// FamilyPending is the pending table's only family.
const FamilyPending = "p"

// PendingOnTimeQualifier is the column of an on-time writer's mark.
var PendingOnTimeQualifier = []byte{0x00}

// pendingLateTag starts a late writer's mark's column.
const pendingLateTag = 0x01

// PendingLateQualifierLen is the length of a late mark's column.
const PendingLateQualifierLen = 1 + 8

// AppendPendingLateQualifier appends the column of a late mark with nonce to dst.
func AppendPendingLateQualifier(dst []byte, nonce uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, pendingLateTag), nonce)
}

// IsPendingLateQualifier reports whether q is a late mark's column.
func IsPendingLateQualifier(q []byte) bool {
	return len(q) == PendingLateQualifierLen && q[0] == pendingLateTag
}

// pendingHeadLen is salt(1) | bucketStart(8).
const pendingHeadLen = 1 + 8

// PendingRowKey appends the pending row key of the data row dataKey to dst. It
// fails, wrapping ErrMalformed, when dataKey is not a data row key
// (ParseDataRowTail).
func PendingRowKey(dst, dataKey []byte) ([]byte, error) {
	_, bucketStart, err := ParseDataRowTail(dataKey)
	if err != nil {
		return dst, fmt.Errorf("schema: pending row of %q: %w", dataKey, err)
	}
	if len(dataKey) < 1+dataTailLen+2 {
		return dst, fmt.Errorf("schema: pending row of %q: data row key too short: %w", dataKey, ErrMalformed)
	}
	dst = append(dst, dataKey[0])
	dst = binary.BigEndian.AppendUint64(dst, uint64(bucketStart))
	return append(dst, dataKey[1:]...), nil
}

// PendingDataRowKey returns the data row key a pending row key names and its
// bucket start. It fails, wrapping ErrMalformed, on a key too short to be one
// or whose two bucket starts differ.
func PendingDataRowKey(key []byte) (dataKey []byte, bucketStart int64, err error) {
	if len(key) < pendingHeadLen+dataTailLen+2 {
		return nil, 0, fmt.Errorf("schema: pending row key of %d bytes is too short: %w", len(key), ErrMalformed)
	}
	dataKey = make([]byte, 0, len(key)-8)
	dataKey = append(append(dataKey, key[0]), key[pendingHeadLen:]...)
	_, bucketStart, err = ParseDataRowTail(dataKey)
	if err != nil {
		return nil, 0, fmt.Errorf("schema: pending row key %q: %w", key, err)
	}
	if head := binary.BigEndian.Uint64(key[1:pendingHeadLen]); head != uint64(bucketStart) {
		return nil, 0, fmt.Errorf("schema: pending row key %q: bucket start %d in its head, %d in its data row key: %w",
			key, head, bucketStart, ErrMalformed)
	}
	return dataKey, bucketStart, nil
}

// PendingSaltStart is the first pending row key of salt.
func PendingSaltStart(salt byte) []byte { return []byte{salt} }

// PendingCutoff is the end (exclusive) of the pending rows of salt whose bucket
// starts before cutoff (ms, >= 0): scan [PendingSaltStart(salt),
// PendingCutoff(salt, cutoff)) for the marks of the buckets sealed by a cutoff
// that is a bucket boundary.
func PendingCutoff(salt byte, cutoff int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{salt}, uint64(max(cutoff, 0)))
}

// PendingTable returns the spec of the pending table: family FamilyPending
// with TTL o.RawRetention, one version, pre-split like the data table.
func PendingTable(o TableOptions) kv.TableSpec {
	return saltedTable(o, TablePending, FamilyPending, o.RawRetention)
}

// PendingMarkTimestamp is the cell timestamp of every mark of the data row of
// the bucket starting at bucketStart.
func PendingMarkTimestamp(bucketStart int64, width time.Duration) int64 {
	return LateCellTimestamp(bucketStart, width)
}

// ParsePendingSince decodes the meta row's QualifierPendingSince cell: a
// positive number of milliseconds in decimal, wrapping ErrMalformed otherwise.
func ParsePendingSince(b []byte) (int64, error) {
	ms, err := parseDecimal(b)
	if err != nil || ms <= 0 {
		return 0, fmt.Errorf("schema: meta row %s:%s %q is not a time in ms: %w", FamilyMeta, QualifierPendingSince, b, ErrMalformed)
	}
	return ms, nil
}
