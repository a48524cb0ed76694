package promapi

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// acceptedMessages are the protobuf messages /api/v1/write decodes.
var acceptedMessages = remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}

// Response headers of remote write 2.0 ("Required Written Response Headers").
const (
	headerSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	headerHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	headerExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// remoteWrite is the handler of POST /api/v1/write: the concurrency limit, then
// client_golang's remote-write handler (content negotiation, the Written headers)
// with our snappy middleware in front of our Store.
func (h *writeHandler) remoteWrite() http.Handler {
	rw := remoteapi.NewWriteHandler(h, acceptedMessages, remoteapi.WithWriteHandlerMiddlewares(h.snappyMiddleware))
	return h.limitConcurrency(rw, func(w http.ResponseWriter, r *http.Request, err error) {
		h.failRemote(w, r, "", err)
	})
}

// negotiate reads what the request says it carries. "Receivers MUST use the
// content type header to identify the Protobuf Message schema to use" and "MUST
// return 415 HTTP Unsupported Media Type status code if they don't support a given
// content type or encoding" (2.0, Content-Type, Unsupported Request Content). A
// missing Content-Type means 1.0's application/x-protobuf and a missing
// Content-Encoding means snappy, as client_golang's and Prometheus' receivers
// treat them; senders are required to send both.
//
// The header is parsed as RFC 9110 says (case-insensitive names, optional
// whitespace around ";") and then rewritten in the canonical form that
// client_golang's handler, which splits on ";" and "=" only, reads the same way:
// otherwise "application/x-protobuf; proto=io.prometheus.write.v2.Request" would
// be taken for a 1.0 request and decode to an empty message, silently.
func negotiate(r *http.Request) (remoteapi.WriteMessageType, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/x-protobuf"
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", fmt.Errorf("%w: Content-Type %q: %v", errUnsupportedMedia, ct, err)
	}
	if media != "application/x-protobuf" {
		return "", fmt.Errorf("%w: Content-Type %q; remote write takes application/x-protobuf", errUnsupportedMedia, ct)
	}
	msgType := remoteapi.WriteV1MessageType
	if p, ok := params["proto"]; ok {
		msgType = remoteapi.WriteMessageType(p)
	}
	if !acceptedMessages.Contains(msgType) {
		return "", fmt.Errorf("%w: proto message %q is not accepted; only %s", errUnsupportedMedia, string(msgType), acceptedMessages)
	}
	r.Header.Set("Content-Type", "application/x-protobuf;proto="+string(msgType))
	if enc := contentEncoding(r); enc != "" && enc != string(remoteapi.SnappyBlockCompression) {
		return msgType, fmt.Errorf("%w: Content-Encoding %q is not accepted; remote write requires snappy", errUnsupportedMedia, enc)
	}
	return msgType, nil
}

// snappyMiddleware negotiates the message, reads the body within the limits and
// decodes snappy's block format, handing the decoded bytes to the remoteapi
// handler. It replaces remoteapi.SnappyDecodeMiddleware, whose limit is a fixed
// 32 MiB and which reads a body before looking at its Content-Type.
func (h *writeHandler) snappyMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msgType, err := negotiate(r)
		if err != nil {
			h.failRemote(w, r, msgType, err)
			return
		}
		compressed, decoded := getBuffer(), getBuffer()
		defer putBuffer(compressed)
		defer putBuffer(decoded)
		if err := h.readBody(r, compressed); err != nil {
			h.failRemote(w, r, msgType, err)
			return
		}
		data, err := h.decodeSnappy(decoded, compressed.Bytes())
		if err != nil {
			h.failRemote(w, r, msgType, err)
			return
		}
		r.Body = decodedBody{Reader: bytes.NewReader(data), data: data}
		r.Header.Del("Content-Encoding")
		next.ServeHTTP(w, r)
	})
}

// failRemote answers a remote-write request that failed before Store, as text
// (senders "MUST NOT try and interpret the error message, and SHOULD log it as
// is"). A 2.0 request gets Written headers of 0: nothing of it was written.
func (h *writeHandler) failRemote(w http.ResponseWriter, r *http.Request, msgType remoteapi.WriteMessageType, err error) {
	status := statusOf(err)
	if msgType == remoteapi.WriteV2MessageType {
		for _, k := range []string{headerSamplesWritten, headerHistogramsWritten, headerExemplarsWritten} {
			w.Header().Set(k, "0")
		}
	}
	logWriteFailure(h.logger, r, status, err, "proto", string(msgType))
	http.Error(w, err.Error(), status)
}

// notStored counts what a remote-write request carried that hbtsdb does not store
// yet: native histogram samples and exemplars.
type notStored struct {
	histograms, exemplars int
}

