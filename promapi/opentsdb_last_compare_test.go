package promapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// qLastSeries are the series of q.last, which /api/query/last is asked about.
var qLastSeries = []map[string]string{
	{"host": "h1", "dc": "eu"},
	{"host": "h2", "dc": "eu"},
	{"host": "h3", "dc": "us"},
	{"host": "h1", "dc": "eu", "extra": "x"},
}

// lastDataset is q.last around hour (seconds, the start of the current
// hour): h1 newest in this hour, h2 newest three hours back, h3 in
// milliseconds and newest in this hour, h1+extra newest in the previous hour.
func lastDataset(hour int64) []compareDatapoint {
	var out []compareDatapoint
	add := func(i int, ts int64, ms bool, value string) {
		out = append(out, compareDatapoint{metric: "q.last", ts: ts, ms: ms, value: value, tags: qLastSeries[i]})
	}
	add(0, hour-3*3600+100, false, "1")
	add(0, hour-1800, false, "2")
	add(0, hour, false, "3")
	add(1, hour-2*3600-60, false, "4.5")
	add(1, hour-2*3600-30, false, "5.25")
	add(2, (hour-3600)*1000+500, true, "7")
	add(2, hour*1000, true, "8.5")
	add(3, hour-60, false, "9")
	return out
}

// lastCase is one /api/query/last request of the comparison.
type lastCase struct {
	method, query string
	// differs, when set, is why hbtsdb answers otherwise on purpose
	// (promapi/opentsdb_last.go): the test asserts exactly that difference,
	// hbtsdb's answer holding OpenTSDB's and the extra series named.
	differs string
	extra   []map[string]string // the series hbtsdb answers besides OpenTSDB's
	// otsdb500 marks a bad request OpenTSDB answers 500 (its parser's
	// exception escapes) and hbtsdb 400, with the same message.
	otsdb500 bool
	// viaQuery, for a back scan of a series with many points an hour, is the
	// m= whose newest point in OpenTSDB's /api/query is hbtsdb's answer:
	// OpenTSDB 2.4.1's own /api/query/last fails on such rows once its
	// compaction has rewritten them (400 "arraycopy: last source index 9 out
	// of bounds for byte[8]" and the like, a bug of its
	// Internal.GetLastDataPointCB), which it may or may not have done yet.
	viaQuery string
}

