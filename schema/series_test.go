package schema_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema"
)

func TestCanonicalLabels(t *testing.T) {
	sorted := []schema.Label{{"__name__", "up"}, {"instance", "a\x00b"}, {"job", "node"}}
	want := "__name__\x00up\x00instance\x00a\x01\x01b\x00job\x00node\x00"
	got, err := schema.AppendLabels(nil, sorted)
	if err != nil || string(got) != want {
		t.Fatalf("AppendLabels = %q, %v; want %q", got, err, want)
	}
	if n := schema.LabelsLen(sorted); n != len(want) {
		t.Errorf("LabelsLen = %d, want %d", n, len(want))
	}
	shuffled := []schema.Label{sorted[2], sorted[0], sorted[1]}
	before := slices.Clone(shuffled)
	got, err = schema.AppendLabels(nil, shuffled)
	if err != nil || string(got) != want {
		t.Errorf("unsorted labels encode as %q, %v; want the canonical %q", got, err, want)
	}
	if !slices.Equal(shuffled, before) {
		t.Errorf("AppendLabels reordered its argument: %v", shuffled)
	}
	back, err := schema.DecodeLabels([]byte(want))
	if err != nil || !slices.Equal(back, sorted) {
		t.Errorf("DecodeLabels = %v, %v; want %v", back, err, sorted)
	}
}

func TestAppendLabelsRejectsInvalidSets(t *testing.T) {
	for _, tc := range []struct {
		name string
		lbls []schema.Label
	}{
		{"an empty set", nil},
		{"an empty name", []schema.Label{{"", "v"}, {"a", "b"}}},
		{"an empty value", []schema.Label{{"a", ""}}},
		{"a name given twice", []schema.Label{{"a", "1"}, {"b", "2"}, {"a", "3"}}},
		{"a name given twice in order", []schema.Label{{"a", "1"}, {"a", "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := schema.AppendLabels(dst, tc.lbls)
			if !errors.Is(err, schema.ErrMalformed) || string(got) != "keep" {
				t.Errorf("AppendLabels(%v) = %q, %v; want dst unchanged and ErrMalformed", tc.lbls, got, err)
			}
		})
	}
}

func TestDecodeLabelsRejectsNonCanonicalInput(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"an empty input", ""},
		{"a name without value", "a\x00"},
		{"a value without terminator", "a\x00b"},
		{"names out of order", "b\x001\x00a\x002\x00"},
		{"a repeated name", "a\x001\x00a\x002\x00"},
		{"an empty name", "\x001\x00"},
		{"an empty value", "a\x00\x00"},
		{"a bad escape", "a\x01\x03\x00v\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, err := schema.DecodeLabels([]byte(tc.in)); !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("DecodeLabels(%q) = %v, %v; want ErrMalformed", tc.in, l, err)
			}
		})
	}
}

func TestLabelsRoundTrip(t *testing.T) {
	r := newRand()
	for range 2000 {
		var lbls []schema.Label
		seen := map[string]bool{}
		for n := 1 + r.IntN(6); n > 0; n-- {
			name, value := randString(r), randString(r)
			if name == "" || value == "" || seen[name] {
				continue
			}
			seen[name] = true
			lbls = append(lbls, schema.Label{Name: name, Value: value})
		}
		if len(lbls) == 0 {
			continue
		}
		row, err := schema.SeriesForwardRow(nil, lbls)
		if err != nil {
			t.Fatalf("SeriesForwardRow(%q): %v", lbls, err)
		}
		back, err := schema.ParseSeriesForwardRow(row)
		slices.SortFunc(lbls, func(a, b schema.Label) int { return cmpOrdered(a.Name, b.Name) })
		if err != nil || !slices.Equal(back, lbls) {
			t.Fatalf("ParseSeriesForwardRow(%q) = %q, %v; want %q", row, back, err, lbls)
		}
	}
}

func TestSeriesRowKinds(t *testing.T) {
	fwd, err := schema.SeriesForwardRow(nil, []schema.Label{{"\x00", "\x00"}})
	if err != nil {
		t.Fatal(err)
	}
	rev := schema.SeriesReverseRow(nil, 1)
	if string(rev) != "\x02\x00\x00\x00\x00\x00\x00\x00\x01" {
		t.Errorf("SeriesReverseRow(1) = %q", rev)
	}
	if id, err := schema.ParseSeriesReverseRow(rev); err != nil || id != 1 {
		t.Errorf("ParseSeriesReverseRow = %d, %v", id, err)
	}
	// The counter, then all forward rows, then all reverse rows.
	if !(schema.SeriesCounterRow < string(fwd) && string(fwd) < string(schema.SeriesReverseRow(nil, 0)) && string(fwd) > "\x01") {
		t.Errorf("row kinds interleave: counter %q, forward %q, reverse %q", schema.SeriesCounterRow, fwd, rev)
	}
	if _, err := schema.ParseSeriesForwardRow(rev); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("a reverse row parses as a forward row: %v", err)
	}
	if _, err := schema.ParseSeriesReverseRow(fwd); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("a forward row parses as a reverse row: %v", err)
	}
	if _, err := schema.ParseSeriesReverseRow(schema.SeriesReverseRow(nil, 0)); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("series ID 0 parses: %v", err)
	}
	if _, err := schema.ParseSeriesForwardRow([]byte(schema.SeriesCounterRow)); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("the counter row parses as a forward row: %v", err)
	}
}
