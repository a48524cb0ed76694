package schema_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema"
)

// TestJobSaltRows: lease and watermark rows share one key shape, prefix |
// job 0x00 | salt, under their own prefix.
func TestJobSaltRows(t *testing.T) {
	for _, kind := range []struct {
		name   string
		row    func([]byte, string, byte) []byte
		prefix func([]byte, string) []byte
		parse  func([]byte) (string, byte, error)
	}{
		{"lease", schema.LeaseRow, schema.LeaseJobPrefix, schema.ParseLeaseRow},
		{"watermark", schema.WatermarkRow, schema.WatermarkJobPrefix, schema.ParseWatermarkRow},
	} {
		for _, tc := range []struct {
			job  string
			salt byte
			key  string
		}{
			{schema.LeaseJobCompact, 0, kind.name + "\x00compact\x00\x00"},
			{schema.LeaseJobCompact, 3, kind.name + "\x00compact\x00\x03"},
			{"rollup-5m", 0xff, kind.name + "\x00rollup-5m\x00\xff"},
		} {
			key := kind.row(nil, tc.job, tc.salt)
			if string(key) != tc.key {
				t.Errorf("%s row (%q, %d) = %q, want %q", kind.name, tc.job, tc.salt, key, tc.key)
			}
			if !bytes.HasPrefix(key, kind.prefix(nil, tc.job)) {
				t.Errorf("%s row (%q, %d) = %q lacks its job prefix", kind.name, tc.job, tc.salt, key)
			}
			job, salt, err := kind.parse(key)
			if err != nil || job != tc.job || salt != tc.salt {
				t.Errorf("parse %s row %q = %q, %d, %v", kind.name, key, job, salt, err)
			}
		}
		other := map[string]string{"lease": "watermark", "watermark": "lease"}[kind.name]
		for _, key := range []string{"", kind.name, kind.name + "\x00", kind.name + "\x00\x00\x01", kind.name + "\x00compact\x00",
			kind.name + "\x00compact\x00\x01\x02", kind.name + "\x00Compact\x00\x01", kind.name + "\x00com\x00pact\x00\x01",
			other + "\x00compact\x00\x01", "schema", "metadata\x00up"} {
			if job, salt, err := kind.parse([]byte(key)); !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("parse %s row %q = %q, %d, %v; want ErrMalformed", kind.name, key, job, salt, err)
			}
		}
	}
	if _, _, err := schema.ParseWatermarkRow([]byte("lease\x00compact\x00\x01")); err == nil ||
		err.Error() != `schema: "lease\x00compact\x00\x01" is not a watermark row: malformed` {
		t.Errorf("ParseWatermarkRow of a lease row: %v", err)
	}
}

// The lease rows are a range of their own in the meta table: neither the schema
// row nor any metadata row falls under the lease prefix, nor a lease row under
// the metadata prefix.
func TestLeaseRowsDoNotOverlapOtherMetaRows(t *testing.T) {
	for _, other := range []string{schema.MetaSchemaRow, string(schema.MetadataRow(nil, "lease")), string(schema.MetadataRow(nil, "x"))} {
		if strings.HasPrefix(other, schema.LeaseRowPrefix) {
			t.Errorf("meta row %q is under the lease prefix", other)
		}
	}
	if key := schema.LeaseRow(nil, "metadata", 0); strings.HasPrefix(string(key), schema.MetadataRowPrefix) {
		t.Errorf("lease row %q is under the metadata prefix", key)
	}
}

