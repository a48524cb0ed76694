package query

import (
	"context"
	"fmt"

	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// ListMetadata returns the metadata stored for every metric family (type, help
// and unit as remote write sent them), sorted by metric name; at most limit of
// them when limit > 0, all of them otherwise. It reads the metadata rows of the
// meta table, one range, in order, and stops after limit rows.
func (r *Reader) ListMetadata(ctx context.Context, limit int) ([]write.Metadata, error) {
	start := []byte(schema.MetadataRowPrefix)
	opts := []kv.ReadOption{kv.Families(schema.FamilyMeta)}
	if limit > 0 {
		opts = append(opts, kv.RowLimit(limit))
	}
	sc := r.st.Scan(ctx, schema.TableMeta, start, kv.PrefixEnd(start), opts...)
	defer sc.Close()
	var out []write.Metadata
	for sc.Next() {
		row := sc.Row()
		metric, err := schema.ParseMetadataRow(row.Key)
		if err != nil {
			return nil, fmt.Errorf("query: list metadata: %w", err)
		}
		out = append(out, metadataOf(metric, row))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("query: list metadata: %w", err)
	}
	return out, nil
}

// metadataOf decodes the columns of metric's metadata row.
func metadataOf(metric string, row kv.Row) write.Metadata {
	m := write.Metadata{Metric: metric}
	for _, c := range row.Cells {
		switch string(c.Qualifier) {
		case schema.QualifierMetadataType:
			m.Type = model.MetricType(c.Value)
		case schema.QualifierMetadataHelp:
			m.Help = string(c.Value)
		case schema.QualifierMetadataUnit:
			m.Unit = string(c.Value)
		}
	}
	return m
}
