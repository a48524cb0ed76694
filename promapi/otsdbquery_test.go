package promapi

// Tests of OpenTSDB's /api/query (otsdbquery.go) over real HTTP against a real
// db.DB, data written through /api/put: exact answers of the GET m= syntax and
// of POST JSON, and exact 400 bodies. The semantics are tested case by case in
// package opentsdb.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// otsdbGet asks GET /api/query with args and returns the status and body.
func otsdbGet(t testing.TB, base string, args url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/api/query?" + args.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestOpenTSDBQueryAnswersWhatAPIPutStored(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newVMEnv(t, b, write.DefaultLimits(), Options{})
			// An hour-aligned base three hours back, so that the scanned rows
			// (whole hours) hold nothing else.
			bs := e.now.Truncate(time.Hour).Add(-3 * time.Hour).Unix()
			put := func(metric string, ts int64, v float64, tags string) string {
				return fmt.Sprintf(`{"metric":%q,"timestamp":%d,"value":%v,"tags":{%s}}`, metric, ts, v, tags)
			}
			body := "[" + strings.Join([]string{
				put("sys.cpu", bs, 40, `"host":"web01","dc":"eu"`),
				put("sys.cpu", bs+10, 50, `"host":"web01","dc":"eu"`),
				put("sys.cpu", bs+30, 70, `"host":"web01","dc":"eu"`),
				put("sys.cpu", bs+10, 37, `"host":"web02","dc":"eu"`),
				put("sys.cpu", bs+20, 48, `"host":"web02","dc":"eu"`),
				put("sys.cpu", bs+10, 5, `"host":"db01","dc":"us"`),
				put("net.bytes", bs, 100, `"host":"web01"`),
				put("net.bytes", bs+10, 200, `"host":"web01"`),
				put("net.bytes", bs+20, 50, `"host":"web01"`),
				put("net.bytes", bs+30, 150, `"host":"web01"`),
			}, ",") + "]"
			if r := post(t, e.srv.URL+"/api/put", nil, []byte(body)); r.status != 204 {
				t.Fatalf("/api/put: %d %s", r.status, r.body)
			}
			s := func(off int64) string { return fmt.Sprint(bs + off) }
			window := func(m ...string) url.Values {
				return url.Values{"start": {s(0)}, "end": {s(60)}, "m": m}
			}
			cases := []struct {
				name string
				args url.Values
				want string
			}{
				{"sum over dc=eu interpolates web01's 60 at +20s, leaves web02 out outside its points; integers stay integers",
					window("sum:sys.cpu{dc=eu}"),
					`[{"metric":"sys.cpu","tags":{"dc":"eu"},"aggregateTags":["host"],"dps":{"` + s(0) + `":40,"` + s(10) + `":87,"` +
						s(20) + `":108,"` + s(30) + `":70}}]`},
				{"group by dc=* with count, groups in tag-value order",
					window("count:sys.cpu{dc=*}"),
					`[{"metric":"sys.cpu","tags":{"dc":"eu"},"aggregateTags":["host"],"dps":{"` + s(0) + `":1,"` + s(10) + `":2,"` +
						s(20) + `":2,"` + s(30) + `":1}},` +
						`{"metric":"sys.cpu","tags":{"dc":"us","host":"db01"},"aggregateTags":[],"dps":{"` + s(10) + `":1}}]`},
				{"literal_or of two hosts in the group-by braces groups by host, with ms keys",
					url.Values{"start": {s(0)}, "end": {s(15)}, "ms": {""}, "m": {"max:sys.cpu{host=web01|db01}"}},
					`[{"metric":"sys.cpu","tags":{"dc":"us","host":"db01"},"aggregateTags":[],"dps":{"` + s(10) + `000":5}},` +
						`{"metric":"sys.cpu","tags":{"dc":"eu","host":"web01"},"aggregateTags":[],"dps":{"` + s(0) + `000":40,"` + s(10) + `000":50}}]`},
				{"literal_or of two hosts in the filter braces aggregates them",
					url.Values{"start": {s(0)}, "end": {s(15)}, "m": {"max:sys.cpu{}{host=web01|db01}"}},
					`[{"metric":"sys.cpu","tags":{},"aggregateTags":["dc","host"],"dps":{"` + s(0) + `":40,"` + s(10) + `":50}}]`},
				{"wildcard host=web* in the filter braces (no grouping), avg of integers truncated as OpenTSDB's long division",
					window("avg:sys.cpu{}{host=web*}"),
					`[{"metric":"sys.cpu","tags":{"dc":"eu"},"aggregateTags":["host"],"dps":{"` + s(0) + `":40,"` + s(10) + `":43,"` +
						s(20) + `":54,"` + s(30) + `":70}}]`},
				{"20s-sum-zero downsampling fills the empty intervals to the end of the hour row, cut at end",
					url.Values{"start": {s(0)}, "end": {s(80)}, "m": {"sum:20s-sum-zero:sys.cpu{host=web01}"}},
					`[{"metric":"sys.cpu","tags":{"dc":"eu","host":"web01"},"aggregateTags":[],"dps":{"` + s(0) + `":90.0,"` + s(20) + `":70.0,"` +
						s(40) + `":0.0,"` + s(60) + `":0.0,"` + s(80) + `":0.0}}]`},
				{"20s-avg-null writes null for empty intervals",
					url.Values{"start": {s(0)}, "end": {s(40)}, "m": {"sum:20s-avg-null:sys.cpu{host=web01}"}},
					`[{"metric":"sys.cpu","tags":{"dc":"eu","host":"web01"},"aggregateTags":[],"dps":{"` + s(0) + `":45.0,"` + s(20) + `":70.0,"` +
						s(40) + `":null}}]`},
				{"rate, and rate of a counter wrapped at 250",
					url.Values{"start": {s(0)}, "end": {s(60)}, "m": {"sum:rate:net.bytes", "sum:rate{counter,250}:net.bytes"}},
					`[{"metric":"net.bytes","tags":{"host":"web01"},"aggregateTags":[],"dps":{"` + s(10) + `":10.0,"` + s(20) + `":-15.0,"` +
						s(30) + `":10.0}},{"metric":"net.bytes","tags":{"host":"web01"},"aggregateTags":[],"dps":{"` + s(10) + `":10.0,"` +
						s(20) + `":10.0,"` + s(30) + `":10.0}}]`},
				{"no series in the range: an empty array", url.Values{"start": {s(3600)}, "end": {s(3660)}, "m": {"sum:sys.cpu"}}, `[]`},
				{"a metric never written: 400, as OpenTSDB's UID look-up", window("sum:no.such.metric"),
					`{"error":{"code":400,"message":"No such name for 'metrics': 'no.such.metric'","details":"No such name for 'metrics': 'no.such.metric'"}}`},
				{"a tag value never written: 400", window("sum:sys.cpu{host=web01|web99}"),
					`{"error":{"code":400,"message":"No such name for 'tagv': 'web99'","details":"No such name for 'tagv': 'web99'"}}`},
				{"bad aggregator: 400 in OpenTSDB's error JSON", window("total:sys.cpu"),
					`{"error":{"code":400,"message":"No such aggregation function: total"}}`},
				{"bad m: 400", window("sys.cpu"),
					`{"error":{"code":400,"message":"Invalid parameter m=sys.cpu (not enough :-separated parts)"}}`},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					code, got := otsdbGet(t, e.srv.URL, c.args)
					wantCode := 200
					if strings.HasPrefix(c.want, `{"error"`) {
						wantCode = 400
					}
					if code != wantCode || got != c.want {
						t.Fatalf("%d %s\nwant %d %s", code, got, wantCode, c.want)
					}
				})
			}
			t.Run("POST JSON with filters, msResolution and showTSUIDs", func(t *testing.T) {
				q := fmt.Sprintf(`{"start":%d,"end":"%d","msResolution":true,"showTSUIDs":true,"queries":[{"aggregator":"zimsum",
					"metric":"sys.cpu","filters":[{"type":"iliteral_or","tagk":"host","filter":"WEB01|web02","groupBy":false}]}]}`,
					bs, (bs+60)*1000)
				r := post(t, e.srv.URL+"/api/query", nil, []byte(q))
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				prefix := `[{"metric":"sys.cpu","tags":{"dc":"eu"},"aggregateTags":["host"],"tsuids":["`
				suffix := `"],"dps":{"` + s(0) + `000":40,"` + s(10) + `000":87,"` + s(20) + `000":48,"` + s(30) + `000":70}}]`
				if !strings.HasPrefix(r.body, prefix) || !strings.HasSuffix(r.body, suffix) {
					t.Fatalf("body %s\nwant %s<2 ids>%s", r.body, prefix, suffix)
				}
				ids := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.body, prefix), suffix), `","`)
				if len(ids) != 2 || len(ids[0]) != 16 || len(ids[1]) != 16 || ids[0] >= ids[1] {
					t.Fatalf("tsuids %q, want two sorted 16-digit hex series IDs", ids)
				}
			})
			t.Run("tsuid= and tsuids sub-queries aggregate exactly the series named", func(t *testing.T) {
				// Each series' tsuid, as show_tsuids answers it.
				id := func(m string) string {
					t.Helper()
					code, body := otsdbGet(t, e.srv.URL, url.Values{"start": {s(0)}, "end": {s(60)}, "m": {m}, "show_tsuids": {""}})
					var groups []struct{ TSUIDs []string }
					if err := json.Unmarshal([]byte(body), &groups); code != 200 || err != nil || len(groups) != 1 || len(groups[0].TSUIDs) != 1 {
						t.Fatalf("%s with show_tsuids: %d %s (%v), want one group of one series", m, code, body, err)
					}
					return groups[0].TSUIDs[0]
				}
				web01, web02, db01, net := id("sum:sys.cpu{host=web01}"), id("sum:sys.cpu{host=web02}"),
					id("sum:sys.cpu{host=db01}"), id("sum:net.bytes")
				for _, c := range []struct {
					name   string
					args   url.Values
					status int
					want   string
				}{
					{"web01 and web02 summed: the answer of sum:sys.cpu{dc=eu}",
						url.Values{"tsuid": {"sum:" + web01 + "," + web02}}, 200, `[{"metric":"sys.cpu","tags":{"dc":"eu"},"aggregateTags":["host"],"dps":{"` + s(0) + `":40,"` +
							s(10) + `":87,"` + s(20) + `":108,"` + s(30) + `":70}}]`},
					{"web01 and db01, one group whatever their tags, a tsuid given twice counted once",
						url.Values{"tsuid": {"max:" + web01 + "," + strings.ToLower(db01) + "," + web01}}, 200,
						`[{"metric":"sys.cpu","tags":{},"aggregateTags":["dc","host"],"dps":{"` + s(0) + `":40,"` +
							s(10) + `":50,"` + s(30) + `":70}}]`},
					{"a rate, and tsuid= answered before m=",
						url.Values{"m": {"sum:sys.cpu{host=db01}"}, "tsuid": {"sum:rate:" + net}}, 200,
						`[{"metric":"net.bytes","tags":{"host":"web01"},"aggregateTags":[],"dps":{"` + s(10) + `":10.0,"` + s(20) + `":-15.0,"` +
							s(30) + `":10.0}},{"metric":"sys.cpu","tags":{"dc":"us","host":"db01"},"aggregateTags":[],"dps":{"` + s(10) + `":5}}]`},
					{"an ID that names no series: no group", url.Values{"tsuid": {"sum:00000000000000FF"}}, 200, `[]`},
					{"two metrics: 400, as TsdbQuery", url.Values{"tsuid": {"sum:" + web01 + "," + net}}, 400,
						`{"error":{"code":400,"message":"One or more TSUIDs did not share the same metric [sys.cpu] [net.bytes]"}}`},
					{"OpenTSDB's own tsuids name no series here", url.Values{"tsuid": {"sum:000001000001000001"}}, 400,
						`{"error":{"code":400,"message":"tsuid \"000001000001000001\" is not an hbtsdb series ID: hbtsdb's tsuids are 16 hex digits, ` +
							`as show_tsuids, /api/search/lookup and /api/query/last answer them; OpenTSDB's own tsuids name no series here, ` +
							`query by metric and tags instead"}}`},
					{"not hex", url.Values{"tsuid": {"sum:web01"}}, 400,
						`{"error":{"code":400,"message":"tsuid \"web01\" is not an hbtsdb series ID: it must be 16 hex digits"}}`},
					{"empty", url.Values{"tsuid": {""}}, 400, `{"error":{"code":400,"message":"The tsuid query string was empty"}}`},
					{"no aggregator", url.Values{"tsuid": {web01}}, 400,
						`{"error":{"code":400,"message":"Invalid parameter m=` + web01 + ` (not enough :-separated parts)"}}`},
				} {
					args := c.args
					args.Set("start", s(0))
					args.Set("end", s(60))
					if code, got := otsdbGet(t, e.srv.URL, args); code != c.status || got != c.want {
						t.Errorf("%s: GET %s = %d %s\nwant %d %s", c.name, args.Encode(), code, got, c.status, c.want)
					}
				}
				q := fmt.Sprintf(`{"start":%d,"end":%d,"queries":[{"aggregator":"sum","metric":"net.bytes","tsuids":[%q]}]}`, bs, bs+60, web02)
				want := `[{"metric":"sys.cpu","tags":{"dc":"eu","host":"web02"},"aggregateTags":[],"dps":{"` + s(10) + `":37,"` + s(20) + `":48}}]`
				if r := post(t, e.srv.URL+"/api/query", nil, []byte(q)); r.status != 200 || r.body != want {
					t.Errorf("POST %s = %d %s\nwant 200 %s (tsuids take precedence over the metric)", q, r.status, r.body, want)
				}
			})
			t.Run("POST of bad JSON: 400", func(t *testing.T) {
				r := post(t, e.srv.URL+"/api/query", nil, []byte(`{"start":`))
				want := `{"error":{"code":400,"message":"Unable to parse the given JSON","details":"unexpected end of JSON input"}}`
				if r.status != 400 || r.body != want {
					t.Fatalf("%d %s, want 400 %s", r.status, r.body, want)
				}
			})
		})
	}
}

