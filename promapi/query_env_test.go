package promapi

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// t0 is the first sample of the query fixture, 2023-11-14T22:13:20Z, in seconds.
const t0 = 1700000000

// queryEnv is the router over a real db.DB (written through its write pipeline,
// read through its Prometheus Querier and its Reader) on a fresh store.
type queryEnv struct {
	srv *httptest.Server
	db  *db.DB
}

// newQueryEnv opens a db.DB on a fresh store of b, writes the fixture (see
// fixture) and serves it with opts (Queryable, Reader and Logger are set here).
// The raw retention is off so that samples of 2023 stay visible.
func newQueryEnv(t testing.TB, b schematest.Backend, opts Options) *queryEnv {
	t.Helper()
	b.TableOptions.RawRetention = 0
	st := b.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := db.Open(ctx, db.Options{Store: st, Settings: b.Settings, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	res, err := d.Write(ctx, fixture())
	if err != nil || len(res.Rejected) > 0 {
		t.Fatalf("write the fixture: %v %+v", err, res.Rejected)
	}
	opts.DB, opts.Logger = StaticDB(d), slog.New(slog.DiscardHandler)
	srv := httptest.NewServer(mustRouter(t, opts))
	t.Cleanup(srv.Close)
	return &queryEnv{srv: srv, db: d}
}

// fixture is the data every query test reads:
//
//	cpu{host="web1",cpu="0",job="node"}  value i at t0+60i s, i = 0..99 (crosses the 23:00 and 00:00 buckets)
//	cpu{host="web1",cpu="1",job="node"}  value 2i at t0+60i s, i = 0..99
//	cpu{host="web2",cpu="0",job="node"}  value 100+i at t0+60i s, i = 0..9
//	mem{host="web1"}                     value 0.5 at t0, NaN at t0+60 s (bit-exact), 1e-300 at t0+120 s
//
// with metadata for cpu (counter) and mem (gauge, unit bytes).
func fixture() *write.Request {
	series := func(n int, f func(i int) float64, pairs ...string) write.Series {
		s := write.Series{Labels: ls(pairs...)}
		for i := range n {
			s.Samples = append(s.Samples, cellenc.Sample{T: (t0 + 60*int64(i)) * 1000, V: f(i)})
		}
		return s
	}
	mem := write.Series{Labels: ls("__name__", "mem", "host", "web1"), Samples: []cellenc.Sample{
		{T: t0 * 1000, V: 0.5}, {T: (t0 + 60) * 1000, V: nan()}, {T: (t0 + 120) * 1000, V: 1e-300}}}
	return &write.Request{
		Series: []write.Series{
			series(100, func(i int) float64 { return float64(i) }, "__name__", "cpu", "host", "web1", "cpu", "0", "job", "node"),
			series(100, func(i int) float64 { return float64(2 * i) }, "__name__", "cpu", "host", "web1", "cpu", "1", "job", "node"),
			series(10, func(i int) float64 { return float64(100 + i) }, "__name__", "cpu", "host", "web2", "cpu", "0", "job", "node"),
			mem,
		},
		Metadata: []schema.Metadata{
			{Metric: "cpu", Type: model.MetricTypeCounter, Help: "CPU seconds."},
			{Metric: "mem", Type: model.MetricTypeGauge, Help: "Memory in use.", Unit: "bytes"},
		},
	}
}

// get asks path?query with GET, or with a form POST when post is set, and
// returns the status, Content-Type and body.
// nan is a NaN with a payload other than Prometheus' stale marker.
func nan() float64 { return math.Float64frombits(0x7ff8000000000001) }

func (e *queryEnv) get(t *testing.T, post bool, path string, query url.Values) (int, string, string) {
	t.Helper()
	var resp *http.Response
	var err error
	if post {
		resp, err = http.PostForm(e.srv.URL+path, query)
	} else {
		u := e.srv.URL + path
		if len(query) > 0 {
			u += "?" + query.Encode()
		}
		resp, err = http.Get(u)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), strings.TrimSpace(string(body))
}

// q builds url.Values from name, value pairs (a name may repeat).
func q(pairs ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		v.Add(pairs[i], pairs[i+1])
	}
	return v
}
