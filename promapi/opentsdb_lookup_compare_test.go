package promapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// lookupCase is one /api/search/lookup request of the comparison.
type lookupCase struct {
	method, query string
	// limited marks a request whose limit is below the number of series it
	// matches: OpenTSDB answers the first in its TSUID order, hbtsdb the
	// first in tag order, so the test asserts the same number of results,
	// each one OpenTSDB matches without the limit.
	limited bool
}

// compareLookup asks both /api/search/lookup about the series put
// (OpenTSDB answers from tsdb-meta, which its tsuid tracking filled):
// metric only, tag keys and values, wildcards on either side, several
// values of one key, no metric, limits, GET and POST, and the bad requests.
func (p *openTSDBPair) compareLookup(t *testing.T) {
	cases := []lookupCase{
		{method: "GET", query: "m=q.last"},
		{method: "GET", query: "m=q.last{host=*}"},
		{method: "GET", query: "m=q.last{host=h1}"},
		{method: "GET", query: "m=q.last{host=h1,dc=*}"},
		{method: "GET", query: "m=q.last{host=h1,host=h3}"},
		{method: "GET", query: "m=q.last{*=eu}"},
		{method: "GET", query: "m=q.last{=eu}"},
		{method: "GET", query: "m=q.last{host=}"},
		{method: "GET", query: "m=q.last{extra=*}"},
		{method: "GET", query: "m=q.last{}"},
		{method: "GET", query: "m={host=h1}"},
		{method: "GET", query: "m=*{host=h1}"},
		{method: "GET", query: "m={dc=us}&limit=100"},
		{method: "GET", query: "m=q.cpu&limit=1000"},
		{method: "GET", query: "m=q.cpu{dc=*,cpu=*}&limit=1000"},
		{method: "GET", query: "m=q.cpu{cpu=*,host=web01}&limit=0"},
		{method: "GET", query: "m=q.requests{path=/a}"},
		{method: "GET", query: "m=q.cpu&limit=2", limited: true},
		{method: "GET", query: "m=q.last{host=*}&limit=1", limited: true},
		{method: "GET", query: "m=q.nosuch"},
		{method: "GET", query: "m=q.last{nosuch=*}"},
		{method: "GET", query: "m=q.last{host=nosuch}"},
		{method: "GET", query: "m=q.last{host=h1|h3}"},
		{method: "GET", query: "m=q.cpu{host=h1}"},
		{method: "GET", query: "m=q.last&limit=x"},
		{method: "GET", query: "m="},
		{method: "GET", query: "limit=2"},
		{method: "GET", query: "m={}"},
		{method: "GET", query: "m=q.last{host}"},
		{method: "GET", query: "m=q.last{host=h1"},
		{method: "POST", query: `{"metric":"q.last","tags":[{"key":"host","value":"h1"}],"limit":10}`},
		{method: "POST", query: `{"metric":"q.last"}`},
		{method: "POST", query: `{"tags":[{"key":"dc","value":"us"}]}`},
		{method: "POST", query: `{"metric":"q.last","tags":[{"key":"host"}]}`},
		{method: "POST", query: `{"metric":"q.last","tags":[{"value":"eu"}]}`},
		{method: "POST", query: `{"metric":"q.last","limit":"3","junk":1}`, limited: true},
		{method: "POST", query: `{"metric":"q.last","tags":[{"key":"host","value":"*"}],"limit":1}`, limited: true},
		{method: "POST", query: `{"metric":"q.nosuch"}`},
		{method: "POST", query: `{"metric":null}`},
	}
	each(len(cases), func(i int) { p.compareLookupCase(t, cases[i]) })
}

