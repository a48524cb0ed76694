package promapi

// Tests of the VictoriaMetrics-compatible endpoints (vmroutes.go) over real HTTP
// against a real db.DB on both backends: every bad input with its exact answer
// and no cell written, what an import stores, and export -> import round trips.
// vmctl itself drives them in e2e/vmctl_test.go.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// vmEnv is the router over a real db.DB on a fresh store, the DB's clock frozen.
type vmEnv struct {
	*env
	db *db.DB
}

func newVMEnv(t testing.TB, b schematest.Backend, limits write.Limits, opts Options) *vmEnv {
	t.Helper()
	return newVMEnvWith(t, b, db.Options{Write: write.Options{Limits: limits}}, opts)
}

// newVMEnvWith is newVMEnv with the DB's options dbOpts (its store, settings,
// logger and clock set here).
func newVMEnvWith(t testing.TB, b schematest.Backend, dbOpts db.Options, opts Options) *vmEnv {
	t.Helper()
	st := b.Store(t)
	now := time.Now().Truncate(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbOpts.Store, dbOpts.Settings, dbOpts.Logger, dbOpts.Now = st, b.Settings, slog.New(slog.DiscardHandler), func() time.Time { return now }
	d, err := db.Open(ctx, dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	opts.DB, opts.Logger = StaticDB(d), slog.New(slog.DiscardHandler)
	srv := httptest.NewServer(mustRouter(t, opts))
	t.Cleanup(srv.Close)
	return &vmEnv{env: &env{srv: srv, st: st, settings: b.Settings, now: now}, db: d}
}

// export asks /api/v1/export with args and returns the status and body.
func (e *vmEnv) export(t testing.TB, args url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(e.srv.URL + "/api/v1/export?" + args.Encode())
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

func everything() url.Values { return url.Values{"match[]": {`{__name__=~".+"}`}} }

func TestVMHealthAnswersOK(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{})
	resp, err := http.Get(e.srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "OK" {
		t.Fatalf("GET /health = %d %q, want 200 \"OK\"", resp.StatusCode, b)
	}
}

func TestVMImportRefusesBadInputWholeNamingTheLine(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newVMEnv(t, b, testLimits, Options{WriteLimits: testHTTPLimits})
			ms := e.now.Add(-time.Hour).UnixMilli()
			good := fmt.Sprintf(`{"metric":{"__name__":"up","job":"a"},"values":[1],"timestamps":[%d]}`, ms)
			line := func(metric, values, timestamps string) string {
				return fmt.Sprintf(`{"metric":%s,"values":%s,"timestamps":%s}`, metric, values, timestamps)
			}
			ts := fmt.Sprint(ms)
			tooOld := e.now.Add(-25 * time.Hour).UnixMilli()
			for _, tc := range []struct {
				name   string
				path   string
				header map[string]string
				body   []byte
				status int
				want   string
			}{
				{name: "bad JSON on line 3", body: []byte(good + "\n\n{\"metric\":{\"__name__\":\"up\"},\"values\":[1],\n"), status: 400,
					want: "invalid write request: line 3: cannot parse json line: cannot parse JSON: cannot parse object: cannot find opening '\"\" for object key; unparsed tail: \"\"\n"},
				{name: "values and timestamps of different lengths", body: []byte(good + "\n" + line(`{"__name__":"up"}`, "[1,2,3]", "["+ts+","+ts+"]")), status: 400,
					want: "invalid write request: line 2: `timestamps` array size must match `values` array size; got 2; want 3\n"},
				{name: "NaN as a timestamp", body: []byte(line(`{"__name__":"up"}`, "[1]", "[NaN]")), status: 400,
					want: "invalid write request: line 1: cannot unmarshal timestamp at position 0: cannot parse int64 from \"NaN\"\n"},
				{name: "a fraction as a timestamp", body: []byte(line(`{"__name__":"up"}`, "[1,2]", "["+ts+",1.5]")), status: 400,
					want: "invalid write request: line 1: cannot unmarshal timestamp at position 1: unparsed tail left after parsing int64 form \"1.5\": \".5\"\n"},
				{name: "a string that is no number as a value", body: []byte(line(`{"__name__":"up"}`, `[1,"one"]`, "["+ts+","+ts+"]")), status: 400,
					want: "invalid write request: line 1: cannot unmarshal value at position 1: unsupported string: \"one\"\n"},
				{name: "an object as a value", body: []byte(line(`{"__name__":"up"}`, `[{}]`, "["+ts+"]")), status: 400,
					want: "invalid write request: line 1: cannot unmarshal value at position 0: unsupported value type: object; value=\"{}\"\n"},
				{name: "no labels", body: []byte(line(`{}`, "[1]", "["+ts+"]")), status: 400,
					want: "invalid write request: line 1: missing tags\n"},
				{name: "no metric object", body: []byte(`{"values":[1],"timestamps":[` + ts + `]}`), status: 400,
					want: "invalid write request: line 1: missing `metric` object\n"},
				{name: "a number as a label value", body: []byte(line(`{"__name__":"up","port":9100}`, "[1]", "["+ts+"]")), status: 400,
					want: "invalid write request: line 1: cannot unmarshal `metric`: cannot parse value for tag \"port\": value doesn't contain string; it contains number\n"},
				{name: "no values", body: []byte(line(`{"__name__":"up"}`, "[]", "["+ts+"]")), status: 400,
					want: "invalid write request: line 1: missing `values` array\n"},
				{name: "no timestamps", body: []byte(`{"metric":{"__name__":"up"},"values":[1]}`), status: 400,
					want: "invalid write request: line 1: missing `timestamps` array\n"},
				{name: "an empty label name", body: []byte(good + "\n" + line(`{"__name__":"up","":"x"}`, "[1]", "["+ts+"]")), status: 400,
					want: "invalid write request: 1 samples rejected: line 2: label name \"\" is empty in series {\"\"=\"x\", __name__=\"up\"}; nothing of the request was written\n"},
				{name: "no metric name", body: []byte(line(`{"job":"x"}`, "[1]", "["+ts+"]")), status: 400,
					want: "invalid write request: 1 samples rejected: line 1: metric name (label __name__) is missing in series {job=\"x\"}; nothing of the request was written\n"},
				{name: "a sample older than the max age", body: []byte(good + "\n" + line(`{"__name__":"up","job":"b"}`, "[1,2]", fmt.Sprintf("[%d,%d]", ms, tooOld))), status: 400,
					want: fmt.Sprintf("invalid write request: 1 samples rejected: line 2: timestamp %d (%s) is older than the max age of 1d (before %s) in series {__name__=\"up\", job=\"b\"}; nothing of the request was written\n",
						tooOld, time.UnixMilli(tooOld).UTC().Format(time.RFC3339Nano), e.now.Add(-24*time.Hour).UTC().Format(time.RFC3339Nano))},
				{name: "a body that is not gzip", header: map[string]string{"Content-Encoding": "gzip"}, body: []byte(good), status: 400,
					want: "invalid write request: body is not gzip-compressed: gzip: invalid header\n"},
				{name: "a cut gzip body", header: map[string]string{"Content-Encoding": "gzip"}, body: gzipped(t, good)[:20], status: 400,
					want: "invalid write request: body is not valid gzip: unexpected EOF\n"},
				{name: "zstd", header: map[string]string{"Content-Encoding": "zstd"}, body: []byte(good), status: 415,
					want: "unsupported media type: Content-Encoding \"zstd\" is not accepted; /api/v1/import takes gzip or none\n"},
				{name: "an empty body", body: nil, status: 400, want: "invalid write request: empty request body\n"},
				{name: "a body over --write.max-body-bytes", body: []byte(strings.Repeat(good+"\n", 1000)), status: 413,
					want: "request body too large: Content-Length 81000 bytes is over the limit of 65536 bytes (--write.max-body-bytes)\n"},
				{name: "more samples than --write.max-samples-per-request", body: []byte(line(`{"__name__":"up"}`, "["+strings.Repeat("1,", 20)+"1]", "["+strings.Repeat(ts+",", 20)+ts+"]")), status: 400,
					want: "invalid write request: 21 samples in the request, over the limit of 20\n"},
				{name: "text format: a line without a value", path: "/api/v1/import/prometheus", body: []byte("# HELP up Up.\nup 1\nup{job=\"a\"}\n"), status: 400,
					want: "invalid write request: line 3: expected value after metric, got \"\\n\" (\"INVALID\") while parsing: \"up{job=\\\"a\\\"}\\n\"\n"},
				{name: "text format: a timestamp argument that is no integer", path: "/api/v1/import/prometheus?timestamp=1.5", body: []byte("up 1\n"), status: 400,
					want: "invalid write request: cannot parse `timestamp=1.5` query arg: strconv.ParseInt: parsing \"1.5\": invalid syntax\n"},
				{name: "text format: a sample older than the max age", path: "/api/v1/import/prometheus", body: []byte(fmt.Sprintf("up 1 %d\n# c\nup{job=\"x\"} 2 %d\n", ms, tooOld)), status: 400,
					want: fmt.Sprintf("invalid write request: 1 samples rejected: line 3: timestamp %d (%s) is older than the max age of 1d (before %s) in series {__name__=\"up\", job=\"x\"}; nothing of the request was written\n",
						tooOld, time.UnixMilli(tooOld).UTC().Format(time.RFC3339Nano), e.now.Add(-24*time.Hour).UTC().Format(time.RFC3339Nano))},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before := e.cells(t)
					path := tc.path
					if path == "" {
						path = "/api/v1/import"
					}
					resp := post(t, e.srv.URL+path, tc.header, tc.body)
					if resp.status != tc.status || resp.body != tc.want {
						t.Errorf("got %d %q\nwant %d %q", resp.status, resp.body, tc.status, tc.want)
					}
					if after := e.cells(t); after != before {
						t.Errorf("%d cells before, %d after: a refused request wrote", before, after)
					}
				})
			}
		})
	}
}

