package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// Remote-write proto message names, as the Content-Type's proto parameter names
// them (1.0 and 2.0 specs, Content-Type).
const (
	messageV1 = "prometheus.WriteRequest"
	messageV2 = "io.prometheus.write.v2.Request"
)

// DecodeV1 decodes a body whose sender declared it a remote-write 1.0
// prometheus.WriteRequest (uncompressed protobuf) into a write.Request: every
// series with its float samples, native histogram samples (converted by
// prompb's own ToIntHistogram and ToFloatHistogram, as Prometheus' receiver
// does) and exemplars (prompb's ToExemplar), its labels sorted by name
// (duplicates and invalid names kept: the writer rejects them per series), and
// the metadata of each MetricMetadata entry. A series that carries none of
// samples, histograms and exemplars is left out. The request's label strings
// do not alias data, which the caller may reuse.
//
// Errors wrap write.ErrInvalid: a body that is not a valid
// prometheus.WriteRequest, or one that decodes to nothing while holding the
// fields of an io.prometheus.write.v2.Request ("Receiver accidental use of wrong
// schema ... will result in empty message", 2.0 Content-Type), which would
// otherwise be acknowledged as an empty write.
func DecodeV1(data []byte) (write.Request, error) {
	req, err := decodeV1(data)
	if err != nil {
		return write.Request{}, fmt.Errorf("%w: body is not a protobuf %s: %v", write.ErrInvalid, messageV1, err)
	}
	if len(req.Series) == 0 && len(req.Metadata) == 0 && hasTopLevelField(data, 4, 5) {
		return write.Request{}, fmt.Errorf("%w: body is an %s (it has symbols or timeseries in fields 4 and 5), "+
			"but Content-Type says %s; send it with Content-Type application/x-protobuf;proto=%s",
			write.ErrInvalid, messageV2, messageV1, messageV2)
	}
	return req, nil
}

// decodeV1 decodes a remote-write 1.0 body (prometheus.WriteRequest) straight into
// a write.Request: what fromV1 makes of prompb's generated Unmarshal, without its
// allocations. The generated code copies every label name and value into a
// string of its own and allocates two slices per series — ten allocations per
// sample of a typical request, most of the cost of decoding; here label bytes go
// from the body into the series' labels.Labels (one allocation per series) and
// the samples of the whole request share one slice.
//
// It accepts and rejects exactly what the generated Unmarshal does (the fuzz test
// FuzzDecodeV1 holds it to that): wire types are checked for known fields,
// unknown fields (groups included) are skipped, and exemplars, histograms and
// metadata, which are rarer and allocate anyway, go through the generated code
// and prompb's converters.
func decodeV1(data []byte) (write.Request, error) {
	nSeries, nSamples, err := countV1(data)
	if err != nil {
		return write.Request{}, err
	}
	req := write.Request{Series: make([]write.Series, 0, nSeries)}
	samples := make([]cellenc.Sample, 0, nSamples)
	b := labels.NewScratchBuilder(16)
	d := seriesDecoderV1{b: &b}
	r := pbReader{b: data}
	for !r.done() {
		field, wire, start, err := r.tag("WriteRequest")
		if err != nil {
			return write.Request{}, err
		}
		switch field {
		case 1: // timeseries
			msg, err := r.message(wire, "Timeseries")
			if err != nil {
				return write.Request{}, err
			}
			first := len(samples)
			b.Reset()
			d.histograms, d.exemplars = nil, nil
			if samples, err = d.decode(msg, samples); err != nil {
				return write.Request{}, err
			}
			if len(samples) == first && d.histograms == nil && d.exemplars == nil {
				continue // nothing to store
			}
			b.Sort()
			s := write.Series{Labels: b.Labels(), Histograms: d.histograms, Exemplars: d.exemplars}
			if len(samples) > first {
				s.Samples = samples[first:len(samples):len(samples)]
			}
			req.Series = append(req.Series, s)
		case 3: // metadata
			msg, err := r.message(wire, "Metadata")
			if err != nil {
				return write.Request{}, err
			}
			var m prompb.MetricMetadata
			if err := m.Unmarshal(msg); err != nil {
				return write.Request{}, err
			}
			req.Metadata = append(req.Metadata, schema.Metadata{
				Metric: m.MetricFamilyName, Type: metricTypeV1(m.Type), Help: m.Help, Unit: m.Unit,
			})
		default:
			if err := r.skip(start); err != nil {
				return write.Request{}, err
			}
		}
	}
	return req, nil
}

// seriesDecoderV1 decodes the TimeSeries of one request: b receives a series'
// labels, histograms and exemplars its histogram samples and exemplars (nil
// when it has none; the caller resets them per series), eb is the scratch
// builder of exemplar labels.
type seriesDecoderV1 struct {
	b, eb      *labels.ScratchBuilder
	histograms []cellenc.HistogramSample
	exemplars  []exemplar.Exemplar
}