// compareLast asks both /api/query/last about qLastSeries (lastDataset) and
// q.cpu, with and without back_scan, GET and POST, and the bad requests.
func (p *openTSDBPair) compareLast(t *testing.T) {
	backfill := "OpenTSDB reads the hour each series was last written in, hbtsdb its newest point: a series whose newest " +
		"point is older than its last write (h2 and h1,extra=x here, all written now) is answered by hbtsdb only"
	cases := []lastCase{
		{method: "GET", query: "timeseries=q.last{host=h3}&resolve"},
		{method: "GET", query: "timeseries=q.last{dc=us}"},
		{method: "GET", query: "timeseries=q.last{host=h1,dc=eu}&resolve", differs: backfill, extra: qLastSeries[3:4]},
		{method: "GET", query: "timeseries=q.last&resolve", differs: backfill, extra: []map[string]string{qLastSeries[1], qLastSeries[3]}},
		{method: "GET", query: "timeseries=q.last{host=h2,dc=eu}&back_scan=2&resolve"},
		{method: "GET", query: "timeseries=q.last{host=h2,dc=eu}&back_scan=3&resolve"},
		{method: "GET", query: "timeseries=q.last{host=h1,dc=eu}&back_scan=1&resolve"},
		{method: "GET", query: "timeseries=q.last{host=h1,dc=eu,extra=x}&back_scan=1&resolve"},
		{method: "GET", query: "timeseries=q.last{host=h1,dc=eu,extra=x}&back_scan=1"},
		{method: "GET", query: "timeseries=q.last{host=h1}&back_scan=1"},
		{method: "GET", query: "timeseries=q.last{host=h3,dc=us}&back_scan=1"},
		{method: "GET", query: "timeseries=q.cpu{host=web01,dc=eu,cpu=0}&back_scan=5&resolve", viaQuery: "none:q.cpu{host=web01,dc=eu,cpu=0}"},
		{method: "GET", query: "timeseries=q.cpu{host=web02,dc=eu,cpu=0}&back_scan=5", viaQuery: "none:q.cpu{host=web02,dc=eu,cpu=0}"},
		{method: "GET", query: "timeseries=q.cpu{host=Web03,dc=us,cpu=1}&back_scan=6", viaQuery: "none:q.cpu{host=Web03,dc=us,cpu=1}"},
		{method: "GET", query: "timeseries=q.cpu{host=web01,dc=ap,cpu=2,env=prod}&back_scan=5&resolve"},
		{method: "GET", query: "timeseries=q.last{host=h3}&timeseries=q.mixed{host=web02}&back_scan=6&resolve"},
		{method: "GET", query: "timeseries=q.last{host=h3}&timeseries=q.last{dc=us}&resolve"},
		{method: "GET", query: ""},
		{method: "GET", query: "timeseries="},
		{method: "GET", query: "timeseries=q.last{host=h3}&back_scan=x"},
		{method: "GET", query: "timeseries=q.last{host=h1,dc=eu}&back_scan=-1"},
		{method: "GET", query: "timeseries=q.last&back_scan=3"},
		{method: "GET", query: "timeseries=q.nosuch"},
		{method: "GET", query: "timeseries=q.nosuch{host=h1}&back_scan=1"},
		{method: "GET", query: "timeseries=q.last{host=nosuch}"},
		{method: "GET", query: "timeseries=q.last{nosuch=h1}&back_scan=2"},
		{method: "GET", query: "timeseries=q.last{host=*}"},
		{method: "GET", query: "timeseries=q.last{host}", otsdb500: true},
		{method: "GET", query: "timeseries=q.last{host=h1", otsdb500: true},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"host":"h3"}}],"resolveNames":true}`},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"host":"h2","dc":"eu"}}],"resolveNames":true,"backScan":24}`},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"host":"h3","dc":"us"}}],"backScan":"3"}`},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"dc":"us"}},{"metric":"q.cpu","tags":{"host":"web01","dc":"ap","cpu":"2","env":"prod"}}],"backScan":5}`},
		{method: "POST", query: `{"queries":[{"metric":"q.floatint","tags":{"host":"a"}}],"backScan":5}`,
			differs: `a float with an integral value ("3.0") is an integer to hbtsdb ("3")`},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"dc":"us"}}]}`},
		{method: "POST", query: ``},
		{method: "POST", query: `{"queries":[]}`},
		{method: "POST", query: `{"queries":[{"metric":"q.last"}],"backScan":3}`},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"host":"h3"}}],"resolve":true}`},
		{method: "POST", query: `{"queries":[{"metric":"q.last","tags":{"host":"h3"},"x":1}]}`},
		{method: "POST", query: `{"queries":[{"tags":{"host":"h3"}}]}`},
	}
	each(len(cases), func(i int) { p.compareLastCase(t, cases[i]) })
}

func (p *openTSDBPair) compareLastCase(t *testing.T, c lastCase) {
	if c.viaQuery != "" {
		p.compareLastViaQuery(t, c)
		return
	}
	wantStatus, want, gotStatus, got, ok := p.askBoth(t, c.method, "/api/query/last", lastQuery(c))
	if !ok {
		return
	}
	request := fmt.Sprintf("%s /api/query/last %s", c.method, c.query)
	if c.otsdb500 {
		checkOpenTSDB500(t, request, wantStatus, want, gotStatus, got)
		return
	}
	if checkErrors(t, request, wantStatus, want, gotStatus, got) {
		return
	}
	w, g := lastPoints(t, want), lastPoints(t, got)
	for _, extra := range c.extra {
		i := slices.IndexFunc(g, func(p lastAnswer) bool { return maps.Equal(p.Tags, extra) })
		if i < 0 {
			t.Errorf("%s /api/query/last %s: hbtsdb's answer %s lacks the series %v it answers on purpose (%s)", c.method, c.query, got, extra, c.differs)
			continue
		}
		g = slices.Delete(g, i, i+1)
	}
	switch {
	case c.differs != "" && len(c.extra) == 0:
		t.Logf("%s /api/query/last %s differs on purpose (%s): hbtsdb answers %s, OpenTSDB %s", c.method, c.query, c.differs, got, want)
	case !slices.EqualFunc(w, g, lastAnswer.equal):
		t.Errorf("%s /api/query/last %s: hbtsdb answers %s\nOpenTSDB %s", c.method, c.query, got, want)
	case c.differs != "":
		t.Logf("%s /api/query/last %s differs on purpose (%s): hbtsdb adds %v", c.method, c.query, c.differs, c.extra)
	}
}

