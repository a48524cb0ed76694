package promapi

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// seriesIDPattern is a tsuid hbtsdb answers: a series ID in hex.
var seriesIDPattern = regexp.MustCompile(`"tsuid":"[0-9A-F]{16}"`)

// putOpenTSDB stores datapoints through /api/put.
func putOpenTSDB(t *testing.T, base string, points ...string) {
	t.Helper()
	if r := post(t, base+"/api/put", nil, []byte("["+strings.Join(points, ",")+"]")); r.status != 204 {
		t.Fatalf("/api/put: %d %s", r.status, r.body)
	}
}

func TestOpenTSDBLastAnswersAsOpenTSDB(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{})
	now := time.Now().Unix()
	hour := now - now%3600
	a1, a2, b1 := hour-3600+10, now-5, hour-3*3600+20 // a newest now, b three hours back
	putOpenTSDB(t, e.srv.URL,
		fmt.Sprintf(`{"metric":"m.last","timestamp":%d,"value":5,"tags":{"host":"a","dc":"eu"}}`, a1),
		fmt.Sprintf(`{"metric":"m.last","timestamp":%d,"value":2.5,"tags":{"host":"a","dc":"eu"}}`, a2),
		fmt.Sprintf(`{"metric":"m.last","timestamp":%d,"value":7,"tags":{"host":"b","dc":"eu"}}`, b1))
	cases := []struct {
		name, method, query string
		status              int
		want                string
	}{
		{"back_scan: the newest point of the series with exactly these tags, its value a string",
			"GET", "timeseries=m.last{host=a,dc=eu}&back_scan=1", 200, fmt.Sprintf(`[{"timestamp":%d000,"value":"2.5","tsuid":""}]`, a2)},
		{"resolve adds the metric and the tags asked for", "GET", "timeseries=m.last{host=b,dc=eu}&back_scan=3&resolve", 200,
			fmt.Sprintf(`[{"metric":"m.last","timestamp":%d000,"value":"7","tags":{"dc":"eu","host":"b"},"tsuid":""}]`, b1)},
		{"a back scan too short finds nothing", "GET", "timeseries=m.last{host=b,dc=eu}&back_scan=2", 200, `[]`},
		{"a back scan of tags that are not the whole series finds nothing", "GET", "timeseries=m.last{host=a}&back_scan=5", 200, `[]`},
		{"without back_scan: the newest point of every series with the tags", "GET", "timeseries=m.last{dc=eu}&resolve", 200,
			fmt.Sprintf(`[{"metric":"m.last","timestamp":%d000,"value":"2.5","tags":{"dc":"eu","host":"a"},"tsuid":""},`+
				`{"metric":"m.last","timestamp":%d000,"value":"7","tags":{"dc":"eu","host":"b"},"tsuid":""}]`, a2, b1)},
		{"POST of LastPointQuery's JSON", "POST", `{"queries":[{"metric":"m.last","tags":{"host":"a","dc":"eu"}}],"resolveNames":true,"backScan":24}`, 200,
			fmt.Sprintf(`[{"metric":"m.last","timestamp":%d000,"value":"2.5","tags":{"dc":"eu","host":"a"},"tsuid":""}]`, a2)},
		{"no timeseries", "GET", "resolve", 400, `{"error":{"code":400,"message":"Missing sub queries"}}`},
		{"a back_scan that is not a number", "GET", "timeseries=m.last&back_scan=x", 400,
			`{"error":{"code":400,"message":"Unable to parse back_scan parameter"}}`},
		{"a back scan names one series, so it needs tags", "GET", "timeseries=m.last&back_scan=1", 400,
			`{"error":{"code":400,"message":"Tags cannot be null or empty when getting a TSUID"}}`},
		{"a metric never written", "GET", "timeseries=m.nosuch", 400,
			`{"error":{"code":400,"message":"No such name for 'metrics': 'm.nosuch'","details":"No such name for 'metrics': 'm.nosuch'"}}`},
		{"a tag value never written", "GET", "timeseries=m.last{host=c,dc=eu}&back_scan=1", 400,
			`{"error":{"code":400,"message":"No such name for 'tagv': 'c'","details":"No such name for 'tagv': 'c'"}}`},
		{"a malformed tag", "GET", "timeseries=m.last{host}", 400,
			`{"error":{"code":400,"message":"When parsing tag 'host': invalid tag: host"}}`},
		{"POST without a body", "POST", ``, 400, `{"error":{"code":400,"message":"Missing message content",` +
			`"details":"Supply valid JSON formatted data in the body of your request"}}`},
		{"POST with a field LastPointQuery does not have", "POST", `{"queries":[{"metric":"m.last"}],"resolve":true}`, 400,
			`{"error":{"code":400,"message":"Unable to parse the given JSON","details":"json: unknown field \"resolve\""}}`},
		{"OpenTSDB's own tsuids name no series here", "GET", "tsuids=000001000001000001", 400,
			`{"error":{"code":400,"message":"tsuid \"000001000001000001\" is not an hbtsdb series ID: hbtsdb's tsuids are 16 hex digits, ` +
				`as show_tsuids, /api/search/lookup and /api/query/last answer them; OpenTSDB's own tsuids name no series here, ` +
				`query by metric and tags instead"}}`},
		{"an hbtsdb tsuid that names no series answers nothing", "GET", "tsuids=00000000000000FF&resolve", 200, `[]`},
	}
	t.Run("tsuids name the series whose newest point is answered", func(t *testing.T) {
		status, _, body := openTSDBAsk(t, e.srv.URL, "GET", "/api/query/last", "timeseries=m.last%7Bhost=a,dc=eu%7D&back_scan=1&resolve")
		id := seriesIDPattern.FindString(body)
		if status != 200 || id == "" {
			t.Fatalf("timeseries query = %d %s, want one point with a tsuid", status, body)
		}
		id = strings.TrimSuffix(strings.TrimPrefix(id, `"tsuid":"`), `"`)
		for _, q := range []string{"tsuids=" + id + "&resolve", "tsuids=" + id + "&back_scan=1&resolve",
			"tsuids=" + strings.ToLower(id) + ",00000000000000FF&resolve"} {
			if s, _, got := openTSDBAsk(t, e.srv.URL, "GET", "/api/query/last", q); s != 200 || got != body {
				t.Errorf("GET %s = %d %s\nwant 200 %s", q, s, got, body)
			}
		}
		post := fmt.Sprintf(`{"queries":[{"metric":"m.last","tsuids":[%q]}],"resolveNames":true}`, id)
		if s, _, got := openTSDBAsk(t, e.srv.URL, "POST", "/api/query/last", post); s != 200 || got != body {
			t.Errorf("POST %s = %d %s\nwant 200 %s", post, s, got, body)
		}
		// b's newest point is three hours back: a back scan of two finds nothing.
		if s, _, got := openTSDBAsk(t, e.srv.URL, "GET", "/api/query/last", "timeseries=m.last%7Bhost=b,dc=eu%7D&resolve"); s == 200 {
			bid := strings.TrimSuffix(strings.TrimPrefix(seriesIDPattern.FindString(got), `"tsuid":"`), `"`)
			if s, _, got := openTSDBAsk(t, e.srv.URL, "GET", "/api/query/last", "tsuids="+bid+"&back_scan=2"); s != 200 || got != "[]" {
				t.Errorf("tsuids=%s&back_scan=2 = %d %s, want 200 []", bid, s, got)
			}
		} else {
			t.Errorf("timeseries m.last{host=b,dc=eu} = %d %s", s, got)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := c.query
			if c.method == "GET" {
				q = strings.NewReplacer("{", "%7B", "}", "%7D").Replace(q)
			}
			status, ctype, body := openTSDBAsk(t, e.srv.URL, c.method, "/api/query/last", q)
			body = seriesIDPattern.ReplaceAllString(body, `"tsuid":""`)
			if status != c.status || body != c.want {
				t.Errorf("%s /api/query/last %s = %d %s\nwant %d %s", c.method, c.query, status, body, c.status, c.want)
			}
			if ctype != "application/json; charset=UTF-8" {
				t.Errorf("Content-Type %q", ctype)
			}
		})
	}
}

