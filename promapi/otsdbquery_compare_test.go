package promapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// queryCase is one /api/query request of the comparison.
type queryCase struct {
	method string // GET: query is the query string; POST: the JSON body
	query  string
	// differs, when set, is why hbtsdb may answer this request otherwise, on
	// purpose (opentsdb/doc.go): the test then logs how the answers differ
	// instead of failing.
	differs string
	// relative marks a request whose times are relative to now ("1h-ago"),
	// asked away from the edges of the data's 10-second grid.
	relative bool
	// otsdb500, when set, is why OpenTSDB answers this bad request 500 where
	// hbtsdb answers 400: the test asserts exactly that, with the same
	// message.
	otsdb500 string
}

// compareQueries asks both the /api/query corpus of queryCases: several at a
// time, but those with times relative to now one by one, away from the
// data's grid.
func (p *openTSDBPair) compareQueries(t *testing.T) {
	var now, relative []queryCase
	for _, c := range queryCases(p.base) {
		if c.relative {
			relative = append(relative, c)
		} else {
			now = append(now, c)
		}
	}
	each(len(now), func(i int) { p.compareQuery(t, now[i]) })
	for _, c := range relative {
		awayFromGrid(t)
		p.compareQuery(t, c)
	}
}

func (p *openTSDBPair) compareQuery(t *testing.T, c queryCase) {
	wantStatus, want, gotStatus, got, ok := p.askBoth(t, c.method, "/api/query", c.query)
	if !ok {
		return
	}
	if c.otsdb500 != "" {
		checkOpenTSDB500(t, fmt.Sprintf("%s /api/query %s (%s)", c.method, c.query, c.otsdb500), wantStatus, want, gotStatus, got)
		return
	}
	diff := queryAnswersDiffer(t, wantStatus, want, gotStatus, got)
	switch {
	case c.differs == "" && diff != "":
		t.Errorf("%s /api/query %s:\n%s", c.method, c.query, diff)
	case c.differs != "" && diff == "":
		t.Logf("%s /api/query %s: answered alike here, though it may differ on purpose (%s)", c.method, c.query, c.differs)
	case c.differs != "":
		t.Logf("%s /api/query %s differs on purpose (%s):\n%s", c.method, c.query, c.differs, diff)
	}
}

// awayFromGrid returns once the wall clock is at least 300 ms away from a
// multiple of 10 s: the datapoints lie within 500 ms after such multiples, so
// that "1h-ago" cuts them the same for OpenTSDB and hbtsdb, which read the
// clock a few milliseconds apart.
func awayFromGrid(t *testing.T) {
	t.Helper()
	for {
		off := time.Duration(time.Now().UnixMilli()%10000) * time.Millisecond
		if off >= 800*time.Millisecond && off <= 9700*time.Millisecond {
			return
		}
		wait := 800*time.Millisecond - off
		if off > 9700*time.Millisecond {
			wait = 10*time.Second - off + 800*time.Millisecond
		}
		<-time.After(wait)
	}
}

// otsdbGroup is one element of /api/query's answer, as both write it.
type otsdbGroup struct {
	Metric        string            `json:"metric"`
	Tags          map[string]string `json:"tags"`
	AggregateTags []string          `json:"aggregateTags"`
	TSUIDs        []string          `json:"tsuids"`
	DPS           json.RawMessage   `json:"dps"`

	points []otsdbPoint
}

// otsdbPoint is one dps entry: its timestamp and value (a number, "NaN" or
// null).
type otsdbPoint struct {
	ts    string
	value any
}