func TestOpenTSDBQueryBoundsAreItsOptions(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(),
		Options{OpenTSDBQuery: OpenTSDBQueryOptions{MaxBodyBytes: 64, MaxSubQueries: 1}})
	code, body := otsdbGet(t, e.srv.URL, url.Values{"start": {"1h-ago"}, "m": {"sum:a", "sum:b"}})
	want := `{"error":{"code":400,"message":"2 sub queries, over the limit of 1 (--opentsdb.query.max-sub-queries)"}}`
	if code != 400 || body != want {
		t.Errorf("%d %s, want 400 %s", code, body, want)
	}
	r := post(t, e.srv.URL+"/api/query", nil, []byte(`{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"a_long_metric_name"}]}`))
	want = `{"error":{"code":413,"message":"request body over 64 bytes (--opentsdb.query.max-body-bytes)"}}`
	if r.status != 413 || r.body != want {
		t.Errorf("%d %s, want 413 %s", r.status, r.body, want)
	}
	e = newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{OpenTSDBQuery: OpenTSDBQueryOptions{MaxFillIntervals: 3599}})
	code, body = otsdbGet(t, e.srv.URL, url.Values{"start": {"1356998400"}, "end": {"1356998401"}, "m": {"sum:1s-sum-zero:m"}})
	want = `{"error":{"code":400,"message":"a filling downsampler emits 3600 intervals per series over this range, ` +
		`over the limit of 3599 (--opentsdb.query.max-fill-intervals): use a longer interval or fill policy none"}}`
	if code != 400 || body != want {
		t.Errorf("%d %s, want 400 %s", code, body, want)
	}
	if err := (OpenTSDBQueryOptions{MaxBodyBytes: -1}).Validate(); err == nil ||
		err.Error() != "promapi: OpenTSDBQueryOptions.MaxBodyBytes must not be negative (0 takes the default), got -1" {
		t.Errorf("Validate: %v", err)
	}
}

