package schema

import (
	"fmt"
	"strconv"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Watermark rows: table TableMeta, family FamilyMeta, one row per background job
// and salt, holding how far that job has finished the salt: every bucket that
// ends at or before the watermark (ms) was sealed when a pass of the job over the
// salt completed without error (the compactor's compaction: chunks and rollups
// written, raw cells deleted).
//
//	row = "watermark" 0x00 | job 0x00 | salt(1)     m:watermark = cutoffMs
//
// e.g. row "watermark\x00compact\x00\x03", value "1764460800000". The value is
// text, as the lease rows' are, so that `hbase shell` shows it as it is.
//
// Invariants:
//
//   - The key is fixed-shape, as a lease row's (lease.go): WatermarkRowPrefix, a
//     job name of LeaseJobChars, 0x00, then exactly one salt byte. The rows of
//     one job are the one range under WatermarkJobPrefix, in salt order.
//   - WatermarkRowPrefix has 0x00 right after "watermark", where no other row of
//     the meta table ("schema", "metadata" 0x00 metric, "lease" 0x00 ...) does:
//     the ranges never overlap.
//   - The value is the canonical decimal text of a positive number of
//     milliseconds (no sign, no leading zeros); ParseWatermarkValue accepts
//     nothing else.
//   - The row's second column, m:swept, records the cutoff (same form and
//     cell timestamp rule) at which a pass of the job last swept the salt: found
//     its work by reading the salt whole rather than through the pending table
//     (compact/doc.go). A salt without it has never been swept.
//   - The cell timestamp is the watermark itself (WatermarkCell). The family
//     keeps one version and a put older than the cell it replaces is stored but
//     never read, so the cell reads as the greatest watermark ever written,
//     whatever the order of the writes and the clocks of the writers: it only
//     grows, and writing it again is a no-op. No read-modify-write is needed.

// WatermarkRowPrefix is the prefix of every watermark row.
const WatermarkRowPrefix = "watermark\x00"

// QualifierWatermark is the column of a watermark row.
const QualifierWatermark = "watermark"

// QualifierSwept is the column of a watermark row that records the cutoff of
// the salt's last sweep.
const QualifierSwept = "swept"

// WatermarkJobPrefix returns the prefix of the watermark rows of job: the range
// of all its salts.
func WatermarkJobPrefix(dst []byte, job string) []byte {
	return jobPrefix(dst, WatermarkRowPrefix, job)
}

// WatermarkRow appends the watermark row key of job and salt to dst. job must
// pass ValidLeaseJob.
func WatermarkRow(dst []byte, job string, salt byte) []byte {
	return append(WatermarkJobPrefix(dst, job), salt)
}

// ParseWatermarkRow decodes a watermark row key. It fails, wrapping
// ErrMalformed, on another kind of row, an invalid job name or a key of the
// wrong length.
func ParseWatermarkRow(b []byte) (job string, salt byte, err error) {
	return parseJobSaltRow(b, WatermarkRowPrefix, "watermark")
}

// AppendWatermarkValue appends the cell value of watermark ms to dst. It fails,
// wrapping ErrMalformed, on a watermark that is not positive.
func AppendWatermarkValue(dst []byte, ms int64) ([]byte, error) {
	if ms <= 0 {
		return dst, fmt.Errorf("schema: watermark %d is not positive: %w", ms, ErrMalformed)
	}
	return strconv.AppendInt(dst, ms, 10), nil
}

// ParseWatermarkValue decodes a watermark cell value, as AppendWatermarkValue
// writes it and in no other form, wrapping ErrMalformed.
func ParseWatermarkValue(b []byte) (int64, error) {
	ms, err := parseDecimal(b)
	if err != nil {
		return 0, fmt.Errorf("schema: watermark value %q: %w", b, err)
	}
	if ms <= 0 {
		return 0, fmt.Errorf("schema: watermark value %q is not positive: %w", b, ErrMalformed)
	}
	return ms, nil
}

// WatermarkCell returns the cell that records watermark ms of job and salt: the
// row, family, qualifier, value and a timestamp equal to ms, so that the
// greatest watermark written wins (see the invariants above).
func WatermarkCell(job string, salt byte, ms int64) (row []byte, cell kv.Cell, err error) {
	return watermarkRowCell(job, salt, QualifierWatermark, ms)
}

// SweptCell returns the cell that records that a pass of job swept salt at
// cutoff ms: WatermarkCell's row, column QualifierSwept.
func SweptCell(job string, salt byte, ms int64) (row []byte, cell kv.Cell, err error) {
	return watermarkRowCell(job, salt, QualifierSwept, ms)
}

func watermarkRowCell(job string, salt byte, qualifier string, ms int64) (row []byte, cell kv.Cell, err error) {
	if err := ValidLeaseJob(job); err != nil {
		return nil, kv.Cell{}, err
	}
	v, err := AppendWatermarkValue(nil, ms)
	if err != nil {
		return nil, kv.Cell{}, err
	}
	return WatermarkRow(nil, job, salt), kv.Cell{Family: FamilyMeta, Qualifier: []byte(qualifier), Timestamp: ms, Value: v}, nil
}
