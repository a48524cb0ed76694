package promapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// compareDatapoint is one datapoint put into OpenTSDB and hbtsdb alike. value
// is its JSON text: an integer ("5") is a long to OpenTSDB, anything with a
// '.' a float.
type compareDatapoint struct {
	metric string
	ts     int64 // seconds, or milliseconds when ms
	ms     bool
	value  string
	tags   map[string]string
}

// putBodies is the /api/put bodies of points, at most per datapoints each.
func putBodies(points []compareDatapoint, per int) []string {
	var bodies []string
	for len(points) > 0 {
		n := min(per, len(points))
		parts := make([]string, n)
		for i, p := range points[:n] {
			tags, _ := json.Marshal(p.tags)
			parts[i] = fmt.Sprintf(`{"metric":%q,"timestamp":%d,"value":%s,"tags":%s}`, p.metric, p.ts, p.value, tags)
		}
		bodies = append(bodies, "["+strings.Join(parts, ",")+"]")
		points = points[n:]
	}
	return bodies
}

// queryDataset is what the /api/query comparison asks about, from base
// (seconds, an hour's start) on: gauges whose series have different
// timestamps (so that aggregation interpolates), seconds and milliseconds,
// integers and floats, negative values and gaps; counters with resets and a
// wrap; a series mixing integers and floats. Its floats have fractions
// (and fit a float32, as OpenTSDB stores them) but for q.floatint's, whose
// integral values ("2.0") hbtsdb cannot tell from integers (opentsdb/doc.go).
func queryDataset(base int64) []compareDatapoint {
	var out []compareDatapoint
	add := func(metric string, tags map[string]string, ts int64, ms bool, value string) {
		out = append(out, compareDatapoint{metric: metric, ts: ts, ms: ms, value: value, tags: tags})
	}
	float := func(v float64) string {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	}
	// q.cpu: six series, gauges.
	web01 := map[string]string{"host": "web01", "dc": "eu", "cpu": "0"}
	for i := range int64(720) { // every 10 s for 2 h, integers (some negative)
		add("q.cpu", web01, base+10*i, false, strconv.FormatInt((i*7)%23-5, 10))
	}
	web02 := map[string]string{"host": "web02", "dc": "eu", "cpu": "0"}
	for i := range int64(480) { // every 15 s from 5 s on, floats
		add("q.cpu", web02, base+15*i+5, false, float(0.25*float64((i*5)%37)+0.375))
	}
	db01 := map[string]string{"host": "db01", "dc": "us", "cpu": "1"}
	for i := range int64(120) { // every minute at :30, a 15-minute gap
		if i >= 40 && i < 55 {
			continue
		}
		add("q.cpu", db01, base+60*i+30, false, float(10.625+1.25*float64(i%7)))
	}
	web03 := map[string]string{"host": "Web03", "dc": "us", "cpu": "1"}
	for i := range int64(1000) { // every 7 s, in milliseconds, integers
		add("q.cpu", web03, (base+7*i)*1000+250+(i%3)*111, true, strconv.FormatInt((i%50)*2, 10))
	}
	web04 := map[string]string{"host": "web04", "dc": "eu"} // no cpu tag
	for i := range int64(180) {
		add("q.cpu", web04, base+3600+20*i, false, strconv.FormatInt(i%9, 10))
	}
	web01ap := map[string]string{"host": "web01", "dc": "ap", "cpu": "2", "env": "prod"}
	for i := range int64(24) { // every 5 minutes at :07
		add("q.cpu", web01ap, base+300*i+7, false, float(float64(i)*1.5-3.25))
	}

	// q.requests: counters.
	c1 := map[string]string{"host": "web01", "path": "/a"}
	v := int64(0)
	for i := range int64(720) { // integer counter, reset at 200 and 500
		if i == 200 || i == 500 {
			v = i % 7
		}
		v += i%5 + 1
		add("q.requests", c1, base+10*i, false, strconv.FormatInt(v, 10))
	}
	c2 := map[string]string{"host": "web02", "path": "/a"}
	f := 0.125
	for i := range int64(240) { // float counter, reset at 100
		if i == 100 {
			f = 0.375
		}
		f += 0.5 + float64(i%3)*0.25
		add("q.requests", c2, base+30*i+3, false, float(f))
	}
	c3 := map[string]string{"host": "web01", "path": "/b"}
	for i := range int64(360) { // wraps at 1000
		add("q.requests", c3, base+20*i+1, false, strconv.FormatInt((i*37)%1000, 10))
	}

	// q.mixed: integers and floats in one series, and an integer series.
	for i := range int64(180) {
		value := strconv.FormatInt(i%11, 10)
		if i%2 == 1 {
			value = float(float64(i%11) + 0.5)
		}
		add("q.mixed", map[string]string{"host": "web01"}, base+20*i, false, value)
		add("q.mixed", map[string]string{"host": "web02"}, base+30*i+10, false, strconv.FormatInt(i%13, 10))
	}

	// q.floatint: floats with integral values ("2.0"), which OpenTSDB keeps as
	// floats and hbtsdb takes for integers.
	for i := range int64(60) {
		add("q.floatint", map[string]string{"host": "a"}, base+60*i, false, float(float64(i%4)))
		add("q.floatint", map[string]string{"host": "b"}, base+60*i+30, false, float(float64(i%5)))
	}
	return out
}
