package promapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hbtsdb/hbtsdb/promapi/wire"
	"github.com/hbtsdb/hbtsdb/write"
)

// putError is one failed datapoint of a "details" response.
type putError struct {
	Datapoint any    `json:"datapoint"`
	Error     string `json:"error"`
}

// putSummary is the "summary" and "details" response body. Field order follows
// OpenTSDB's examples: errors, failed, success.
type putSummary struct {
	Errors  *[]putError `json:"errors,omitempty"`
	Failed  int         `json:"failed"`
	Success int         `json:"success"`
}

// put is the handler of POST /api/put, OpenTSDB's HTTP write API
// (http://opentsdb.net/docs/build/html/api_http/put.html): "Each data point is
// processed individually and an error with one piece of data will not affect the
// storing of good data", but content that cannot be parsed discards every
// datapoint (wire.DecodePut decodes and checks the body). Responses: 204 when
// all were stored and neither ?summary nor ?details was asked; 200 with
// {"failed":0,"success":N} when they were; 400 when any datapoint failed, with
// OpenTSDB's error object, or the summary (with "errors" under ?details). A
// store failure is a 5xx and nothing is acknowledged.
func (h *writeHandler) put() http.Handler {
	return http.HandlerFunc(h.servePut)
}

func (h *writeHandler) servePut(w http.ResponseWriter, r *http.Request) {
	raw, decoded := getBuffer(), getBuffer()
	defer putBuffer(raw)
	defer putBuffer(decoded)
	res := &reservation{budget: h.bytes}
	defer res.release()
	body, release, err := h.readPutBody(w, r, raw, decoded, res)
	if err != nil {
		h.failPut(w, r, err)
		return
	}
	defer release()
	p, err := wire.DecodePut(body)
	if err != nil {
		h.failPut(w, r, err)
		return
	}
	writerRejected := 0
	if len(p.Request.Series) > 0 {
		wr, err := h.writer()
		if err != nil {
			h.failPut(w, r, err)
			return
		}
		var res write.Result
		res, writerRejected, err = writeAndTally(r.Context(), wr, &p.Request)
		if err != nil {
			// Rejected whole, or the store failed: nothing is acknowledged.
			h.failPut(w, r, err)
			return
		}
		p.Reject(res.Rejected)
	}
	h.respondPut(w, r, p.Datapoints, writerRejected)
}

// respondPut answers a request whose datapoints were written, except those with
// an Error: 204, or under ?summary or ?details the counts (and the failed
// datapoints), 200 when nothing failed and 400 otherwise; without either, a
// failure is OpenTSDB's generic 400.
// writerRejected of the failed datapoints were rejected by the writer (and
// counted by reason); the others did not decode.
func (h *writeHandler) respondPut(w http.ResponseWriter, r *http.Request, points []wire.PutDatapoint, writerRejected int) {
	sum := putSummary{}
	var details []putError
	for _, dp := range points {
		if dp.Error == "" {
			sum.Success++
			continue
		}
		sum.Failed++
		details = append(details, putError{Datapoint: dp.Shown, Error: dp.Error})
	}
	tallyRejected(r.Context(), "invalid_datapoint", sum.Failed-writerRejected)
	q := r.URL.Query()
	showDetails, showSummary := q.Has("details"), q.Has("summary")
	if sum.Failed > 0 {
		logWriteFailure(h.logger, r, http.StatusBadRequest, fmt.Errorf("%d of %d datapoints failed, first: %s", sum.Failed, len(points), details[0].Error),
			"failed", sum.Failed, "success", sum.Success)
	}
	switch {
	case showDetails:
		if details == nil {
			details = []putError{}
		}
		sum.Errors = &details
		writePutJSON(w, putStatus(sum), sum)
	case showSummary:
		writePutJSON(w, putStatus(sum), sum)
	case sum.Failed > 0:
		writePutJSON(w, http.StatusBadRequest, openTSDBError(http.StatusBadRequest, "One or more data points had errors",
			`Please see the TSD logs or append "details" to the put request`))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func putStatus(sum putSummary) int {
	if sum.Failed > 0 {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// readPutBody is readGzipBody with OpenTSDB's message for an empty body.
func (h *writeHandler) readPutBody(w http.ResponseWriter, r *http.Request, raw, decoded *[]byte, res *reservation) (_ []byte, release func(), _ error) {
	body, release, err := h.readGzipBody(w, r, raw, decoded, res)
	if errors.Is(err, errEmptyBody) {
		return nil, nil, fmt.Errorf("%w: Missing message content", errInvalidBody)
	}
	return body, release, err
}

// readGzipBody reads the body of a request that may be gzip-encoded (/api/put,
// as scollector sends it, and the VictoriaMetrics imports) within the limits (see
// readBody), takes a concurrency slot once it has all arrived, and gunzips it when
// it is gzip-encoded. On success the caller gives the slot back with release.
func (h *writeHandler) readGzipBody(w http.ResponseWriter, r *http.Request, raw, decoded *[]byte, res *reservation) (_ []byte, release func(), _ error) {
	enc := contentEncoding(r)
	if enc != "" && enc != "identity" && enc != "gzip" {
		closeConnection(w, r)
		return nil, nil, fmt.Errorf("%w: Content-Encoding %q is not accepted; %s takes gzip or none", errUnsupportedMedia, enc, r.URL.Path)
	}
	if err := h.readBody(w, r, raw, res); err != nil {
		return nil, nil, err
	}
	if err := h.acquireSlot(); err != nil {
		return nil, nil, err
	}
	body := *raw
	if enc == "gzip" {
		var err error
		if body, err = h.decodeGzip(decoded, body, res); err != nil {
			h.inflight.release()
			return nil, nil, err
		}
	} else if int64(len(body)) > h.limits.MaxDecompressedBytes {
		h.inflight.release()
		return nil, nil, fmt.Errorf("%w: request body is over the limit of %d bytes (--write.max-decompressed-bytes)",
			errInvalidBody, h.limits.MaxDecompressedBytes)
	}
	return body, h.inflight.release, nil
}

// failPut answers an /api/put request that failed as a whole, with OpenTSDB's
// error object.
func (h *writeHandler) failPut(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	h.setRetryAfter(w, status)
	logWriteFailure(h.logger, r, status, err)
	writePutJSON(w, status, openTSDBError(status, putMessage(err), ""))
}

// putMessage is the message of an /api/put error: its text without the prefix
// of a request refused whole, by promapi (errInvalidBody) or by the writer
// (write.ErrInvalid), as OpenTSDB words its messages ("Missing message
// content").
func putMessage(err error) string {
	msg := err.Error()
	for _, refused := range []error{errInvalidBody, write.ErrInvalid} {
		if errors.Is(err, refused) {
			msg = strings.TrimPrefix(msg, refused.Error()+": ")
		}
	}
	return msg
}

// openTSDBError is the body of an OpenTSDB error response
// ({"error":{"code":400,"message":"...","details":"..."}}).
func openTSDBError(status int, message, details string) any {
	type body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details string `json:"details,omitempty"`
	}
	return map[string]body{"error": {Code: status, Message: message, Details: details}}
}

func writePutJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