// decode decodes one TimeSeries: its labels into d.b (in wire order), its
// samples appended to samples, its histograms and exemplars to d's.
func (d *seriesDecoderV1) decode(data []byte, samples []cellenc.Sample) ([]cellenc.Sample, error) {
	b := d.b
	r := pbReader{b: data}
	for !r.done() {
		field, wire, start, err := r.tag("TimeSeries")
		if err != nil {
			return samples, err
		}
		switch field {
		case 1: // labels
			msg, err := r.message(wire, "Labels")
			if err != nil {
				return samples, err
			}
			name, value, err := decodeLabelV1(msg)
			if err != nil {
				return samples, err
			}
			b.Add(bodyString(name), bodyString(value))
		case 2: // samples
			msg, err := r.message(wire, "Samples")
			if err != nil {
				return samples, err
			}
			s, err := decodeSampleV1(msg)
			if err != nil {
				return samples, err
			}
			samples = append(samples, s)
		case 3: // exemplars
			msg, err := r.message(wire, "Exemplars")
			if err != nil {
				return samples, err
			}
			var e prompb.Exemplar
			if err := e.Unmarshal(msg); err != nil {
				return samples, err
			}
			if d.eb == nil {
				eb := labels.NewScratchBuilder(4)
				d.eb = &eb
			}
			d.exemplars = append(d.exemplars, e.ToExemplar(d.eb, nil))
		case 4: // histograms
			msg, err := r.message(wire, "Histograms")
			if err != nil {
				return samples, err
			}
			var h prompb.Histogram
			if err := h.Unmarshal(msg); err != nil {
				return samples, err
			}
			d.histograms = append(d.histograms, histogramV1(&h))
		default:
			if err := r.skip(start); err != nil {
				return samples, err
			}
		}
	}
	return samples, nil
}

func decodeLabelV1(data []byte) (name, value []byte, err error) {
	r := pbReader{b: data}
	for !r.done() {
		field, wire, start, err := r.tag("Label")
		if err != nil {
			return nil, nil, err
		}
		switch field {
		case 1:
			if name, err = r.message(wire, "Name"); err != nil {
				return nil, nil, err
			}
		case 2:
			if value, err = r.message(wire, "Value"); err != nil {
				return nil, nil, err
			}
		default:
			if err := r.skip(start); err != nil {
				return nil, nil, err
			}
		}
	}
	return name, value, nil
}

func decodeSampleV1(data []byte) (cellenc.Sample, error) {
	var s cellenc.Sample
	r := pbReader{b: data}
	for !r.done() {
		field, wire, start, err := r.tag("Sample")
		if err != nil {
			return s, err
		}
		switch field {
		case 1:
			if wire != 1 {
				return s, fmt.Errorf("proto: wrong wireType = %d for field Value", wire)
			}
			if r.i+8 > len(r.b) {
				return s, io.ErrUnexpectedEOF
			}
			s.V = math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.i:]))
			r.i += 8
		case 2:
			if wire != 0 {
				return s, fmt.Errorf("proto: wrong wireType = %d for field Timestamp", wire)
			}
			v, err := r.varint()
			if err != nil {
				return s, err
			}
			s.T = int64(v)
		default:
			if err := r.skip(start); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// histogramV1 converts a 1.0 histogram with prompb's own converters, so that
// it is exactly what Prometheus' receiver appends: an integer histogram when
// its counts are integers, a float histogram otherwise. 1.0 has no start
// timestamps.
func histogramV1(h *prompb.Histogram) cellenc.HistogramSample {
	if h.IsFloatHistogram() {
		return cellenc.HistogramSample{T: h.Timestamp, FH: h.ToFloatHistogram()}
	}
	return cellenc.HistogramSample{T: h.Timestamp, H: h.ToIntHistogram()}
}

// metricTypeV1 is the metric type of a 1.0 MetricMetadata; unknown values are
// model.MetricTypeUnknown.
func metricTypeV1(t prompb.MetricMetadata_MetricType) model.MetricType {
	switch t {
	case prompb.MetricMetadata_COUNTER:
		return model.MetricTypeCounter
	case prompb.MetricMetadata_GAUGE:
		return model.MetricTypeGauge
	case prompb.MetricMetadata_HISTOGRAM:
		return model.MetricTypeHistogram
	case prompb.MetricMetadata_GAUGEHISTOGRAM:
		return model.MetricTypeGaugeHistogram
	case prompb.MetricMetadata_SUMMARY:
		return model.MetricTypeSummary
	case prompb.MetricMetadata_INFO:
		return model.MetricTypeInfo
	case prompb.MetricMetadata_STATESET:
		return model.MetricTypeStateset
	default:
		return model.MetricTypeUnknown
	}
}

