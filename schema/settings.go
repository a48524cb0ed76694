package schema

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// The schema meta row: table TableMeta, row MetaSchemaRow, family FamilyMeta.
//
//	format_version   decimal text, e.g. "2"
//	bucket_width_ms  decimal text, e.g. "3600000"
//	salt_buckets     decimal text, e.g. "16"
//	host_labels      label names joined by commas, e.g. "host,instance"
//	claim            the four as Settings.String writes them, e.g. "format_version=2
//	                 bucket_width_ms=3600000 salt_buckets=16 host_labels=host,instance"
//	rollups          the resolution list, FormatRollups, e.g. "5m:90d,1h:5y" (not a
//	                 setting: it may change, see QualifierRollups)
//
// Text keeps the row readable in `hbase shell` (get 'tsdb-meta', 'schema').
// Numbers are written as strconv.Itoa writes them and read back only in that form (no
// sign, no leading zeros, no spaces), and host labels only as classic label names
// joined by single commas, so that a value that decodes re-encodes to the same
// bytes. The claim cell is what makes creation atomic; see Create in meta.go.

// Format versions. A store keeps the version it was created with; this binary
// reads and writes every version from 1 to CurrentFormatVersion, and refuses a
// newer one (ErrUnsupportedFormat). The versions differ only in how new series
// get their IDs (schema/series.go); every row layout is the same.
const (
	// FormatCounterSeriesIDs (1): a new series' ID comes from the counter row, and
	// a check-and-put of its forward row decides which ID it gets.
	FormatCounterSeriesIDs = 1
	// FormatHashSeriesIDs (2): a new series' ID is derived from a hash of its
	// forward row (index.Registry); the counter serves only hash collisions.
	// Binaries that know only format 1 refuse such a store: they would give new
	// series counter IDs that a format-2 writer's plain put could overwrite.
	FormatHashSeriesIDs = 2
)

// Schema settings and their defaults.
const (
	// CurrentFormatVersion is the layout version new stores are created with,
	// and the newest this package reads and writes.
	CurrentFormatVersion = FormatHashSeriesIDs
	// DefaultBucketWidth is the default time span of one data row.
	DefaultBucketWidth = time.Hour
	// MinBucketWidth and MaxBucketWidth bound the bucket width.
	MinBucketWidth = time.Minute
	MaxBucketWidth = 24 * time.Hour
	// DefaultSaltsHBase spreads writes over 16 pre-split regions on HBase.
	DefaultSaltsHBase = 16
	// DefaultSaltsEmbedded is 1: a local store has nothing to spread.
	DefaultSaltsEmbedded = 1
	// MaxHostLabels bounds the length of the host label list.
	MaxHostLabels = 16
)

// DescribeFormat says in a few words what format version v means, for
// `tsdb schema check --print`: "counter series IDs" for 1, "hash-derived series
// IDs" for 2, "unknown" otherwise.
func DescribeFormat(v int) string {
	switch v {
	case FormatCounterSeriesIDs:
		return "counter series IDs"
	case FormatHashSeriesIDs:
		return "hash-derived series IDs"
	}
	return "unknown"
}

// DefaultHostLabels returns the default host label list: host, then instance.
func DefaultHostLabels() []string { return []string{"host", "instance"} }

// Names of the schema meta row and its columns.
const (
	MetaSchemaRow          = "schema"
	QualifierFormatVersion = "format_version"
	QualifierBucketWidth   = "bucket_width_ms"
	// QualifierSalts holds Settings.Salts under the name every store has
	// had since the first format (salt_buckets), which `tsdb schema check
	// --print` shows as it is stored.
	QualifierSalts       = "salt_buckets"
	QualifierHostLabels  = "host_labels"
	QualifierSchemaClaim = "claim"
	// QualifierRollups is the store's resolution list as FormatRollups writes it,
	// e.g. "5m:90d,1h:5y" ("none" for no rollups): the rollup tables the store
	// has and is written to. Unlike the settings, it may change:
	// schema/provision records each change (rollups.go).
	QualifierRollups = "rollups"
	// QualifierRawRetention is the raw data's retention, the TTL of the data
	// table's families, as --retention.raw writes it ("400d"; "0" for
	// forever): recorded when the store is created, compared at every start
	// (provision/retention.go).
	QualifierRawRetention = "raw_retention"
	// QualifierPendingSince is when (ms since the epoch, decimal) the pending
	// table (pending.go) was added to a store created without it: raw cells
	// written before then have no pending mark, and compaction sweeps each
	// salt for them until it has sealed that moment's bucket
	// (compact/doc.go). A store created with the table has no such cell.
	QualifierPendingSince = "pending_since"
	// QualifierIndexTTL is the TTL the tag index table was created with
	// (TableOptions.IndexRetention of the first resolution list), as
	// QualifierRawRetention writes retentions: recorded when the table is
	// created, since kv cannot read a table's TTL. A store made before it has
	// no such cell.
	QualifierIndexTTL = "index_ttl"
)

