package schema_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema"
)

func TestExemplarQualifierAndSlots(t *testing.T) {
	const bucket = 3_600_000
	for _, tc := range []struct {
		ts   int64
		slot time.Duration
		want int64
	}{
		{bucket, 10 * time.Second, 0},
		{bucket + 9_999, 10 * time.Second, 0},
		{bucket + 10_000, 10 * time.Second, 10_000},
		{bucket + 3_599_999, 10 * time.Second, 3_590_000},
		{bucket + 1_234, time.Millisecond, 1_234},
		{bucket + 25_000, 7 * time.Second, 21_000},
	} {
		if got := schema.ExemplarSlotOffset(tc.ts, bucket, tc.slot); got != tc.want {
			t.Errorf("ExemplarSlotOffset(%d, %d, %s) = %d, want %d", tc.ts, bucket, tc.slot, got, tc.want)
		}
	}
	q, err := schema.AppendExemplarQualifier(nil, 3_590_000, 9)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x00, 0x36, 0xc7, 0x70, 9}; !bytes.Equal(q, want) {
		t.Errorf("qualifier % x, want % x", q, want)
	}
	off, idx, err := schema.ParseExemplarQualifier(q)
	if err != nil || off != 3_590_000 || idx != 9 {
		t.Errorf("parsed %d, %d, %v; want 3590000, 9", off, idx, err)
	}
	if _, err := schema.AppendExemplarQualifier(nil, -1, 0); err == nil || err.Error() != "schema: exemplar slot offset -1 outside [0, 4294967295]: malformed" {
		t.Errorf("a negative offset: %v", err)
	}
	if _, _, err := schema.ParseExemplarQualifier(q[:4]); err == nil || err.Error() != "schema: exemplar qualifier of 4 bytes, want 5: malformed" {
		t.Errorf("a short qualifier: %v", err)
	}
}

func TestExemplarIndex(t *testing.T) {
	for _, tc := range []struct {
		ts, slotStart int64
		slot          time.Duration
		perSlot, want int
	}{
		{1000, 1000, 10 * time.Second, 10, 0},
		{1999, 1000, 10 * time.Second, 10, 0},
		{2000, 1000, 10 * time.Second, 10, 1},
		{10_999, 1000, 10 * time.Second, 10, 9},
		{10_999, 1000, 10 * time.Second, 1, 0},
		{1070, 1000, 250 * time.Millisecond, 10, 2},
		{1246, 1000, 250 * time.Millisecond, 10, 9},
		{5000, 0, time.Second, 256, 255}, // past the slot (a slot wider than the bucket): the last place
	} {
		if got := schema.ExemplarIndex(tc.ts, tc.slotStart, tc.slot, tc.perSlot); got != tc.want {
			t.Errorf("ExemplarIndex(%d, %d, %s, %d) = %d, want %d", tc.ts, tc.slotStart, tc.slot, tc.perSlot, got, tc.want)
		}
	}
}
