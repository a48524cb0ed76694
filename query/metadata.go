package query

import (
	"context"
	"fmt"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// ListMetadata returns the metadata stored for every metric family (type, help
// and unit as remote write sent them), sorted by metric name; at most limit of
// them when limit > 0, all of them otherwise. It reads the metadata rows of the
// meta table, one range, in order, and stops after limit rows.
func (r *Reader) ListMetadata(ctx context.Context, limit int) ([]schema.Metadata, error) {
	start := []byte(schema.MetadataRowPrefix)
	opts := []kv.ReadOption{kv.Families(schema.FamilyMeta)}
	if limit > 0 {
		opts = append(opts, kv.RowLimit(limit))
	}
	sc := r.st.Scan(ctx, schema.TableMeta, start, kv.PrefixEnd(start), opts...)
	defer sc.Close()
	var out []schema.Metadata
	for sc.Next() {
		row := sc.Row()
		metric, err := schema.ParseMetadataRow(row.Key)
		if err != nil {
			return nil, fmt.Errorf("query: list metadata: %w", err)
		}
		out = append(out, schema.DecodeMetadata(metric, row.Cells))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("query: list metadata: %w", err)
	}
	return out, nil
}