// Settings are the layout parameters a store is created with. They never change
// afterwards: every process that opens the store must use the same (Check).
// Settings holds a slice, so compare two with Equal.
type Settings struct {
	// FormatVersion is the layout version [CurrentFormatVersion], 1 to
	// CurrentFormatVersion. Only a store's creation uses the configured one; an
	// existing store keeps its own (CompareSettings does not compare them).
	FormatVersion int
	// BucketWidth is the time span of one data row [1h]: a whole number of seconds
	// in [1m, 24h] that divides 24h, so that buckets never straddle a day.
	BucketWidth time.Duration
	// Salts is the number of salt values, in [1, 256]
	// [DefaultSaltsHBase on HBase, DefaultSaltsEmbedded embedded].
	Salts int
	// HostLabels is the ordered list of labels whose first present (non-empty)
	// value is the host part of a series' data row keys; a series with none of them
	// has the empty host [host, instance]. Classic label names
	// ([a-zA-Z_][a-zA-Z0-9_]*), 1 to MaxHostLabels of them, none twice. See HostOf.
	HostLabels []string
}

// DefaultHBaseSettings are the defaults for a store on HBase.
func DefaultHBaseSettings() Settings {
	return Settings{FormatVersion: CurrentFormatVersion, BucketWidth: DefaultBucketWidth, Salts: DefaultSaltsHBase,
		HostLabels: DefaultHostLabels()}
}

// DefaultEmbeddedSettings are the defaults for an embedded store.
func DefaultEmbeddedSettings() Settings {
	return Settings{FormatVersion: CurrentFormatVersion, BucketWidth: DefaultBucketWidth, Salts: DefaultSaltsEmbedded,
		HostLabels: DefaultHostLabels()}
}

// Equal reports whether s and o are the same settings.
func (s Settings) Equal(o Settings) bool {
	return s.FormatVersion == o.FormatVersion && s.BucketWidth == o.BucketWidth && s.Salts == o.Salts &&
		slices.Equal(s.HostLabels, o.HostLabels)
}

// LabelGetter is what HostOf needs of a label set: the value of a label by name,
// "" when absent. Prometheus' labels.Labels is one.
type LabelGetter interface {
	Get(name string) string
}

// HostOf is the host part of the data row keys of the series with labels lbls: the
// value of the first label of hostLabels (Settings.HostLabels) that lbls has with a
// non-empty value, or "" when it has none of them.
func HostOf(lbls LabelGetter, hostLabels []string) string {
	for _, name := range hostLabels {
		if v := lbls.Get(name); v != "" {
			return v
		}
	}
	return ""
}

