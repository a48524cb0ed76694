package opentsdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LookupRequest is one /api/search/lookup request (SearchQuery of type
// LOOKUP): a metric ("*" for any) and tag pairs, either side of which may be
// "*" (or empty) for any.
type LookupRequest struct {
	// Metric is the metric, "*" for any; HasMetric is false for "m={tags}"
	// (the answer then has no "metric").
	Metric    string
	HasMetric bool
	// Tags are the pairs as given; nil when a POST gave none (the answer then
	// has no "tags").
	Tags []LookupTag
	// Limit is how many series to answer, 0 for all [25].
	Limit int
	// StartIndex is echoed (a lookup ignores it).
	StartIndex int
}

// LookupTag is one tag pair of a lookup; an empty Key or Value (JSON null,
// "=v" or "k=" in m=) or "*" matches any.
type LookupTag struct {
	Key   *string `json:"key"`
	Value *string `json:"value"`
}

// LookupSeries is one series a lookup found.
type LookupSeries struct {
	TSUID  string
	Metric string
	Tags   map[string]string
}

// ParseLookupForm reads a GET query string as SearchRpc.parseQueryString
// does for a lookup: "m" (required, metric{tagk=tagv,...}, with "*" or an
// empty side for any) and "limit".
func ParseLookupForm(form map[string][]string) (*LookupRequest, error) {
	m := ""
	if v := form["m"]; len(v) > 0 {
		m = v[0]
	}
	if m == "" {
		return nil, badRequest("Missing parameter <code>m</code>")
	}
	req := &LookupRequest{Limit: 25, Tags: []LookupTag{}}
	metric, tags, err := parseLookupM(m)
	if err != nil {
		return nil, &Error{Status: 400, Message: "Unable to parse query", Details: err.Error()}
	}
	req.Tags = tags
	if metric != nil {
		req.Metric, req.HasMetric = *metric, true
	}
	if n, ok, err := formInt(form, "limit"); err != nil {
		return nil, badRequest("Unable to convert 'limit' to a valid number")
	} else if ok {
		req.Limit = n
	}
	return req, req.validate()
}

// ParseLookupJSON reads a POST body, SearchQuery's JSON form:
// {"metric":"m","tags":[{"key":"host","value":"*"}],"limit":25}; the metric
// defaults to "*", unknown fields are ignored.
func ParseLookupJSON(body []byte) (*LookupRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errMissingContent()
	}
	var q struct {
		Metric     json.RawMessage `json:"metric"`
		Tags       []LookupTag     `json:"tags"`
		Limit      *jsonLong       `json:"limit"`
		StartIndex *jsonLong       `json:"startIndex"`
	}
	if err := json.Unmarshal(body, &q); err != nil {
		return nil, badJSON(err)
	}
	req := &LookupRequest{Metric: "*", HasMetric: true, Tags: q.Tags, Limit: 25}
	switch {
	case bytes.Equal(q.Metric, []byte("null")):
		req.Metric, req.HasMetric = "", false // no metric, and none in the answer
	case len(q.Metric) > 0:
		if err := json.Unmarshal(q.Metric, &req.Metric); err != nil {
			return nil, badJSON(err)
		}
	}
	if q.Limit != nil {
		req.Limit = int(int32(*q.Limit))
	}
	if q.StartIndex != nil {
		req.StartIndex = int(int32(*q.StartIndex))
	}
	return req, req.validate()
}

// validate is SearchRpc.processLookup's check.
func (req *LookupRequest) validate() error {
	if !req.HasMetric && len(req.Tags) == 0 {
		return badRequest("Missing metric and tags. Please supply at least one value.")
	}
	return nil
}

// parseLookupM is Tags.parseWithMetric into pairs: "metric",
// "metric{k=v,...}" or "{k=v,...}" (no metric), where "=v" and "k=" leave
// a side empty.
func parseLookupM(m string) (*string, []LookupTag, error) {
	tags := []LookupTag{}
	curly := strings.IndexByte(m, '{')
	if curly < 0 {
		return &m, tags, nil
	}
	n := len(m)
	if m[n-1] != '}' {
		return nil, nil, fmt.Errorf("Missing '}' at the end of: %s", m)
	}
	if curly == n-2 {
		if m[0] == '{' {
			return nil, nil, fmt.Errorf("Missing metric and tags: %s", m)
		}
		metric := m[:n-2]
		return &metric, tags, nil
	}
	for _, tag := range strings.Split(m[curly+1:n-1], ",") {
		var k, v *string
		switch {
		case len(tag) < 2:
			return nil, nil, fmt.Errorf("When parsing tag '%s': Missing tag pair", tag)
		case tag[0] == '=':
			s := tag[1:]
			v = &s
		case tag[len(tag)-1] == '=':
			s := tag[:len(tag)-1]
			k = &s
		default:
			key, value, ok := strings.Cut(tag, "=")
			if !ok || key == "" || value == "" || strings.Contains(value, "=") {
				return nil, nil, fmt.Errorf("When parsing tag '%s': invalid tag: %s", tag, tag)
			}
			k, v = &key, &value
		}
		tags = append(tags, LookupTag{Key: k, Value: v})
	}
	if curly == 0 {
		return nil, tags, nil
	}
	metric := m[:curly]
	return &metric, tags, nil
}

