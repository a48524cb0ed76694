package schema

import (
	"math"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// On-time and late raw cells: the protocol that lets compaction delete a
// sealed row's raw cells with one family delete per row (one DeleteFamily
// marker on HBase, one range deletion on the embedded store) instead of one
// tombstone per sample, without ever deleting a sample it did not read.
//
// A raw sample is written by a writer whose clock reads now. Its bucket ends at
// bucketEnd = BucketStart + width:
//
//   - on time: now < bucketEnd + OnTimeWindow(width). Its cell timestamp is the
//     sample's timestamp (raw.go), and the write must be acknowledged by the
//     store before OnTimeDeadline(bucketStart, width): a writer that cannot
//     store it by then fails the request (the sender retries it, and the retry
//     is late).
//   - late: any later. Its cell timestamp is LateCellTimestamp, the bucket's
//     last millisecond, and the writer records the row in the pending table
//     after the cell is stored (pending.go), so that compaction finds it.
//
// A compactor seals a bucket Grace after its end, with Grace at least
// MinGrace(width) = 3 × OnTimeWindow. So every on-time write of a bucket was
// stored OnTimeWindow before any compactor read the bucket for the first time,
// even if the clocks of the writer's and the compactor's processes differ by up
// to OnTimeWindow (width/20: 3 minutes for 1h buckets). After a compactor read
// a sealed row, the only raw cells that can still arrive in it are late ones,
// at LateCellTimestamp. Compaction then deletes the raw family up to
// LateCellTimestamp - 1, which covers exactly the on-time cells (all of which
// it read), and each late cell it read with a delete of that column: a late
// cell that arrives meanwhile survives both (a re-sent sample at a timestamp it
// already compacted aside, whose chunk already holds that timestamp), and the
// pending row written after it brings it to the next pass.
//
// A late sample and an on-time one of the same timestamp are two versions of
// one column; the family keeps one version, the late one (the newer cell
// timestamp), which is the later write: the last write wins, as it does
// between two on-time writes. Readers take a raw sample's timestamp from its
// qualifier (bucket start + offset), so both kinds decode the same, and a read
// of any time range that overlaps a bucket reads its late cells: the cell
// timestamp lies in the bucket.

// OnTimeWindow is how long after its end a bucket of width takes on-time raw
// writes: width/20 (3m for 1h buckets, 3s for 1m ones).
func OnTimeWindow(width time.Duration) time.Duration { return width / 20 }

// OnTimeDeadline is when, in ms, an on-time write into the bucket starting at
// bucketStart must have been acknowledged by the store: OnTimeWindow after the
// last moment a writer may begin one, twice OnTimeWindow after the bucket's end.
func OnTimeDeadline(bucketStart int64, width time.Duration) int64 {
	return addMs(bucketStart, width.Milliseconds()+2*OnTimeWindow(width).Milliseconds())
}

// MinGrace is the shortest compaction grace a store of bucket width allows:
// OnTimeWindow past OnTimeDeadline, the allowance for the clocks of two tsdb
// processes disagreeing.
func MinGrace(width time.Duration) time.Duration { return 3 * OnTimeWindow(width) }

// IsOnTime reports whether a raw write that begins at nowMs into the bucket
// starting at bucketStart is on time (its cell timestamp is the sample's) or
// late (LateCellTimestamp).
func IsOnTime(bucketStart int64, width time.Duration, nowMs int64) bool {
	return nowMs < addMs(bucketStart, width.Milliseconds()+OnTimeWindow(width).Milliseconds())
}

// LateCellTimestamp is the cell timestamp of a late raw sample of the bucket
// starting at bucketStart: the bucket's last millisecond, as the chunk and tag
// cells of the row have, or kv.MaxTimestamp for the last bucket before it.
func LateCellTimestamp(bucketStart int64, width time.Duration) int64 {
	return min(addMs(bucketStart, width.Milliseconds()-1), kv.MaxTimestamp)
}

// addMs is t + d for d >= 0, saturating at math.MaxInt64: bucket ends near
// the largest timestamp do not wrap around.
func addMs(t, d int64) int64 {
	if t > math.MaxInt64-d {
		return math.MaxInt64
	}
	return t + d
}