// TestOpenTSDBQueryLeavesOutStalenessMarkers: a remote-written series ends
// with Prometheus' staleness marker, which /api/query leaves out rather than
// answering "NaN".
func TestOpenTSDBQueryLeavesOutStalenessMarkers(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{})
	bs := e.now.Truncate(time.Hour).Add(-2 * time.Hour)
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{v1Series(labels.FromStrings("__name__", "up", "host", "a"),
		prompb.Sample{Timestamp: bs.UnixMilli(), Value: 1}, prompb.Sample{Timestamp: bs.UnixMilli() + 15000, Value: 0},
		prompb.Sample{Timestamp: bs.UnixMilli() + 30000, Value: math.Float64frombits(value.StaleNaN)})}}
	if r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, req)); r.status != 204 {
		t.Fatalf("remote write: %d %s", r.status, r.body)
	}
	code, body := otsdbGet(t, e.srv.URL, url.Values{"start": {fmt.Sprint(bs.Unix())}, "end": {fmt.Sprint(bs.Unix() + 60)}, "m": {"sum:up"}})
	want := fmt.Sprintf(`[{"metric":"up","tags":{"host":"a"},"aggregateTags":[],"dps":{"%d":1,"%d":0}}]`, bs.Unix(), bs.Unix()+15)
	if code != 200 || body != want {
		t.Fatalf("%d %s\nwant 200 %s", code, body, want)
	}
}
