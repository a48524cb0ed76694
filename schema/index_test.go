package schema_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

func TestDay(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   int64
		want uint32
	}{
		{"the epoch is day 0", 0, 0},
		{"the last millisecond of day 0", 86_399_999, 0},
		{"midnight starts day 1", 86_400_000, 1},
		{"2023-11-14 is day 19675", 1_700_000_000_000, 19675},
		{"negative timestamps clamp to day 0", -5, 0},
		{"timestamps past the last uint32 day clamp to it", kv.MaxTimestamp, math.MaxUint32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schema.Day(tc.ts); got != tc.want {
				t.Errorf("Day(%d) = %d, want %d", tc.ts, got, tc.want)
			}
		})
	}
	if got := schema.DayStart(19675); got != 1_699_920_000_000 {
		t.Errorf("DayStart(19675) = %d", got)
	}
}

func TestIndexRowKeysRoundTripSortAndPrefix(t *testing.T) {
	r := newRand()
	names := []string{"job", "jo", "job\x00", "__name__", "\x01"}
	var keys []schema.IndexKey
	for range 300 {
		k := schema.IndexKey{Day: []uint32{0, 1, 19675, math.MaxUint32}[r.IntN(4)], Name: names[r.IntN(len(names))], Value: randString(r)}
		if k.Value == "" {
			k.Value = "v"
		}
		keys = append(keys, k)
	}
	cmp := func(a, b schema.IndexKey) int {
		if c := cmpOrdered(a.Day, b.Day); c != 0 {
			return c
		}
		if c := cmpOrdered(a.Name, b.Name); c != 0 {
			return c
		}
		return cmpOrdered(a.Value, b.Value)
	}
	enc := make([][]byte, len(keys))
	for i, k := range keys {
		enc[i] = schema.IndexRowKey(nil, k)
		back, err := schema.ParseIndexRowKey(enc[i])
		if err != nil || back != k {
			t.Fatalf("ParseIndexRowKey(IndexRowKey(%+v)) = %+v, %v", k, back, err)
		}
	}
	for i, a := range keys {
		dayP := schema.IndexDayPrefix(nil, a.Day)
		labelP := schema.IndexLabelPrefix(nil, a.Day, a.Name)
		valueP := schema.IndexValuePrefix(nil, a.Day, a.Name, a.Value[:len(a.Value)/2])
		for j, b := range keys {
			if got, want := sign(bytes.Compare(enc[i], enc[j])), cmp(a, b); got != want {
				t.Fatalf("%+v vs %+v: byte order %d, tuple order %d", a, b, got, want)
			}
			if got := bytes.HasPrefix(enc[j], dayP); got != (a.Day == b.Day) {
				t.Fatalf("day prefix of %+v matches %+v: %v", a, b, got)
			}
			if got := bytes.HasPrefix(enc[j], labelP); got != (a.Day == b.Day && a.Name == b.Name) {
				t.Fatalf("label prefix of %+v matches %+v: %v", a, b, got)
			}
			wantV := a.Day == b.Day && a.Name == b.Name && len(b.Value) >= len(a.Value)/2 && b.Value[:len(a.Value)/2] == a.Value[:len(a.Value)/2]
			if got := bytes.HasPrefix(enc[j], valueP); got != wantV {
				t.Fatalf("value prefix %q of %+v matches %+v: %v", a.Value[:len(a.Value)/2], a, b, got)
			}
		}
	}
}

func TestParseIndexRowKeyRejectsMalformedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
	}{
		{"a key shorter than a day", "\x00\x00\x01"},
		{"a day alone", "\x00\x00\x00\x01"},
		{"a name without value", "\x00\x00\x00\x01job\x00"},
		{"an empty name", "\x00\x00\x00\x01\x00v\x00"},
		{"an empty value", "\x00\x00\x00\x01job\x00\x00"},
		{"a byte after the value", "\x00\x00\x00\x01job\x00v\x00x"},
		{"a bad escape", "\x00\x00\x00\x01job\x00v\x01\x09\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k, err := schema.ParseIndexRowKey([]byte(tc.key)); !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("ParseIndexRowKey(%q) = %+v, %v; want ErrMalformed", tc.key, k, err)
			}
		})
	}
}

func TestSeriesIDs(t *testing.T) {
	for _, id := range []uint64{1, 255, 1 << 32, math.MaxUint64} {
		b := schema.AppendSeriesID(nil, id)
		if back, err := schema.DecodeSeriesID(b); err != nil || back != id {
			t.Errorf("DecodeSeriesID(AppendSeriesID(%d)) = %d, %v", id, back, err)
		}
	}
	for _, b := range [][]byte{nil, make([]byte, 8), make([]byte, 9), {1}} {
		if id, err := schema.DecodeSeriesID(b); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("DecodeSeriesID(%x) = %d, %v; want ErrMalformed", b, id, err)
		}
	}
}
