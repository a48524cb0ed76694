package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

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

// Put is an OpenTSDB /api/put body decoded: the valid datapoints as a
// write.Request, and every datapoint as the response reports it.
type Put struct {
	// Request holds the sample of every valid datapoint. A series is the metric
	// as __name__ plus the tags as labels, sorted by name; series are in the
	// order of their first datapoint, and a series' samples in body order.
	Request write.Request
	// Datapoints are all the body's datapoints, in body order.
	Datapoints []PutDatapoint
	// origin[s][k] is the index in Datapoints of sample k of Request.Series[s].
	origin [][]int
}

// PutDatapoint is one datapoint of an /api/put body.
type PutDatapoint struct {
	// Shown is the datapoint as OpenTSDB's ?details response echoes it: an object
	// with its metric, timestamp (as sent), value as text and tags; its JSON
	// text when it is not such an object; a string, with invalid bytes replaced
	// by U+FFFD, when it is not UTF-8. It always encodes as JSON. Datapoints
	// with the same tags share one tags map: it must not be modified.
	Shown any
	// Error is why the datapoint is not written, in OpenTSDB's words; "" while it
	// is valid. Reject sets it for what the writer rejected.
	Error string
}

// putDatapoint is one datapoint as OpenTSDB's "details" response echoes it: the
// value as text (OpenTSDB keeps it a string).
type putDatapoint struct {
	Metric    string            `json:"metric"`
	Timestamp int64             `json:"timestamp"`
	Value     string            `json:"value"`
	Tags      map[string]string `json:"tags"`
}

// putInput is a datapoint as encoding/json decodes it, for the datapoints the
// scanner leaves to encoding/json (decodePutDatapointJSON). Its name appears in
// encoding/json's errors, which the response carries ("Go struct field
// putInput.tags").
type putInput struct {
	Metric    *string           `json:"metric"`
	Timestamp json.RawMessage   `json:"timestamp"`
	Value     json.RawMessage   `json:"value"`
	Tags      map[string]string `json:"tags"`
}

// DecodePut decodes an OpenTSDB /api/put body (uncompressed): one datapoint
// object {"metric": M, "timestamp": T, "value": V, "tags": {...}} or an array of
// them, checked with OpenTSDB 2.4's rules and messages
// (http://opentsdb.net/docs/build/html/api_http/put.html,
// IncomingDataPoint.validate, TSDB.addPoint): T is seconds when it fits in 32
// bits and milliseconds in [1e12, 9999999999999] otherwise, positive, a JSON
// integer or a string of digits; V a JSON number or numeric string parsed as a
// float64, neither NaN nor ±Inf; at least one tag. "Each data point is processed
// individually and an error with one piece of data will not affect the storing
// of good data": an invalid datapoint is reported in its PutDatapoint.Error and
// left out of Request. Datapoints that are not valid UTF-8 are invalid
// (encoding/json would replace the bytes silently and so store a label other
// than the one sent).
//
// The error, which wraps write.ErrInvalid, is for a body that cannot be used at
// all ("content that cannot be parsed discards every datapoint"): empty, not
// JSON, neither an object nor an array, or an empty array. The result does not
// alias body.
//
// How: one pass of a hand-written scanner (put_scan.go) validates the body
// as encoding/json does and decodes the datapoints of the shape every client
// sends; the rare others (not an object, a member of the wrong type, a
// repeated or differently cased member name, an escaped name, invalid UTF-8)
// it leaves to encoding/json one datapoint at a time, so that they are decoded
// and worded exactly as before. Tags and series repeated within the body are
// decoded once (put_series.go). FuzzDecodePutMatchesOracle holds the result
// to the encoding/json decoder it replaced (put_oracle_test.go).
func DecodePut(body []byte) (*Put, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: Missing message content", write.ErrInvalid)
	}
	if c := trimmed[0]; c != '{' && c != '[' {
		return nil, fmt.Errorf("%w: Unable to parse the given JSON: content starts with %q, not with an object or an array", write.ErrInvalid, c)
	}
	d := newPutDecoder(string(trimmed))
	if !d.decodeBody() {
		return nil, putSyntaxError(trimmed)
	}
	if len(d.datapoints) == 0 {
		return nil, fmt.Errorf("%w: No datapoints found in content", write.ErrInvalid)
	}
	return d.put(), nil
}

