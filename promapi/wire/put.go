package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
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
	// by U+FFFD, when it is not UTF-8. It always encodes as JSON.
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

// putInput is a datapoint as decoded, before it is checked. Its name appears in
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
func DecodePut(body []byte) (*Put, error) {
	points, err := splitPutBody(body)
	if err != nil {
		return nil, err
	}
	p := &Put{Datapoints: make([]PutDatapoint, len(points))}
	seriesOf := map[string]int{}
	b := labels.NewScratchBuilder(8)
	for i, raw := range points {
		dp, shown, t, v, errMsg := parsePutDatapoint(raw)
		p.Datapoints[i] = PutDatapoint{Shown: shown, Error: errMsg}
		if errMsg != "" {
			continue
		}
		lbls := PutLabels(&b, dp.Metric, maps.All(dp.Tags))
		key := lbls.String()
		s, ok := seriesOf[key]
		if !ok {
			s = len(p.Request.Series)
			seriesOf[key] = s
			p.Request.Series = append(p.Request.Series, write.Series{Labels: lbls})
			p.origin = append(p.origin, nil)
		}
		p.Request.Series[s].Samples = append(p.Request.Series[s].Samples, cellenc.Sample{T: t, V: v})
		p.origin[s] = append(p.origin[s], i)
	}
	return p, nil
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
	for k, v := range tags {
		b.Add(k, v)
	}
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
	if esc, ok := loneSurrogate(raw); ok {
		// encoding/json would store U+FFFD in its place: a label other than
		// the one sent. Jackson, behind OpenTSDB, refuses it.
		return dp, raw, 0, 0, fmt.Sprintf("Unable to parse the datapoint: invalid Unicode escape %s (a lone UTF-16 surrogate)", esc)
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
	// OpenTSDB's Tags.validateString: a tag with an empty name or value is
	// refused (a Prometheus label with an empty value is no label at all, so
	// storing it would drop the tag).
	for _, k := range slices.Sorted(maps.Keys(in.Tags)) {
		switch {
		case k == "":
			return dp, dp, 0, 0, "Invalid tag name: empty string"
		case in.Tags[k] == "":
			return dp, dp, 0, 0, fmt.Sprintf("Invalid tag value for tag %q: empty string", k)
		}
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

// loneSurrogate reports the first \uXXXX escape of a JSON text that is a UTF-16
// surrogate not paired with its other half: encoding/json decodes it as U+FFFD.
func loneSurrogate(raw []byte) (string, bool) {
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
				return string(raw[i : i+6]), true
			case r >= 0xDC00 && r < 0xE000:
				return string(raw[i : i+6]), true
			}
			i += 5
		}
	}
	return "", false
}

// hex4 decodes the 4 hex digits at raw[i:i+4].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
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
