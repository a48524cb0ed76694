package embedded

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
)

// A read of one column of a wide row through a ColumnRangeFilter seeks to it
// rather than stepping over the row's other columns: its cost is what it
// reads, as compaction's reads of one bucket's cell of a rollup day row need.
func TestAColumnRangeOfAWideRowCostsWhatItReads(t *testing.T) {
	st := openStore(t, t.TempDir(), Options{})
	ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "a"}, {Name: "b"}}})
	var muts []kv.Mutation
	for i := range 1000 {
		muts = append(muts, put("r", "a", fmt.Sprintf("q%04d", i), 1, "v"), put("r", "b", fmt.Sprintf("q%04d", i), 1, "v"))
	}
	mustApply(t, st, "t", muts...)
	for _, tc := range []struct {
		name   string
		filter kv.ColumnRangeFilter
		want   string
	}{
		{"one column", kv.ColumnRangeFilter{Min: []byte("q0500"), MinInclusive: true, Max: []byte("q0500"), MaxInclusive: true},
			"a:q0500@1=v b:q0500@1=v"},
		{"two columns, exclusive bounds", kv.ColumnRangeFilter{Min: []byte("q0500"), Max: []byte("q0503")},
			"a:q0501@1=v a:q0502@1=v b:q0501@1=v b:q0502@1=v"},
	} {
		var work kv.ReadWork
		ctx := kv.WithReadWork(context.Background(), &work)
		row, err := st.Get(ctx, "t", []byte("r"), kv.WithFilter(tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range row.Cells {
			got = append(got, fmt.Sprintf("%s:%s@%d=%s", c.Family, c.Qualifier, c.Timestamp, c.Value))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		// Each family: at most maxSkipNexts keys before the seek into the
		// range, the bounds and the cells in it, as many before the seek past
		// the family; never the row's 2 000 cells.
		if keys := work.Keys.Load(); keys > 2*(2*maxSkipNexts+6) {
			t.Errorf("%s: %d keys stepped over for %d cells read", tc.name, keys, len(row.Cells))
		}
	}
}

// parseColumnSuffix, readRow's parse of a key in the family it is in, agrees
// with parseCellSuffix on every suffix: valid ones (qualifiers with and
// without 0x00 bytes) and corrupt ones alike.
func TestParseColumnSuffixAgreesWithParseCellSuffix(t *testing.T) {
	fam := appendEscaped(nil, []byte("r"))
	var suffixes [][]byte
	for _, q := range []string{"", "q", "\x00", "\x00\x00", "\x00\x1b\x77\x40", "a\x00b", "\xff\x00"} {
		suffixes = append(suffixes, appendTimestamp(appendColumn(nil, "r", []byte(q)), 1234))
	}
	// Corrupt: cut, an escape without its second byte, a terminator too
	// early, a bad escape, a missing timestamp byte.
	for _, tail := range []string{"", "\x00", "q\x00\x01x", "\x00\x02\x00\x01", "q\x00", "\x00\x01\x00\x01"} {
		suffixes = append(suffixes, append(append(bytes.Clone(fam), tail...), "12345678"...))
	}
	suffixes = append(suffixes, append(bytes.Clone(fam), "q\x00\x011234567"...))
	for _, s := range suffixes {
		want, wantErr := parseCellSuffix(s, nil)
		got, err := parseColumnSuffix(s, len(fam), nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, parseCellSuffix's %v", s, err, wantErr)
		}
		if err != nil {
			continue
		}
		if !bytes.Equal(got.qualifier, want.qualifier) || got.ts != want.ts || got.colLen != want.colLen {
			t.Errorf("%q: got %q@%d (col %d), want %q@%d (col %d)", s, got.qualifier, got.ts, got.colLen, want.qualifier, want.ts, want.colLen)
		}
	}
}