// queryAnswersDiffer describes how hbtsdb's answer differs from OpenTSDB's,
// "" when it does not: the same status; for an error the same code and
// message; for data the same groups in any order (OpenTSDB's order is that of
// its asynchronous UID look-ups), each with the same metric, tags,
// aggregateTags (as a set), number of tsuids and dps: the same timestamps in
// the same order, values equal within 1e-9 relative (OpenTSDB writes
// integers without ".0"), NaN as NaN and null as null.
func queryAnswersDiffer(t *testing.T, wantStatus int, want string, gotStatus int, got string) string {
	t.Helper()
	if wantStatus != gotStatus {
		return fmt.Sprintf("hbtsdb answers %d %s\nOpenTSDB %d %s", gotStatus, shorten(got), wantStatus, shorten(want))
	}
	if wantStatus >= 400 {
		w, g := errorCodeAndMessage(t, want), errorCodeAndMessage(t, got)
		if w != g {
			return fmt.Sprintf("hbtsdb answers %s\nOpenTSDB %s", g, w)
		}
		return ""
	}
	wg, err := parseGroups(want)
	if err != nil {
		return fmt.Sprintf("OpenTSDB's answer: %v: %s", err, shorten(want))
	}
	gg, err := parseGroups(got)
	if err != nil {
		return fmt.Sprintf("hbtsdb's answer: %v: %s", err, shorten(got))
	}
	if len(wg) != len(gg) {
		return fmt.Sprintf("hbtsdb answers %d groups %s\nOpenTSDB %d %s", len(gg), groupKeys(gg), len(wg), groupKeys(wg))
	}
	for i := range wg {
		if d := groupDiffers(&wg[i], &gg[i]); d != "" {
			return fmt.Sprintf("group %s: %s", groupKey(&wg[i]), d)
		}
	}
	return ""
}

func parseGroups(body string) ([]otsdbGroup, error) {
	var gs []otsdbGroup
	if err := json.Unmarshal([]byte(body), &gs); err != nil {
		return nil, err
	}
	for i := range gs {
		pts, err := parseDPS(gs[i].DPS)
		if err != nil {
			return nil, fmt.Errorf("dps of %s: %w", groupKey(&gs[i]), err)
		}
		gs[i].points = pts
		slices.Sort(gs[i].AggregateTags)
	}
	sort.SliceStable(gs, func(i, j int) bool { return groupKey(&gs[i]) < groupKey(&gs[j]) })
	return gs, nil
}

// parseDPS reads dps as a map {"ts":v,...} in its order, or as arrays
// [[ts,v],...] (arrays=true).
func parseDPS(raw json.RawMessage) ([]otsdbPoint, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	var out []otsdbPoint
	switch tok {
	case json.Delim('{'):
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			var v any
			if err := d.Decode(&v); err != nil {
				return nil, err
			}
			out = append(out, otsdbPoint{ts: k.(string), value: v})
		}
	case json.Delim('['):
		for d.More() {
			var pair []any
			if err := d.Decode(&pair); err != nil {
				return nil, err
			}
			if len(pair) != 2 {
				return nil, fmt.Errorf("dps entry %v is not a [timestamp, value] pair", pair)
			}
			out = append(out, otsdbPoint{ts: fmt.Sprint(pair[0]), value: pair[1]})
		}
	default:
		return nil, fmt.Errorf("dps is neither an object nor an array: %s", raw)
	}
	return out, nil
}

func groupKey(g *otsdbGroup) string {
	tags, _ := json.Marshal(g.Tags) // sorted keys
	return fmt.Sprintf("%s%s%v", g.Metric, tags, g.AggregateTags)
}

func groupKeys(gs []otsdbGroup) string {
	keys := make([]string, len(gs))
	for i := range gs {
		keys[i] = groupKey(&gs[i])
	}
	return strings.Join(keys, " ")
}

func groupDiffers(want, got *otsdbGroup) string {
	if groupKey(want) != groupKey(got) {
		return fmt.Sprintf("hbtsdb's group is %s", groupKey(got))
	}
	if len(want.TSUIDs) != len(got.TSUIDs) {
		return fmt.Sprintf("hbtsdb has %d tsuids, OpenTSDB %d", len(got.TSUIDs), len(want.TSUIDs))
	}
	n := max(len(want.points), len(got.points))
	for i := range n {
		if i >= len(want.points) {
			return fmt.Sprintf("hbtsdb has %d points, OpenTSDB %d: the first extra is %v", len(got.points), len(want.points), got.points[i])
		}
		if i >= len(got.points) {
			return fmt.Sprintf("hbtsdb has %d points, OpenTSDB %d: the first missing is %v", len(got.points), len(want.points), want.points[i])
		}
		w, g := want.points[i], got.points[i]
		if w.ts != g.ts || !sameValue(w.value, g.value) {
			return fmt.Sprintf("point %d: hbtsdb %s=%v, OpenTSDB %s=%v (of %d points)", i, g.ts, g.value, w.ts, w.value, len(want.points))
		}
	}
	return ""
}

// sameValue compares two dps values: numbers within 1e-9 relative, else equal.
func sameValue(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok != bok {
		return false
	}
	if !aok {
		return a == b // "NaN", null
	}
	x, errx := an.Float64()
	y, erry := bn.Float64()
	if errx != nil || erry != nil {
		return an == bn
	}
	if x == y {
		return true
	}
	return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
}

