package schema_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"

	"github.com/hbtsdb/hbtsdb/schema"
)

func TestTablesWithDefaultOptions(t *testing.T) {
	specs := schema.Tables(schema.DefaultTableOptions())
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		if err := s.Validate(); err != nil {
			t.Errorf("table %s: %v", s.Name, err)
		}
		for _, f := range s.Families {
			if f.Versions() != 1 || f.Compression != "NONE" || f.BloomFilter != "ROW" {
				t.Errorf("table %s family %s: %+v", s.Name, f.Name, f)
			}
		}
	}
	if want := []string{"data", "series", "index", "meta", "exemplars", "pending", "rollup-5m", "rollup-1h"}; !slices.Equal(names, want) {
		t.Fatalf("tables %v, want %v", names, want)
	}
	day := 24 * time.Hour
	// The index outlives the longest retention (the 1h rollups' 5 years) by a day.
	wantTTL := map[string]map[string]time.Duration{
		"data":      {"r": 400 * day, "c": 400 * day, "t": 400 * day},
		"series":    {"i": 0, "l": 0},
		"index":     {"p": (5*365 + 1) * day},
		"meta":      {"m": 0},
		"exemplars": {"e": 30 * day},
		"pending":   {"p": 400 * day},
		"rollup-5m": {"a": 90 * day},
		"rollup-1h": {"a": 5 * 365 * day},
	}
	for _, s := range specs {
		if len(s.Families) != len(wantTTL[s.Name]) {
			t.Errorf("table %s has families %+v", s.Name, s.Families)
		}
		for fam, ttl := range wantTTL[s.Name] {
			f, ok := s.Family(fam)
			if !ok || f.TTL != ttl {
				t.Errorf("table %s family %s: present %v, TTL %s, want %s", s.Name, fam, ok, f.TTL, ttl)
			}
			wantEnc := "FAST_DIFF"
			if s.Name == "series" || s.Name == "meta" {
				wantEnc = "NONE"
			}
			if f.BlockEncoding != wantEnc {
				t.Errorf("table %s family %s: block encoding %s, want %s", s.Name, fam, f.BlockEncoding, wantEnc)
			}
		}
		split := s.Name == "data" || s.Name == "exemplars" || s.Name == "pending" || strings.HasPrefix(s.Name, "rollup-")
		if split && len(s.SplitKeys) != 15 {
			t.Errorf("table %s: %d split keys, want 15", s.Name, len(s.SplitKeys))
		}
		if !split && s.SplitKeys != nil {
			t.Errorf("table %s is split", s.Name)
		}
	}
	data := specs[0]
	for i, k := range data.SplitKeys {
		if len(k) != 1 || k[0] != byte(i+1) {
			t.Errorf("split key %d = %x, want %02x", i, k, i+1)
		}
	}
}

func TestTablesOptions(t *testing.T) {
	o := schema.TableOptions{RawRetention: 0, Compression: "SNAPPY", Salts: 1}
	for _, s := range schema.Tables(o) {
		if s.SplitKeys != nil {
			t.Errorf("table %s is split with one salt", s.Name)
		}
		for _, f := range s.Families {
			if f.Compression != "SNAPPY" {
				t.Errorf("table %s family %s: compression %q", s.Name, f.Name, f.Compression)
			}
			if f.TTL != 0 {
				t.Errorf("table %s family %s: TTL %s with retention 0 (forever)", s.Name, f.Name, f.TTL)
			}
		}
	}
	o.Salts = 256
	if n := len(schema.Tables(o)[0].SplitKeys); n != 255 {
		t.Errorf("256 salts give %d split keys, want 255", n)
	}
	if err := (schema.TableOptions{Salts: 0}).Validate(); err == nil {
		t.Error("0 salts validate")
	}
	if err := (schema.TableOptions{Salts: 1, RawRetention: 1500 * time.Millisecond}).Validate(); err == nil {
		t.Error("a retention of 1.5s validates")
	}
	if err := (schema.TableOptions{Salts: 1, ExemplarRetention: 1500 * time.Millisecond}).Validate(); err == nil || err.Error() != "schema: exemplar retention 1.5s is negative or not a whole number of seconds: invalid argument" {
		t.Errorf("an exemplar retention of 1.5s: %v", err)
	}
	if err := (schema.TableOptions{Salts: 1, Rollups: []schema.Rollup{{Resolution: time.Hour, Retention: -time.Hour}}}).Validate(); err == nil {
		t.Error("a negative retention validates")
	}
	if err := schema.DefaultTableOptions().Validate(); err != nil {
		t.Errorf("the default options: %v", err)
	}
	if err := (schema.TableOptions{Salts: 257}).Validate(); err == nil {
		t.Error("257 salts validate")
	}
}

