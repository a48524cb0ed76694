package promapi

import (
	"strconv"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// lastCases are /api/v1/last requests on the fixture (see fixture) and their
// exact answers.
var lastCases = []apiCase{
	{name: "the newest 3 readings of each series of a host and metric, newest first, series sorted by labels",
		path: "/api/v1/last", query: q("host", "web1", "metric", "cpu", "n", "3"), status: 200,
		body: `{"status":"success","data":[` +
			`{"metric":{"__name__":"cpu","cpu":"0","host":"web1","job":"node"},"values":[[1700005940,"99"],[1700005880,"98"],[1700005820,"97"]]},` +
			`{"metric":{"__name__":"cpu","cpu":"1","host":"web1","job":"node"},"values":[[1700005940,"198"],[1700005880,"196"],[1700005820,"194"]]}]}`},
	{name: "n=55 reaches back over the 23:00 bucket boundary (1700002800) into the 22:00 bucket",
		path: "/api/v1/last", query: q("host", "web1", "metric", "cpu", "n", "55", "match[]", `{cpu="0"}`), status: 200,
		body: `{"status":"success","data":[{"metric":{"__name__":"cpu","cpu":"0","host":"web1","job":"node"},"values":[` + lastValues(99, 45) + `]}]}`},
	{name: "match[] sets are a union", path: "/api/v1/last",
		query: q("host", "web1", "metric", "cpu", "match[]", `{cpu="1"}`, "match[]", `{job="none"}`), status: 200,
		body: `{"status":"success","data":[{"metric":{"__name__":"cpu","cpu":"1","host":"web1","job":"node"},"values":[[1700005940,"198"]]}]}`},
	{name: "n larger than the series returns all of it", path: "/api/v1/last",
		query: q("host", "web1", "metric", "mem", "n", "1000"), status: 200,
		body: `{"status":"success","data":[{"metric":{"__name__":"mem","host":"web1"},"values":[[1700000120,"1e-300"],[1700000060,"NaN"],[1700000000,"0.5"]]}]}`},
	{name: "another host", path: "/api/v1/last", query: q("host", "web2", "metric", "cpu", "n", "2"), status: 200,
		body: `{"status":"success","data":[{"metric":{"__name__":"cpu","cpu":"0","host":"web2","job":"node"},"values":[[1700000540,"109"],[1700000480,"108"]]}]}`},
	{name: "no series is an empty list", path: "/api/v1/last", query: q("host", "web3", "metric", "cpu"), status: 200,
		body: `{"status":"success","data":[]}`},
	{name: "a metric name that is a prefix of another is not mixed up", path: "/api/v1/last", query: q("host", "web1", "metric", "cp"), status: 200,
		body: `{"status":"success","data":[]}`},
	{name: "missing host", path: "/api/v1/last", query: q("metric", "cpu"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"missing parameter \"host\""}`},
	{name: "missing metric", path: "/api/v1/last", query: q("host", "web1"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"missing parameter \"metric\""}`},
	{name: "n not a number", path: "/api/v1/last", query: q("host", "web1", "metric", "cpu", "n", "five"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"n\": \"five\" is not an integer"}`},
	{name: "n zero", path: "/api/v1/last", query: q("host", "web1", "metric", "cpu", "n", "0"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"n\": 0 is not in 1..1000"}`},
	{name: "n over the limit", path: "/api/v1/last", query: q("host", "web1", "metric", "cpu", "n", "1001"), status: 400,
		body: `{"status":"error","errorType":"bad_data","error":"invalid parameter \"n\": 1001 is not in 1..1000"}`},
	{name: "a bad matcher", path: "/api/v1/last", query: q("host", "web1", "metric", "cpu", "match[]", `{cpu=~"("}`), status: 400,
		body: "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"invalid parameter \\\"match[]\\\": 1:2: parse error: error parsing regexp: missing closing ): `(`\"}"},
}

// lastValues are the fixture's cpu{cpu="0",host="web1"} readings i = from down
// to to, as JSON pairs.
func lastValues(from, to int) string {
	s := ""
	for i := from; i >= to; i-- {
		if s != "" {
			s += ","
		}
		s += "[" + strconv.Itoa(t0+60*i) + `,"` + strconv.Itoa(i) + `"]`
	}
	return s
}

func TestLast(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newQueryEnv(t, b, Options{})
			for _, tc := range lastCases {
				for _, post := range []bool{false, true} {
					method := map[bool]string{false: "GET", true: "POST"}[post]
					t.Run(tc.name+"/"+method, func(t *testing.T) {
						status, ctype, body := e.get(t, post, tc.path, tc.query)
						if status != tc.status || body != tc.body {
							t.Errorf("%s %s?%s = %d\n%s\nwant %d\n%s", method, tc.path, tc.query.Encode(), status, body, tc.status, tc.body)
						}
						if ctype != "application/json" {
							t.Errorf("Content-Type %q, want application/json", ctype)
						}
					})
				}
			}
		})
	}
}