// AnyMetric reports whether the lookup is over every metric.
func (req *LookupRequest) AnyMetric() bool {
	return !req.HasMetric || req.Metric == "" || req.Metric == "*"
}

// wild reports whether a side of a pair matches anything.
func wild(s *string) bool { return s == nil || *s == "*" }

// Names lists the names TimeSeriesLookup resolves to UIDs, in its order: the
// metric (unless any), then each pair's key and value (unless any); a lookup
// naming one that was never written is 404.
func (req *LookupRequest) Names() [][2]string {
	var out [][2]string
	if !req.AnyMetric() {
		out = append(out, [2]string{KindMetric, req.Metric})
	}
	for _, t := range req.Tags {
		if !wild(t.Key) {
			out = append(out, [2]string{KindTagk, *t.Key})
		}
		if !wild(t.Value) {
			out = append(out, [2]string{KindTagv, *t.Value})
		}
	}
	return out
}

// KeyValues is what the pairs with a tag key ask, by key: nil for any value
// of the key (some pair of it is "key=*"), else the values one of which the
// key must have (TimeSeriesLookup's row-key regex: a key's pairs ORed, keys
// ANDed).
func (req *LookupRequest) KeyValues() map[string][]string {
	out := map[string][]string{}
	for _, t := range req.Tags {
		if wild(t.Key) {
			continue
		}
		vs, seen := out[*t.Key]
		switch {
		case seen && vs == nil:
		case wild(t.Value):
			out[*t.Key] = nil
		default:
			out[*t.Key] = append(vs, *t.Value)
		}
	}
	return out
}

// AnyKeyValues are the values of the pairs without a tag key ("*=v", "=v"):
// a series must have one of them as the value of some tag.
func (req *LookupRequest) AnyKeyValues() []string {
	var out []string
	for _, t := range req.Tags {
		if wild(t.Key) && !wild(t.Value) {
			out = append(out, *t.Value)
		}
	}
	return out
}

// Match reports whether a series' tags match the lookup's pairs.
func (req *LookupRequest) Match(tags map[string]string) bool {
	for k, vs := range req.KeyValues() {
		v, ok := tags[k]
		if !ok || vs != nil && !containsString(vs, v) {
			return false
		}
	}
	if vs := req.AnyKeyValues(); len(vs) > 0 {
		for _, v := range tags {
			if containsString(vs, v) {
				return true
			}
		}
		return false
	}
	return true
}

func containsString(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// WriteLookupJSON writes the answer as OpenTSDB serializes the SearchQuery:
// {"type":"LOOKUP","metric","tags","limit","time","results":[{"tsuid",
// "metric","tags"}],"startIndex","totalResults"}, "metric" and "tags" left
// out when the request had none, timeMS as a Java float.
func WriteLookupJSON(w io.Writer, req *LookupRequest, results []LookupSeries, timeMS float64) error {
	b := []byte(`{"type":"LOOKUP"`)
	if req.HasMetric {
		b = append(b, `,"metric":`...)
		b = appendString(b, req.Metric)
	}
	if req.Tags != nil {
		b = append(b, `,"tags":[`...)
		for i, t := range req.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = appendNullable(b, t.Key)
			b = append(b, `,"value":`...)
			b = appendNullable(b, t.Value)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(req.Limit), 10)
	b = append(b, `,"time":`...)
	b = AppendJavaDouble(b, float64(float32(timeMS)))
	b = append(b, `,"results":[`...)
	for i, r := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"tsuid":`...)
		b = appendString(b, r.TSUID)
		b = append(b, `,"metric":`...)
		b = appendString(b, r.Metric)
		b = append(b, `,"tags":`...)
		b = appendTags(b, r.Tags)
		b = append(b, '}')
	}
	b = append(b, `],"startIndex":`...)
	b = strconv.AppendInt(b, int64(req.StartIndex), 10)
	b = append(b, `,"totalResults":`...)
	b = strconv.AppendInt(b, int64(len(results)), 10)
	b = append(b, '}')
	_, err := w.Write(b)
	return err
}

func appendNullable(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}