// putSyntaxError is the error of a body that is not JSON, worded by
// encoding/json as the first thing wrong with it.
func putSyntaxError(body []byte) error {
	err := json.Unmarshal(body, new(json.RawMessage))
	if err == nil {
		// The scanner refused what encoding/json takes: a bug, which the
		// differential fuzz test is there to find.
		err = fmt.Errorf("not JSON as hbtsdb reads it")
	}
	return fmt.Errorf("%w: Unable to parse the given JSON: %v", write.ErrInvalid, err)
}

// PutLabels is the series of an OpenTSDB datapoint as /api/put stores it:
// the metric, exactly as sent, as __name__, and each tag a label of the tag's
// name and value, sorted by name. OpenTSDB's names keep the characters
// Prometheus' classic label names lack (sys.cpu.user, host-name): hbtsdb
// stores them as they are, as UTF-8 label names. b is reset and reused;
// the labels returned do not alias it. tsdb import opentsdb maps the series
// of OpenTSDB's tables with it too, so that a datapoint put into OpenTSDB and
// imported is the series the same datapoint put into hbtsdb is.
func PutLabels(b *labels.ScratchBuilder, metric string, tags iter.Seq2[string, string]) labels.Labels {
	b.Reset()
	b.Add(model.MetricNameLabel, metric)
	// Called, not ranged over: a range over an iterator that may escape
	// costs three allocations a call, a closure one (DecodePut calls it for
	// every series).
	tags(func(k, v string) bool {
		b.Add(k, v)
		return true
	})
	b.Sort()
	return b.Labels()
}

// Reject marks the datapoints behind the writer's rejections of Request as
// failed, with the writer's reasons: every datapoint of a rejected series, or
// the one of a rejected sample. Rejections that name no sample of Request are
// ignored.
func (p *Put) Reject(rejected []write.Rejection) {
	for _, rej := range rejected {
		if rej.Series < 0 || rej.Series >= len(p.origin) {
			continue
		}
		if rej.Sample < 0 {
			for _, i := range p.origin[rej.Series] {
				p.Datapoints[i].Error = rej.Reason
			}
		} else if rej.Sample < len(p.origin[rej.Series]) {
			p.Datapoints[p.origin[rej.Series][rej.Sample]].Error = rej.Reason
		}
	}
}

// putFields are one datapoint's members as decoded, before OpenTSDB's checks.
type putFields struct {
	metric string // "" when missing or null
	// timestamp is the timestamp's text: a string's content, or the JSON text
	// of any other value; noTimestamp says it was missing or null.
	timestamp   string
	noTimestamp bool
	value       string   // a string's content or any other value's JSON text; "" when missing or null
	tags        *putTags // never nil: putDecoder.noTags when missing or null
}

