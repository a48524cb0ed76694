package promapi

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/opentsdb"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// lookupTimePattern is the "time" a lookup took.
var lookupTimePattern = regexp.MustCompile(`"time":[0-9.E-]+`)

func TestOpenTSDBLookupAnswersAsOpenTSDB(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{})
	ts := time.Now().Add(-time.Minute).Unix()
	putOpenTSDB(t, e.srv.URL,
		fmt.Sprintf(`{"metric":"m.lookup","timestamp":%d,"value":1,"tags":{"host":"a","dc":"eu"}}`, ts),
		fmt.Sprintf(`{"metric":"m.lookup","timestamp":%d,"value":1,"tags":{"host":"b","dc":"us"}}`, ts),
		fmt.Sprintf(`{"metric":"m.lookup","timestamp":%d,"value":1,"tags":{"host":"c","dc":"eu","rack":"r1"}}`, ts),
		fmt.Sprintf(`{"metric":"m.other","timestamp":%d,"value":1,"tags":{"host":"a"}}`, ts))
	const (
		a  = `{"tsuid":"","metric":"m.lookup","tags":{"dc":"eu","host":"a"}}`
		b  = `{"tsuid":"","metric":"m.lookup","tags":{"dc":"us","host":"b"}}`
		c3 = `{"tsuid":"","metric":"m.lookup","tags":{"dc":"eu","host":"c","rack":"r1"}}`
		o  = `{"tsuid":"","metric":"m.other","tags":{"host":"a"}}`
	)
	answer := func(head string, limit int, results ...string) string {
		return `{"type":"LOOKUP"` + head + fmt.Sprintf(`,"limit":%d,"time":0,"results":[`, limit) + strings.Join(results, ",") +
			fmt.Sprintf(`],"startIndex":0,"totalResults":%d}`, len(results))
	}
	cases := []struct {
		name, method, query string
		status              int
		want                string
	}{
		{"every series of a metric, in label order", "GET", "m=m.lookup", 200, answer(`,"metric":"m.lookup","tags":[]`, 25, a, c3, b)},
		{"a tag value", "GET", "m=m.lookup{dc=eu}", 200,
			answer(`,"metric":"m.lookup","tags":[{"key":"dc","value":"eu"}]`, 25, a, c3)},
		{"a key's pairs are ORed", "GET", "m=m.lookup{host=a,host=b}", 200,
			answer(`,"metric":"m.lookup","tags":[{"key":"host","value":"a"},{"key":"host","value":"b"}]`, 25, a, b)},
		{"key=* needs the key", "GET", "m=m.lookup{rack=*}", 200,
			answer(`,"metric":"m.lookup","tags":[{"key":"rack","value":"*"}]`, 25, c3)},
		{"*=value: any key with that value, across metrics without one", "GET", "m={*=a}", 200,
			answer(`,"tags":[{"key":"*","value":"a"}]`, 25, a, o)},
		{"=value leaves the key out", "GET", "m=*{=us}", 200,
			answer(`,"metric":"*","tags":[{"key":null,"value":"us"}]`, 25, b)},
		{"a limit", "GET", "m=m.lookup&limit=2", 200, answer(`,"metric":"m.lookup","tags":[]`, 2, a, c3)},
		{"limit 0 is all", "GET", "m=m.lookup&limit=0", 200, answer(`,"metric":"m.lookup","tags":[]`, 0, a, c3, b)},
		{"POST of SearchQuery's JSON, no tags given", "POST", `{"metric":"m.other"}`, 200, answer(`,"metric":"m.other"`, 25, o)},
		{"POST without a metric is any metric", "POST", `{"tags":[{"key":"host","value":"a"}],"limit":"10"}`, 200,
			answer(`,"metric":"*","tags":[{"key":"host","value":"a"}]`, 10, a, o)},
		{"a metric never written is 404", "GET", "m=m.nosuch", 404, `{"error":{"code":404,"message":"Unable to resolve one or more UIDs",` +
			`"details":"No such name for 'metrics': 'm.nosuch'"}}`},
		{"a tag value never written is 404", "GET", "m=m.lookup{host=z}", 404, `{"error":{"code":404,"message":"Unable to resolve one or more UIDs",` +
			`"details":"No such name for 'tagv': 'z'"}}`},
		{"no m", "GET", "limit=2", 400, `{"error":{"code":400,"message":"Missing parameter <code>m</code>"}}`},
		{"a limit that is not a number", "GET", "m=m.lookup&limit=x", 400,
			`{"error":{"code":400,"message":"Unable to convert 'limit' to a valid number"}}`},
		{"neither metric nor tags", "GET", "m={}", 400, `{"error":{"code":400,"message":"Unable to parse query","details":"Missing metric and tags: {}"}}`},
		{"a malformed tag", "GET", "m=m.lookup{host}", 400,
			`{"error":{"code":400,"message":"Unable to parse query","details":"When parsing tag 'host': invalid tag: host"}}`},
		{"POST of a null metric and no tags", "POST", `{"metric":null}`, 400,
			`{"error":{"code":400,"message":"Missing metric and tags. Please supply at least one value."}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := c.query
			if c.method == "GET" {
				q = strings.NewReplacer("{", "%7B", "}", "%7D", "*", "%2A").Replace(q)
			}
			status, _, body := openTSDBAsk(t, e.srv.URL, c.method, "/api/search/lookup", q)
			body = lookupTimePattern.ReplaceAllString(seriesIDPattern.ReplaceAllString(body, `"tsuid":""`), `"time":0`)
			if status != c.status || body != c.want {
				t.Errorf("%s /api/search/lookup %s = %d %s\nwant %d %s", c.method, c.query, status, body, c.status, c.want)
			}
		})
	}
	t.Run("/api/config/filters is OpenTSDB 2.4.1's answer, GET and POST", func(t *testing.T) {
		for _, method := range []string{"GET", "POST"} {
			status, ctype, body := openTSDBAsk(t, e.srv.URL, method, "/api/config/filters", "")
			if status != 200 || body != opentsdb.FilterConfigJSON || ctype != "application/json; charset=UTF-8" {
				t.Errorf("%s = %d %s %s", method, status, ctype, body)
			}
		}
	})
}
