package wire

import (
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// DecodeV2 decodes a body whose sender declared it a remote-write 2.0
// io.prometheus.write.v2.Request (uncompressed protobuf) into a write.Request:
// every series with its float samples (with their start_timestamp, as
// cellenc.Sample.ST), native histogram samples (converted by writev2's own
// ToIntHistogram and ToFloatHistogram, as Prometheus' receiver does, with
// their start_timestamp) and exemplars (writev2's ToExemplar), its labels
// resolved through the symbols table and sorted by name (duplicates and
// invalid names kept: the writer rejects them per series), and one
// schema.Metadata per metric family named by a series' metadata (the first
// series' wins). A series with none of samples, histograms and exemplars is
// left out. (The experimental created_timestamp, field 6, is reserved in the
// 2.0 proto: it is skipped as any unknown field.)
//
// Errors wrap write.ErrInvalid: a body that is not a valid
// io.prometheus.write.v2.Request; one that decodes to no series while holding
// the fields 1.0 uses ("Receiver accidental use of wrong schema ... will result
// in empty message", 2.0 Content-Type); and one whose symbol references break
// the 2.0 Symbols rules (checkSymbolRefs), which make the message corrupt as a
// whole.
func DecodeV2(data []byte) (write.Request, error) {
	var msg writev2.Request
	if err := msg.Unmarshal(data); err != nil {
		return write.Request{}, fmt.Errorf("%w: body is not a protobuf %s: %v", write.ErrInvalid, messageV2, err)
	}
	if len(msg.Timeseries) == 0 && hasTopLevelField(data, 1, 2, 3) {
		return write.Request{}, fmt.Errorf("%w: body is a %s (it has fields 1 to 3, which 2.0 reserves), "+
			"but Content-Type says %s", write.ErrInvalid, messageV1, messageV2)
	}
	return fromV2(&msg)
}

// checkSymbolRefs checks every reference of a 2.0 message against its symbols
// table: "The first element of the symbols table MUST be an empty string" and
// "References MUST point to the existing index in the symbols string array"
// (2.0, Symbols); labels_refs' "length is always a multiple of two". A message
// that breaks them is malformed as a whole and rejected before anything is
// written. Exemplar references are not checked: exemplars are not stored.
func checkSymbolRefs(msg *writev2.Request) error {
	syms := msg.Symbols
	if len(msg.Timeseries) == 0 {
		return nil
	}
	if len(syms) == 0 {
		return fmt.Errorf("%w: the symbols table is empty; its first element must be the empty string", write.ErrInvalid)
	}
	if syms[0] != "" {
		return fmt.Errorf("%w: symbols[0] is %q; the first element of the symbols table must be the empty string", write.ErrInvalid, syms[0])
	}
	for i := range msg.Timeseries {
		ts := &msg.Timeseries[i]
		if len(ts.LabelsRefs)%2 != 0 {
			return fmt.Errorf("%w: timeseries[%d]: labels_refs has odd length %d; it must hold name/value pairs",
				write.ErrInvalid, i, len(ts.LabelsRefs))
		}
		for j, ref := range ts.LabelsRefs {
			if int64(ref) >= int64(len(syms)) {
				return fmt.Errorf("%w: timeseries[%d]: labels_refs[%d] = %d is outside the symbols table of %d symbols",
					write.ErrInvalid, i, j, ref, len(syms))
			}
		}
		for k := range ts.Exemplars {
			refs := ts.Exemplars[k].LabelsRefs
			if len(refs)%2 != 0 {
				return fmt.Errorf("%w: timeseries[%d]: exemplars[%d]: labels_refs has odd length %d; it must hold name/value pairs",
					write.ErrInvalid, i, k, len(refs))
			}
			for j, ref := range refs {
				if int64(ref) >= int64(len(syms)) {
					return fmt.Errorf("%w: timeseries[%d]: exemplars[%d]: labels_refs[%d] = %d is outside the symbols table of %d symbols",
						write.ErrInvalid, i, k, j, ref, len(syms))
				}
			}
		}
		if ref := ts.Metadata.HelpRef; int64(ref) >= int64(len(syms)) {
			return fmt.Errorf("%w: timeseries[%d]: metadata help_ref = %d is outside the symbols table of %d symbols",
				write.ErrInvalid, i, ref, len(syms))
		}
		if ref := ts.Metadata.UnitRef; int64(ref) >= int64(len(syms)) {
			return fmt.Errorf("%w: timeseries[%d]: metadata unit_ref = %d is outside the symbols table of %d symbols",
				write.ErrInvalid, i, ref, len(syms))
		}
	}
	return nil
}

// fromV2 converts a 2.0 message after checking its symbol references. Each series'
// metadata becomes one schema.Metadata per metric name.
func fromV2(msg *writev2.Request) (write.Request, error) {
	if err := checkSymbolRefs(msg); err != nil {
		return write.Request{}, err
	}
	syms := msg.Symbols
	total := 0
	for i := range msg.Timeseries {
		total += len(msg.Timeseries[i].Samples)
	}
	samples := make([]cellenc.Sample, 0, total)
	req := write.Request{Series: make([]write.Series, 0, len(msg.Timeseries))}
	var seenMetadata map[string]bool
	b := labels.NewScratchBuilder(16)
	for i := range msg.Timeseries {
		ts := &msg.Timeseries[i]
		b.Reset()
		for j := 0; j < len(ts.LabelsRefs); j += 2 {
			b.Add(syms[ts.LabelsRefs[j]], syms[ts.LabelsRefs[j+1]])
		}
		b.Sort()
		lbls := b.Labels()
		if md := metadataV2(ts, syms, lbls); md.Metric != "" && !seenMetadata[md.Metric] {
			if seenMetadata == nil {
				seenMetadata = map[string]bool{}
			}
			seenMetadata[md.Metric] = true
			req.Metadata = append(req.Metadata, md)
		}
		if len(ts.Samples) == 0 && len(ts.Histograms) == 0 && len(ts.Exemplars) == 0 {
			continue
		}
		s := write.Series{Labels: lbls}
		if len(ts.Samples) > 0 {
			start := len(samples)
			for _, smp := range ts.Samples {
				samples = append(samples, cellenc.Sample{T: smp.Timestamp, V: smp.Value, ST: smp.StartTimestamp})
			}
			s.Samples = samples[start:len(samples):len(samples)]
		}
		if len(ts.Histograms) > 0 {
			s.Histograms = make([]cellenc.HistogramSample, len(ts.Histograms))
			for j := range ts.Histograms {
				s.Histograms[j] = histogramV2(&ts.Histograms[j])
			}
		}
		if len(ts.Exemplars) > 0 {
			s.Exemplars = make([]exemplar.Exemplar, len(ts.Exemplars))
			for j := range ts.Exemplars {
				e, err := ts.Exemplars[j].ToExemplar(&b, syms)
				if err != nil { // checkSymbolRefs checked the refs
					return write.Request{}, fmt.Errorf("%w: timeseries[%d]: exemplars[%d]: %v", write.ErrInvalid, i, j, err)
				}
				s.Exemplars[j] = e
			}
		}
		req.Series = append(req.Series, s)
	}
	return req, nil
}

// histogramV2 converts a 2.0 histogram with writev2's own converters, so that
// it is exactly what Prometheus' receiver appends: an integer histogram when
// its counts are integers, a float histogram otherwise, with its start
// timestamp.
func histogramV2(h *writev2.Histogram) cellenc.HistogramSample {
	if h.IsFloatHistogram() {
		return cellenc.HistogramSample{T: h.Timestamp, ST: h.StartTimestamp, FH: h.ToFloatHistogram()}
	}
	return cellenc.HistogramSample{T: h.Timestamp, ST: h.StartTimestamp, H: h.ToIntHistogram()}
}

// metadataV2 returns a series' metadata, or a zero Metadata when it has none (or
// no metric name to file it under).
func metadataV2(ts *writev2.TimeSeries, syms []string, lbls labels.Labels) schema.Metadata {
	m := ts.Metadata
	if m.Type == writev2.Metadata_METRIC_TYPE_UNSPECIFIED && m.HelpRef == 0 && m.UnitRef == 0 {
		return schema.Metadata{}
	}
	name := lbls.Get(model.MetricNameLabel)
	if name == "" {
		return schema.Metadata{}
	}
	md, _ := ts.ToMetadata(syms) // refs were checked
	return schema.Metadata{Metric: metricFamily(name, md.Type), Type: md.Type, Help: md.Help, Unit: md.Unit}
}

// metricFamily is the metric family a series of the given type belongs to: 2.0
// attaches metadata to each series, so a histogram's x_bucket, x_sum and x_count
// carry the metadata of family x (as Prometheus' /api/v1/metadata names it).
func metricFamily(name string, typ model.MetricType) string {
	var suffixes []string
	switch typ {
	case model.MetricTypeHistogram, model.MetricTypeGaugeHistogram:
		suffixes = []string{"_bucket", "_sum", "_count", "_gsum", "_gcount"}
	case model.MetricTypeSummary:
		suffixes = []string{"_sum", "_count"}
	}
	for _, s := range suffixes {
		if family, ok := strings.CutSuffix(name, s); ok && family != "" {
			return family
		}
	}
	return name
}