// Store decodes a remote-write request, writes it and says what was written. It
// implements client_golang's remote write storage: the returned WriteResponse
// carries the status code and the 2.0 Written counts, and a non-nil error becomes
// the response body.
func (h *writeHandler) Store(r *http.Request, msgType remoteapi.WriteMessageType) (*remoteapi.WriteResponse, error) {
	resp := remoteapi.NewWriteResponse()
	fail := func(err error) (*remoteapi.WriteResponse, error) {
		status := statusOf(err)
		resp.SetStatusCode(status)
		logWriteFailure(h.logger, r, status, err, "proto", string(msgType),
			"samples_written", resp.Samples)
		return resp, err
	}
	data, err := bodyBytes(r)
	if err != nil {
		return fail(err)
	}
	var (
		req     write.Request
		dropped notStored
	)
	switch msgType {
	case remoteapi.WriteV1MessageType:
		if req, dropped, err = decodeV1(data); err != nil {
			return fail(fmt.Errorf("%w: body is not a protobuf prometheus.WriteRequest: %v", write.ErrInvalid, err))
		}
		if len(req.Series) == 0 && len(req.Metadata) == 0 && dropped == (notStored{}) && hasTopLevelField(data, 4, 5) {
			return fail(fmt.Errorf("%w: body is an io.prometheus.write.v2.Request (it has symbols or timeseries in fields 4 and 5), "+
				"but Content-Type says prometheus.WriteRequest; send it with Content-Type application/x-protobuf;proto=%s",
				write.ErrInvalid, remoteapi.WriteV2MessageType))
		}
	case remoteapi.WriteV2MessageType:
		var msg writev2.Request
		if err := msg.Unmarshal(data); err != nil {
			return fail(fmt.Errorf("%w: body is not a protobuf io.prometheus.write.v2.Request: %v", write.ErrInvalid, err))
		}
		if len(msg.Timeseries) == 0 && hasTopLevelField(data, 1, 2, 3) {
			return fail(fmt.Errorf("%w: body is a prometheus.WriteRequest (it has fields 1 to 3, which 2.0 reserves), "+
				"but Content-Type says io.prometheus.write.v2.Request", write.ErrInvalid))
		}
		if req, dropped, err = fromV2(&msg); err != nil {
			return fail(err)
		}
	default: // remoteapi checked the type against acceptedMessages
		return fail(fmt.Errorf("%w: proto message %s is not accepted", errUnsupportedMedia, msgType))
	}

	if h.writer == nil {
		return fail(errNoWriter)
	}
	res, err := h.writer.Write(r.Context(), &req)
	if err != nil {
		// Rejected whole (too many series, ...) or the store failed: nothing of
		// the request is acknowledged, so the Written headers stay 0.
		return fail(err)
	}
	resp.Samples = res.SamplesWritten
	if err := partialWriteError(res, dropped); err != nil {
		// "Receivers MAY write valid samples within a write request that also
		// contains some invalid or otherwise unwritten samples ... In such a case,
		// the Receiver MUST return non-2xx status code" and "MUST return a 400 HTTP
		// Bad Request status code for write requests that contain any invalid
		// samples" (2.0, Partial Write, Invalid Samples; 1.0, Labels).
		return fail(err)
	}
	return resp, nil
}

// partialWriteError describes what of a written request was not stored — series
// and samples the writer rejected, histograms and exemplars hbtsdb does not store
// — or returns nil when everything was.
func partialWriteError(res write.Result, dropped notStored) error {
	var parts []string
	rejected := write.RejectionError(res)
	if rejected != nil {
		parts = append(parts, strings.TrimPrefix(rejected.Error(), write.ErrInvalid.Error()+": "))
	}
	if dropped.histograms > 0 {
		parts = append(parts, fmt.Sprintf("%d native histogram samples not written: hbtsdb does not store native histograms yet", dropped.histograms))
	}
	if dropped.exemplars > 0 {
		parts = append(parts, fmt.Sprintf("%d exemplars not written: hbtsdb does not store exemplars yet", dropped.exemplars))
	}
	if len(parts) == 0 {
		return nil
	}
	if rejected == nil {
		parts = append(parts, fmt.Sprintf("%d float samples written", res.SamplesWritten))
	}
	return fmt.Errorf("%w: %s", write.ErrInvalid, strings.Join(parts, "; "))
}

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
// metadata becomes one schema.Metadata per metric name. Created timestamps are not
// stored (they are optional information about samples, which are stored).
func fromV2(msg *writev2.Request) (write.Request, notStored, error) {
	var dropped notStored
	if err := checkSymbolRefs(msg); err != nil {
		return write.Request{}, dropped, err
	}
	syms := msg.Symbols
	total := 0
	for i := range msg.Timeseries {
		total += len(msg.Timeseries[i].Samples)
	}
	samples := make([]schema.Sample, 0, total)
	req := write.Request{Series: make([]write.Series, 0, len(msg.Timeseries))}
	var seenMetadata map[string]bool
	b := labels.NewScratchBuilder(16)
	for i := range msg.Timeseries {
		ts := &msg.Timeseries[i]
		dropped.histograms += len(ts.Histograms)
		dropped.exemplars += len(ts.Exemplars)
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
		if len(ts.Samples) == 0 {
			continue
		}
		start := len(samples)
		for _, s := range ts.Samples {
			samples = append(samples, schema.Sample{T: s.Timestamp, V: s.Value})
		}
		req.Series = append(req.Series, write.Series{Labels: lbls, Samples: samples[start:len(samples):len(samples)]})
	}
	return req, dropped, nil
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
