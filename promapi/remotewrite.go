package promapi

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/hbtsdb/hbtsdb/promapi/wire"
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

// remoteWrite is the handler of POST /api/v1/write: client_golang's remote-write
// handler (content negotiation, the Written headers) with our snappy middleware,
// which reads the body within the limits and takes the concurrency slot, in
// front of our DB.
func (h *writeHandler) remoteWrite() http.Handler {
	return remoteapi.NewWriteHandler(h, acceptedMessages, remoteapi.WithWriteHandlerMiddlewares(h.snappyMiddleware))
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

// snappyMiddleware negotiates the message, reads the body within the limits (see
// readBody), takes a concurrency slot once the whole body has arrived, and
// decodes snappy's block format, handing the decoded bytes to the remoteapi
// handler. It replaces remoteapi.SnappyDecodeMiddleware, whose limit is a fixed
// 32 MiB and which reads a body before looking at its Content-Type.
func (h *writeHandler) snappyMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msgType, err := negotiate(r)
		if err != nil {
			closeConnection(w, r)
			h.failRemote(w, r, msgType, err)
			return
		}
		compressed, decoded := getBuffer(), getBuffer()
		defer putBuffer(compressed)
		defer putBuffer(decoded)
		res := &reservation{budget: h.bytes}
		defer res.release()
		if err := h.readBody(w, r, compressed, res); err != nil {
			h.failRemote(w, r, msgType, err)
			return
		}
		if err := h.acquireSlot(); err != nil {
			h.failRemote(w, r, msgType, err)
			return
		}
		defer h.inflight.release()
		data, err := h.decodeSnappy(decoded, *compressed, res)
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
	h.setRetryAfter(w, status)
	logWriteFailure(h.logger, r, status, err, "proto", string(msgType))
	http.Error(w, err.Error(), status)
}

// Store decodes a remote-write request (wire.DecodeV1 or wire.DecodeV2, by the
// negotiated message), writes it and says what was written. It implements client_golang's remote write storage: the returned WriteResponse
// carries the status code and the 2.0 Written counts, and a non-nil error becomes
// the response body.
func (h *writeHandler) Store(r *http.Request, msgType remoteapi.WriteMessageType) (*remoteapi.WriteResponse, error) {
	resp := remoteapi.NewWriteResponse()
	fail := func(err error) (*remoteapi.WriteResponse, error) {
		status := statusOf(err)
		resp.SetStatusCode(status)
		if status == http.StatusTooManyRequests {
			resp.SetExtraHeader("Retry-After", h.limits.retryAfter())
		}
		logWriteFailure(h.logger, r, status, err, "proto", string(msgType),
			"samples_written", resp.Samples, "histograms_written", resp.Histograms, "exemplars_written", resp.Exemplars)
		return resp, err
	}
	data, err := bodyBytes(r)
	if err != nil {
		return fail(err)
	}
	var req write.Request
	switch msgType {
	case remoteapi.WriteV1MessageType:
		req, err = wire.DecodeV1(data)
	case remoteapi.WriteV2MessageType:
		req, err = wire.DecodeV2(data)
	default: // remoteapi checked the type against acceptedMessages
		err = fmt.Errorf("%w: proto message %s is not accepted", errUnsupportedMedia, msgType)
	}
	if err != nil {
		return fail(err)
	}

	wr, err := h.writer()
	if err != nil {
		return fail(err)
	}
	res, _, err := writeAndTally(r.Context(), wr, &req)
	if err != nil {
		// Rejected whole (too many series, ...) or the store failed: nothing of
		// the request is acknowledged, so the Written headers stay 0.
		return fail(err)
	}
	// "for each important piece of data (currently Samples, Histograms and
	// Exemplars) Receivers MUST send a dedicated HTTP
	// X-Prometheus-Remote-Write-*-Written response header with the precise
	// number of successfully written elements" (2.0, Required Written Response
	// Headers); remoteapi sets them on 2.0 responses only.
	resp.Samples = res.SamplesWritten
	resp.Histograms = res.HistogramsWritten
	resp.Exemplars = res.ExemplarsWritten
	err = write.RejectionError(res)
	if len(res.RejectedExemplars) > 0 && err == nil {
		// As Prometheus' receiver: invalid exemplars are logged and do not fail
		// the request; the Exemplars-Written header tells a 2.0 sender. (A
		// request that fails anyway logs once, below.)
		h.logger.Warn("remote write: exemplars not stored", "proto", string(msgType), "count", len(res.RejectedExemplars),
			"first", res.RejectedExemplars[0].Reason)
	}
	if err != nil {
		// "Receivers MAY write valid samples within a write request that also
		// contains some invalid or otherwise unwritten samples ... In such a case,
		// the Receiver MUST return non-2xx status code" and "MUST return a 400 HTTP
		// Bad Request status code for write requests that contain any invalid
		// samples" (2.0, Partial Write, Invalid Samples; 1.0, Labels).
		return fail(err)
	}
	return resp, nil
}
