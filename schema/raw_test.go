package schema_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema"
)

func TestRawQualifier(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int64
		width  time.Duration
		ok     bool
	}{
		{"the bucket start", 0, time.Hour, true},
		{"the last millisecond of the bucket", 3_599_999, time.Hour, true},
		{"the last millisecond of a day-wide bucket", 86_399_999, 24 * time.Hour, true},
		{"the next bucket's start is rejected", 3_600_000, time.Hour, false},
		{"a negative offset is rejected", -1, time.Hour, false},
		{"a huge offset is rejected", math.MaxInt64, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := schema.AppendRawQualifier(nil, tc.offset, tc.width)
			if !tc.ok {
				if !errors.Is(err, schema.ErrMalformed) {
					t.Fatalf("AppendRawQualifier(%d, %s) = %x, %v; want ErrMalformed", tc.offset, tc.width, q, err)
				}
				return
			}
			if err != nil || len(q) != schema.RawQualifierLen {
				t.Fatalf("AppendRawQualifier(%d, %s) = %x, %v", tc.offset, tc.width, q, err)
			}
			back, err := schema.DecodeRawQualifier(q, tc.width)
			if err != nil || back != tc.offset {
				t.Errorf("DecodeRawQualifier(%x) = %d, %v; want %d", q, back, err, tc.offset)
			}
		})
	}
	if q, _ := schema.AppendRawQualifier(nil, 0x01020304, 24*time.Hour); string(q) != "\x01\x02\x03\x04" {
		t.Errorf("the qualifier is %x, want the offset big-endian", q)
	}
	if _, err := schema.DecodeRawQualifier([]byte{0, 0x36, 0xee, 0x80}, time.Hour); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("an offset of a whole bucket width decodes: %v", err)
	}
	if _, err := schema.DecodeRawQualifier([]byte{0, 0, 1}, time.Hour); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("a 3-byte qualifier decodes: %v", err)
	}
}

func TestRawQualifiersSortByTime(t *testing.T) {
	var prev []byte
	for off := int64(0); off < 3_600_000; off += 997 {
		q, err := schema.AppendRawQualifier(nil, off, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && string(prev) >= string(q) {
			t.Fatalf("qualifier of offset %d does not sort after the previous one", off)
		}
		prev = q
	}
}
