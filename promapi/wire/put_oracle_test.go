package wire

// The oracle: DecodePut as it was before the hand-written scanner (at
// 66b77b8), on encoding/json, kept unchanged apart from its names so that
// TestDecodePutMatchesOracle and FuzzDecodePutMatchesOracle can hold the
// scanner to it. It shares only the types of the result (Put, putDatapoint,
// putInput, whose name is in encoding/json's messages) and PutLabels with the
// code it checks. Do not "fix" it: a difference from OpenTSDB is fixed in
// DecodePut and recorded in the oracle tests as an intended difference.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// oracleDecodePut is DecodePut on encoding/json.
func oracleDecodePut(body []byte) (*Put, error) {
	points, err := oracleSplitPutBody(body)
	if err != nil {
		return nil, err
	}
	p := &Put{Datapoints: make([]PutDatapoint, len(points))}
	seriesOf := map[string]int{}
	b := labels.NewScratchBuilder(8)
	for i, raw := range points {
		dp, shown, t, v, errMsg := oracleParsePutDatapoint(raw)
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

// oracleSplitPutBody splits the body into its datapoints: one JSON object or an array of
// them. The whole body must be valid JSON; otherwise nothing is written.
func oracleSplitPutBody(body []byte) ([]json.RawMessage, error) {
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

// oracleParsePutDatapoint decodes and checks one datapoint with OpenTSDB's rules and
// messages. It returns the datapoint, the datapoint to echo in a details response,
// its time in milliseconds, its value, and what is wrong with it ("" if nothing).
func oracleParsePutDatapoint(raw json.RawMessage) (dp putDatapoint, shown any, t int64, v float64, errMsg string) {
	if !utf8.Valid(raw) {
		// encoding/json would silently replace invalid bytes with U+FFFD and so
		// store a label other than the one sent.
		return dp, string(bytes.ToValidUTF8(raw, []byte("\uFFFD"))), 0, 0, "datapoint is not valid UTF-8"
	}
	var in putInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return dp, raw, 0, 0, "Unable to parse the datapoint: " + err.Error()
	}
	if esc, ok := oracleLoneSurrogate(raw); ok {
		// encoding/json would store U+FFFD in its place: a label other than
		// the one sent. Jackson, behind OpenTSDB, refuses it.
		return dp, raw, 0, 0, fmt.Sprintf("Unable to parse the datapoint: invalid Unicode escape %s (a lone UTF-16 surrogate)", esc)
	}
	dp = putDatapoint{Tags: in.Tags}
	if in.Metric != nil {
		dp.Metric = *in.Metric
	}
	ts, tsOK := oracleParsePutTimestamp(in.Timestamp)
	dp.Timestamp = ts
	dp.Value = oraclePutValueText(in.Value)
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
	if err != nil && !oracleIsRangeError(err) {
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

func oracleIsRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// oracleParsePutTimestamp reads a timestamp given as a JSON integer or a string of
// digits (Jackson, behind OpenTSDB, coerces both into a long). Missing means 0.
func oracleParsePutTimestamp(raw json.RawMessage) (int64, bool) {
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

// oraclePutValueText is the text of a value given as a JSON number or string; "" when it
// is missing or null. Other JSON types keep their JSON text, which does not parse
// as a number.
func oraclePutValueText(raw json.RawMessage) string {
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

// oracleLoneSurrogate reports the first \uXXXX escape of a JSON text that is a UTF-16
// surrogate not paired with its other half: encoding/json decodes it as U+FFFD.
func oracleLoneSurrogate(raw []byte) (string, bool) {
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
			r, ok := oracleHex4(raw, i+2)
			if !ok {
				return "", false
			}
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if lo, ok := oracleHex4(raw, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
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

// oracleHex4 decodes the 4 hex digits at raw[i:i+4].
func oracleHex4(raw []byte, i int) (rune, bool) {
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