func (p *openTSDBPair) compareLookupCase(t *testing.T, c lookupCase) {
	q := lookupQuery(c)
	wantStatus, want, gotStatus, got, ok := p.askBoth(t, c.method, "/api/search/lookup", q)
	if !ok {
		return
	}
	if checkErrors(t, fmt.Sprintf("%s /api/search/lookup %s", c.method, c.query), wantStatus, want, gotStatus, got) {
		return
	}
	w, g := parseLookup(t, want), parseLookup(t, got)
	if !c.limited {
		if d := w.differs(g); d != "" {
			t.Errorf("%s /api/search/lookup %s: %s\nhbtsdb   %s\nOpenTSDB %s", c.method, c.query, d, got, want)
		}
		return
	}
	// The same number, each a series OpenTSDB matches without a limit.
	p.asked.Add(1)
	_, _, all, err := openTSDBDo(p.otsdb, c.method, "/api/search/lookup", unlimited(c))
	if err != nil {
		t.Error(err)
		return
	}
	every := parseLookup(t, all)
	if len(g.Results) != len(w.Results) || g.TotalResults != w.TotalResults || !w.sameHead(g) {
		t.Errorf("%s /api/search/lookup %s: hbtsdb answers %s\nOpenTSDB %s", c.method, c.query, got, want)
	}
	for _, r := range g.Results {
		if !slices.ContainsFunc(every.Results, r.same) {
			t.Errorf("%s /api/search/lookup %s: hbtsdb answers %v, which OpenTSDB does not match: %s", c.method, c.query, r, all)
		}
	}
}

// lookupQuery is a case's query string (GET, braces escaped) or body.
func lookupQuery(c lookupCase) string {
	if c.method != "GET" {
		return c.query
	}
	return strings.NewReplacer("{", "%7B", "}", "%7D", "|", "%7C", "*", "%2A").Replace(c.query)
}

// unlimited is a limited case without its limit.
func unlimited(c lookupCase) string {
	if c.method == "GET" {
		v, _ := url.ParseQuery(lookupQuery(c))
		v.Set("limit", "0")
		return v.Encode()
	}
	var body map[string]any
	_ = json.Unmarshal([]byte(c.query), &body)
	body["limit"] = 0
	b, _ := json.Marshal(body)
	return string(b)
}

// lookupAnswer is /api/search/lookup's answer.
type lookupAnswer struct {
	Type         string          `json:"type"`
	Metric       *string         `json:"metric"`
	Tags         json.RawMessage `json:"tags"`
	Limit        int             `json:"limit"`
	Time         float64         `json:"time"`
	Results      []lookupResult  `json:"results"`
	StartIndex   int             `json:"startIndex"`
	TotalResults int             `json:"totalResults"`
}

type lookupResult struct {
	TSUID  string            `json:"tsuid"`
	Metric string            `json:"metric"`
	Tags   map[string]string `json:"tags"`
}

// same compares two results but their tsuids (OpenTSDB's UIDs, hbtsdb's
// series IDs), which both must have.
func (r lookupResult) same(o lookupResult) bool {
	return r.Metric == o.Metric && maps.Equal(r.Tags, o.Tags) && r.TSUID != "" && o.TSUID != ""
}

func (r lookupResult) key() string {
	tags, _ := json.Marshal(r.Tags)
	return r.Metric + string(tags)
}

func parseLookup(t *testing.T, body string) lookupAnswer {
	t.Helper()
	var a lookupAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Errorf("not an /api/search/lookup answer: %v: %s", err, body)
	}
	// OpenTSDB's order is its TSUIDs'; compare as sets.
	slices.SortFunc(a.Results, func(x, y lookupResult) int { return strings.Compare(x.key(), y.key()) })
	return a
}

// sameHead compares what both echo of the request, and the counts.
func (a lookupAnswer) sameHead(b lookupAnswer) bool {
	return a.Type == b.Type && (a.Metric == nil) == (b.Metric == nil) && (a.Metric == nil || *a.Metric == *b.Metric) &&
		string(a.Tags) == string(b.Tags) && a.Limit == b.Limit && a.StartIndex == b.StartIndex && a.TotalResults == b.TotalResults
}

// differs describes how b differs from a, "" when it does not (but for
// "time", which each measures).
func (a lookupAnswer) differs(b lookupAnswer) string {
	if !a.sameHead(b) {
		return "the head (type, metric, tags, limit, startIndex, totalResults) differs"
	}
	if !slices.EqualFunc(a.Results, b.Results, lookupResult.same) {
		return fmt.Sprintf("the results differ (%d and %d)", len(b.Results), len(a.Results))
	}
	return ""
}

// compareFilters asks both /api/config/filters: the same bytes.
func (p *openTSDBPair) compareFilters(t *testing.T) {
	p.compare(t, "GET", "/api/config/filters", "")
	p.compare(t, "POST", "/api/config/filters", "")
}
