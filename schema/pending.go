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
//	row       = salt(1) | kind(1) | bucketStart(8) | dataRowKey without its salt
//	family    = FamilyPending
//	kind      = 0x00: on-time marks, qualifier 0x00: the row has on-time cells
//	            0x01: late marks, qualifier 0x01 | nonce(8), one per write request
//	value     = empty
//	timestamp = the bucket's last millisecond (LateCellTimestamp)
//
// Writers (write/) put an on-time mark the first time a process writes a row
// (with the row's tag cells), and a late mark, under a fresh random nonce,
// after each request that stored late cells in the row (late.go). The
// compaction of a salt scans the on-time marks of the buckets between its
// watermark and its cutoff (PendingOnTimeRange) and the late marks of every
// bucket before its cutoff (PendingLateRange), each oldest bucket first. Once
// it has compacted a data row it deletes exactly the marks it read, each its
// own column, so a late mark written since (always another column: a new
// nonce) stays and brings the row back to the next pass.
//
// Invariants:
//
//   - On-time marks are written only while their bucket takes on-time writes,
//     before any compactor may seal it (late.go), so none is ever written
//     below a salt's watermark: a round need not scan there, and never steps
//     over the deleted marks of the buckets it compacted before (which an LSM
//     keeps as tombstones for a while). Late marks, which may come for any
//     bucket, have a key range of their own, as small as late samples are
//     rare.
//   - The key orders marks by salt, kind, bucket start (big-endian, bucket
//     starts are >= 0), then the data row key.
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

// Kinds of pending rows, the byte after the salt.
const (
	pendingOnTime byte = 0x00
	pendingLate   byte = 0x01
)

// pendingHeadLen is salt(1) | kind(1) | bucketStart(8).
const pendingHeadLen = 1 + 1 + 8

// PendingRowKey appends the pending row key of the data row dataKey to dst:
// its late marks' row when late is set, else its on-time mark's. It fails,
// wrapping ErrMalformed, when dataKey is not a data row key
// (ParseDataRowTail).
func PendingRowKey(dst, dataKey []byte, late bool) ([]byte, error) {
	_, bucketStart, err := ParseDataRowTail(dataKey)
	if err != nil {
		return dst, fmt.Errorf("schema: pending row of %q: %w", dataKey, err)
	}
	if len(dataKey) < 1+dataTailLen+2 {
		return dst, fmt.Errorf("schema: pending row of %q: data row key too short: %w", dataKey, ErrMalformed)
	}
	kind := pendingOnTime
	if late {
		kind = pendingLate
	}
	dst = append(dst, dataKey[0], kind)
	dst = binary.BigEndian.AppendUint64(dst, uint64(bucketStart))
	return append(dst, dataKey[1:]...), nil
}

// PendingDataRowKey returns the data row key a pending row key names, its
// bucket start and whether the row holds late marks. It fails, wrapping
// ErrMalformed, on a key too short to be one, of an unknown kind, or whose
// two bucket starts differ.
func PendingDataRowKey(key []byte) (dataKey []byte, bucketStart int64, late bool, err error) {
	if len(key) < pendingHeadLen+dataTailLen+2 {
		return nil, 0, false, fmt.Errorf("schema: pending row key of %d bytes is too short: %w", len(key), ErrMalformed)
	}
	switch key[1] {
	case pendingOnTime:
	case pendingLate:
		late = true
	default:
		return nil, 0, false, fmt.Errorf("schema: pending row key %q of kind %#x: %w", key, key[1], ErrMalformed)
	}
	dataKey = make([]byte, 0, len(key)-9)
	dataKey = append(append(dataKey, key[0]), key[pendingHeadLen:]...)
	_, bucketStart, err = ParseDataRowTail(dataKey)
	if err != nil {
		return nil, 0, false, fmt.Errorf("schema: pending row key %q: %w", key, err)
	}
	if head := binary.BigEndian.Uint64(key[2:pendingHeadLen]); head != uint64(bucketStart) {
		return nil, 0, false, fmt.Errorf("schema: pending row key %q: bucket start %d in its head, %d in its data row key: %w",
			key, head, bucketStart, ErrMalformed)
	}
	return dataKey, bucketStart, late, nil
}

// PendingOnTimeRange is the scan range [start, stop) of the on-time marks of
// salt whose bucket starts in [from, cutoff) (ms, >= 0): from a salt's
// watermark to a pass's cutoff.
func PendingOnTimeRange(salt byte, from, cutoff int64) (start, stop []byte) {
	return pendingKey(salt, pendingOnTime, from), pendingKey(salt, pendingOnTime, cutoff)
}

// PendingLateRange is the scan range [start, stop) of the late marks of salt
// whose bucket starts before cutoff (ms, >= 0).
func PendingLateRange(salt byte, cutoff int64) (start, stop []byte) {
	return pendingKey(salt, pendingLate, 0), pendingKey(salt, pendingLate, cutoff)
}

func pendingKey(salt, kind byte, bucketStart int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{salt, kind}, uint64(max(bucketStart, 0)))
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
