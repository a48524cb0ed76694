package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Data row keys.
//
//	row = salt(1) | esc(host) 0x00 | esc(metric) 0x00 | seriesID(8) | ^bucketStart(8)
//
// Invariants:
//
//   - salt = Salt(host, saltCount): every row of a host lives under one salt byte,
//     so the rows of a host, of a (host, metric) pair and of a series are each one
//     contiguous key range (HostPrefix, HostMetricPrefix, SeriesPrefix), while the
//     hosts spread over the table's pre-split regions (see Tables).
//   - host and metric are escaped and terminated (see escape.go), so keys sort as the
//     tuple (salt, host, metric, seriesID, -bucketStart) and a prefix of one host or
//     metric never matches another one ("a" vs "a\x00b").
//   - seriesID is big-endian, so series sort numerically within a (host, metric).
//     Series IDs are never 0.
//   - the last 8 bytes are the bitwise complement of uint64(bucketStart),
//     big-endian: bucket starts are >= 0, so a larger (newer) bucketStart gives a
//     smaller suffix and the newest bucket of a series is its first row in a scan.
//   - the seriesID and ^bucketStart are the fixed-length last 16 bytes of every key,
//     which ParseDataRowTail relies on.

// MaxSalts is the largest number of salts: the salt is one byte.
const MaxSalts = 256

// dataTailLen is the length of seriesID(8) | ^bucketStart(8).
const dataTailLen = 16

// DataKey is the decoded form of a data row key.
type DataKey struct {
	// Salt is Salt(Host, saltCount).
	Salt byte
	// Host is the value of the host label (from the configured host label list).
	Host string
	// Metric is the metric name, the value of __name__.
	Metric string
	// SeriesID identifies the series; never 0.
	SeriesID uint64
	// BucketStart is the start of the row's time bucket, milliseconds since the Unix
	// epoch, >= 0 and a multiple of the bucket width.
	BucketStart int64
}

// Salt is the salt byte of a host: the FNV-1a 32-bit hash of the host's bytes modulo
// buckets. buckets must be in [1, MaxSalts] (Settings.Validate checks it);
// a smaller value is taken as 1, a larger one as MaxSalts.
func Salt(host string, buckets int) byte {
	if buckets <= 1 {
		return 0
	}
	if buckets > MaxSalts {
		buckets = MaxSalts
	}
	// FNV-1a, 32 bit (hash/fnv's New32a, inlined to stay allocation-free).
	h := uint32(2166136261)
	for i := 0; i < len(host); i++ {
		h ^= uint32(host[i])
		h *= 16777619
	}
	return byte(h % uint32(buckets))
}

// BucketStart is the start of the bucket of the given width that holds timestamp ts
// (milliseconds): ts rounded down to a multiple of width. Timestamps stored by hbtsdb
// are >= 0; for a negative ts the result is still the floor. width must be at least
// one millisecond (a validated Settings.BucketWidth is).
func BucketStart(ts int64, width time.Duration) int64 {
	w := width.Milliseconds()
	if w <= 0 {
		return ts
	}
	r := ts % w
	if r < 0 {
		r += w
	}
	return ts - r
}

// DataRowKeyLen is the length of the data row key DataRowKey writes for k.
func DataRowKeyLen(k DataKey) int {
	return 1 + EscapedLen(k.Host) + EscapedLen(k.Metric) + dataTailLen
}

// DataRowKey appends the data row key of k to dst and returns the extended slice.
// It allocates nothing when dst has DataRowKeyLen(k) bytes of spare capacity. k.Salt
// must be Salt(k.Host, saltCount), k.SeriesID non-zero and k.BucketStart >= 0;
// the key is written as given either way (ParseDataRowKey would reject the last two).
// The write path bounds host and metric lengths so that the key stays within
// kv.MaxRowKeyLen.
func DataRowKey(dst []byte, k DataKey) []byte {
	dst = HostMetricPrefix(dst, k.Salt, k.Host, k.Metric)
	dst = binary.BigEndian.AppendUint64(dst, k.SeriesID)
	return binary.BigEndian.AppendUint64(dst, ^uint64(k.BucketStart))
}

