package schema_test

import (
	"testing"
	"time"

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
	if want := []string{"data", "series", "index", "rollup", "meta"}; len(names) != len(want) || names[0] != "data" || names[4] != "meta" {
		t.Fatalf("tables %v, want %v", names, want)
	}
	day := 24 * time.Hour
	wantTTL := map[string]map[string]time.Duration{
		"data":   {"r": 400 * day, "c": 400 * day, "t": 400 * day},
		"series": {"i": 0, "l": 0},
		"index":  {"p": 401 * day},
		"rollup": {"m5": 730 * day, "h1": 0},
		"meta":   {"m": 0},
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
		split := s.Name == "data" || s.Name == "rollup"
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
	o := schema.TableOptions{RawRetention: 0, Compression: "SNAPPY", SaltBuckets: 1}
	for _, s := range schema.Tables(o) {
		if s.SplitKeys != nil {
			t.Errorf("table %s is split with one salt bucket", s.Name)
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
	o.SaltBuckets = 256
	if n := len(schema.Tables(o)[0].SplitKeys); n != 255 {
		t.Errorf("256 salt buckets give %d split keys, want 255", n)
	}
	if err := (schema.TableOptions{SaltBuckets: 0}).Validate(); err == nil {
		t.Error("0 salt buckets validate")
	}
	if err := (schema.TableOptions{SaltBuckets: 1, RawRetention: 1500 * time.Millisecond}).Validate(); err == nil {
		t.Error("a retention of 1.5s validates")
	}
	if err := (schema.TableOptions{SaltBuckets: 1, Rollups: []schema.Rollup{{Resolution: time.Hour, Retention: -time.Hour}}}).Validate(); err == nil {
		t.Error("a negative retention validates")
	}
	if err := schema.DefaultTableOptions().Validate(); err != nil {
		t.Errorf("the default options: %v", err)
	}
	if err := (schema.TableOptions{SaltBuckets: 257}).Validate(); err == nil {
		t.Error("257 salt buckets validate")
	}
}