func TestLeaseValue(t *testing.T) {
	for _, tc := range []struct {
		lease schema.Lease
		value string
	}{
		{schema.Lease{Owner: "db1-4711-9f2c01ab", Expiry: 1_764_460_860_000}, "db1-4711-9f2c01ab 1764460860000"},
		{schema.Lease{Owner: "x", Expiry: 0}, "x 0"},
		{schema.Lease{Owner: "a.b_c:d~!", Expiry: math.MaxInt64}, "a.b_c:d~! 9223372036854775807"},
	} {
		b, err := schema.AppendLeaseValue([]byte("keep"), tc.lease)
		if err != nil || string(b) != "keep"+tc.value {
			t.Errorf("AppendLeaseValue(%+v) = %q, %v; want %q after the prefix", tc.lease, b, err, tc.value)
		}
		if got, err := schema.ParseLeaseValue([]byte(tc.value)); err != nil || got != tc.lease {
			t.Errorf("ParseLeaseValue(%q) = %+v, %v; want %+v", tc.value, got, err, tc.lease)
		}
	}
	for _, v := range []string{"", " ", "x", "x ", " 1", "x  1", "x 01", "x -1", "x +1", "x 1 ", "x 1 2", "a b 1",
		"x 9223372036854775808", "é 1", "x\t1", "x\x001", strings.Repeat("o", schema.MaxLeaseOwnerLen+1) + " 1"} {
		if got, err := schema.ParseLeaseValue([]byte(v)); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("ParseLeaseValue(%q) = %+v, %v; want ErrMalformed", v, got, err)
		}
	}
	for _, l := range []schema.Lease{{Owner: "", Expiry: 1}, {Owner: "a b", Expiry: 1}, {Owner: "x", Expiry: -1},
		{Owner: "\x7f", Expiry: 1}} {
		if b, err := schema.AppendLeaseValue(nil, l); !errors.Is(err, schema.ErrMalformed) || len(b) != 0 {
			t.Errorf("AppendLeaseValue(%+v) = %q, %v; want nothing and ErrMalformed", l, b, err)
		}
	}
}

func TestLeaseExpiredAt(t *testing.T) {
	l := schema.Lease{Owner: "x", Expiry: 1000}
	if l.ExpiredAt(999) || !l.ExpiredAt(1000) || !l.ExpiredAt(1001) {
		t.Errorf("a lease until 1000 must be held at 999 and expired at 1000 and later")
	}
	if !(schema.Lease{Owner: "x"}).ExpiredAt(0) {
		t.Errorf("a released lease (expiry 0) must be expired")
	}
}

func TestValidLeaseJob(t *testing.T) {
	for _, job := range []string{"compact", "rollup_5m", "a-1"} {
		if err := schema.ValidLeaseJob(job); err != nil {
			t.Errorf("ValidLeaseJob(%q) = %v", job, err)
		}
	}
	for _, job := range []string{"", "Compact", "a b", "a\x00", strings.Repeat("a", 65)} {
		if err := schema.ValidLeaseJob(job); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("ValidLeaseJob(%q) = %v, want ErrMalformed", job, err)
		}
	}
}

// FuzzParseLeaseValue: see fuzz_test.go for the two properties every decoder's
// target checks.
func FuzzParseLeaseValue(f *testing.F) {
	for _, s := range []string{"db1-4711-9f2c01ab 1764460860000", "x 0", "x 01", " 1", "x", "a b 1", "x 9223372036854775807"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := schema.ParseLeaseValue(b)
		if err != nil {
			return
		}
		enc, err := schema.AppendLeaseValue(nil, l)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("ParseLeaseValue(%q) = %+v, which re-encodes as %q, %v", b, l, enc, err)
		}
	})
}

func FuzzParseLeaseRow(f *testing.F) {
	for _, s := range []string{"lease\x00compact\x00\x03", "lease\x00\x00\x00", "lease\x00a\x00", "lease\x00a\x00\x00\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		job, salt, err := schema.ParseLeaseRow(b)
		if err != nil {
			return
		}
		if enc := schema.LeaseRow(nil, job, salt); !bytes.Equal(enc, b) {
			t.Fatalf("ParseLeaseRow(%q) = %q, %d, which re-encodes as %q", b, job, salt, enc)
		}
	})
}
