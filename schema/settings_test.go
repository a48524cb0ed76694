package schema_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
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
		{"256 salts are valid", func(s *schema.Settings) { s.Salts = 256 }, nil},
		{"a bucket under a minute is rejected", func(s *schema.Settings) { s.BucketWidth = 59 * time.Second }, kv.ErrInvalidArgument},
		{"a bucket over a day is rejected", func(s *schema.Settings) { s.BucketWidth = 48 * time.Hour }, kv.ErrInvalidArgument},
		{"a bucket of fractional seconds is rejected", func(s *schema.Settings) { s.BucketWidth = time.Hour + time.Millisecond }, kv.ErrInvalidArgument},
		{"a bucket that does not divide the day is rejected", func(s *schema.Settings) { s.BucketWidth = 7 * time.Hour }, kv.ErrInvalidArgument},
		{"0 salts are rejected", func(s *schema.Settings) { s.Salts = 0 }, kv.ErrInvalidArgument},
		{"257 salts are rejected", func(s *schema.Settings) { s.Salts = 257 }, kv.ErrInvalidArgument},
		{"format version 0 is rejected", func(s *schema.Settings) { s.FormatVersion = 0 }, schema.ErrUnsupportedFormat},
		{"format version 1 (counter series IDs) is valid", func(s *schema.Settings) { s.FormatVersion = 1 }, nil},
		{"format version 2 (hash-derived series IDs) is valid", func(s *schema.Settings) { s.FormatVersion = 2 }, nil},
		{"a newer format version is rejected", func(s *schema.Settings) { s.FormatVersion = schema.CurrentFormatVersion + 1 }, schema.ErrUnsupportedFormat},
		{"one host label is valid", func(s *schema.Settings) { s.HostLabels = []string{"node"} }, nil},
		{"sixteen host labels are valid", func(s *schema.Settings) { s.HostLabels = sixteenLabels() }, nil},
		{"host labels with underscores and digits are valid", func(s *schema.Settings) { s.HostLabels = []string{"_h1", "Host_2"} }, nil},
		{"no host labels are rejected", func(s *schema.Settings) { s.HostLabels = nil }, kv.ErrInvalidArgument},
		{"seventeen host labels are rejected", func(s *schema.Settings) { s.HostLabels = append(sixteenLabels(), "q") }, kv.ErrInvalidArgument},
		{"an empty host label is rejected", func(s *schema.Settings) { s.HostLabels = []string{"host", ""} }, kv.ErrInvalidArgument},
		{"a host label given twice is rejected", func(s *schema.Settings) { s.HostLabels = []string{"host", "instance", "host"} }, kv.ErrInvalidArgument},
		{"a host label with a comma is rejected", func(s *schema.Settings) { s.HostLabels = []string{"host,instance"} }, kv.ErrInvalidArgument},
		{"a host label with a space is rejected", func(s *schema.Settings) { s.HostLabels = []string{"my host"} }, kv.ErrInvalidArgument},
		{"a host label starting with a digit is rejected", func(s *schema.Settings) { s.HostLabels = []string{"1host"} }, kv.ErrInvalidArgument},
		{"a host label with UTF-8 is rejected", func(s *schema.Settings) { s.HostLabels = []string{"hôte"} }, kv.ErrInvalidArgument},
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

func sixteenLabels() []string {
	return []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"}
}

func TestSettingsCellsAreReadableText(t *testing.T) {
	s := schema.DefaultHBaseSettings()
	cells := schema.SettingsCells(s)
	want := map[string]string{"format_version": "2", "bucket_width_ms": "3600000", "salt_buckets": "16", "host_labels": "host,instance"}
	if len(cells) != len(want) {
		t.Errorf("%d cells, want %d", len(cells), len(want))
	}
	for _, c := range cells {
		if c.Family != "m" || want[string(c.Qualifier)] != string(c.Value) {
			t.Errorf("cell m:%s = %q", c.Qualifier, c.Value)
		}
	}
	back, err := schema.DecodeSettings(cells)
	if err != nil || !back.Equal(s) {
		t.Errorf("DecodeSettings = %+v, %v; want %+v", back, err, s)
	}
	if got := s.String(); got != "format_version=2 bucket_width_ms=3600000 salt_buckets=16 host_labels=host,instance" {
		t.Errorf("String() = %q", got)
	}
	if back, err := schema.ParseSettings(s.String()); err != nil || !back.Equal(s) {
		t.Errorf("ParseSettings(String()) = %+v, %v", back, err)
	}
	one := s
	one.HostLabels = []string{"node"}
	if got := one.String(); got != "format_version=2 bucket_width_ms=3600000 salt_buckets=16 host_labels=node" {
		t.Errorf("String() with one host label = %q", got)
	}
}

