package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Rollups: downsampled series, one table per resolution (RollupTable), each with
// the resolution's retention as its TTL.
//
//	table     = "rollup-" + resolution, e.g. rollup-5m, rollup-1h
//	row       = DataRowKey with BucketStart = the UTC day (RollupRowSpan) that holds
//	            the data bucket: one row per (series, day)
//	family    = FamilyRollup
//	qualifier = offset(4)  big-endian uint32, ms from the row's day to the start of
//	                       the data bucket the cell summarises
//	value     = the bucket's windows (cellenc.EncodeRollupWindows, cellenc/rollupcell.go)
//	timestamp = the data bucket's last millisecond (as chunk cells), so a bucket
//	            rolled up again (late samples) rewrites the cell in place and the
//	            TTL expires it once every sample it summarises expired
//
// Why one table per resolution and not one family per resolution in one table:
// the resolution list is configurable, and gohbase (like the HBase shell's
// create) can create tables but cannot add a family to an existing one (no
// ModifyTable), so adding a resolution is creating its table.
//
// Windows and their arithmetic are cellenc/window.go's. A data bucket holds
// whole windows when the resolution divides the bucket width, or a part of one
// window when the bucket width divides the resolution (ValidateRollups allows
// only these).

// FamilyRollup is the one family of every rollup table.
const FamilyRollup = "a"

// RollupRowSpan is the time span of one rollup row: a UTC day, as the index's.
const RollupRowSpan = 24 * time.Hour

// MaxRollups bounds the length of the resolution list.
const MaxRollups = 8

// Rollup is one resolution of downsampled data and how long it is kept.
type Rollup struct {
	// Resolution is the window width: a whole number of minutes that divides 24h.
	Resolution time.Duration
	// Retention is the TTL of the rollup table: whole seconds, 0 keeps it forever.
	Retention time.Duration
}

// DefaultRollups is the default resolution list, "5m:90d,1h:5y".
func DefaultRollups() []Rollup {
	return []Rollup{{5 * time.Minute, 90 * 24 * time.Hour}, {time.Hour, 5 * 365 * 24 * time.Hour}}
}

// DefaultRollupsString is DefaultRollups as ParseRollups reads it.
const DefaultRollupsString = "5m:90d,1h:5y"

// RollupTable is the logical name of the table of a resolution, "rollup-5m".
func RollupTable(resolution time.Duration) string {
	return "rollup-" + model.Duration(resolution).String()
}

// ParseRollupTable returns the resolution of a rollup table's logical name
// (RollupTable), and false for any other name.
func ParseRollupTable(name string) (time.Duration, bool) {
	suffix, ok := strings.CutPrefix(name, "rollup-")
	if !ok {
		return 0, false
	}
	d, err := model.ParseDuration(suffix)
	if err != nil || d <= 0 || RollupTable(time.Duration(d)) != name {
		return 0, false
	}
	return time.Duration(d), true
}

// ParseRollups parses a resolution list: comma-separated resolution:retention
// pairs in Prometheus' duration syntax, e.g. "5m:90d,1h:5y"; a retention of 0
// keeps a resolution forever; "" or "none" is no rollups. The list is sorted by
// resolution; ValidateRollups checks it against a bucket width.
func ParseRollups(s string) ([]Rollup, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []Rollup
	for _, part := range strings.Split(s, ",") {
		res, ret, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("schema: rollup %q is not resolution:retention (as in %q)", part, DefaultRollupsString)
		}
		r, err := model.ParseDuration(res)
		if err != nil {
			return nil, fmt.Errorf("schema: rollup %q: resolution: %w", part, err)
		}
		var t model.Duration
		if ret != "0" {
			if t, err = model.ParseDuration(ret); err != nil {
				return nil, fmt.Errorf("schema: rollup %q: retention: %w", part, err)
			}
		}
		out = append(out, Rollup{Resolution: time.Duration(r), Retention: time.Duration(t)})
	}
	slices.SortFunc(out, func(a, b Rollup) int { return int(a.Resolution - b.Resolution) })
	return out, nil
}

// FormatRollups writes a resolution list as ParseRollups reads it; "none" for
// no rollups.
func FormatRollups(rs []Rollup) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		ret := "0"
		if r.Retention > 0 {
			ret = model.Duration(r.Retention).String()
		}
		parts[i] = model.Duration(r.Resolution).String() + ":" + ret
	}
	return strings.Join(parts, ",")
}

// ValidateRollups reports what is wrong with a resolution list for a store of
// the given bucket width (0: not checked against one): each resolution a whole number of minutes that divides
// 24h and either divides the bucket width or is a multiple of it, resolutions
// ascending and distinct, retentions whole seconds and not negative, at most
// MaxRollups of them.
func ValidateRollups(rs []Rollup, bucketWidth time.Duration) error {
	var errs []error
	if len(rs) > MaxRollups {
		errs = append(errs, fmt.Errorf("schema: %d rollups, more than %d", len(rs), MaxRollups))
	}
	for i, r := range rs {
		switch {
		case r.Resolution < time.Minute || r.Resolution%time.Minute != 0 || (24*time.Hour)%r.Resolution != 0:
			errs = append(errs, fmt.Errorf("schema: rollup resolution %s must be a whole number of minutes that divides 24h", model.Duration(r.Resolution)))
		case bucketWidth > 0 && bucketWidth%r.Resolution != 0 && r.Resolution%bucketWidth != 0:
			errs = append(errs, fmt.Errorf("schema: rollup resolution %s must divide the bucket width %s or be a multiple of it", model.Duration(r.Resolution), model.Duration(bucketWidth)))
		}
		if r.Retention < 0 || r.Retention%time.Second != 0 {
			errs = append(errs, fmt.Errorf("schema: rollup %s: retention %s is negative or not a whole number of seconds", model.Duration(r.Resolution), r.Retention))
		}
		if i > 0 && r.Resolution <= rs[i-1].Resolution {
			errs = append(errs, fmt.Errorf("schema: rollup resolutions must be ascending and distinct, %s after %s", model.Duration(r.Resolution), model.Duration(rs[i-1].Resolution)))
		}
	}
	return errors.Join(errs...)
}

// RollupRowStart is the start of the rollup row (the UTC day) holding the data
// bucket that starts at bucketStart.
func RollupRowStart(bucketStart int64) int64 {
	return BucketStart(bucketStart, RollupRowSpan)
}

// AppendRollupQualifier appends the qualifier of the rollup cell of the data
// bucket starting at bucketStart: its offset from the row's day, big-endian
// uint32.
func AppendRollupQualifier(dst []byte, bucketStart int64) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(bucketStart-RollupRowStart(bucketStart)))
}

// DecodeRollupQualifier returns the start of the data bucket a rollup cell of the
// row of day rowStart summarises. It fails, wrapping ErrMalformed, on a
// qualifier that is not 4 bytes or lies outside the day.
func DecodeRollupQualifier(q []byte, rowStart int64) (int64, error) {
	if len(q) != 4 {
		return 0, fmt.Errorf("schema: rollup qualifier of %d bytes, want 4: %w", len(q), ErrMalformed)
	}
	off := int64(binary.BigEndian.Uint32(q))
	if off >= RollupRowSpan.Milliseconds() {
		return 0, fmt.Errorf("schema: rollup qualifier offset %d outside the day: %w", off, ErrMalformed)
	}
	return rowStart + off, nil
}
