package kv

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ prefix, want []byte }{
		{[]byte("abc"), []byte("abd")},
		{[]byte{0x01, 0xFF}, []byte{0x02}},
		{[]byte{0x01, 0xFE, 0xFF, 0xFF}, []byte{0x01, 0xFF}},
		{[]byte{0xFF, 0xFF}, nil},
		{nil, nil},
	} {
		if got := PrefixEnd(tc.prefix); fmt.Sprintf("%x", got) != fmt.Sprintf("%x", tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", tc.prefix, got, tc.want)
		}
	}
	p := []byte{0x05, 0xFF}
	PrefixEnd(p)
	if p[0] != 0x05 || p[1] != 0xFF {
		t.Fatalf("PrefixEnd modified its argument: %x", p)
	}
}

func TestMutationValidate(t *testing.T) {
	long := make([]byte, MaxRowKeyLen+1)
	for _, tc := range []struct {
		m    Mutation
		want string
	}{
		{Put([]byte("r"), "f", []byte("q"), 0, nil), ""},
		{DeleteRow([]byte("r"), MaxTimestamp), ""},
		{Put(nil, "f", nil, 1, nil), "invalid argument: put with an empty row key"},
		{Put(long, "f", nil, 1, nil), "invalid argument: put row key of 32768 bytes exceeds 32767"},
		{Put([]byte("r"), "f", nil, -5, nil), "invalid argument: put timestamp -5 outside [0, 9223372036854775806]"},
		{DeleteColumn([]byte("r"), "", []byte("q"), 1), "invalid argument: delete-column without a family"},
		{Mutation{Kind: 9, Row: []byte("r")}, "invalid argument: unknown mutation kind 9"},
	} {
		err := tc.m.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", tc.m, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Validate(%+v) = %v, want %q wrapping ErrInvalidArgument", tc.m, err, tc.want)
		}
	}
}

func TestNewReadOptions(t *testing.T) {
	o, err := NewReadOptions()
	if err != nil || o.MaxVersions != 1 || o.MinTimestamp != 0 || o.MaxTimestamp != MaxTimestamp+1 {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
	for name, opts := range map[string][]ReadOption{
		"empty time range":        {TimeRange(5, 5)},
		"negative time":           {TimeRange(-1, 5)},
		"zero versions":           {MaxVersions(0)},
		"negative row limit":      {RowLimit(-1)},
		"filter on unread family": {Families("r"), WithFilter(ColumnValueFilter{Family: "t", Op: Equal})},
		"filter without operator": {WithFilter(ColumnValueFilter{Family: "t"})},
	} {
		if _, err := NewReadOptions(opts...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestBatchErrorUnwrap(t *testing.T) {
	err := &BatchError{Total: 3, Failed: []MutationError{{Index: 2, Err: fmt.Errorf("region moved: %w", ErrUnavailable)}}}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatal("BatchError does not unwrap to its failures")
	}
	if want := "1 of 3 mutations failed, first at index 2: region moved: store unavailable"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestFilters(t *testing.T) {
	eq := ColumnValueFilter{Family: "t", Op: Equal, Value: []byte("a")}
	ne := ColumnValueFilter{Family: "t", Op: NotEqual, Value: []byte("a"), FilterIfMissing: true}
	if !eq.Matches([]byte("a"), true) || eq.Matches([]byte("b"), true) || !eq.Matches(nil, false) {
		t.Error("Equal filter")
	}
	if ne.Matches([]byte("a"), true) || !ne.Matches([]byte("b"), true) || ne.Matches(nil, false) {
		t.Error("NotEqual filter with FilterIfMissing")
	}
	r := ColumnRangeFilter{Min: []byte("b"), MinInclusive: true, Max: []byte("d")}
	for q, want := range map[string]bool{"a": false, "b": true, "c": true, "d": false, "e": false} {
		if r.Contains([]byte(q)) != want {
			t.Errorf("Contains(%s) != %v", q, want)
		}
	}
}

func TestTableSpecValidate(t *testing.T) {
	ok := TableSpec{Name: "t", Families: []FamilySpec{{Name: "f", TTL: time.Hour}}, SplitKeys: [][]byte{{1}, {2}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for want, spec := range map[string]TableSpec{
		"invalid argument: table name is empty":                                                                       {Families: []FamilySpec{{Name: "f"}}},
		"invalid argument: table t has no families":                                                                   {Name: "t"},
		"invalid argument: table t: family f declared twice":                                                          {Name: "t", Families: []FamilySpec{{Name: "f"}, {Name: "f"}}},
		`invalid argument: table t: family name "a:b" is empty or contains ':'`:                                       {Name: "t", Families: []FamilySpec{{Name: "a:b"}}},
		"invalid argument: table t: family f TTL 1.5s is not a whole number of seconds (HBase counts TTL in seconds)": {Name: "t", Families: []FamilySpec{{Name: "f", TTL: 1500 * time.Millisecond}}},
		"invalid argument: table t: split keys not sorted and unique at 1":                                            {Name: "t", Families: []FamilySpec{{Name: "f"}}, SplitKeys: [][]byte{{2}, {1}}},
	} {
		if err := spec.Validate(); err == nil || err.Error() != want {
			t.Errorf("Validate(%+v) = %v, want %q", spec, err, want)
		}
	}
}