func shorten(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// queryCases is the /api/query corpus over queryDataset(base): every
// aggregator, raw and downsampled and grouped; every downsampling interval
// kind with every fill policy; rate with every rate option; every filter type
// with and without group-by, in m= and JSON; old-style tags; msResolution,
// arrays, relative and absolute times; several sub-queries; bad requests.
func queryCases(base int64) []queryCase {
	var cs []queryCase
	start, end := fmt.Sprint(base), fmt.Sprint(base+2*3600)
	get := func(q url.Values) {
		if !q.Has("start") {
			q.Set("start", start)
		}
		if !q.Has("end") && !q.Has("noend") {
			q.Set("end", end)
		}
		q.Del("noend")
		cs = append(cs, queryCase{method: "GET", query: q.Encode()})
	}
	m := func(ms ...string) { get(url.Values{"m": ms}) }
	post := func(body string) { cs = append(cs, queryCase{method: "POST", query: body}) }
	postQ := func(sub string) {
		post(fmt.Sprintf(`{"start":%s,"end":%s,"queries":[%s]}`, start, end, sub))
	}

	aggs := []string{"sum", "min", "max", "avg", "none", "median", "mult", "dev", "diff", "count", "zimsum",
		"mimmin", "mimmax", "first", "last", "pfsum", "squareSum",
		"p999", "p99", "p95", "p90", "p75", "p50",
		"ep999r3", "ep99r3", "ep95r3", "ep90r3", "ep75r3", "ep50r3",
		"ep999r7", "ep99r7", "ep95r7", "ep90r7", "ep75r7", "ep50r7"}
	for _, a := range aggs {
		// first, last and diff take the group's series in OpenTSDB's order,
		// that of their UIDs: the order their tag values were first written.
		inOrder := func(m string) {
			m = a + ":" + m
			switch a {
			case "first", "last", "diff":
				cs = append(cs, queryCase{method: "GET", query: url.Values{"m": {m}, "start": {start}, "end": {end}}.Encode(),
					differs: "series in tag order, not in OpenTSDB's UID order (db01 was written before Web03)"})
			default:
				get(url.Values{"m": {m}})
			}
		}
		inOrder("q.cpu")                                    // raw: interpolation across series
		inOrder("q.cpu{dc=*}")                              // grouped
		inOrder("q.mixed")                                  // integers and floats
		inOrder("q.cpu{}{host=web01|Web03|web04,dc=eu|us}") // integers only: integer arithmetic
		if a != "none" {
			m("sum:5m-" + a + ":q.cpu{host=*}") // as the downsampler
			inOrder("1m-avg:q.cpu{dc=eu|us}")   // downsampled, then aggregated
		}
	}
	for _, iv := range []string{"30s", "1m", "7m", "1h", "2h", "1d", "500ms", "0all"} {
		for _, fill := range []string{"", "-none", "-nan", "-null", "-zero"} {
			m("avg:" + iv + "-sum" + fill + ":q.cpu{host=db01}")
			if iv != "500ms" { // 14400 intervals of every series
				m("sum:" + iv + "-max" + fill + ":q.cpu")
			}
		}
	}
	m("sum:1m-count-zero:q.cpu{host=*}", "avg:10m-dev-nan:q.cpu{dc=*}")
	m("sum:1m-first-null:q.cpu{host=db01}", "sum:1m-last-nan:q.cpu{host=db01}")

	// rate
	for _, r := range []string{"rate", "rate{counter}", "rate{counter,1000}", "rate{counter,1000,50}",
		"rate{dropcounter}", "rate{counter,,100}", "rate{dropcounter,1000}"} {
		m("sum:" + r + ":q.requests{host=*}")
		m("sum:" + r + ":q.requests{path=/b}")
		m("sum:1m-avg:" + r + ":q.requests")
		m("zimsum:" + r + ":q.cpu")
	}
	m("avg:rate:q.mixed", "none:rate{counter}:q.requests", "sum:1m-avg-zero:rate{counter}:q.requests{host=*}")
	for _, ro := range []string{`{"counter":true}`, `{"counter":true,"counterMax":1000}`, `{"counter":true,"counterMax":1000,"resetValue":30}`,
		`{"counter":true,"dropResets":true}`, `{"counter":false}`, `{}`, `{"counter":true,"counterMax":1000.0}`} {
		postQ(fmt.Sprintf(`{"aggregator":"sum","metric":"q.requests","rate":true,"rateOptions":%s,"tags":{"path":"*"}}`, ro))
	}

	// filters, in m= and in JSON
	for _, f := range []string{"host=web01", "host=web01|web02", "host=web*", "host=*", "host=literal_or(web01|db01)",
		"host=iliteral_or(WEB01|web03)", "host=not_literal_or(web01)", "host=not_iliteral_or(WEB01|web02)",
		"host=wildcard(web*)", "host=iwildcard(WEB*)", "host=wildcard(*0*)", "host=regexp(web0[12])", "host=regexp(.*3$)",
		"cpu=*", "dc=eu,cpu=0", "host=*,dc=*", "env=prod"} {
		m("sum:q.cpu{" + f + "}")
		m("sum:1m-avg:q.cpu{}{" + f + "}")
	}
	m("sum:q.cpu{host=*}{dc=eu}", "sum:q.cpu{dc=*}{host=regexp(web.*)}", "sum:explicit_tags:q.cpu{host=web04,dc=eu}",
		"sum:explicit_tags:q.cpu{host=*,dc=*}")
	for _, f := range []string{
		`{"type":"literal_or","tagk":"host","filter":"web01|web02","groupBy":true}`,
		`{"type":"literal_or","tagk":"host","filter":"web01|web02","groupBy":false}`,
		`{"type":"iliteral_or","tagk":"host","filter":"web03","groupBy":true}`,
		`{"type":"not_literal_or","tagk":"dc","filter":"eu","groupBy":true}`,
		`{"type":"not_iliteral_or","tagk":"dc","filter":"EU","groupBy":false}`,
		`{"type":"wildcard","tagk":"host","filter":"*0*","groupBy":true}`,
		`{"type":"iwildcard","tagk":"host","filter":"WEB*","groupBy":false}`,
		`{"type":"regexp","tagk":"host","filter":"^(web|db)0[13]$","groupBy":true}`,
		`{"type":"not_key","tagk":"cpu","filter":"","groupBy":false}`,
		`{"type":"wildcard","tagk":"cpu","filter":"*","groupBy":true},{"type":"literal_or","tagk":"dc","filter":"eu","groupBy":false}`,
	} {
		postQ(fmt.Sprintf(`{"aggregator":"sum","metric":"q.cpu","filters":[%s]}`, f))
		postQ(fmt.Sprintf(`{"aggregator":"avg","metric":"q.cpu","downsample":"5m-avg","filters":[%s]}`, f))
	}
	postQ(`{"aggregator":"sum","metric":"q.cpu","tags":{"host":"*"}}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","tags":{"host":"web01|web02","dc":"*"}}`)
	postQ(`{"aggregator":"max","metric":"q.cpu","tags":{"host":"wildcard(web*)"}}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","tags":{"host":"*"},"filters":[{"type":"literal_or","tagk":"dc","filter":"eu","groupBy":false}]}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","filters":[{"type":"literal_or","tagk":"dc","filter":"eu","groupBy":false}],"tags":{"host":"*"}}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","explicitTags":true,"tags":{"host":"*","dc":"*"}}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","downsample":"1m-avg-nan"},{"aggregator":"sum","metric":"q.requests","rate":true}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu"},{"aggregator":"sum","metric":"q.cpu"}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","tags":{"host":"web01"}},{"aggregator":"sum","metric":"q.cpu","tags":{"host":"web02"}}`)

	// resolution, arrays, times
	post(fmt.Sprintf(`{"start":%d,"end":%d,"msResolution":true,"queries":[{"aggregator":"sum","metric":"q.cpu","tags":{"host":"Web03"}}]}`,
		base*1000+100000, base*1000+200000))
	post(fmt.Sprintf(`{"start":"%d","end":"%d","queries":[{"aggregator":"none","metric":"q.cpu","downsample":"10s-avg","tags":{"host":"*"}}]}`,
		base+600, base+900))
	get(url.Values{"m": {"sum:q.cpu{host=Web03}"}, "ms": {""}, "start": {fmt.Sprint(base + 100)}, "end": {fmt.Sprint(base + 400)}})
	get(url.Values{"m": {"sum:q.cpu{host=Web03}"}, "arrays": {"true"}, "start": {fmt.Sprint(base + 100)}, "end": {fmt.Sprint(base + 400)}})
	get(url.Values{"m": {"avg:1m-avg-null:q.cpu{host=db01}"}, "arrays": {"true"}})
	get(url.Values{"m": {"sum:q.cpu"}, "start": {fmt.Sprintf("%d.500", base+100)}, "end": {fmt.Sprintf("%dms", base*1000+300500)}})
	get(url.Values{"m": {"sum:q.cpu"}, "start": {time.Unix(base+60, 0).UTC().Format("2006/01/02-15:04:05")},
		"end": {time.Unix(base+1200, 0).UTC().Format("2006/01/02 15:04")}})
	for _, rel := range []struct{ start, end string }{{"5h-ago", "3h-ago"}, {"230m-ago", "200m-ago"}, {"4h-ago", ""}, {"1d-ago", "now"}} {
		q := url.Values{"m": {"sum:1m-avg:q.cpu{dc=*}", "avg:rate:q.requests"}, "start": {rel.start}}
		if rel.end != "" {
			q.Set("end", rel.end)
		} else {
			q.Set("noend", "")
		}
		get(q)
		cs[len(cs)-1].relative = true
	}
	post(`{"start":"5h-ago","end":"3h-ago","queries":[{"aggregator":"avg","metric":"q.cpu","downsample":"10m-avg-zero"}]}`)
	cs[len(cs)-1].relative = true

	// floats with integral values: hbtsdb takes them for integers
	cs = append(cs, queryCase{method: "GET", query: url.Values{"m": {"avg:q.floatint"}, "start": {start}, "end": {end}}.Encode(),
		differs: "a float with an integral value (2.0) is an integer to hbtsdb, so avg truncates where OpenTSDB's double average does not"})
	m("avg:1m-avg:q.floatint") // downsampled values are doubles for both

	// bad requests
	m("total:q.cpu")
	m("sum:q.nosuch")
	m("sum:q.cpu{nosuchtag=*}")
	m("sum:q.cpu{host=nosuchvalue}")
	m("sum:q.cpu{host=web01|nosuchvalue}")
	m("sum:1m:q.cpu")
	m("sum:1m-total:q.cpu")
	m("sum:1x-avg:q.cpu")
	m("sum:1m-avg-fill:q.cpu")
	m("sum:1m-none:q.cpu")
	m("sum:rate{counter,x}:q.cpu")
	// A malformed tag part of m= is an internal error (500) to OpenTSDB.
	const status500 = "its parser's IllegalArgumentException escapes QueryRpc unwrapped"
	for _, bad := range []string{"sum:q.cpu{host=nosuchfilter(x)}", "sum:q.cpu{host}", "sum:q.cpu{cpu=not_key()}",
		"sum:1m-avg:q.cpu{}{cpu=not_key()}", "sum:q.cpu{host=literal_or(web01}", "sum:q.cpu{host=literal_or(|)}"} {
		cs = append(cs, queryCase{method: "GET", query: url.Values{"m": {bad}, "start": {start}, "end": {end}}.Encode(), otsdb500: status500})
	}
	cs = append(cs, queryCase{method: "GET", query: url.Values{"m": {"sum:q.cpu{host=regexp(()}"}, "start": {start}, "end": {end}}.Encode(),
		differs: "400 where OpenTSDB answers 500, and Go's regexp message (RE2) where Java's Pattern has its own"})
	m("sum")
	m("")
	get(url.Values{"start": {start}})
	get(url.Values{"m": {"sum:q.cpu"}, "start": {end}, "end": {start}})
	get(url.Values{"m": {"sum:q.cpu"}, "start": {"yesterday"}})
	cs = append(cs, queryCase{method: "GET", query: url.Values{"m": {"sum:q.cpu"}}.Encode()})
	post(``)
	post(`{"start":`)
	cs = append(cs, queryCase{method: "POST", query: `{"end":1}`,
		differs: "400 Missing start time, where OpenTSDB fails on the missing queries with a NullPointerException (500)"})
	post(fmt.Sprintf(`{"start":%s,"queries":[]}`, start))
	postQ(`{"metric":"q.cpu"}`)
	postQ(`{"aggregator":"sum"}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","downsample":"1m-avg-nah"}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","filters":[{"type":"nope","tagk":"host","filter":"x"}]}`)
	postQ(`{"aggregator":"sum","metric":"q.cpu","filters":[{"type":"literal_or","tagk":"","filter":"x"}]}`)
	return cs
}