func TestOpenTSDBLastAndLookupStoreFailures(t *testing.T) {
	for _, c := range []struct {
		name, path string
		opts       Options
		status     int
		want       string
	}{
		{"last: no store yet is a 503", "/api/query/last?timeseries=m", Options{}, 503,
			`{"error":{"code":503,"message":"store unavailable: no store is configured"}}`},
		{"lookup: no store yet is a 503", "/api/search/lookup?m=m", Options{}, 503,
			`{"error":{"code":503,"message":"store unavailable: no store is configured"}}`},
		{"last: a store that cannot read is a 500", "/api/query/last?timeseries=m", Options{DB: StaticDB(writeOnlyStore{})}, 500,
			`{"error":{"code":500,"message":"this store has no reader for /api/query/last"}}`},
		{"lookup: a store that cannot read is a 500", "/api/search/lookup?m=m", Options{DB: StaticDB(writeOnlyStore{})}, 500,
			`{"error":{"code":500,"message":"this store has no reader for /api/search/lookup"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(mustRouter(t, c.opts))
			defer srv.Close()
			status, _, body := openTSDBAsk(t, srv.URL, "GET", c.path, "")
			if status != c.status || body != c.want {
				t.Errorf("= %d %s, want %d %s", status, body, c.status, c.want)
			}
		})
	}
}