// compareLastViaQuery checks hbtsdb's /api/query/last answer of c, a back
// scan of one series, against the newest point OpenTSDB's /api/query
// answers for c.viaQuery over the back scan's hours.
func (p *openTSDBPair) compareLastViaQuery(t *testing.T, c lastCase) {
	t.Helper()
	form, err := url.ParseQuery(lastQuery(c))
	scan, serr := strconv.ParseInt(form.Get("back_scan"), 10, 64)
	if err != nil || serr != nil {
		t.Errorf("case %s: %v %v", c.query, err, serr)
		return
	}
	q := url.Values{"m": {c.viaQuery}, "ms": {""}, "start": {fmt.Sprint(p.hour - scan*3600)}, "end": {fmt.Sprint(p.hour + 3599)}}
	p.asked.Add(1)
	status, _, body, err := openTSDBDo(p.otsdb, "GET", "/api/query", q.Encode())
	gs, perr := parseGroups(body)
	if err != nil || perr != nil || status != 200 || len(gs) != 1 || len(gs[0].points) == 0 {
		t.Errorf("OpenTSDB's /api/query %s = %d %s (%v %v), want one series with points", q.Encode(), status, shorten(body), err, perr)
		return
	}
	newest := gs[0].points[len(gs[0].points)-1]
	gotStatus, _, got, err := openTSDBDo(p.hbtsdb, c.method, "/api/query/last", lastQuery(c))
	if err != nil {
		t.Error(err)
		return
	}
	ps := lastPoints(t, got)
	if gotStatus != 200 || len(ps) != 1 || fmt.Sprint(ps[0].Timestamp) != newest.ts || !sameValue(json.Number(ps[0].Value), newest.value) {
		t.Errorf("GET /api/query/last %s: hbtsdb answers %d %s, want the newest point OpenTSDB's /api/query has, %s=%v",
			c.query, gotStatus, got, newest.ts, newest.value)
		return
	}
	if _, resolve := form["resolve"]; resolve && (ps[0].Metric != gs[0].Metric || !maps.Equal(ps[0].Tags, gs[0].Tags)) {
		t.Errorf("GET /api/query/last %s: hbtsdb answers %s, want metric %s and tags %v", c.query, got, gs[0].Metric, gs[0].Tags)
	}
}

// lastQuery is a case's query string (GET) or body, braces left as they are.
func lastQuery(c lastCase) string {
	if c.method != "GET" {
		return c.query
	}
	return strings.NewReplacer("{", "%7B", "}", "%7D").Replace(c.query)
}

// lastAnswer is one element of /api/query/last's answer.
type lastAnswer struct {
	Metric    string            `json:"metric"`
	Timestamp int64             `json:"timestamp"`
	Value     string            `json:"value"`
	Tags      map[string]string `json:"tags"`
	TSUID     string            `json:"tsuid"`
}

// equal compares two points but their tsuids (OpenTSDB's UIDs and hbtsdb's
// series IDs), which both must have.
func (a lastAnswer) equal(b lastAnswer) bool {
	return a.Metric == b.Metric && a.Timestamp == b.Timestamp && a.Value == b.Value && maps.Equal(a.Tags, b.Tags) &&
		a.TSUID != "" && b.TSUID != ""
}

// lastPoints parses an answer, sorted (OpenTSDB's order is that in which its
// reads complete).
func lastPoints(t *testing.T, body string) []lastAnswer {
	t.Helper()
	var ps []lastAnswer
	if err := json.Unmarshal([]byte(body), &ps); err != nil {
		t.Errorf("not an /api/query/last answer: %v: %s", err, body)
	}
	key := func(p lastAnswer) string {
		tags, _ := json.Marshal(p.Tags)
		return fmt.Sprintf("%s%s%d%s", p.Metric, tags, p.Timestamp, p.Value)
	}
	slices.SortFunc(ps, func(a, b lastAnswer) int { return strings.Compare(key(a), key(b)) })
	return ps
}

// waitForTracking returns once OpenTSDB's tsdb-meta knows every series put
// into it (its tsuid tracking writes them asynchronously, after the put
// answered), as /api/search/lookup and /api/query/last read them.
func (p *openTSDBPair) waitForTracking(t *testing.T, points []compareDatapoint) {
	t.Helper()
	want := map[string]map[string]bool{}
	for _, dp := range points {
		tags, _ := json.Marshal(dp.tags)
		if want[dp.metric] == nil {
			want[dp.metric] = map[string]bool{}
		}
		want[dp.metric][string(tags)] = true
	}
	deadline := time.Now().Add(time.Minute)
	for metric, series := range want {
		for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			_, _, body := openTSDBAsk(t, p.otsdb, "GET", "/api/search/lookup", url.Values{"m": {metric}, "limit": {"1000"}}.Encode())
			var res struct{ TotalResults int }
			if json.Unmarshal([]byte(body), &res) == nil && res.TotalResults == len(series) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("OpenTSDB's tsdb-meta has not tracked the %d series of %s after a minute: %s", len(series), metric, body)
			}
			<-time.After(wait)
		}
	}
}