// validHostLabel reports whether name is a classic Prometheus label name,
// [a-zA-Z_][a-zA-Z0-9_]*: such names need no quoting in the claim cell, where
// spaces, '=' and ',' separate fields.
func validHostLabel(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// validateHostLabels reports what is wrong with a host label list, wrapping
// kv.ErrInvalidArgument.
func validateHostLabels(names []string) error {
	if len(names) == 0 || len(names) > MaxHostLabels {
		return fmt.Errorf("schema: %d host labels, want 1 to %d: %w", len(names), MaxHostLabels, kv.ErrInvalidArgument)
	}
	for i, name := range names {
		if !validHostLabel(name) {
			return fmt.Errorf("schema: host label %q is not a label name of the form [a-zA-Z_][a-zA-Z0-9_]*: %w", name, kv.ErrInvalidArgument)
		}
		if slices.Contains(names[:i], name) {
			return fmt.Errorf("schema: host label %q is listed twice: %w", name, kv.ErrInvalidArgument)
		}
	}
	return nil
}

// Validate reports what is wrong with s, wrapping kv.ErrInvalidArgument, or
// ErrUnsupportedFormat for a format version this binary does not know.
func (s Settings) Validate() error {
	switch {
	case s.FormatVersion > CurrentFormatVersion:
		return fmt.Errorf("schema: format version %d is newer than the %d this binary supports; upgrade hbtsdb: %w",
			s.FormatVersion, CurrentFormatVersion, ErrUnsupportedFormat)
	case s.FormatVersion < 1:
		return fmt.Errorf("schema: format version %d is unknown; this binary supports 1 to %d: %w", s.FormatVersion, CurrentFormatVersion, ErrUnsupportedFormat)
	case s.BucketWidth < MinBucketWidth || s.BucketWidth > MaxBucketWidth:
		return fmt.Errorf("schema: bucket width %s outside [%s, %s]: %w", s.BucketWidth, MinBucketWidth, MaxBucketWidth, kv.ErrInvalidArgument)
	case s.BucketWidth%time.Second != 0:
		return fmt.Errorf("schema: bucket width %s is not a whole number of seconds: %w", s.BucketWidth, kv.ErrInvalidArgument)
	case MaxBucketWidth%s.BucketWidth != 0:
		return fmt.Errorf("schema: bucket width %s does not divide 24h evenly, so buckets would straddle days: %w", s.BucketWidth, kv.ErrInvalidArgument)
	case s.BucketWidth.Milliseconds() > math.MaxUint32:
		// Unreachable with MaxBucketWidth = 24h; kept as the invariant raw
		// qualifiers rely on.
		return fmt.Errorf("schema: bucket width %s: offsets would not fit 4 bytes: %w", s.BucketWidth, kv.ErrInvalidArgument)
	case s.Salts < 1 || s.Salts > MaxSalts:
		return fmt.Errorf("schema: salts %d outside [1, %d]: %w", s.Salts, MaxSalts, kv.ErrInvalidArgument)
	}
	return validateHostLabels(s.HostLabels)
}

// String writes s as "format_version=2 bucket_width_ms=3600000 salt_buckets=16
// host_labels=host,instance", the form of the claim cell; ParseSettings reads it back.
func (s Settings) String() string {
	var b strings.Builder
	for i, c := range SettingsCells(s) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.Write(c.Qualifier)
		b.WriteByte('=')
		b.Write(c.Value)
	}
	return b.String()
}

// ParseSettings reads settings written by Settings.String (and nothing else: the
// four fields in that order, single spaces) and validates them. It fails, wrapping
// ErrMalformed, or ErrUnsupportedFormat for a newer format version.
func ParseSettings(text string) (Settings, error) {
	fields := strings.Split(text, " ")
	cells := make([]kv.Cell, 0, len(fields))
	for _, f := range fields {
		q, v, ok := strings.Cut(f, "=")
		if !ok {
			return Settings{}, fmt.Errorf("schema: settings %q: field %q is not name=value: %w", text, f, ErrMalformed)
		}
		cells = append(cells, kv.Cell{Family: FamilyMeta, Qualifier: []byte(q), Value: []byte(v)})
	}
	s, err := DecodeSettings(cells)
	if err != nil {
		return s, err
	}
	if s.String() != text {
		return Settings{}, fmt.Errorf("schema: settings %q are not in canonical form %q: %w", text, s.String(), ErrMalformed)
	}
	return s, nil
}

// SettingsCells encodes s as the cells of the schema meta row (family FamilyMeta,
// qualifiers format_version, bucket_width_ms, salt_buckets and host_labels in that
// order, timestamp 0 for the caller to set). It does not validate s.
func SettingsCells(s Settings) []kv.Cell {
	cell := func(q string, v int64) kv.Cell {
		return kv.Cell{Family: FamilyMeta, Qualifier: []byte(q), Value: strconv.AppendInt(nil, v, 10)}
	}
	return []kv.Cell{
		cell(QualifierFormatVersion, int64(s.FormatVersion)),
		cell(QualifierBucketWidth, s.BucketWidth.Milliseconds()),
		cell(QualifierSalts, int64(s.Salts)),
		{Family: FamilyMeta, Qualifier: []byte(QualifierHostLabels), Value: []byte(strings.Join(s.HostLabels, ","))},
	}
}

