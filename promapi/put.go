package promapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// OpenTSDB's timestamp rule (TSDB.addPointInternal, Const.SECOND_MASK): a value
// with any of its upper 32 bits set is in milliseconds and must lie in
// [1e12, 9999999999999]; otherwise it is in seconds. Non-positive timestamps are
// invalid (IncomingDataPoint.validate).
const (
	secondMask = int64(-1) << 32 // 0xFFFFFFFF00000000
	minMillis  = 1_000_000_000_000
	maxMillis  = 9_999_999_999_999
)

// putDatapoint is one datapoint as OpenTSDB's /api/put takes it and as its
// "details" response echoes it: the value as text (OpenTSDB keeps it a string).
type putDatapoint struct {
	Metric    string            `json:"metric"`
	Timestamp int64             `json:"timestamp"`
	Value     string            `json:"value"`
	Tags      map[string]string `json:"tags"`
}

// putInput is a datapoint as decoded, before it is checked.
type putInput struct {
	Metric    *string           `json:"metric"`
	Timestamp json.RawMessage   `json:"timestamp"`
	Value     json.RawMessage   `json:"value"`
	Tags      map[string]string `json:"tags"`
}

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
// datapoint. Responses: 204 when all were stored and neither ?summary nor ?details
// was asked; 200 with {"failed":0,"success":N} when they were; 400 when any
// datapoint failed, with OpenTSDB's error object, or the summary (with "errors"
// under ?details). A store failure is a 5xx and nothing is acknowledged.
func (h *writeHandler) put() http.Handler {
	return h.limitConcurrency(http.HandlerFunc(h.servePut), h.failPut)
}

func (h *writeHandler) servePut(w http.ResponseWriter, r *http.Request) {
	raw, decoded := getBuffer(), getBuffer()
	defer putBuffer(raw)
	defer putBuffer(decoded)
	body, err := h.readPutBody(r, raw, decoded)
	if err != nil {
		h.failPut(w, r, err)
		return
	}
	points, err := splitPutBody(body)
	if err != nil {
		h.failPut(w, r, err)
		return
	}

	// Decode and check every datapoint; group the good ones into series.
	var (
		errs     = make([]string, len(points)) // "" = not failed (yet)
		shown    = make([]any, len(points))    // the datapoint as echoed in details
		req      write.Request
		origin   [][]int // origin[s][k]: the datapoint of sample k of series s
		seriesOf = map[string]int{}
		b        = labels.NewScratchBuilder(8)
	)
	for i, raw := range points {
		dp, shownDP, t, v, errMsg := parsePutDatapoint(raw)
		shown[i] = shownDP
		if errMsg != "" {
			errs[i] = errMsg
			continue
		}
		b.Reset()
		b.Add(model.MetricNameLabel, dp.Metric)
		for k, val := range dp.Tags {
			b.Add(k, val)
		}
		b.Sort()
		lbls := b.Labels()
		key := lbls.String()
		s, ok := seriesOf[key]
		if !ok {
			s = len(req.Series)
			seriesOf[key] = s
			req.Series = append(req.Series, write.Series{Labels: lbls})
			origin = append(origin, nil)
		}
		req.Series[s].Samples = append(req.Series[s].Samples, schema.Sample{T: t, V: v})
		origin[s] = append(origin[s], i)
	}

	if len(req.Series) > 0 {
		if h.writer == nil {
			h.failPut(w, r, errNoWriter)
			return
		}
		res, err := h.writer.Write(r.Context(), &req)
		if err != nil {
			// Rejected whole, or the store failed: nothing is acknowledged.
			h.failPut(w, r, err)
			return
		}
		for _, rej := range res.Rejected {
			if rej.Series < 0 || rej.Series >= len(origin) {
				continue
			}
			if rej.Sample < 0 {
				for _, i := range origin[rej.Series] {
					errs[i] = rej.Reason
				}
			} else if rej.Sample < len(origin[rej.Series]) {
				errs[origin[rej.Series][rej.Sample]] = rej.Reason
			}
		}
	}

	sum := putSummary{}
	var details []putError
	for i, e := range errs {
		if e == "" {
			sum.Success++
			continue
		}
		sum.Failed++
		details = append(details, putError{Datapoint: shown[i], Error: e})
	}
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

// readPutBody reads the body within the limits; it may be gzip-compressed, as
// scollector sends it.
func (h *writeHandler) readPutBody(r *http.Request, raw, decoded *bytes.Buffer) ([]byte, error) {
	enc := contentEncoding(r)
	if enc != "" && enc != "identity" && enc != "gzip" {
		return nil, fmt.Errorf("%w: Content-Encoding %q is not accepted; /api/put takes gzip or none", errUnsupportedMedia, enc)
	}
	if err := h.readBody(r, raw); err != nil {
		if errors.Is(err, errEmptyBody) {
			return nil, fmt.Errorf("%w: Missing message content", write.ErrInvalid)
		}
		return nil, err
	}
	if enc == "gzip" {
		return h.decodeGzip(decoded, raw.Bytes())
	}
	if int64(raw.Len()) > h.limits.MaxDecompressedBytes {
		return nil, fmt.Errorf("%w: request body is over the limit of %d bytes (--write.max-decompressed-bytes)",
			write.ErrInvalid, h.limits.MaxDecompressedBytes)
	}
	return raw.Bytes(), nil
}

// splitPutBody splits the body into its datapoints: one JSON object or an array of
// them. The whole body must be valid JSON; otherwise nothing is written.
func splitPutBody(body []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: Missing message content", write.ErrInvalid)
	}
	var points []json.RawMessage
	var err error
	switch trimmed[0] {
	case '{':
		var one json.RawMessage
		err = json.Unmarshal(trimmed, &one)
		points = []json.RawMessage{one}
	case '[':
		err = json.Unmarshal(trimmed, &points)
	default:
		err = fmt.Errorf("content starts with %q, not with an object or an array", trimmed[0])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: Unable to parse the given JSON: %v", write.ErrInvalid, err)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("%w: No datapoints found in content", write.ErrInvalid)
	}
	return points, nil
}