// check applies OpenTSDB's checks to a decoded datapoint. It returns the
// datapoint to echo in a details response, its time in milliseconds, its
// value, and what is wrong with it ("" if nothing).
func (f *putFields) check() (shown putDatapoint, t int64, v float64, errMsg string) {
	ts, tsOK := int64(0), true
	if !f.noTimestamp {
		// Jackson, behind OpenTSDB, coerces a JSON integer or a string of
		// digits into the long.
		var err error
		ts, err = strconv.ParseInt(f.timestamp, 10, 64)
		tsOK = err == nil
	}
	dp := putDatapoint{Metric: f.metric, Timestamp: ts, Value: f.value, Tags: f.tags.shown}
	// The order and wording of IncomingDataPoint.validate, then TSDB.addPoint.
	switch {
	case dp.Metric == "":
		return dp, 0, 0, "Metric name was empty"
	case !tsOK || ts <= 0:
		return dp, 0, 0, "Invalid timestamp"
	case dp.Value == "":
		return dp, 0, 0, "Empty value"
	case f.tags.err != "":
		return dp, 0, 0, f.tags.err
	}
	v, err := strconv.ParseFloat(dp.Value, 64)
	if err != nil && !isRangeError(err) {
		return dp, 0, 0, "Unable to parse value to a number"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dp, 0, 0, fmt.Sprintf("value is NaN or Infinite: %s for metric=%s timestamp=%d", dp.Value, dp.Metric, ts)
	}
	if ts&secondMask == 0 {
		return dp, ts * 1000, v, ""
	}
	if ts < minMillis || ts > maxMillis {
		return dp, 0, 0, fmt.Sprintf("bad timestamp=%d: not Unix seconds (below 2^32) nor milliseconds (%d to %d)", ts, int64(minMillis), int64(maxMillis))
	}
	return dp, ts, v, ""
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// decodePutDatapointJSON decodes with encoding/json a datapoint the scanner
// does not decode itself (raw is valid JSON): fields when it is an object of
// the right member types, or the echo and error of a datapoint that is not,
// as encoding/json words it.
func decodePutDatapointJSON(raw string) (f putFields, shown any, errMsg string) {
	if !utf8.ValidString(raw) {
		// encoding/json would silently replace invalid bytes with U+FFFD and so
		// store a label other than the one sent.
		return f, string(bytes.ToValidUTF8([]byte(raw), []byte("\uFFFD"))), "datapoint is not valid UTF-8"
	}
	var in putInput
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return f, json.RawMessage(raw), "Unable to parse the datapoint: " + err.Error()
	}
	if shown, errMsg, bad := loneSurrogateError(raw); bad {
		return f, shown, errMsg
	}
	if in.Metric != nil {
		f.metric = *in.Metric
	}
	f.timestamp, f.noTimestamp = jsonScalarText(in.Timestamp)
	f.value, _ = jsonScalarText(in.Value)
	f.tags = newPutTagsOfMap(in.Tags)
	return f, nil, ""
}

// jsonScalarText is the text of a member kept as JSON text: a string's
// content, any other value's JSON text; "" and missing when it is missing or
// null.
func jsonScalarText(raw json.RawMessage) (text string, missing bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, false
		}
	}
	return string(raw), false
}

// loneSurrogateError is the echo and error of a datapoint (valid JSON) that
// holds a lone UTF-16 surrogate escape: encoding/json would store U+FFFD in
// its place, a label other than the one sent; Jackson, behind OpenTSDB,
// refuses it.
func loneSurrogateError(raw string) (shown any, errMsg string, bad bool) {
	esc, ok := loneSurrogate(raw)
	if !ok {
		return nil, "", false
	}
	return json.RawMessage(raw), fmt.Sprintf("Unable to parse the datapoint: invalid Unicode escape %s (a lone UTF-16 surrogate)", esc), true
}

// loneSurrogate reports the first \uXXXX escape of a JSON text that is a UTF-16
// surrogate not paired with its other half: encoding/json decodes it as U+FFFD.
func loneSurrogate(raw string) (string, bool) {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return "", false
			}
			if raw[i+1] != 'u' {
				i++ // an escaped character: skip it
				continue
			}
			r, ok := hex4(raw, i+2)
			if !ok {
				return "", false
			}
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if lo, ok := hex4(raw, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
						i += 11
						continue
					}
				}
				return raw[i : i+6], true
			case r >= 0xDC00 && r < 0xE000:
				return raw[i : i+6], true
			}
			i += 5
		}
	}
	return "", false
}

// hex4 decodes the 4 hex digits at raw[i:i+4].
func hex4(raw string, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(raw[i : i+4]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
