package otsdbformat

import (
	"bytes"
	"errors"
	"testing"
)

// TestParseRowKey splits TestAppendDataPoints' ROW_KEY (metric 1, 2013-01-01
// 00:00 UTC, tag 1=1) and keys of other layouts.
func TestParseRowKey(t *testing.T) {
	for _, tc := range []struct {
		name      string
		layout    Layout
		key       []byte
		salt, m   []byte
		base      uint32
		tags      [][2][]byte
		globalAnn bool
	}{
		{"TestAppendDataPoints.ROW_KEY", Layout{}, []byte{0, 0, 1, 0x50, 0xE2, 0x27, 0, 0, 0, 1, 0, 0, 1},
			nil, []byte{0, 0, 1}, 1356998400, [][2][]byte{{{0, 0, 1}, {0, 0, 1}}}, false},
		{"salted, two tags", Layout{SaltWidth: 1, SaltBuckets: 4},
			[]byte{3, 0, 0, 2, 0x50, 0xE2, 0x35, 0x10, 0, 0, 1, 0, 0, 7, 0, 0, 2, 0, 0, 9},
			[]byte{3}, []byte{0, 0, 2}, 1357002000, [][2][]byte{{{0, 0, 1}, {0, 0, 7}}, {{0, 0, 2}, {0, 0, 9}}}, false},
		{"other UID widths", Layout{MetricWidth: 4, TagkWidth: 2, TagvWidth: 5},
			[]byte{0, 0, 0, 5, 0x50, 0xE2, 0x27, 0, 0, 1, 0, 0, 0, 0, 8},
			nil, []byte{0, 0, 0, 5}, 1356998400, [][2][]byte{{{0, 1}, {0, 0, 0, 0, 8}}}, false},
		{"the global annotation row, no tags", Layout{}, []byte{0, 0, 0, 0x50, 0xE2, 0x27, 0},
			nil, []byte{0, 0, 0}, 1356998400, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := tc.layout.ParseRowKey(tc.key)
			if err != nil || !bytes.Equal(k.Salt, tc.salt) || !bytes.Equal(k.Metric, tc.m) || k.BaseTime != tc.base ||
				tc.layout.NumTags(k) != len(tc.tags) || k.IsGlobalAnnotation() != tc.globalAnn {
				t.Fatalf("ParseRowKey(%x) = %+v, %d tags, %v", tc.key, k, tc.layout.NumTags(k), err)
			}
			for i, want := range tc.tags {
				if tagk, tagv := tc.layout.Tag(k, i); !bytes.Equal(tagk, want[0]) || !bytes.Equal(tagv, want[1]) {
					t.Errorf("tag %d = %x=%x, want %x=%x", i, tagk, tagv, want[0], want[1])
				}
			}
		})
	}
	_, err := Layout{}.ParseRowKey([]byte{0, 0, 1, 0x50, 0xE2, 0x27, 0, 0, 0, 1, 0, 0})
	want := "otsdbformat: row key 00000150e227000000010000: not OpenTSDB's format: 12 bytes is not salt(0) + metric(3) + base time(4) + whole tag pairs of 6"
	if !errors.Is(err, ErrCorrupt) || err.Error() != want {
		t.Errorf("ParseRowKey of a key cut short: %v, want %s", err, want)
	}
	if k, _ := (Layout{}).ParseRowKey([]byte{0, 0, 1, 0x50, 0xE2, 0x27, 0, 0, 0, 1, 0, 0, 1}); k.Time(8) != 1356998400008 {
		t.Errorf("Time(8) = %d, want 1356998400008 (TestInternal.getTimestampFromQualifierMs)", k.Time(8))
	}
}

func TestLayout(t *testing.T) {
	if got := (Layout{}).String(); got != "salt.width=0 salt.buckets=20 uid.width=3/3/3" {
		t.Errorf("the default layout is %s", got)
	}
	for _, tc := range []struct {
		layout  Layout
		bucket  int
		prefix  []byte
		buckets int
	}{
		{Layout{}, 0, []byte{}, 1},
		{Layout{SaltWidth: 1}, 3, []byte{3}, 20},
		{Layout{SaltWidth: 2, SaltBuckets: 300}, 258, []byte{1, 2}, 300},
	} {
		if got := tc.layout.SaltPrefix(tc.bucket); !bytes.Equal(got, tc.prefix) || tc.layout.Buckets() != tc.buckets {
			t.Errorf("%s: SaltPrefix(%d) = %x, Buckets %d; want %x, %d", tc.layout, tc.bucket, got, tc.layout.Buckets(), tc.prefix, tc.buckets)
		}
	}
	err := Layout{SaltWidth: 9, SaltBuckets: -1, MetricWidth: 9, TagvWidth: -2}.Validate()
	want := "otsdbformat: salt width 9 is not in 0..8 (tsd.storage.salt.width)\n" +
		"otsdbformat: -1 salt buckets, want at least 1 (tsd.storage.salt.buckets)\n" +
		"otsdbformat: metrics UID width 9 is not in 1..8 (tsd.storage.uid.width.metric)\n" +
		"otsdbformat: tagv UID width -2 is not in 1..8 (tsd.storage.uid.width.tagv)"
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want\n%s", err, want)
	}
	if err := (Layout{SaltWidth: 1, SaltBuckets: 257}).Validate(); err == nil ||
		err.Error() != "otsdbformat: 257 salt buckets do not fit in a salt of 1 bytes" {
		t.Errorf("Validate of 257 buckets in 1 byte = %v", err)
	}
	if err := (Layout{}).Validate(); err != nil {
		t.Errorf("the default layout: %v", err)
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{"sys.cpu.user": "sys.cpu.user", "caf\xe9": "café", "\xff": "ÿ", "": ""} {
		if got := Name([]byte(in)); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
