package schema_test

import (
	"errors"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema"
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