// TestVMImportStoresWhatVictoriaMetricsWould: every value form VictoriaMetrics
// reads, NaNs skipped as it skips them, and the export of it, exactly.
func TestVMImportStoresWhatVictoriaMetricsWould(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newVMEnv(t, b, write.DefaultLimits(), Options{})
			t0 := e.now.Add(-time.Hour).UnixMilli()
			ts := func(n int) string {
				s := make([]string, n)
				for i := range s {
					s[i] = fmt.Sprint(t0 + int64(i)*1000)
				}
				return "[" + strings.Join(s, ",") + "]"
			}
			// As vmctl writes lines (fmt's %v: bare NaN and +Inf), and as
			// VictoriaMetrics' export does (null, "Infinity").
			body := fmt.Sprintf(`{"metric":{"__name__":"a","job":"x\"y"},"timestamps":%s,"values":[1,NaN,+Inf,-Inf,0.1,-0,5e-324]}`+"\r\n"+
				"\n"+
				`{"metric":{"job":"z","__name__":"b"},"values":[null,"Infinity","-inf","NaN","Null",1e308,"-Inf"],"timestamps":%s,"other":{"ignored":[1]}}`+"\n"+
				`{"metric":{"__name__":"c"},"values":[null],"timestamps":[%d]}`,
				ts(7), ts(7), t0)
			resp := post(t, e.srv.URL+"/api/v1/import", map[string]string{"Content-Encoding": "gzip"}, gzipped(t, body))
			if resp.status != http.StatusNoContent || resp.body != "" {
				t.Fatalf("import = %d %q, want 204", resp.status, resp.body)
			}
			inf, ninf := math.Inf(1), math.Inf(-1)
			want := map[string][]cellenc.Sample{
				`{__name__="a", job="x\"y"}`: {{T: t0, V: 1}, {T: t0 + 2000, V: inf}, {T: t0 + 3000, V: ninf}, {T: t0 + 4000, V: 0.1},
					{T: t0 + 5000, V: math.Copysign(0, -1)}, {T: t0 + 6000, V: 5e-324}},
				`{__name__="b", job="z"}`: {{T: t0 + 1000, V: inf}, {T: t0 + 2000, V: ninf}, {T: t0 + 5000, V: 1e308}, {T: t0 + 6000, V: ninf}},
			}
			got := e.stored(t)
			if len(got) != len(want) {
				t.Fatalf("stored %v, want %v", got, want)
			}
			for k, w := range want {
				if !sameSamples(got[k], w) {
					t.Errorf("%s: stored %v, want %v", k, got[k], w)
				}
			}
			status, out := e.export(t, everything())
			wantOut := fmt.Sprintf(`{"metric":{"__name__":"a","job":"x\"y"},"values":[1,"Infinity","-Infinity",0.1,-0,5e-324],"timestamps":[%d,%d,%d,%d,%d,%d]}`+"\n"+
				`{"metric":{"__name__":"b","job":"z"},"values":["Infinity","-Infinity",1e+308,"-Infinity"],"timestamps":[%d,%d,%d,%d]}`+"\n",
				t0, t0+2000, t0+3000, t0+4000, t0+5000, t0+6000, t0+1000, t0+2000, t0+5000, t0+6000)
			if status != http.StatusOK || out != wantOut {
				t.Fatalf("export = %d\n%s\nwant 200\n%s", status, out, wantOut)
			}
		})
	}
}