// countV1 counts the series and samples of a body, to allocate once. Errors are
// those decodeV1 would meet at the same place.
func countV1(data []byte) (series, samples int, err error) {
	r := pbReader{b: data}
	for !r.done() {
		field, wire, start, err := r.tag("WriteRequest")
		if err != nil {
			return 0, 0, err
		}
		if field != 1 {
			if field == 3 {
				_, err = r.message(wire, "Metadata")
			} else {
				err = r.skip(start)
			}
			if err != nil {
				return 0, 0, err
			}
			continue
		}
		msg, err := r.message(wire, "Timeseries")
		if err != nil {
			return 0, 0, err
		}
		series++
		ts := pbReader{b: msg}
		for !ts.done() {
			field, _, start, err := ts.tag("TimeSeries")
			if err != nil {
				return 0, 0, err
			}
			if field == 2 {
				samples++
			}
			// Every field of a TimeSeries is length-delimited or skippable alike
			// here; decodeSeriesV1 checks wire types.
			if err := ts.skip(start); err != nil {
				return 0, 0, err
			}
		}
	}
	return series, samples, nil
}

// hasTopLevelField reports whether a well-formed message has any of the given
// fields at its top level: how a 1.0 body sent as 2.0 (or the reverse) is told
// from an empty message, which is what decoding it with the wrong schema gives.
func hasTopLevelField(data []byte, fields ...int) bool {
	r := pbReader{b: data}
	for !r.done() {
		field, _, start, err := r.tag("")
		if err != nil || r.skip(start) != nil {
			return false
		}
		if slices.Contains(fields, field) {
			return true
		}
	}
	return false
}

// pbReader reads protobuf's wire format with the bounds checks and errors of
// gogo/protobuf's generated code.
type pbReader struct {
	b []byte
	i int
}

var (
	errPBOverflow      = errors.New("proto: integer overflow")
	errPBInvalidLength = errors.New("proto: negative length found during unmarshaling")
	errPBEndOfGroup    = errors.New("proto: unexpected end of group")
)

func (r *pbReader) done() bool { return r.i >= len(r.b) }

func (r *pbReader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errPBOverflow
		}
		if r.i >= len(r.b) {
			return 0, io.ErrUnexpectedEOF
		}
		c := r.b[r.i]
		r.i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// tag reads a field's tag; start is where it began (for skip).
func (r *pbReader) tag(msg string) (field, wire, start int, err error) {
	start = r.i
	v, err := r.varint()
	if err != nil {
		return 0, 0, start, err
	}
	fieldNum := int32(v >> 3)
	wire = int(v & 0x7)
	if wire == 4 {
		return 0, 0, start, fmt.Errorf("proto: %s: wiretype end group for non-group", msg)
	}
	if fieldNum <= 0 {
		return 0, 0, start, fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", msg, fieldNum, v)
	}
	return int(fieldNum), wire, start, nil
}

// message reads a length-delimited field of wire type 2.
func (r *pbReader) message(wire int, field string) ([]byte, error) {
	if wire != 2 {
		return nil, fmt.Errorf("proto: wrong wireType = %d for field %s", wire, field)
	}
	v, err := r.varint()
	if err != nil {
		return nil, err
	}
	n := int(v)
	if n < 0 {
		return nil, errPBInvalidLength
	}
	end := r.i + n
	if end < 0 {
		return nil, errPBInvalidLength
	}
	if end > len(r.b) {
		return nil, io.ErrUnexpectedEOF
	}
	msg := r.b[r.i:end]
	r.i = end
	return msg, nil
}

// skip skips the field whose tag starts at start, groups included, as gogo's
// skipTypes does.
func (r *pbReader) skip(start int) error {
	r.i = start
	depth := 0
	for r.i < len(r.b) {
		v, err := r.varint()
		if err != nil {
			return err
		}
		switch wire := int(v & 0x7); wire {
		case 0:
			if _, err := r.varint(); err != nil {
				return err
			}
		case 1:
			r.i += 8
		case 2:
			n, err := r.varint()
			if err != nil {
				return err
			}
			if int(n) < 0 {
				return errPBInvalidLength
			}
			r.i += int(n)
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return errPBEndOfGroup
			}
			depth--
		case 5:
			r.i += 4
		default:
			return fmt.Errorf("proto: illegal wireType %d", wire)
		}
		if r.i < 0 {
			return errPBInvalidLength
		}
		if depth == 0 {
			if r.i > len(r.b) {
				return io.ErrUnexpectedEOF
			}
			return nil
		}
	}
	return io.ErrUnexpectedEOF
}
