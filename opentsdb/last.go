package opentsdb

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LastRequest is one /api/query/last request (QueryRpc.LastPointQuery).
type LastRequest struct {
	// Resolve adds each point's metric and tags ("resolve", "resolveNames").
	Resolve bool
	// BackScan is how many hours before the current one to look back in
	// ("back_scan", "backScan"); 0 reads each matching series' newest point.
	BackScan int
	// Queries are the sub-queries, in order.
	Queries []LastSubQuery
}

// LastSubQuery is one sub-query of a LastRequest (LastPointSubQuery): a
// metric and tags, or tsuids.
type LastSubQuery struct {
	Metric string
	Tags   map[string]string
	// TSUIDs, when not empty, name the series whose newest points are asked
	// for (hbtsdb series IDs, ParseTSUID), in place of Metric and Tags, as
	// OpenTSDB gives them precedence.
	TSUIDs []uint64
}

// ParseLastForm reads a GET query string as QueryRpc.parseLastPointQuery
// does: "timeseries" (repeatable, metric{tagk=tagv,...}), "resolve" and
// "back_scan".
func ParseLastForm(form map[string][]string) (*LastRequest, error) {
	req := &LastRequest{}
	_, req.Resolve = form["resolve"]
	if n, ok, err := formInt(form, "back_scan"); err != nil {
		return nil, badRequest("Unable to parse back_scan parameter")
	} else if ok {
		req.BackScan = n
	}
	for _, ts := range form["timeseries"] {
		metric, tags, err := parseMetricTags(ts)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		req.Queries = append(req.Queries, LastSubQuery{Metric: metric, Tags: tags})
	}
	// parseLastPointQuery: the tsuids= sub-queries after the timeseries= ones.
	for _, q := range form["tsuids"] {
		ids, err := parseTSUIDs(strings.Split(q, ","))
		if err != nil {
			return nil, err
		}
		req.Queries = append(req.Queries, LastSubQuery{TSUIDs: ids})
	}
	return req, req.validate()
}

// ParseLastJSON reads a POST body, LastPointQuery's JSON form:
// {"queries":[{"metric":"m","tags":{"host":"a"}}],"resolveNames":true,"backScan":24}.
// As Jackson reads it into a class without ignoreUnknown, an unknown field
// makes the body unreadable.
func ParseLastJSON(body []byte) (*LastRequest, error) {
	if len(body) == 0 {
		return nil, errMissingContent()
	}
	var q struct {
		ResolveNames bool      `json:"resolveNames"`
		BackScan     *jsonLong `json:"backScan"` // an int, as Jackson coerces one
		Queries      []struct {
			Metric string            `json:"metric"`
			Tags   map[string]string `json:"tags"`
			TSUIDs []string          `json:"tsuids"`
		} `json:"queries"`
	}
	d := json.NewDecoder(strings.NewReader(string(body)))
	d.DisallowUnknownFields()
	if err := d.Decode(&q); err != nil {
		return nil, badJSON(err)
	}
	req := &LastRequest{Resolve: q.ResolveNames}
	if q.BackScan != nil {
		req.BackScan = int(int32(*q.BackScan))
	}
	for _, s := range q.Queries {
		sub := LastSubQuery{Metric: s.Metric, Tags: s.Tags}
		if len(s.TSUIDs) > 0 {
			ids, err := parseTSUIDs(s.TSUIDs)
			if err != nil {
				return nil, err
			}
			sub = LastSubQuery{TSUIDs: ids}
		}
		req.Queries = append(req.Queries, sub)
	}
	return req, req.validate()
}