// TestVMImportPrometheusTextUsesTheTimestampArgument: samples without a
// timestamp get ?timestamp=, those with one keep theirs; HELP, TYPE and
// comments store nothing.
func TestVMImportPrometheusTextUsesTheTimestampArgument(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{})
	t0 := e.now.Add(-time.Hour).UnixMilli()
	body := fmt.Sprintf("# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\n"+
		"http_requests_total{code=\"200\",path=\"/a b\"} 1027\n"+
		"http_requests_total{code=\"500\",path=\"/a b\"} 3 %d\n"+
		"# a comment\n\nup NaN\nhttp_requests_total{code=\"200\",path=\"/a b\"} 1028 %d\n", t0-1000, t0+1000)
	resp := post(t, e.srv.URL+fmt.Sprintf("/api/v1/import/prometheus?timestamp=%d", t0), nil, []byte(body))
	if resp.status != http.StatusNoContent {
		t.Fatalf("import = %d %q, want 204", resp.status, resp.body)
	}
	want := map[string][]cellenc.Sample{
		`{__name__="http_requests_total", code="200", path="/a b"}`: {{T: t0, V: 1027}, {T: t0 + 1000, V: 1028}},
		`{__name__="http_requests_total", code="500", path="/a b"}`: {{T: t0 - 1000, V: 3}},
	}
	got := e.stored(t)
	if len(got) != len(want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	for k, w := range want {
		if !sameSamples(got[k], w) {
			t.Errorf("%s: stored %v, want %v", k, got[k], w)
		}
	}
}