// ParseDataRowKey decodes a data row key. It fails, wrapping ErrMalformed, on bad
// escaping, a tail that is not exactly 16 bytes, a zero series ID or a negative
// bucket start. It does not check the salt against the host, which needs the salt
// bucket count: compare k.Salt with Salt(k.Host, saltCount) where that matters.
func ParseDataRowKey(b []byte) (DataKey, error) {
	var k DataKey
	if len(b) < 1+1+1+dataTailLen {
		return k, fmt.Errorf("schema: data row key of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	k.Salt = b[0]
	rest := b[1:]
	host, n, err := Unescape(rest)
	if err != nil {
		return k, fmt.Errorf("schema: data row key host: %w", err)
	}
	rest = rest[n:]
	metric, n, err := Unescape(rest)
	if err != nil {
		return k, fmt.Errorf("schema: data row key metric: %w", err)
	}
	rest = rest[n:]
	if len(rest) != dataTailLen {
		return k, fmt.Errorf("schema: data row key has %d bytes after the metric, want %d: %w", len(rest), dataTailLen, ErrMalformed)
	}
	k.Host, k.Metric = host, metric
	k.SeriesID, k.BucketStart, err = ParseDataRowTail(b)
	return k, err
}

// ParseDataRowTail decodes the series ID and bucket start from the last 16 bytes of a
// data row key without decoding (or allocating) host and metric, for readers that
// scanned a known host/metric prefix. It fails, wrapping ErrMalformed, on a key
// shorter than 16 bytes, a zero series ID or a negative bucket start.
func ParseDataRowTail(b []byte) (seriesID uint64, bucketStart int64, err error) {
	if len(b) < dataTailLen {
		return 0, 0, fmt.Errorf("schema: data row key of %d bytes is too short: %w", len(b), ErrMalformed)
	}
	tail := b[len(b)-dataTailLen:]
	seriesID = binary.BigEndian.Uint64(tail)
	inv := ^binary.BigEndian.Uint64(tail[8:])
	if seriesID == 0 {
		return 0, 0, fmt.Errorf("schema: data row key with series ID 0: %w", ErrMalformed)
	}
	if inv > math.MaxInt64 {
		return 0, 0, fmt.Errorf("schema: data row key with negative bucket start: %w", ErrMalformed)
	}
	return seriesID, int64(inv), nil
}

// HostPrefix appends salt | esc(host) 0x00 to dst: the prefix of every data row of
// one host.
func HostPrefix(dst []byte, salt byte, host string) []byte {
	dst = append(dst, salt)
	return AppendEscaped(dst, host)
}

// HostMetricPrefix appends salt | esc(host) 0x00 | esc(metric) 0x00 to dst: the
// prefix of the data rows of every series of one metric on one host.
func HostMetricPrefix(dst []byte, salt byte, host, metric string) []byte {
	dst = HostPrefix(dst, salt, host)
	return AppendEscaped(dst, metric)
}

// SeriesPrefix appends salt | esc(host) 0x00 | esc(metric) 0x00 | seriesID(8) to dst:
// the prefix of every data row of one series, newest bucket first. Scan from it to
// kv.PrefixEnd of it, with a row limit, to read the newest rows.
func SeriesPrefix(dst []byte, salt byte, host, metric string, seriesID uint64) []byte {
	dst = HostMetricPrefix(dst, salt, host, metric)
	return binary.BigEndian.AppendUint64(dst, seriesID)
}

// SeriesRowRange returns the scan range [start, stop) of the data rows of one series
// whose bucket starts lie in [minBucketStart, maxBucketStart] (milliseconds, both
// multiples of the bucket width, 0 <= minBucketStart <= maxBucketStart). Rows come
// newest first: start is the row of maxBucketStart, stop follows the row of
// minBucketStart.
func SeriesRowRange(salt byte, host, metric string, seriesID uint64, minBucketStart, maxBucketStart int64) (start, stop []byte) {
	k := DataKey{Salt: salt, Host: host, Metric: metric, SeriesID: seriesID, BucketStart: maxBucketStart}
	n := DataRowKeyLen(k)
	buf := make([]byte, 0, 2*n+1)
	start = DataRowKey(buf, k)
	k.BucketStart = minBucketStart
	// Every key of the series has the same length, so the smallest key after the
	// row of minBucketStart is that row's key followed by 0x00.
	stop = append(DataRowKey(start[len(start):], k), 0x00)
	return start[:len(start):len(start)], stop
}