func TestTablesOneRollupTablePerResolution(t *testing.T) {
	day := 24 * time.Hour
	o := schema.TableOptions{RawRetention: 30 * day, Salts: 4,
		Rollups: []schema.Rollup{{Resolution: time.Minute, Retention: 7 * day}, {Resolution: 15 * time.Minute, Retention: 60 * day}, {Resolution: day, Retention: 0}}}
	specs := schema.Tables(o)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if want := []string{"data", "series", "index", "meta", "exemplars", "pending", "rollup-1m", "rollup-15m", "rollup-1d"}; !slices.Equal(names, want) {
		t.Fatalf("tables %v, want %v", names, want)
	}
	for i, r := range o.Rollups {
		s := specs[6+i]
		if len(s.Families) != 1 || s.Families[0].Name != "a" || s.Families[0].TTL != r.Retention || len(s.SplitKeys) != 3 {
			t.Errorf("table %s: %+v, want family a with TTL %s and 3 split keys", s.Name, s, r.Retention)
		}
	}
	if got := schema.Tables(schema.TableOptions{Salts: 1}); len(got) != 6 {
		t.Errorf("no rollups: %d tables, want 6", len(got))
	}
}

func TestIndexRetention(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		raw     time.Duration
		rollups []schema.Rollup
		want    time.Duration
	}{
		{400 * day, nil, 401 * day},
		{400 * day, []schema.Rollup{{5 * time.Minute, 90 * day}}, 401 * day},
		{30 * day, schema.DefaultRollups(), (5*365 + 1) * day},
		{30 * day, []schema.Rollup{{5 * time.Minute, 90 * day}, {time.Hour, 0}}, 0},
		{0, []schema.Rollup{{5 * time.Minute, 90 * day}}, 0},
		{0, nil, 0},
	} {
		o := schema.TableOptions{RawRetention: tc.raw, Rollups: tc.rollups, Salts: 1}
		if got := o.IndexRetention(); got != tc.want {
			t.Errorf("IndexRetention of raw %s and rollups %s = %s, want %s", tc.raw, schema.FormatRollups(tc.rollups), got, tc.want)
		}
		if idx, _ := schema.Tables(o)[2].Family("p"); idx.TTL != tc.want {
			t.Errorf("index TTL of raw %s and rollups %s = %s, want %s", tc.raw, schema.FormatRollups(tc.rollups), idx.TTL, tc.want)
		}
	}
}

func TestTableOptionsValidateRollups(t *testing.T) {
	o := schema.TableOptions{Salts: 1, Rollups: []schema.Rollup{{Resolution: time.Hour}, {Resolution: 5 * time.Minute}}}
	err := o.Validate()
	if !errors.Is(err, kv.ErrInvalidArgument) || err.Error() != "schema: rollup resolutions must be ascending and distinct, 5m after 1h: invalid argument" {
		t.Errorf("Validate of descending rollups = %v", err)
	}
	// The bucket width is not known here: 90m passes (ValidateRollups with the
	// settings' bucket width refuses it).
	o.Rollups = []schema.Rollup{{Resolution: 90 * time.Minute}}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate of 90m rollups = %v", err)
	}
}