// parsePutDatapoint decodes and checks one datapoint with OpenTSDB's rules and
// messages. It returns the datapoint, the datapoint to echo in a details response,
// its time in milliseconds, its value, and what is wrong with it ("" if nothing).
func parsePutDatapoint(raw json.RawMessage) (dp putDatapoint, shown any, t int64, v float64, errMsg string) {
	if !utf8.Valid(raw) {
		// encoding/json would silently replace invalid bytes with U+FFFD and so
		// store a label other than the one sent.
		return dp, string(bytes.ToValidUTF8(raw, []byte("\uFFFD"))), 0, 0, "datapoint is not valid UTF-8"
	}
	var in putInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return dp, raw, 0, 0, "Unable to parse the datapoint: " + err.Error()
	}
	dp = putDatapoint{Tags: in.Tags}
	if in.Metric != nil {
		dp.Metric = *in.Metric
	}
	ts, tsOK := parsePutTimestamp(in.Timestamp)
	dp.Timestamp = ts
	dp.Value = putValueText(in.Value)
	if dp.Tags == nil {
		dp.Tags = map[string]string{}
	}
	// The order and wording of IncomingDataPoint.validate, then TSDB.addPoint.
	switch {
	case dp.Metric == "":
		return dp, dp, 0, 0, "Metric name was empty"
	case !tsOK || ts <= 0:
		return dp, dp, 0, 0, "Invalid timestamp"
	case dp.Value == "":
		return dp, dp, 0, 0, "Empty value"
	case len(in.Tags) < 1:
		return dp, dp, 0, 0, "Missing tags"
	}
	v, err := strconv.ParseFloat(dp.Value, 64)
	if err != nil && !isRangeError(err) {
		return dp, dp, 0, 0, "Unable to parse value to a number"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dp, dp, 0, 0, fmt.Sprintf("value is NaN or Infinite: %s for metric=%s timestamp=%d", dp.Value, dp.Metric, ts)
	}
	if ts&secondMask == 0 {
		return dp, dp, ts * 1000, v, ""
	}
	if ts < minMillis || ts > maxMillis {
		return dp, dp, 0, 0, fmt.Sprintf("bad timestamp=%d: not Unix seconds (below 2^32) nor milliseconds (%d to %d)", ts, int64(minMillis), int64(maxMillis))
	}
	return dp, dp, ts, v, ""
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parsePutTimestamp reads a timestamp given as a JSON integer or a string of
// digits (Jackson, behind OpenTSDB, coerces both into a long). Missing means 0.
func parsePutTimestamp(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, true
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, false
		}
	}
	ts, err := strconv.ParseInt(text, 10, 64)
	return ts, err == nil
}

// putValueText is the text of a value given as a JSON number or string; "" when it
// is missing or null. Other JSON types keep their JSON text, which does not parse
// as a number.
func putValueText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s
		}
	}
	return string(raw)
}

// failPut answers an /api/put request that failed as a whole, with OpenTSDB's
// error object.
func (h *writeHandler) failPut(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	logWriteFailure(h.logger, r, status, err)
	writePutJSON(w, status, openTSDBError(status, strings.TrimPrefix(err.Error(), write.ErrInvalid.Error()+": "), ""))
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