func TestSettingsEqual(t *testing.T) {
	a := schema.DefaultHBaseSettings()
	for _, tc := range []struct {
		name   string
		change func(*schema.Settings)
		equal  bool
	}{
		{"the same settings are equal", func(*schema.Settings) {}, true},
		{"another bucket width differs", func(s *schema.Settings) { s.BucketWidth = time.Minute }, false},
		{"another salt differs", func(s *schema.Settings) { s.Salts = 1 }, false},
		{"other host labels differ", func(s *schema.Settings) { s.HostLabels = []string{"host"} }, false},
		{"host labels in another order differ", func(s *schema.Settings) { s.HostLabels = []string{"instance", "host"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := schema.DefaultHBaseSettings()
			tc.change(&b)
			if got := a.Equal(b); got != tc.equal {
				t.Errorf("Equal(%+v, %+v) = %v, want %v", a, b, got, tc.equal)
			}
		})
	}
}

// labelMap is a label set for HostOf.
type labelMap map[string]string

func (m labelMap) Get(name string) string { return m[name] }

func TestHostOf(t *testing.T) {
	hostLabels := schema.DefaultHostLabels()
	for _, tc := range []struct {
		name string
		lbls labelMap
		want string
	}{
		{"the first host label wins", labelMap{"host": "web-1", "instance": "10.0.0.1:9100"}, "web-1"},
		{"the second is taken when the first is absent", labelMap{"instance": "10.0.0.1:9100"}, "10.0.0.1:9100"},
		{"an empty value counts as absent", labelMap{"host": "", "instance": "i"}, "i"},
		{"no host label gives the empty host", labelMap{"job": "node"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schema.HostOf(tc.lbls, hostLabels); got != tc.want {
				t.Errorf("HostOf(%v) = %q, want %q", tc.lbls, got, tc.want)
			}
		})
	}
}

func TestDecodeSettings(t *testing.T) {
	cell := func(q, v string) kv.Cell {
		return kv.Cell{Family: "m", Qualifier: []byte(q), Value: []byte(v)}
	}
	valid := []kv.Cell{cell("format_version", "1"), cell("bucket_width_ms", "600000"), cell("salt_buckets", "4"), cell("host_labels", "node")}
	t.Run("unknown columns and other families are ignored", func(t *testing.T) {
		cells := append([]kv.Cell{cell("a_later_setting", "x"), {Family: "z", Qualifier: []byte("salt_buckets"), Value: []byte("x")}}, valid...)
		s, err := schema.DecodeSettings(cells)
		if err != nil || s.BucketWidth != 10*time.Minute || s.Salts != 4 || !slices.Equal(s.HostLabels, []string{"node"}) {
			t.Errorf("DecodeSettings = %+v, %v", s, err)
		}
	})
	t.Run("format 1 and format 2 rows decode", func(t *testing.T) {
		for _, v := range []string{"1", "2"} {
			cells := append([]kv.Cell{cell("format_version", v)}, valid[1:]...)
			if s, err := schema.DecodeSettings(cells); err != nil || fmt.Sprint(s.FormatVersion) != v {
				t.Errorf("DecodeSettings of format %s = %+v, %v", v, s, err)
			}
		}
	})
	t.Run("the newest version of a column wins", func(t *testing.T) {
		s, err := schema.DecodeSettings(append([]kv.Cell{cell("salt_buckets", "8")}, valid...))
		if err != nil || s.Salts != 8 {
			t.Errorf("DecodeSettings = %+v, %v", s, err)
		}
	})
	t.Run("a newer format version is reported as such whatever else the row holds", func(t *testing.T) {
		_, err := schema.DecodeSettings([]kv.Cell{cell("format_version", "3"), cell("bucket_width_ms", "what"), cell("salt_buckets", "1")})
		if !errors.Is(err, schema.ErrUnsupportedFormat) {
			t.Errorf("DecodeSettings = %v, want ErrUnsupportedFormat", err)
		}
		_, err = schema.DecodeSettings([]kv.Cell{cell("format_version", "3")})
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
		{"an empty host label list", "host_labels", ""},
		{"a trailing comma", "host_labels", "host,"},
		{"a space after the comma", "host_labels", "host, instance"},
		{"a repeated host label", "host_labels", "host,host"},
		{"a host label that is no label name", "host_labels", "host-name"},
	} {
		t.Run(tc.name+" is malformed", func(t *testing.T) {
			cells := []kv.Cell{cell(tc.q, tc.v)}
			cells = append(cells, valid...)
			if s, err := schema.DecodeSettings(cells); !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("DecodeSettings with %s=%q = %+v, %v; want ErrMalformed", tc.q, tc.v, s, err)
			}
		})
	}
	for n := range valid {
		t.Run("a missing "+string(valid[n].Qualifier)+" is malformed", func(t *testing.T) {
			cells := slices.Delete(slices.Clone(valid), n, n+1)
			if _, err := schema.DecodeSettings(cells); !errors.Is(err, schema.ErrMalformed) || !strings.Contains(err.Error(), "lacks "+string(valid[n].Qualifier)) {
				t.Errorf("DecodeSettings = %v", err)
			}
		})
	}
	for _, text := range []string{
		"", "format_version=1", "bucket_width_ms=3600000 format_version=1 salt_buckets=16 host_labels=host",
		"format_version=1  bucket_width_ms=3600000 salt_buckets=16 host_labels=host",
		"format_version=1 bucket_width_ms=3600000 salt_buckets=16 host_labels=host ",
		"format_version=1 bucket_width_ms=3600000 salt_buckets=16 host_labels=host x=1",
		"format_version=1 bucket_width_ms=3600000 salt_buckets=16",
		"format_version=1 bucket_width_ms=3600000 salt_buckets=16 host_labels=",
		"format_version=1 bucket_width_ms=3600000 salt_buckets=16 host_labels=host host_labels=host",
	} {
		if s, err := schema.ParseSettings(text); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("ParseSettings(%q) = %+v, %v; want ErrMalformed", text, s, err)
		}
	}
}