// DecodeSettings decodes settings from the cells of the schema meta row, using the
// first (newest) cell of each column and ignoring columns it does not know. It fails,
// wrapping ErrUnsupportedFormat, when format_version is newer than
// CurrentFormatVersion (whatever the other cells hold), and wrapping ErrMalformed
// when a column is missing, a number is not canonical decimal text, or the settings
// do not pass Validate (host labels included).
func DecodeSettings(cells []kv.Cell) (Settings, error) {
	var vals [4][]byte
	var seen [4]bool
	for _, c := range cells {
		if c.Family != FamilyMeta {
			continue
		}
		var i int
		switch string(c.Qualifier) {
		case QualifierFormatVersion:
			i = 0
		case QualifierBucketWidth:
			i = 1
		case QualifierSalts:
			i = 2
		case QualifierHostLabels:
			i = 3
		default:
			continue
		}
		if !seen[i] {
			vals[i], seen[i] = c.Value, true
		}
	}
	names := [4]string{QualifierFormatVersion, QualifierBucketWidth, QualifierSalts, QualifierHostLabels}
	var n [3]int64
	for i := range vals {
		if !seen[i] {
			return Settings{}, fmt.Errorf("schema: meta row lacks %s: %w", names[i], ErrMalformed)
		}
		if i >= len(n) {
			continue
		}
		v, err := parseDecimal(vals[i])
		if err != nil {
			return Settings{}, fmt.Errorf("schema: meta row %s: %w", names[i], err)
		}
		n[i] = v
		// Check the version first: a newer layout may give the other cells other
		// meanings, or have none of them.
		if i == 0 && v > CurrentFormatVersion {
			return Settings{}, fmt.Errorf("schema: the store has format version %d, newer than the %d this binary supports; upgrade hbtsdb: %w",
				v, CurrentFormatVersion, ErrUnsupportedFormat)
		}
	}
	if n[1] > int64(MaxBucketWidth/time.Millisecond) || n[2] > MaxSalts {
		return Settings{}, fmt.Errorf("schema: meta row bucket_width_ms=%d salt_buckets=%d out of range: %w", n[1], n[2], ErrMalformed)
	}
	s := Settings{FormatVersion: int(n[0]), BucketWidth: time.Duration(n[1]) * time.Millisecond, Salts: int(n[2]),
		HostLabels: strings.Split(string(vals[3]), ",")}
	if err := s.Validate(); err != nil {
		return Settings{}, fmt.Errorf("schema: meta row: %w: %w", err, ErrMalformed)
	}
	return s, nil
}

// parseDecimal reads a non-negative integer written by strconv.AppendInt: digits
// only, no leading zero (except "0" itself), within int64.
func parseDecimal(b []byte) (int64, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != string(b) {
		return 0, fmt.Errorf("%q is not a canonical decimal number: %w", b, ErrMalformed)
	}
	return v, nil
}

// CompareSettings returns nil if the store's settings got equal want but for the
// format version, else an error wrapping ErrMismatch that names both values of
// every difference and the flag that would fix it. The format versions are not
// compared: a store keeps the one it was created with, and this binary supports
// every version from 1 to CurrentFormatVersion; a got.FormatVersion outside
// that range is an error wrapping ErrUnsupportedFormat.
func CompareSettings(got, want Settings) error {
	if got.FormatVersion > CurrentFormatVersion {
		return fmt.Errorf("schema: the store has format version %d, newer than the %d this binary supports; upgrade hbtsdb: %w",
			got.FormatVersion, CurrentFormatVersion, ErrUnsupportedFormat)
	}
	if got.FormatVersion < 1 {
		return fmt.Errorf("schema: the store has format version %d; this binary supports 1 to %d: %w",
			got.FormatVersion, CurrentFormatVersion, ErrUnsupportedFormat)
	}
	var diffs []string
	if got.BucketWidth != want.BucketWidth {
		diffs = append(diffs, fmt.Sprintf("schema: bucket width: the store was created with %s, this process is configured with %s: start with --schema.bucket-width=%s or use another store",
			shortDuration(got.BucketWidth), shortDuration(want.BucketWidth), shortDuration(got.BucketWidth)))
	}
	if got.Salts != want.Salts {
		diffs = append(diffs, fmt.Sprintf("schema: salts: the store was created with %d, this process is configured with %d: start with --schema.salts=%d or use another store",
			got.Salts, want.Salts, got.Salts))
	}
	if !slices.Equal(got.HostLabels, want.HostLabels) {
		stored := strings.Join(got.HostLabels, ",")
		diffs = append(diffs, fmt.Sprintf("schema: host labels: the store was created with %s, this process is configured with %s: start with --schema.host-labels=%s or use another store",
			stored, strings.Join(want.HostLabels, ","), stored))
	}
	if len(diffs) == 0 {
		return nil
	}
	return mismatchError(strings.Join(diffs, "; "))
}

// mismatchError is a settings mismatch; its message is complete in itself.
type mismatchError string

func (e mismatchError) Error() string { return string(e) }
func (e mismatchError) Unwrap() error { return ErrMismatch }

// shortDuration writes d as a flag value without zero units: 1h, 1h30m, 90s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
