package promapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Grafana's OpenTSDB data source, as its code at
// github.com/grafana/grafana-opentsdb-datasource@680d47bebd4e (2026-07-22;
// extracted from grafana/grafana's pkg/tsdb/opentsdb and
// public/app/plugins/datasource/opentsdb, and released from there since
// Grafana 13) sends its requests: its Go backend asks OpenTSDB, the browser
// only the backend. Every request below is one the backend builds, cited to
// the file and line that build it, and hbtsdb's answer is read the way that
// code reads OpenTSDB's. Grafana itself is not run (it cannot be installed
// here).
const grafanaSource = "grafana-opentsdb-datasource@680d47bebd4e"

// grafanaRequest is one request of the data source, and how it reads the
// answer.
type grafanaRequest struct {
	what   string // what the data source does, and where in its source
	method string
	path   string
	query  string // the query string (GET) or body (POST)
	// read parses an answer as the data source does, into what it shows;
	// nil compares the answers as the comparison of that endpoint does.
	read func(t *testing.T, status int, body string) any
}

// compareGrafana replays the data source's requests against OpenTSDB and
// hbtsdb: what the data source makes of both answers must be the same.
func (p *openTSDBPair) compareGrafana(t *testing.T) {
	lookupLimit := 1000 // jsonData.lookupLimit as the config editor sets it
	reqs := []grafanaRequest{
		{what: "health check (pkg/opentsdb/opentsdb.go:100-104, :128: a 200 is healthy)", method: "GET", path: "/api/suggest",
			query: url.Values{"q": {"cpu"}, "type": {"metrics"}}.Encode(), read: grafanaStatus},
		{what: "metric autocomplete and metrics(q.) (src/datasource.ts:230, :291-299; pkg/opentsdb/callresource.go:26-27 passes the query on)",
			method: "GET", path: "/api/suggest", query: "type=metrics&q=q.&max=" + strconv.Itoa(lookupLimit), read: grafanaStrings},
		{what: "suggest_tagk(h) (src/datasource.ts:294, :314-316)", method: "GET", path: "/api/suggest",
			query: "type=tagk&q=h&max=" + strconv.Itoa(lookupLimit), read: grafanaStrings},
		{what: "suggest_tagv(web) (src/datasource.ts:295, :319-321)", method: "GET", path: "/api/suggest",
			query: "type=tagv&q=web&max=" + strconv.Itoa(lookupLimit), read: grafanaStrings},
		{what: "aggregator list (src/datasource.ts:336; pkg/opentsdb/callresource.go:79, :104-110: parsed as []string, sorted)",
			method: "GET", path: "/api/aggregators", read: grafanaSortedStrings},
		{what: "filter types, tsdbVersion >= 2.2 (src/datasource.ts:345; pkg/opentsdb/callresource.go:144, :169-180: the keys, sorted)",
			method: "GET", path: "/api/config/filters", read: grafanaFilterTypes},
		{what: "tag key autocomplete and tag_names(q.cpu) (src/datasource.ts:241-247, :302-304; pkg/opentsdb/callresource.go:239-243, :270-292)",
			method: "GET", path: "/api/search/lookup", query: url.Values{"m": {"q.cpu"}, "limit": {"1000"}}.Encode(), read: grafanaTagKeys},
		{what: "tag_names(q.nosuch): OpenTSDB's 404 is passed on (pkg/opentsdb/callresource.go:252-314)",
			method: "GET", path: "/api/search/lookup", query: url.Values{"m": {"q.nosuch"}, "limit": {"1000"}}.Encode(), read: grafanaStatus},
	}
	// tag_values(metric, keys) (src/datasource.ts:233-239, :307-311): the
	// backend asks for metric{key=*,rest} with the configured limit, 0 when
	// jsonData has none (pkg/opentsdb/callresource.go:334-362), and keeps the
	// first key's values, sorted (:388-411).
	for _, tv := range []struct{ metric, keys, limit string }{
		{"q.cpu", "host", strconv.Itoa(lookupLimit)}, {"q.cpu", "host, dc=eu", strconv.Itoa(lookupLimit)},
		{"q.cpu", "dc,cpu=1", "0"}, {"q.requests", "path", "0"},
	} {
		key, m := grafanaKeyValueM(tv.metric, tv.keys)
		reqs = append(reqs, grafanaRequest{what: fmt.Sprintf("tag_values(%s, %s)", tv.metric, tv.keys), method: "GET",
			path: "/api/search/lookup", query: url.Values{"m": {m}, "limit": {tv.limit}}.Encode(),
			read: func(t *testing.T, status int, body string) any { return grafanaTagValues(t, status, body, key) }})
	}
	// Panels: one POST /api/query per panel query (pkg/opentsdb/opentsdb.go:158-204), the body
	// json.Marshal of OpenTsdbQuery {start, end (Unix seconds of the panel's range), queries:
	// [one metric]} (pkg/opentsdb/types.go:3-7, utils.go:132-156), the metric as BuildMetric
	// (utils.go:47-130) makes it from the editor's model: metric, aggregator; downsample
	// "<interval>-<aggregator>[-<fill>]" unless disabled, the interval the panel's (formatted
	// by FormatDownsampleInterval, utils.go:22-45) when the editor has none; rate and
	// rateOptions {counter, counterMax, resetValue as float64s, dropResets when neither a
	// counterMax nor a non-zero resetValue is set}; tags or filters as the editor has them;
	// explicitTags. With tsdbVersion 4 (OpenTSDB 2.4) the URL has ?arrays=true (utils.go:138-141).
	start, end := p.base, p.base+2*3600
	panel := func(metric string) string {
		return fmt.Sprintf(`{"start":%d,"end":%d,"queries":[%s]}`, start, end, metric)
	}
	for _, body := range []string{
		panel(`{"aggregator":"sum","downsample":"30s-avg","metric":"q.cpu"}`),
		panel(`{"aggregator":"avg","downsample":"1m-avg","metric":"q.cpu","tags":{"host":"*"}}`),
		panel(`{"aggregator":"sum","downsample":"5m-max-null","filters":[{"filter":"web*","groupBy":true,"tagk":"host","type":"iwildcard"}],"metric":"q.cpu"}`),
		panel(`{"aggregator":"sum","downsample":"1m-avg-zero","filters":[{"filter":"eu|us","groupBy":false,"tagk":"dc","type":"literal_or"},` +
			`{"filter":"*","groupBy":true,"tagk":"cpu","type":"wildcard"}],"metric":"q.cpu"}`),
		panel(`{"aggregator":"sum","downsample":"1m-avg","metric":"q.requests","rate":true,"rateOptions":{"counter":true,"dropResets":true},"tags":{"path":"*"}}`),
		panel(`{"aggregator":"sum","downsample":"1m-avg","metric":"q.requests","rate":true,"rateOptions":{"counter":true,"counterMax":1000,"resetValue":50},"tags":{"host":"web01"}}`),
		panel(`{"aggregator":"sum","downsample":"1m-avg","metric":"q.requests","rate":true,"rateOptions":{"counter":false,"dropResets":true}}`),
		panel(`{"aggregator":"max","metric":"q.cpu","tags":{"dc":"eu"}}`), // disableDownsampling
		panel(`{"aggregator":"sum","downsample":"1m-avg","explicitTags":true,"metric":"q.cpu","tags":{"dc":"*","host":"*"}}`),
		panel(`{"aggregator":"avg","downsample":"500ms-avg","metric":"q.cpu","tags":{"host":"Web03"}}`), // a "0.5s" interval
	} {
		reqs = append(reqs,
			grafanaRequest{what: "panel query", method: "POST", path: "/api/query", query: body, read: grafanaFrames(false)},
			grafanaRequest{what: "panel query, tsdbVersion 4", method: "POST", path: "/api/query?arrays=true", query: body, read: grafanaFrames(true)})
	}
	reqs = append(reqs, grafanaRequest{what: "fill policy nan: the backend cannot read OpenTSDB's \"NaN\" either (utils.go:256-259)",
		method: "POST", path: "/api/query", query: panel(`{"aggregator":"sum","downsample":"1m-avg-nan","metric":"q.cpu","tags":{"host":"db01"}}`),
		read: grafanaFrames(false)})
	reqs = append(reqs, grafanaRequest{what: "a panel of a metric never written: the data source shows OpenTSDB's failure (utils.go:238-241)",
		method: "POST", path: "/api/query", query: panel(`{"aggregator":"sum","downsample":"1m-avg","metric":"q.nosuch"}`), read: grafanaStatus})

	each(len(reqs), func(i int) {
		r := reqs[i]
		wantStatus, want, gotStatus, got, ok := p.askBoth(t, r.method, r.path, r.query)
		if !ok {
			return
		}
		w, g := r.read(t, wantStatus, want), r.read(t, gotStatus, got)
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if !sameJSON(wj, gj) {
			t.Errorf("%s (%s): %s %s %s: the data source makes of hbtsdb's answer\n%s\nand of OpenTSDB's\n%s",
				r.what, grafanaSource, r.method, r.path, r.query, shorten(string(gj)), shorten(string(wj)))
		}
	})
}

