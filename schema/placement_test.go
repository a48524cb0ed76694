package schema_test

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/schema"
)

func TestPlacementOfASeries(t *testing.T) {
	settings := schema.Settings{FormatVersion: schema.CurrentFormatVersion, BucketWidth: time.Hour, Salts: 16,
		HostLabels: []string{"host", "instance"}}
	for _, tc := range []struct {
		name         string
		lbls         labels.Labels
		host, metric string
	}{
		{"the first host label is the host", labels.FromStrings("__name__", "up", "host", "h1", "instance", "i1"), "h1", "up"},
		{"a later host label is the host when the first is missing",
			labels.FromStrings("__name__", "up", "instance", "i1"), "i1", "up"},
		{"a host label with an empty value counts as missing",
			labels.FromStrings("__name__", "up", "host", "", "instance", "i1"), "i1", "up"},
		{"a series with none of the host labels has the empty host", labels.FromStrings("__name__", "up", "job", "j"), "", "up"},
		{"a series without __name__ has the empty metric", labels.FromStrings("host", "h1"), "h1", ""},
		{"host and metric are the raw values, not escaped",
			labels.FromStrings("__name__", "a\x00b\x01c", "host", "x\x00y"), "x\x00y", "a\x00b\x01c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := settings.PlacementOf(tc.lbls)
			want := schema.Placement{Salt: schema.Salt(tc.host, settings.Salts), Host: tc.host, Metric: tc.metric}
			if p != want {
				t.Fatalf("PlacementOf(%s) = %+v, want %+v", tc.lbls, p, want)
			}
			if h := schema.HostOf(tc.lbls, settings.HostLabels); p.Host != h {
				t.Errorf("Host %q, HostOf says %q", p.Host, h)
			}
			// The key made of the placement decodes to it: escaping is the key's.
			key := schema.DataRowKey(nil, p.DataKey(42, 3_600_000))
			got, err := schema.ParseDataRowKey(key)
			if err != nil {
				t.Fatal(err)
			}
			if wantKey := (schema.DataKey{Salt: p.Salt, Host: p.Host, Metric: p.Metric, SeriesID: 42, BucketStart: 3_600_000}); got != wantKey {
				t.Errorf("the data row key decodes to %+v, want %+v", got, wantKey)
			}
		})
	}
}

func TestPlacementOfOneSaltBucketIsSaltZero(t *testing.T) {
	settings := schema.Settings{Salts: 1, HostLabels: []string{"host"}}
	if p := settings.PlacementOf(labels.FromStrings("__name__", "up", "host", "h")); p.Salt != 0 {
		t.Errorf("salt %d with one salt, want 0", p.Salt)
	}
}
