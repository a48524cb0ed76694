package schema_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema"
)

// The watermark rows are a range of their own in the meta table: no other meta
// row falls under the watermark prefix, and no watermark row under another
// row's prefix.
func TestWatermarkRowsDoNotOverlapOtherMetaRows(t *testing.T) {
	for _, other := range []string{schema.MetaSchemaRow, string(schema.MetadataRow(nil, "watermark")),
		string(schema.MetadataRow(nil, "x")), string(schema.LeaseRow(nil, "watermark", 0)), string(schema.LeaseRow(nil, schema.LeaseJobCompact, 0))} {
		if strings.HasPrefix(other, schema.WatermarkRowPrefix) {
			t.Errorf("meta row %q is under the watermark prefix", other)
		}
	}
	key := string(schema.WatermarkRow(nil, "metadata", 0))
	for _, prefix := range []string{schema.MetadataRowPrefix, schema.LeaseRowPrefix, schema.MetaSchemaRow} {
		if strings.HasPrefix(key, prefix) {
			t.Errorf("watermark row %q is under the prefix %q", key, prefix)
		}
	}
}

func TestWatermarkValue(t *testing.T) {
	for _, tc := range []struct {
		ms    int64
		value string
	}{
		{1_764_460_800_000, "1764460800000"},
		{1, "1"},
		{math.MaxInt64, "9223372036854775807"},
	} {
		b, err := schema.AppendWatermarkValue([]byte("keep"), tc.ms)
		if err != nil || string(b) != "keep"+tc.value {
			t.Errorf("AppendWatermarkValue(%d) = %q, %v; want %q after the prefix", tc.ms, b, err, tc.value)
		}
		if got, err := schema.ParseWatermarkValue([]byte(tc.value)); err != nil || got != tc.ms {
			t.Errorf("ParseWatermarkValue(%q) = %d, %v; want %d", tc.value, got, err, tc.ms)
		}
	}
	for _, v := range []string{"", "0", "00", "01", "-1", "+1", " 1", "1 ", "1.0", "1e3", "9223372036854775808", "x"} {
		if got, err := schema.ParseWatermarkValue([]byte(v)); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("ParseWatermarkValue(%q) = %d, %v; want ErrMalformed", v, got, err)
		}
	}
	for _, ms := range []int64{0, -1, math.MinInt64} {
		if b, err := schema.AppendWatermarkValue(nil, ms); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("AppendWatermarkValue(%d) = %q, %v; want ErrMalformed", ms, b, err)
		}
	}
}

// The cell's timestamp is the watermark, so the store keeps the greatest one.
func TestWatermarkCell(t *testing.T) {
	row, cell, err := schema.WatermarkCell(schema.LeaseJobCompact, 2, 1_764_460_800_000)
	if err != nil {
		t.Fatal(err)
	}
	if string(row) != "watermark\x00compact\x00\x02" || cell.Family != schema.FamilyMeta ||
		string(cell.Qualifier) != schema.QualifierWatermark || cell.Timestamp != 1_764_460_800_000 ||
		string(cell.Value) != "1764460800000" {
		t.Errorf("WatermarkCell = %q, %+v", row, cell)
	}
	if _, _, err := schema.WatermarkCell("Bad", 0, 1); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("WatermarkCell with a bad job: %v, want ErrMalformed", err)
	}
	if _, _, err := schema.WatermarkCell(schema.LeaseJobCompact, 0, 0); !errors.Is(err, schema.ErrMalformed) {
		t.Errorf("WatermarkCell of 0: %v, want ErrMalformed", err)
	}
}

func FuzzParseWatermarkValue(f *testing.F) {
	for _, s := range []string{"1", "1764460800000", "0", "01", "-1", "9223372036854775807"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := schema.ParseWatermarkValue(b)
		if err != nil {
			return
		}
		if again, err := schema.AppendWatermarkValue(nil, ms); err != nil || !bytes.Equal(again, b) {
			t.Errorf("ParseWatermarkValue(%q) = %d, which encodes to %q, %v", b, ms, again, err)
		}
	})
}