// validate is handleLastDataPointQuery's and TSUIDQuery's checks.
func (req *LastRequest) validate() error {
	if len(req.Queries) == 0 {
		return badRequest("Missing sub queries")
	}
	for _, q := range req.Queries {
		if len(q.TSUIDs) > 0 {
			if req.BackScan < 0 {
				return badRequest("Backscan must be zero or a positive number")
			}
			continue // TSUIDQuery(tsdb, tsuid) checks nothing more
		}
		if q.Metric == "" {
			return badRequest("Metric cannot be null or empty")
		}
		if req.BackScan < 0 {
			return badRequest("Backscan must be zero or a positive number")
		}
		if req.BackScan > 0 && len(q.Tags) == 0 {
			// TSUIDQuery.tsuidFromMetric: a back scan reads one series' rows.
			return badRequest("Tags cannot be null or empty when getting a TSUID")
		}
	}
	return nil
}

// parseMetricTags is Tags.parseWithMetric into a map: "metric" or
// "metric{tagk=tagv,...}".
func parseMetricTags(s string) (string, map[string]string, error) {
	tags := map[string]string{}
	curly := strings.IndexByte(s, '{')
	if curly < 0 {
		return s, tags, nil
	}
	n := len(s)
	if s[n-1] != '}' {
		return "", nil, fmt.Errorf("Missing '}' at the end of: %s", s)
	}
	if curly == n-2 {
		return s[:n-2], tags, nil
	}
	for _, tag := range strings.Split(s[curly+1:n-1], ",") {
		k, v, ok := strings.Cut(tag, "=")
		if !ok || k == "" || v == "" || strings.Contains(v, "=") {
			return "", nil, fmt.Errorf("When parsing tag '%s': invalid tag: %s", tag, tag)
		}
		if old, dup := tags[k]; dup && old != v {
			return "", nil, fmt.Errorf("When parsing tag '%s': duplicate tag: %s, tags=%v", tag, tag, tags)
		}
		tags[k] = v
	}
	return s[:curly], tags, nil
}

// LastPoint is one element of /api/query/last's answer (IncomingDataPoint).
type LastPoint struct {
	// Metric and Tags are written when the request resolves names.
	Metric string
	Tags   map[string]string
	// T is the point's timestamp in milliseconds, V its value.
	T int64
	V float64
	// TSUID names the series (hbtsdb's series ID in hex).
	TSUID string
}

// WriteLastJSON writes points as OpenTSDB serializes its IncomingDataPoints
// (fields without a value left out): [{"metric","timestamp","value","tags",
// "tsuid"}], the value a string as Java's Number.toString writes it (Long
// for an integer, Double otherwise), the timestamp in milliseconds.
func WriteLastJSON(w io.Writer, points []LastPoint, resolve bool) error {
	b := []byte{'['}
	for i, p := range points {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if resolve {
			b = append(b, `"metric":`...)
			b = appendString(b, p.Metric)
			b = append(b, ',')
		}
		b = append(b, `"timestamp":`...)
		b = strconv.AppendInt(b, p.T, 10)
		b = append(b, `,"value":`...)
		b = appendString(b, JavaNumber(p.V))
		if resolve {
			b = append(b, `,"tags":`...)
			b = appendTags(b, p.Tags)
		}
		b = append(b, `,"tsuid":`...)
		b = appendString(b, p.TSUID)
		b = append(b, '}')
	}
	b = append(b, ']')
	_, err := w.Write(b)
	return err
}

// JavaNumber is a stored value as OpenTSDB's Cell.parseValue().toString()
// writes it: an integer (isInteger) as Long.toString, anything else as
// Double.toString ("5.25", "1.0E-4", "NaN").
func JavaNumber(v float64) string {
	if isInteger(v) {
		return strconv.FormatInt(int64(v), 10)
	}
	s := string(AppendJavaDouble(nil, v))
	return strings.Trim(s, `"`) // NaN and the infinities unquoted
}

// formInt is a query string parameter as Java's Integer.parseInt reads it:
// its first value, present or not, or an error when it is no 32-bit integer.
func formInt(form map[string][]string, key string) (int, bool, error) {
	v, ok := form[key]
	if !ok {
		return 0, false, nil
	}
	s := ""
	if len(v) > 0 {
		s = v[0]
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int(n), true, err
}
