package schema

import (
	"errors"
	"testing"
)

func TestUnindexRowRoundTrips(t *testing.T) {
	key := UnindexRow(nil, 20_000, 0xfedcba9876543210)
	if want := "unindex\x00\x00\x00\x4e\x20\xfe\xdc\xba\x98\x76\x54\x32\x10"; string(key) != want {
		t.Fatalf("UnindexRow = %q, want %q", key, want)
	}
	day, id, err := ParseUnindexRow(key)
	if err != nil || day != 20_000 || id != 0xfedcba9876543210 {
		t.Fatalf("ParseUnindexRow = %d, %x, %v; want 20000, fedcba9876543210", day, id, err)
	}
}

func TestParseUnindexRowRefusesOtherKeys(t *testing.T) {
	for name, key := range map[string][]byte{
		"another prefix":       append([]byte("unindeX\x00"), make([]byte, 12)...),
		"one byte short":       UnindexRow(nil, 1, 2)[:19],
		"one byte long":        append(UnindexRow(nil, 1, 2), 0),
		"series ID 0":          UnindexRow(nil, 1, 0),
		"the generation's row": []byte(IndexGenerationRow),
	} {
		if _, _, err := ParseUnindexRow(key); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseUnindexRow(%q) = %v, want ErrMalformed", name, key, err)
		}
	}
}

func TestIndexGenerationCodec(t *testing.T) {
	if g, err := DecodeIndexGeneration(nil); g != 0 || err != nil {
		t.Errorf("absent cell: %d, %v; want generation 0", g, err)
	}
	for _, g := range []int64{0, 1, 41, MaxIndexGeneration} {
		if got, err := DecodeIndexGeneration(AppendIndexGeneration(nil, g)); got != g || err != nil {
			t.Errorf("generation %d decodes as %d, %v", g, got, err)
		}
	}
	for name, v := range map[string][]byte{
		"7 bytes":                   make([]byte, 7),
		"past MaxIndexGeneration":   AppendIndexGeneration(nil, MaxIndexGeneration+1),
		"negative (Increment wrap)": AppendIndexGeneration(nil, -1),
	} {
		if _, err := DecodeIndexGeneration(v); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeIndexGeneration(%x) = %v, want ErrMalformed", name, v, err)
		}
	}
	// A posting's timestamp stays within its day at the largest generation.
	if ts := PostingTimestamp(3, MaxIndexGeneration); Day(ts) != 3 {
		t.Errorf("PostingTimestamp(3, MaxIndexGeneration) = %d is on day %d, want 3", ts, Day(ts))
	}
}
