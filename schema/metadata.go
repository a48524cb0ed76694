package schema

import (
	"fmt"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Metric metadata rows: table TableMeta, family FamilyMeta, one row per metric
// family, as remote write sends it (type, help, unit).
//
//	row = "metadata" 0x00 | metric     m:type, m:help, m:unit = the text as sent
//
// Invariants:
//
//   - The metric name is the rest of the key, unescaped: nothing follows it, so no
//     terminator is needed, and the rows of every metric are the one range under
//     MetadataRowPrefix, sorted by metric name.
//   - MetadataRowPrefix contains 0x00, which no other row of the meta table
//     ("schema", worker checkpoints and leases, named by words) does at that place, so
//     the ranges never overlap.
//   - The metric name is not empty; a row is rewritten whole (all three columns),
//     so its columns always belong to one update.

// Metadata describes a metric family, as remote write sends it.
type Metadata struct {
	// Metric is the metric family name (the __name__ of its series).
	Metric string
	Type   model.MetricType
	Help   string
	Unit   string
}

// MetadataRowPrefix is the prefix of every metric metadata row.
const MetadataRowPrefix = "metadata\x00"

// Columns of a metric metadata row.
const (
	QualifierMetadataType = "type"
	QualifierMetadataHelp = "help"
	QualifierMetadataUnit = "unit"
)

// MetadataRow appends the metadata row key of metric to dst.
func MetadataRow(dst []byte, metric string) []byte {
	return append(append(dst, MetadataRowPrefix...), metric...)
}

// ParseMetadataRow decodes the metric name of a metadata row key. It fails,
// wrapping ErrMalformed, on another kind of row or an empty metric name.
func ParseMetadataRow(b []byte) (string, error) {
	metric, ok := strings.CutPrefix(string(b), MetadataRowPrefix)
	if !ok || metric == "" {
		return "", fmt.Errorf("schema: %q is not a metric metadata row: %w", b, ErrMalformed)
	}
	return metric, nil
}

// MetadataCells returns the three cells of m's metadata row (family FamilyMeta,
// timestamp 0: the caller's mutation sets it), in the order of the row. The row key
// is MetadataRow(nil, m.Metric).
func MetadataCells(m Metadata) []kv.Cell {
	return []kv.Cell{
		{Family: FamilyMeta, Qualifier: []byte(QualifierMetadataHelp), Value: []byte(m.Help)},
		{Family: FamilyMeta, Qualifier: []byte(QualifierMetadataType), Value: []byte(m.Type)},
		{Family: FamilyMeta, Qualifier: []byte(QualifierMetadataUnit), Value: []byte(m.Unit)},
	}
}

// DecodeMetadata decodes the metadata of metric from the cells of its metadata
// row, as MetadataCells wrote them; other cells are ignored.
func DecodeMetadata(metric string, cells []kv.Cell) Metadata {
	m := Metadata{Metric: metric}
	for _, c := range cells {
		if c.Family != FamilyMeta {
			continue
		}
		switch string(c.Qualifier) {
		case QualifierMetadataType:
			m.Type = model.MetricType(c.Value)
		case QualifierMetadataHelp:
			m.Help = string(c.Value)
		case QualifierMetadataUnit:
			m.Unit = string(c.Value)
		}
	}
	return m
}