// TestVMExportImportRoundTripsBitForBit: what one store exports, imported into
// a fresh store, exports the same bytes, over several lines per series.
func TestVMExportImportRoundTripsBitForBit(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			src := newVMEnv(t, b, write.DefaultLimits(), Options{Export: ExportOptions{MaxSamplesPerLine: 7}})
			t0 := src.now.Add(-3 * time.Hour).UnixMilli()
			req := &write.Request{}
			for s := range 5 {
				ser := write.Series{Labels: ls("__name__", "m", "i", fmt.Sprint(s), "esc", "q\"\\\n\x01ü")}
				for i := range 50 {
					v := math.Float64frombits(uint64(0x3ff0000000000000 + s*1_000_003 + i*7_919_191))
					if i%10 == 3 {
						v = -v * 1e-200
					}
					ser.Samples = append(ser.Samples, cellenc.Sample{T: t0 + int64(i)*60_000 + int64(s), V: v})
				}
				req.Series = append(req.Series, ser)
			}
			if res, err := src.db.Write(context.Background(), req); err != nil || len(res.Rejected) > 0 {
				t.Fatalf("write: %v %v", err, res.Rejected)
			}
			status, first := src.export(t, everything())
			if status != http.StatusOK || strings.Count(first, "\n") != 5*8 {
				t.Fatalf("export = %d with %d lines, want 200 with 40 (50 samples at 7 a line, 5 series):\n%s", status, strings.Count(first, "\n"), first)
			}
			dst := newVMEnv(t, b, write.DefaultLimits(), Options{Export: ExportOptions{MaxSamplesPerLine: 7}})
			if resp := post(t, dst.srv.URL+"/api/v1/import", nil, []byte(first)); resp.status != http.StatusNoContent {
				t.Fatalf("import = %d %q", resp.status, resp.body)
			}
			if _, again := dst.export(t, everything()); again != first {
				t.Fatalf("the second export differs from the first:\n%s\nfirst:\n%s", again, first)
			}
			got, want := dst.stored(t), src.stored(t)
			for k, w := range want {
				if !sameSamples(got[k], w) {
					t.Errorf("%s: %v after the round trip, want %v", k, got[k], w)
				}
			}
			// A time range and several match[], max_rows_per_line.
			args := url.Values{"match[]": {`m{i="1"}`, `m{i=~"[13]"}`}, "start": {fmt.Sprintf("%.3f", float64(t0+60_000)/1000)},
				"end": {time.UnixMilli(t0 + 2*60_000 + 1).UTC().Format(time.RFC3339Nano)}, "max_rows_per_line": {"1"}}
			status, out := src.export(t, args)
			esc := `"esc":"q\"\\\n\u0001ü"`
			wantOut := fmt.Sprintf(`{"metric":{"__name__":"m",%s,"i":"1"},"values":[%s],"timestamps":[%d]}`+"\n"+
				`{"metric":{"__name__":"m",%s,"i":"1"},"values":[%s],"timestamps":[%d]}`+"\n"+
				`{"metric":{"__name__":"m",%s,"i":"3"},"values":[%s],"timestamps":[%d]}`+"\n",
				esc, fmtValue(req.Series[1].Samples[1].V), t0+60_000+1, esc, fmtValue(req.Series[1].Samples[2].V), t0+120_000+1,
				esc, fmtValue(req.Series[3].Samples[1].V), t0+60_000+3)
			if status != http.StatusOK || out != wantOut {
				t.Fatalf("export %v = %d\n%s\nwant\n%s", args, status, out, wantOut)
			}
		})
	}
}

