package schema_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/storage"
)

func TestSettingsValidate(t *testing.T) {
	base := schema.DefaultHBaseSettings()
	for _, tc := range []struct {
		name   string
		change func(*schema.Settings)
		want   error // nil: valid
	}{
		{"the HBase defaults are valid", func(*schema.Settings) {}, nil},
		{"the embedded defaults are valid", func(s *schema.Settings) { *s = schema.DefaultEmbeddedSettings() }, nil},
		{"a one-minute bucket is valid", func(s *schema.Settings) { s.BucketWidth = time.Minute }, nil},
		{"a day-wide bucket is valid", func(s *schema.Settings) { s.BucketWidth = 24 * time.Hour }, nil},
		{"a 90-second bucket divides the day", func(s *schema.Settings) { s.BucketWidth = 90 * time.Second }, nil},
		{"256 salt buckets are valid", func(s *schema.Settings) { s.SaltBuckets = 256 }, nil},
		{"a bucket under a minute is rejected", func(s *schema.Settings) { s.BucketWidth = 59 * time.Second }, storage.ErrInvalidArgument},
		{"a bucket over a day is rejected", func(s *schema.Settings) { s.BucketWidth = 48 * time.Hour }, storage.ErrInvalidArgument},
		{"a bucket of fractional seconds is rejected", func(s *schema.Settings) { s.BucketWidth = time.Hour + time.Millisecond }, storage.ErrInvalidArgument},
		{"a bucket that does not divide the day is rejected", func(s *schema.Settings) { s.BucketWidth = 7 * time.Hour }, storage.ErrInvalidArgument},
		{"0 salt buckets are rejected", func(s *schema.Settings) { s.SaltBuckets = 0 }, storage.ErrInvalidArgument},
		{"257 salt buckets are rejected", func(s *schema.Settings) { s.SaltBuckets = 257 }, storage.ErrInvalidArgument},
		{"format version 0 is rejected", func(s *schema.Settings) { s.FormatVersion = 0 }, schema.ErrUnsupportedFormat},
		{"a newer format version is rejected", func(s *schema.Settings) { s.FormatVersion = 2 }, schema.ErrUnsupportedFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.change(&s)
			err := s.Validate()
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("Validate(%+v) = %v, want %v", s, err, tc.want)
			}
		})
	}
}

func TestSettingsCellsAreReadableText(t *testing.T) {
	s := schema.DefaultHBaseSettings()
	cells := schema.SettingsCells(s)
	want := map[string]string{"format_version": "1", "bucket_width_ms": "3600000", "salt_buckets": "16"}
	for _, c := range cells {
		if c.Family != "m" || want[string(c.Qualifier)] != string(c.Value) {
			t.Errorf("cell m:%s = %q", c.Qualifier, c.Value)
		}
	}
	back, err := schema.DecodeSettings(cells)
	if err != nil || back != s {
		t.Errorf("DecodeSettings = %+v, %v; want %+v", back, err, s)
	}
	if got := s.String(); got != "format_version=1 bucket_width_ms=3600000 salt_buckets=16" {
		t.Errorf("String() = %q", got)
	}
	if back, err := schema.ParseSettings(s.String()); err != nil || back != s {
		t.Errorf("ParseSettings(String()) = %+v, %v", back, err)
	}
}

func TestDecodeSettings(t *testing.T) {
	cell := func(q, v string) storage.Cell {
		return storage.Cell{Family: "m", Qualifier: []byte(q), Value: []byte(v)}
	}
	valid := []storage.Cell{cell("format_version", "1"), cell("bucket_width_ms", "600000"), cell("salt_buckets", "4")}
	t.Run("unknown columns and other families are ignored", func(t *testing.T) {
		cells := append([]storage.Cell{cell("a_later_setting", "x"), {Family: "z", Qualifier: []byte("salt_buckets"), Value: []byte("x")}}, valid...)
		s, err := schema.DecodeSettings(cells)
		if err != nil || s.BucketWidth != 10*time.Minute || s.SaltBuckets != 4 {
			t.Errorf("DecodeSettings = %+v, %v", s, err)
		}
	})
	t.Run("the newest version of a column wins", func(t *testing.T) {
		s, err := schema.DecodeSettings(append([]storage.Cell{cell("salt_buckets", "8")}, valid...))
		if err != nil || s.SaltBuckets != 8 {
			t.Errorf("DecodeSettings = %+v, %v", s, err)
		}
	})
	t.Run("a newer format version is reported as such whatever else the row holds", func(t *testing.T) {
		_, err := schema.DecodeSettings([]storage.Cell{cell("format_version", "2"), cell("bucket_width_ms", "what"), cell("salt_buckets", "1")})
		if !errors.Is(err, schema.ErrUnsupportedFormat) {
			t.Errorf("DecodeSettings = %v, want ErrUnsupportedFormat", err)
		}
	})
	for _, tc := range []struct {
		name string
		q, v string
	}{
		{"a leading zero", "salt_buckets", "04"},
		{"a sign", "salt_buckets", "+4"},
		{"a space", "salt_buckets", " 4"},
		{"a negative number", "bucket_width_ms", "-600000"},
		{"an empty value", "format_version", ""},
		{"an out-of-range salt", "salt_buckets", "257"},
		{"an int64 overflow", "bucket_width_ms", "99999999999999999999"},
		{"a width not in whole seconds", "bucket_width_ms", "600001"},
	} {
		t.Run(tc.name+" is malformed", func(t *testing.T) {
			cells := []storage.Cell{cell(tc.q, tc.v)}
			cells = append(cells, valid...)
			if s, err := schema.DecodeSettings(cells); !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("DecodeSettings with %s=%q = %+v, %v; want ErrMalformed", tc.q, tc.v, s, err)
			}
		})
	}
	t.Run("a missing column is malformed", func(t *testing.T) {
		if _, err := schema.DecodeSettings(valid[:2]); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("DecodeSettings = %v", err)
		}
	})
	for _, text := range []string{
		"", "format_version=1", "bucket_width_ms=3600000 format_version=1 salt_buckets=16",
		"format_version=1  bucket_width_ms=3600000 salt_buckets=16", "format_version=1 bucket_width_ms=3600000 salt_buckets=16 ",
		"format_version=1 bucket_width_ms=3600000 salt_buckets=16 x=1",
	} {
		if s, err := schema.ParseSettings(text); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("ParseSettings(%q) = %+v, %v; want ErrMalformed", text, s, err)
		}
	}
}
