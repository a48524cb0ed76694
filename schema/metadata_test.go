package schema_test

import (
	"errors"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/prometheus/common/model"
)

func TestMetadataRow(t *testing.T) {
	for _, metric := range []string{"up", "a\x00b", "ünïcode_total"} {
		key := schema.MetadataRow(nil, metric)
		if string(key) != "metadata\x00"+metric {
			t.Errorf("MetadataRow(%q) = %q", metric, key)
		}
		if got, err := schema.ParseMetadataRow(key); err != nil || got != metric {
			t.Errorf("ParseMetadataRow(%q) = %q, %v", key, got, err)
		}
	}
	for _, key := range []string{"", "metadata\x00", "schema", "metadata", "metadatax"} {
		if got, err := schema.ParseMetadataRow([]byte(key)); !errors.Is(err, schema.ErrMalformed) {
			t.Errorf("ParseMetadataRow(%q) = %q, %v; want ErrMalformed", key, got, err)
		}
	}
}

func TestMetadataCellsRoundTrip(t *testing.T) {
	for _, m := range []schema.Metadata{
		{Metric: "node_load1", Type: model.MetricTypeGauge, Help: "1m load average.", Unit: ""},
		{Metric: "http_requests_total", Type: model.MetricTypeCounter, Help: "ünïcode\x00help", Unit: "requests"},
		{Metric: "x", Type: model.MetricTypeUnknown},
	} {
		cells := schema.MetadataCells(m)
		if len(cells) != 3 {
			t.Fatalf("MetadataCells(%+v) has %d cells, want 3", m, len(cells))
		}
		for _, c := range cells {
			if c.Family != schema.FamilyMeta {
				t.Errorf("cell %q is in family %q, want %q", c.Qualifier, c.Family, schema.FamilyMeta)
			}
		}
		// A cell of another family is not part of the metadata.
		cells = append(cells, kv.Cell{Family: "x", Qualifier: []byte(schema.QualifierMetadataHelp), Value: []byte("other")})
		if got := schema.DecodeMetadata(m.Metric, cells); got != m {
			t.Errorf("DecodeMetadata(MetadataCells(%+v)) = %+v", m, got)
		}
	}
}
