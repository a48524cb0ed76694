package schema

import (
	"fmt"
	"strings"
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
