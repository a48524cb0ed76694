package otsdbformat

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error about bytes that are not what OpenTSDB
// writes (OpenTSDB's IllegalDataException).
var ErrCorrupt = errors.New("not OpenTSDB's format")

// Defaults of Layout: OpenTSDB 2.4's own (TSDB, Const).
const (
	DefaultUIDWidth    = 3
	DefaultSaltWidth   = 0
	DefaultSaltBuckets = 20
)

// TimestampBytes is the width of a row key's base time (Const.TIMESTAMP_BYTES).
const TimestampBytes = 4

// MaxTimespan is the time one data row covers, in seconds (Const.MAX_TIMESPAN).
const MaxTimespan = 3600

// Layout is how an OpenTSDB installation lays out its row keys: the settings
// of its opentsdb.conf that change them. The zero value of a field means its
// OpenTSDB default.
type Layout struct {
	// SaltWidth is tsd.storage.salt.width, the salt's bytes at the start of
	// each row key [0: not salted].
	SaltWidth int
	// SaltBuckets is tsd.storage.salt.buckets [20]; it matters only with a
	// SaltWidth.
	SaltBuckets int
	// MetricWidth, TagkWidth and TagvWidth are tsd.storage.uid.width.metric,
	// .tagk and .tagv, the bytes of each kind of UID [3].
	MetricWidth, TagkWidth, TagvWidth int
}

// WithDefaults returns l with OpenTSDB's default for every zero field.
func (l Layout) WithDefaults() Layout {
	if l.SaltBuckets == 0 {
		l.SaltBuckets = DefaultSaltBuckets
	}
	for _, w := range []*int{&l.MetricWidth, &l.TagkWidth, &l.TagvWidth} {
		if *w == 0 {
			*w = DefaultUIDWidth
		}
	}
	return l
}

// Validate reports every setting OpenTSDB itself refuses (Const.setSaltWidth,
// setSaltBuckets, UniqueId's width check), joined; l is taken with its
// defaults.
func (l Layout) Validate() error {
	l = l.WithDefaults()
	var errs []error
	if l.SaltWidth < 0 || l.SaltWidth > 8 {
		errs = append(errs, fmt.Errorf("otsdbformat: salt width %d is not in 0..8 (tsd.storage.salt.width)", l.SaltWidth))
	}
	if l.SaltBuckets < 1 {
		errs = append(errs, fmt.Errorf("otsdbformat: %d salt buckets, want at least 1 (tsd.storage.salt.buckets)", l.SaltBuckets))
	} else if l.SaltWidth > 0 && l.SaltWidth < 8 && uint64(l.SaltBuckets) > 1<<(8*l.SaltWidth) {
		errs = append(errs, fmt.Errorf("otsdbformat: %d salt buckets do not fit in a salt of %d bytes", l.SaltBuckets, l.SaltWidth))
	}
	for _, w := range []struct {
		kind  string
		width int
	}{{KindMetric, l.MetricWidth}, {KindTagk, l.TagkWidth}, {KindTagv, l.TagvWidth}} {
		if w.width < 1 || w.width > 8 {
			errs = append(errs, fmt.Errorf("otsdbformat: %s UID width %d is not in 1..8 (tsd.storage.uid.width.%s)",
				w.kind, w.width, uidWidthKey(w.kind)))
		}
	}
	return errors.Join(errs...)
}

// uidWidthKey is the suffix of kind's tsd.storage.uid.width setting.
func uidWidthKey(kind string) string {
	if kind == KindMetric {
		return "metric"
	}
	return kind
}

// String is the layout as OpenTSDB's settings, e.g.
// "salt.width=0 salt.buckets=20 uid.width=3/3/3".
func (l Layout) String() string {
	l = l.WithDefaults()
	return fmt.Sprintf("salt.width=%d salt.buckets=%d uid.width=%d/%d/%d", l.SaltWidth, l.SaltBuckets,
		l.MetricWidth, l.TagkWidth, l.TagvWidth)
}

// Buckets is how many salt buckets the rows spread over: SaltBuckets when
// salted, else 1.
func (l Layout) Buckets() int {
	l = l.WithDefaults()
	if l.SaltWidth == 0 {
		return 1
	}
	return l.SaltBuckets
}

// SaltPrefix is the row key prefix of salt bucket i (RowKey.getSaltBytes):
// i in SaltWidth big-endian bytes, empty when not salted.
func (l Layout) SaltPrefix(i int) []byte {
	b := make([]byte, l.SaltWidth)
	for j := l.SaltWidth - 1; j >= 0; j-- {
		b[j] = byte(i)
		i >>= 8
	}
	return b
}

// RowKey is a data row's key, split. Its slices alias the key parsed.
type RowKey struct {
	// Salt is the salt bytes (empty when not salted).
	Salt []byte
	// Metric is the metric's UID.
	Metric []byte
	// BaseTime is the row's hour, Unix seconds.
	BaseTime uint32
	// Tags is the (tagk UID, tagv UID) pairs, concatenated.
	Tags []byte
}

// ParseRowKey splits a data row key. A key whose length is not the salt, a
// metric, the base time and whole tag pairs is an error wrapping ErrCorrupt.
func (l Layout) ParseRowKey(key []byte) (RowKey, error) {
	l = l.WithDefaults()
	head := l.SaltWidth + l.MetricWidth + TimestampBytes
	pair := l.TagkWidth + l.TagvWidth
	if len(key) < head || (len(key)-head)%pair != 0 {
		return RowKey{}, fmt.Errorf("otsdbformat: row key %x: %w: %d bytes is not salt(%d) + metric(%d) + base time(4) + "+
			"whole tag pairs of %d", key, ErrCorrupt, len(key), l.SaltWidth, l.MetricWidth, pair)
	}
	m := l.SaltWidth + l.MetricWidth
	return RowKey{
		Salt:     key[:l.SaltWidth],
		Metric:   key[l.SaltWidth:m],
		BaseTime: binary.BigEndian.Uint32(key[m:head]),
		Tags:     key[head:],
	}, nil
}

// NumTags is how many tag pairs k has.
func (l Layout) NumTags(k RowKey) int {
	l = l.WithDefaults()
	return len(k.Tags) / (l.TagkWidth + l.TagvWidth)
}

// Tag is k's i-th tag pair's UIDs.
func (l Layout) Tag(k RowKey, i int) (tagk, tagv []byte) {
	l = l.WithDefaults()
	p := k.Tags[i*(l.TagkWidth+l.TagvWidth):]
	return p[:l.TagkWidth], p[l.TagkWidth : l.TagkWidth+l.TagvWidth]
}

// IsGlobalAnnotation reports whether k is the row of global annotations,
// whose metric UID is all zeros (RowKey.prefixKeyWithSalt).
func (k RowKey) IsGlobalAnnotation() bool {
	for _, b := range k.Metric {
		if b != 0 {
			return false
		}
	}
	return true
}

// Time is the Unix time in milliseconds of a point offset ms after the base
// time (Internal.getTimestampFromQualifier).
func (k RowKey) Time(offsetMs uint32) int64 {
	return int64(k.BaseTime)*1000 + int64(offsetMs)
}
