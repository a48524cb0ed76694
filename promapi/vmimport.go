package promapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/promapi/wire"
	"github.com/hbtsdb/hbtsdb/write"
)

// VictoriaMetrics' import endpoints (vmroutes.go registers them), so that
// vmctl and other VictoriaMetrics clients write to hbtsdb:
//
//	POST /api/v1/import             JSON lines (wire.DecodeVMImport)
//	POST /api/v1/import/prometheus  Prometheus' text format (wire.DecodePromText)
//
// Both go through the write handler's bounds as remote write and /api/put do
// (--write.max-body-bytes, --write.max-decompressed-bytes, the concurrency
// slot and the in-flight byte budget, the body read timeout), take a gzip body
// by Content-Encoding (as VictoriaMetrics; none or identity otherwise: 415),
// and answer 204 once every sample is durably stored, as VictoriaMetrics does.
//
// All or nothing: the whole body is decoded, then validated by the writer as it
// would validate it (DB.CheckWrite: labels, limits, timestamps), before
// anything is written; a bad line, or a sample the writer would reject, is
// answered 400 naming its line and the problem, in plain text as
// VictoriaMetrics answers, and nothing of the request is stored. (The one gap:
// a sample that crosses the max-age or future-skew bound between the check and
// the write, microseconds later, is rejected by the write while the rest is
// stored; that request is answered 400 naming it, as remote write answers a
// partial write.) A store failure is 5xx and nothing is acknowledged; the
// sender retries the whole body, which rewrites the same cells.

// writeChecker is a Writer that can validate a request without writing it;
// *db.DB is one (db.DB.CheckWrite).
type writeChecker interface {
	CheckWrite(req *write.Request) ([]write.Rejection, error)
}

// maxRejectionsShown bounds the rejections a 400 answer lists one by one.
const maxRejectionsShown = 10

// vmImport is the handler of POST /api/v1/import.
func (h *writeHandler) vmImport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.serveImport(w, r, func(body []byte) (wire.Import, error) { return wire.DecodeVMImport(body) })
	})
}

// vmImportPrometheus is the handler of POST /api/v1/import/prometheus. A
// sample without a timestamp gets the `timestamp` query argument (integer
// milliseconds), or the server's clock when there is none or it is 0, as
// VictoriaMetrics (protoparserutil.GetTimestamp).
func (h *writeHandler) vmImportPrometheus() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts := time.Now().UnixMilli()
		if s := r.URL.Query().Get("timestamp"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				h.failImport(w, r, fmt.Errorf("%w: cannot parse `timestamp=%s` query arg: %v", errInvalidBody, s, err))
				return
			}
			if n > 0 {
				ts = n
			}
		}
		h.serveImport(w, r, func(body []byte) (wire.Import, error) { return wire.DecodePromText(body, ts) })
	})
}

// serveImport reads, decodes, checks and writes one import request.
func (h *writeHandler) serveImport(w http.ResponseWriter, r *http.Request, decode func([]byte) (wire.Import, error)) {
	raw, decoded := getBuffer(), getBuffer()
	defer putBuffer(raw)
	defer putBuffer(decoded)
	res := &reservation{budget: h.bytes}
	defer res.release()
	body, release, err := h.readGzipBody(w, r, raw, decoded, res)
	if err != nil {
		h.failImport(w, r, err)
		return
	}
	defer release()
	d, err := decode(body)
	if err != nil {
		h.failImport(w, r, err)
		return
	}
	tallyRejected(r.Context(), "nan_skipped", d.SkippedNaN)
	if len(d.Request.Series) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	wr, err := h.writer()
	if err != nil {
		h.failImport(w, r, err)
		return
	}
	if c, ok := wr.(writeChecker); ok {
		rejected, err := c.CheckWrite(&d.Request)
		if err == nil && len(rejected) > 0 {
			err = fmt.Errorf("%w: %s; nothing of the request was written", write.ErrInvalid, byLine(&d, rejected))
		}
		if err != nil {
			h.failImport(w, r, err)
			return
		}
	}
	result, _, err := writeAndTally(r.Context(), wr, &d.Request)
	if err == nil && len(result.Rejected) > 0 {
		err = fmt.Errorf("%w: %s; the other %d samples were written", write.ErrInvalid, byLine(&d, result.Rejected),
			result.SamplesWritten)
	}
	if err != nil {
		h.failImport(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// byLine says what the writer rejected, by body line: "line 3: reason; line 7:
// reason", the first maxRejectionsShown and how many more.
func byLine(d *wire.Import, rejected []write.Rejection) string {
	var b strings.Builder
	samples := 0
	for _, rj := range rejected {
		samples += rj.Samples
	}
	fmt.Fprintf(&b, "%d samples rejected: ", samples)
	for i, rj := range rejected {
		if i == maxRejectionsShown {
			fmt.Fprintf(&b, "; and %d more", len(rejected)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		if rj.Series >= 0 {
			fmt.Fprintf(&b, "line %d: ", d.Line(rj.Series, rj.Sample))
		}
		b.WriteString(rj.Reason)
	}
	return b.String()
}

// failImport answers an import request that failed, in plain text as
// VictoriaMetrics answers (vmctl prints the body).
func (h *writeHandler) failImport(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	h.setRetryAfter(w, status)
	logWriteFailure(h.logger, r, status, err)
	http.Error(w, err.Error(), status)
}