// grafanaKeyValueM is HandleKeyValueLookup's key and m: the keys split at
// commas and trimmed, the first with "=*", the rest as given.
func grafanaKeyValueM(metric, keys string) (string, string) {
	parts := strings.Split(keys, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	m := metric + "{" + parts[0] + "=*"
	if len(parts) > 1 {
		m += "," + strings.Join(parts[1:], ",")
	}
	return parts[0], m + "}"
}

// grafanaStatus is what the data source takes from an answer it only checks.
func grafanaStatus(_ *testing.T, status int, _ string) any { return status }

// grafanaStrings is a suggest answer as the frontend takes it, a list of names.
func grafanaStrings(t *testing.T, status int, body string) any {
	t.Helper()
	var names []string
	if status != 200 || json.Unmarshal([]byte(body), &names) != nil {
		return fmt.Sprintf("%d %s", status, body)
	}
	return names
}

func grafanaSortedStrings(t *testing.T, status int, body string) any {
	t.Helper()
	v := grafanaStrings(t, status, body)
	if names, ok := v.([]string); ok {
		sort.Strings(names)
	}
	return v
}

func grafanaFilterTypes(_ *testing.T, status int, body string) any {
	var filters map[string]json.RawMessage
	if status != 200 || json.Unmarshal([]byte(body), &filters) != nil {
		return fmt.Sprintf("%d %s", status, body)
	}
	keys := make([]string, 0, len(filters))
	for k := range filters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// grafanaLookup is a lookup answer as HandleKeyLookup reads it.
type grafanaLookup struct {
	Results []struct {
		Tags map[string]string `json:"tags"`
	} `json:"results"`
}

func grafanaTagKeys(_ *testing.T, status int, body string) any {
	var l grafanaLookup
	if status != 200 || json.Unmarshal([]byte(body), &l) != nil {
		return fmt.Sprintf("%d %s", status, body)
	}
	var keys []string
	for _, r := range l.Results {
		for k := range r.Tags {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func grafanaTagValues(_ *testing.T, status int, body, key string) any {
	var l grafanaLookup
	if status != 200 || json.Unmarshal([]byte(body), &l) != nil {
		return fmt.Sprintf("%d %s", status, body)
	}
	var values []string
	for _, r := range l.Results {
		if v, ok := r.Tags[key]; ok && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	sort.Strings(values)
	return values
}

// grafanaFrames reads an /api/query answer as ParseResponse does
// (pkg/opentsdb/utils.go:225-312): a 2xx, then [{metric, tags,
// aggregateTags, dps}] with dps a map of Unix-second strings to float64
// (ParseResponseLT24, sorted by timestamp) or, with arrays, [[ts, value]]
// (ParseResponse24); one frame per element, named by the metric, labelled by
// its tags, its tag keys the tags' (sorted) then the aggregate tags
// (CreateDataFrame, :186-223). Frames are compared as a set: OpenTSDB's order
// is that of its UID look-ups.
func grafanaFrames(arrays bool) func(t *testing.T, status int, body string) any {
	return func(t *testing.T, status int, body string) any {
		t.Helper()
		if status/100 != 2 {
			return status
		}
		type frame struct {
			Name    string
			Labels  map[string]string
			TagKeys []string
			Times   []int64
			Values  []float64
		}
		var frames []frame
		if arrays {
			var rs []struct {
				Metric        string            `json:"metric"`
				Tags          map[string]string `json:"tags"`
				AggregateTags []string          `json:"aggregateTags"`
				DPS           [][]float64       `json:"dps"`
			}
			if err := json.Unmarshal([]byte(body), &rs); err != nil {
				return "unreadable: " + err.Error()
			}
			for _, r := range rs {
				f := frame{Name: r.Metric, Labels: r.Tags, TagKeys: grafanaTagKeyList(r.Tags, r.AggregateTags)}
				for _, p := range r.DPS {
					f.Times, f.Values = append(f.Times, int64(p[0])), append(f.Values, p[1])
				}
				frames = append(frames, f)
			}
		} else {
			var rs []struct {
				Metric        string             `json:"metric"`
				Tags          map[string]string  `json:"tags"`
				AggregateTags []string           `json:"aggregateTags"`
				DPS           map[string]float64 `json:"dps"`
			}
			if err := json.Unmarshal([]byte(body), &rs); err != nil {
				return "unreadable: " + err.Error()
			}
			for _, r := range rs {
				f := frame{Name: r.Metric, Labels: r.Tags, TagKeys: grafanaTagKeyList(r.Tags, r.AggregateTags)}
				ts := make([]string, 0, len(r.DPS))
				for k := range r.DPS {
					ts = append(ts, k)
				}
				sort.Strings(ts)
				for _, k := range ts {
					sec, err := strconv.ParseInt(k, 10, 64)
					if err != nil {
						return "unreadable timestamp " + k
					}
					f.Times, f.Values = append(f.Times, sec), append(f.Values, r.DPS[k])
				}
				frames = append(frames, f)
			}
		}
		for i := range frames {
			slices.Sort(frames[i].TagKeys[len(frames[i].Labels):]) // aggregateTags: a set
		}
		sort.Slice(frames, func(i, j int) bool {
			a, _ := json.Marshal(frames[i].Labels)
			b, _ := json.Marshal(frames[j].Labels)
			return string(a) < string(b)
		})
		return frames
	}
}

// grafanaTagKeyList is CreateDataFrame's custom tagKeys: the tags' keys
// sorted, then the aggregate tags.
func grafanaTagKeyList(tags map[string]string, aggregate []string) []string {
	keys := make([]string, 0, len(tags)+len(aggregate))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return append(keys, aggregate...)
}

// sameJSON compares two JSON documents, numbers within 1e-9 relative.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return sameTree(x, y)
}

func sameTree(x, y any) bool {
	switch xv := x.(type) {
	case float64:
		yv, ok := y.(float64)
		return ok && (xv == yv || math.Abs(xv-yv) <= 1e-9*math.Max(math.Abs(xv), math.Abs(yv)))
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for i := range xv {
			if !sameTree(xv[i], yv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return false
		}
		for k, v := range xv {
			if w, ok := yv[k]; !ok || !sameTree(v, w) {
				return false
			}
		}
		return true
	}
	return x == y
}
