package embedded

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
)

// edgeKeys are byte strings that stress an escaping scheme: 0x00, 0x01 (the
// terminator's second byte), 0xFF, and strings that are prefixes of others.
var edgeKeys = [][]byte{
	{}, {0x00}, {0x00, 0x00}, {0x00, 0x01}, {0x00, 0xFF}, {0x01}, {0x01, 0x00},
	[]byte("a"), []byte("a\x00"), []byte("a\x00\x01"), []byte("a\x01"), []byte("ab"),
	{0xFE, 0xFF}, {0xFF}, {0xFF, 0x00}, {0xFF, 0x01}, {0xFF, 0xFF}, {0xFF, 0xFF, 0xFF},
}

func TestEscapedRoundTripsAndKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := slices.Clone(edgeKeys)
	alphabet := []byte{0x00, 0x01, 0x02, 0x7F, 0xFE, 0xFF}
	for range 2000 {
		k := make([]byte, rng.IntN(6))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		keys = append(keys, k)
	}
	for _, a := range keys {
		enc := appendEscaped(nil, a)
		got, rest, err := readEscaped(append(enc, 'x'), nil)
		if err != nil || !bytes.Equal(got, a) || string(rest) != "x" {
			t.Fatalf("readEscaped(esc(%x)) = %x, rest %q, %v", a, got, rest, err)
		}
		if n, err := escapedLen(append(enc, 0x00, 0x01)); err != nil || n != len(enc) {
			t.Fatalf("escapedLen(esc(%x)) = %d, %v; want %d", a, n, err, len(enc))
		}
	}
	for i := range 5000 {
		a, b := keys[rng.IntN(len(keys))], keys[(i*7919)%len(keys)]
		// Any suffixes after the escaped components must not change the order.
		ea := append(appendEscaped(nil, a), 0xFF, 0xFF)
		eb := append(appendEscaped(nil, b), 0x00)
		if want, got := bytes.Compare(a, b), bytes.Compare(ea, eb); want != 0 && want != got {
			t.Fatalf("order of %x vs %x is %d, encoded %d", a, b, want, got)
		}
	}
}

func TestCellKeysSortLikeHBase(t *testing.T) {
	tp := tablePrefix(7)
	type cell struct {
		row, family, qualifier string
		ts                     int64
	}
	// In the order HBase returns them: row, family, qualifier, newest first.
	want := []cell{
		{"r", "a", "", 9}, {"r", "a", "", 0},
		{"r", "a", "\x00", kv.MaxTimestamp}, {"r", "a", "\x00", 5},
		{"r", "a", "q", 3}, {"r", "a", "q\x00", 3}, {"r", "a", "qq", 3},
		{"r", "ab", "", 1}, {"r", "b", "\xff", 1},
		{"r\x00", "a", "q", 1}, {"r\x00\x00", "a", "q", 1}, {"rr", "a", "q", 1}, {"\xff", "a", "q", 1},
	}
	var keys [][]byte
	for _, c := range want {
		keys = append(keys, appendCellKey(nil, tp, []byte(c.row), c.family, []byte(c.qualifier), c.ts))
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, bytes.Compare)
	for i := range keys {
		if !bytes.Equal(sorted[i], keys[i]) {
			t.Fatalf("key %d out of order: cell %+v sorts elsewhere", i, want[i])
		}
		rowLen, err := rowPrefixLen(keys[i])
		if err != nil {
			t.Fatal(err)
		}
		row, _, _ := readEscaped(keys[i][tablePfx:rowLen], nil)
		p, err := parseCellSuffix(keys[i][rowLen:], nil)
		if err != nil || string(row) != want[i].row || string(p.family) != want[i].family ||
			string(p.qualifier) != want[i].qualifier || p.ts != want[i].ts {
			t.Fatalf("key %d parsed as row %q %q:%q@%d (%v), want %+v", i, row, p.family, p.qualifier, p.ts, err, want[i])
		}
		if !bytes.HasPrefix(keys[i], rowPrefix(tp, []byte(want[i].row))) {
			t.Fatalf("key %d does not start with its row prefix", i)
		}
	}
}

func TestCorruptKeysAreErrors(t *testing.T) {
	for _, b := range [][]byte{{}, {'a'}, {'a', 0x00}, {'a', 0x00, 0x07}, {0x00, 0xFF}} {
		if _, _, err := readEscaped(b, nil); err == nil {
			t.Errorf("readEscaped(%x) accepted a corrupt component", b)
		}
		if _, err := escapedLen(b); err == nil {
			t.Errorf("escapedLen(%x) accepted a corrupt component", b)
		}
	}
	if _, err := parseCellSuffix(appendColumn(nil, "f", []byte("q")), nil); err == nil {
		t.Error("parseCellSuffix accepted a key without a timestamp")
	}
}

func FuzzEscaped(f *testing.F) {
	for _, k := range edgeKeys {
		f.Add(k, []byte("x"))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ea, eb := appendEscaped(nil, a), appendEscaped(nil, b)
		if got, _, err := readEscaped(ea, nil); err != nil || !bytes.Equal(got, a) {
			t.Fatalf("round trip of %x gave %x, %v", a, got, err)
		}
		if want, got := bytes.Compare(a, b), bytes.Compare(append(ea, 0xFF), append(eb, 0x00)); want != 0 && want != got {
			t.Fatalf("order of %x vs %x is %d, encoded %d", a, b, want, got)
		}
		if bytes.HasPrefix(eb, ea) && !bytes.Equal(a, b) {
			t.Fatalf("esc(%x) is a prefix of esc(%x)", a, b)
		}
	})
}