func fmtValue(v float64) string { return string(appendExportValue(nil, v)) }

func TestVMExportRefusesBadArguments(t *testing.T) {
	e := newVMEnv(t, schematest.Backends()[0], write.DefaultLimits(), Options{})
	for _, tc := range []struct {
		args url.Values
		want string
	}{
		{url.Values{}, "missing `match[]` arg\n"},
		{url.Values{"match[]": {"up{"}}, "cannot parse `match[]=up{`: 1:4: parse error: unexpected end of input inside braces\n"},
		{url.Values{"match[]": {"up"}, "start": {"yesterday"}}, "cannot parse `start=yesterday`: neither Unix seconds nor RFC 3339\n"},
		{url.Values{"match[]": {"up"}, "start": {"20"}, "end": {"10"}}, "`start` (20000 ms) is after `end` (10000 ms)\n"},
		{url.Values{"match[]": {"up"}, "max_rows_per_line": {"-1"}}, "cannot parse `max_rows_per_line=-1`: not a non-negative integer\n"},
	} {
		status, body := e.export(t, tc.args)
		if status != http.StatusBadRequest || body != tc.want {
			t.Errorf("export %v = %d %q, want 400 %q", tc.args, status, body, tc.want)
		}
	}
}

func TestVMEndpointsRunUnderTheirJobs(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/import": kv.JobIngest, "/api/v1/import/prometheus": kv.JobIngest, "/api/v1/export": kv.JobQuery, "/health": "",
	} {
		if got := jobOfRoute(path); got != want {
			t.Errorf("jobOfRoute(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestVMExportOverTheSelectLimitIs422: an export is one Select, bounded by
// --query.max-series before anything is written.
func TestVMExportOverTheSelectLimitIs422(t *testing.T) {
	e := newVMEnvWith(t, schematest.Backends()[0], db.Options{Query: query.Options{MaxSeries: 1}}, Options{})
	ms := e.now.Add(-time.Hour).UnixMilli()
	body := fmt.Sprintf(`{"metric":{"__name__":"a","i":"1"},"values":[1],"timestamps":[%d]}`+"\n"+
		`{"metric":{"__name__":"a","i":"2"},"values":[2],"timestamps":[%d]}`, ms, ms)
	if resp := post(t, e.srv.URL+"/api/v1/import", nil, []byte(body)); resp.status != http.StatusNoContent {
		t.Fatalf("import = %d %q", resp.status, resp.body)
	}
	status, out := e.export(t, url.Values{"match[]": {"a"}})
	const want = "query: 2 series match {__name__=\"a\"}, more than the limit of 1: too many series: query limit exceeded\n"
	if status != http.StatusUnprocessableEntity || out != want {
		t.Fatalf("export = %d %q, want 422 %q", status, out, want)
	}
	if status, out := e.export(t, url.Values{"match[]": {`a{i="2"}`}}); status != http.StatusOK || !strings.Contains(out, `"i":"2"`) {
		t.Fatalf("export of one series = %d %q, want 200 with it", status, out)
	}
}
