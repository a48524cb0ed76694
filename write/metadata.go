package write

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Metric metadata is stored in the meta table, one row per metric (layout in
// schema/metadata.go), rewritten whole when it changes. A process remembers what
// it stored (Options.MetadataCacheSize) and skips unchanged entries, so metadata
// sent with every request costs a map lookup, not a write.

// validTypes are the metric types remote write can carry.
var validTypes = map[model.MetricType]bool{
	model.MetricTypeCounter: true, model.MetricTypeGauge: true, model.MetricTypeHistogram: true,
	model.MetricTypeGaugeHistogram: true, model.MetricTypeSummary: true, model.MetricTypeInfo: true,
	model.MetricTypeStateset: true, model.MetricTypeUnknown: true,
}

// validMetadata validates the metadata entries of a request, adding a Rejection
// for each invalid one, and returns the mutations of those that changed and every
// valid entry (normalized: an empty type is "unknown"), to remember once stored.
// Entries with neither metric name nor content are no metadata and are skipped.
func (w *Writer) validMetadata(md []schema.Metadata, now time.Time, res *Result) ([]kv.Mutation, []schema.Metadata) {
	if len(md) == 0 {
		return nil, nil
	}
	var (
		muts  []kv.Mutation
		valid []schema.Metadata
		ts    = now.UnixMilli()
	)
	for i, m := range md {
		if m.Type == "" {
			m.Type = model.MetricTypeUnknown
		}
		if reason := w.checkMetadata(m); reason != "" {
			if m.Metric == "" && m.Type == model.MetricTypeUnknown && m.Help == "" && m.Unit == "" {
				continue
			}
			res.Rejected = append(res.Rejected, Rejection{Series: -1, Sample: i, Reason: reason})
			continue
		}
		valid = append(valid, m)
		if old, ok := w.metadata.Get(m.Metric); ok && old == m {
			continue
		}
		row := schema.MetadataRow(nil, m.Metric)
		for _, c := range schema.MetadataCells(m) {
			muts = append(muts, kv.Put(row, c.Family, c.Qualifier, ts, c.Value))
		}
	}
	return muts, valid
}

// checkMetadata returns why m cannot be stored, or "".
func (w *Writer) checkMetadata(m schema.Metadata) string {
	lim := w.opts.Limits.MaxLabelValueLength
	switch {
	case m.Metric == "":
		return fmt.Sprintf("metadata (type %q, help %s, unit %q) has no metric name", m.Type, quote(m.Help), m.Unit)
	case !utf8.ValidString(m.Metric):
		return fmt.Sprintf("metadata of metric %s: the metric name is not valid UTF-8", quote(m.Metric))
	case lim > 0 && len(m.Metric) > lim:
		return fmt.Sprintf("metadata of metric %s: the metric name is %d bytes long, over the limit of %d", quote(m.Metric), len(m.Metric), lim)
	case len(schema.MetadataRowPrefix)+len(m.Metric) > kv.MaxRowKeyLen:
		return fmt.Sprintf("metadata of metric %s: the metric name is %d bytes long, over the row key limit of HBase", quote(m.Metric), len(m.Metric))
	case !validTypes[m.Type]:
		return fmt.Sprintf("metadata of metric %s: type %q is not one of counter, gauge, histogram, gaugehistogram, summary, info, stateset, unknown",
			quote(m.Metric), m.Type)
	case !utf8.ValidString(m.Help):
		return fmt.Sprintf("metadata of metric %s: the help text is not valid UTF-8", quote(m.Metric))
	case !utf8.ValidString(m.Unit):
		return fmt.Sprintf("metadata of metric %s: the unit is not valid UTF-8", quote(m.Metric))
	}
	return ""
}