func TestCompareSettings(t *testing.T) {
	want := schema.DefaultHBaseSettings()
	for _, tc := range []struct {
		name   string
		change func(*schema.Settings) // of the store's settings
		want   error                  // nil: the store can be used
		text   string                 // in the error's message
	}{
		{"equal settings match", func(*schema.Settings) {}, nil, ""},
		{"a format-1 store is used as it is by a binary of format 2",
			func(s *schema.Settings) { s.FormatVersion = schema.FormatCounterSeriesIDs }, nil, ""},
		{"a format-3 store is refused", func(s *schema.Settings) { s.FormatVersion = schema.CurrentFormatVersion + 1 },
			schema.ErrUnsupportedFormat, "newer than the 2 this binary supports; upgrade hbtsdb"},
		{"format 0 is refused", func(s *schema.Settings) { s.FormatVersion = 0 }, schema.ErrUnsupportedFormat, "supports 1 to 2"},
		{"another bucket width is a mismatch, whatever the format", func(s *schema.Settings) { s.FormatVersion, s.BucketWidth = 1, 2*time.Hour },
			schema.ErrMismatch, "start with --schema.bucket-width=2h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := schema.DefaultHBaseSettings()
			tc.change(&got)
			err := schema.CompareSettings(got, want)
			if (tc.want == nil) != (err == nil) || tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text)) {
				t.Errorf("CompareSettings(%v, %v) = %v; want %v containing %q", got, want, err, tc.want, tc.text)
			}
		})
	}
	// A process configured with format 1 (an explicit choice, or an older
	// binary's settings) uses a format-2 store as it is too.
	old := want
	old.FormatVersion = 1
	if err := schema.CompareSettings(want, old); err != nil {
		t.Errorf("CompareSettings(format 2 store, format 1 configured) = %v", err)
	}
}
