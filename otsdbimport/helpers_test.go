package otsdbimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/promapi/wire"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// datapoint is one /api/put datapoint; Value is its JSON text.
type datapoint struct {
	Metric    string            `json:"metric"`
	Timestamp int64             `json:"timestamp"`
	Value     json.RawMessage   `json:"value"`
	Tags      map[string]string `json:"tags"`
}

// corpus is the datapoints the tests put into OpenTSDB, and the samples they
// are: series (labels.Labels.String()) -> ms -> value as /api/put parses it.
type corpus struct {
	points     []datapoint
	want       map[string]map[int64]float64
	start, end time.Time // every point lies in [start, end)
}

// newCorpus makes datapoints over the three hours from base (an hour
// boundary), so over several rows of every series: second and millisecond
// timestamps, integers of 1, 2, 4 and 8 bytes (and one above 2^53), floats
// that OpenTSDB stores in 4 bytes and in 8, several tags, a counter with
// resets, names with the characters OpenTSDB allows and Prometheus' classic
// names do not (., -, /) and a Latin-1 letter, and both resolutions in one
// row.
func newCorpus(base time.Time) *corpus {
	c := &corpus{want: map[string]map[int64]float64{}, start: base, end: base.Add(3 * time.Hour)}
	s := base.Unix()
	for i := range 180 { // every minute, three series
		for cpu := range 3 {
			var v string
			switch i % 4 {
			case 0:
				v = strconv.Itoa(i * (cpu + 1))
			case 1:
				v = strconv.FormatFloat(float64(i)+0.25, 'g', -1, 64) // a float32
			case 2:
				v = strconv.FormatFloat(float64(i)*0.1, 'g', -1, 64) // a double
			default:
				v = strconv.Itoa(-i * 1000)
			}
			c.add("sys.cpu.user", s+int64(i)*60, v, "host", "web01", "cpu", strconv.Itoa(cpu))
		}
	}
	counter := int64(0)
	for i := range 360 { // every 30s, a counter with two resets and wide steps
		switch i {
		case 120, 240:
			counter = 3
		case 200:
			counter += 5_000_000_000 // 8 bytes
		case 300:
			counter = 9007199254740993 // above 2^53: /api/put and the import round it alike
		default:
			counter += int64(37 + i%3*100 + i%7*40000) // 1, 2 and 4 bytes as it grows
		}
		c.add("app.requests", s+int64(i)*30, strconv.FormatInt(counter, 10), "host", "web-02", "dc", "eu-west/1")
	}
	floats := []string{"0.1", "42.5", "1e+300", "-3.25", "1.5e-07", "-0.0", "123456789.125"}
	for i := range 2400 { // every 3s and some ms, over two hours
		ms := (s+int64(i)*3)*1000 + int64(i%1000)
		c.add("app.latency-p99", ms, floats[i%len(floats)], "host", "web01", "path", "/api/v1")
	}
	for i := range 20 { // seconds and ms in one row
		ts := s + 7200 + int64(i)*10
		if i%2 == 1 {
			ts = ts*1000 + 250
		}
		c.add("Temp.Kitchen", ts, strconv.Itoa(i-10), "room", "café", "floor", "1")
	}
	return c
}

// add adds a datapoint (ts in seconds, or ms when above 2^32) of value text v.
func (c *corpus) add(metric string, ts int64, v string, tags ...string) {
	tm := map[string]string{}
	for i := 0; i < len(tags); i += 2 {
		tm[tags[i]] = tags[i+1]
	}
	c.points = append(c.points, datapoint{Metric: metric, Timestamp: ts, Value: json.RawMessage(v), Tags: tm})
	ms := ts
	if ts < 1<<32 {
		ms = ts * 1000
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		panic(err)
	}
	key := labels.FromMap(maps.Collect(func(yield func(string, string) bool) {
		for k, v := range tm {
			yield(k, v)
		}
		yield("__name__", metric)
	})).String()
	if c.want[key] == nil {
		c.want[key] = map[int64]float64{}
	}
	c.want[key][ms] = f
}

// touchRows adds to the corpus a datapoint at the last second of each
// OpenTSDB row (series and hour) it has, which no other datapoint has, of
// the row's last value (so that a counter does not reset), and returns them
// as an /api/put body.
func (c *corpus) touchRows() []byte {
	type row struct {
		metric string
		tags   map[string]string
		hour   int64
		last   string
	}
	index := map[string]int{}
	var rows []row
	for _, p := range c.points {
		s := p.Timestamp
		if s >= 1<<32 {
			s /= 1000
		}
		key := fmt.Sprint(p.Metric, p.Tags, s/3600)
		i, ok := index[key]
		if !ok {
			i = len(rows)
			index[key] = i
			rows = append(rows, row{metric: p.Metric, tags: p.Tags, hour: s / 3600})
		}
		rows[i].last = string(p.Value)
	}
	n := len(c.points)
	for _, r := range rows {
		var tags []string
		for k, v := range r.tags {
			tags = append(tags, k, v)
		}
		c.add(r.metric, r.hour*3600+3599, r.last, tags...)
	}
	b, err := json.Marshal(c.points[n:])
	if err != nil {
		panic(err)
	}
	return b
}

// bodies is the corpus as /api/put bodies of at most n datapoints.
func (c *corpus) bodies(n int) [][]byte {
	var out [][]byte
	for chunk := range slices.Chunk(c.points, n) {
		b, err := json.Marshal(chunk)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

func (c *corpus) samples() int {
	n := 0
	for _, s := range c.want {
		n += len(s)
	}
	return n
}

// openDB opens a DB with the server's write limits on a fresh store of
// backend b (schema created); the store is counted.
func openDB(t testing.TB, b schematest.Backend) (*db.DB, *schematest.CountingStore) {
	t.Helper()
	st := schematest.Counting(b.Store(t))
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: b.Settings, Rollups: b.TableOptions.Rollups,
		RawRetention: b.TableOptions.RawRetention, Logger: slog.New(slog.DiscardHandler),
		Write: write.Options{Limits: write.DefaultLimits()}})
	if err != nil {
		t.Fatalf("db.Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, st
}

// putDirectly writes the corpus into d as /api/put does: wire.DecodePut, then
// the write path.
func putDirectly(t testing.TB, d *db.DB, c *corpus) {
	t.Helper()
	for _, body := range c.bodies(1000) {
		put, err := wire.DecodePut(body)
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Write(context.Background(), &put.Request)
		if err != nil || len(res.Rejected) > 0 {
			t.Fatalf("write the corpus directly: %v, rejected %v", err, res.Rejected)
		}
	}
}

// promQL evaluates expr on d with the real PromQL engine (query.NewEngine):
// an instant query at end when step is 0, else a range query from start. The
// answer is rendered with every float's bits, series sorted.
func promQL(t *testing.T, d *db.DB, expr string, start, end time.Time, step time.Duration) string {
	t.Helper()
	eng := query.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		Parser: parser.NewParser(parser.Options{})})
	ctx := context.Background()
	var q promql.Query
	var err error
	if step == 0 {
		q, err = eng.NewInstantQuery(ctx, d, nil, expr, end)
	} else {
		q, err = eng.NewRangeQuery(ctx, d, nil, expr, start, end, step)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	r := q.Exec(ctx)
	if r.Err != nil {
		t.Fatalf("%s: %v", expr, r.Err)
	}
	var series []string
	render := func(lbls labels.Labels, fs []promql.FPoint) {
		var b strings.Builder
		b.WriteString(lbls.String())
		for _, p := range fs {
			fmt.Fprintf(&b, " %d:%x", p.T, math.Float64bits(p.F))
		}
		series = append(series, b.String())
	}
	switch v := r.Value.(type) {
	case promql.Matrix:
		for _, s := range v {
			render(s.Metric, s.Floats)
		}
	case promql.Vector:
		for _, s := range v {
			render(s.Metric, []promql.FPoint{{T: s.T, F: s.F}})
		}
	default:
		t.Fatalf("%s: a %T", expr, r.Value)
	}
	slices.Sort(series)
	return strings.Join(series, "\n")
}

// rawSamples is every sample of d in the corpus' range, as the engine
// returns them for a range selector: series -> ms -> value.
func rawSamples(t *testing.T, d *db.DB, c *corpus) map[string]map[int64]float64 {
	t.Helper()
	eng := query.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		Parser: parser.NewParser(parser.Options{})})
	expr := fmt.Sprintf(`{__name__=~".+"}[%ds]`, int(c.end.Sub(c.start).Seconds())+1)
	q, err := eng.NewInstantQuery(context.Background(), d, nil, expr, c.end)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	r := q.Exec(context.Background())
	if r.Err != nil {
		t.Fatalf("%s: %v", expr, r.Err)
	}
	got := map[string]map[int64]float64{}
	for _, s := range r.Value.(promql.Matrix) {
		m := map[int64]float64{}
		for _, p := range s.Floats {
			if _, dup := m[p.T]; dup {
				t.Fatalf("series %s: sample at %d read twice", s.Metric, p.T)
			}
			m[p.T] = p.F
		}
		got[s.Metric.String()] = m
	}
	return got
}

// sameSamples fails t unless got holds exactly want, bit for bit.
func sameSamples(t *testing.T, want, got map[string]map[int64]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("series %s missing; the store has %v", k, slices.Sorted(maps.Keys(got)))
			continue
		}
		if len(g) != len(w) {
			t.Errorf("series %s: %d samples, want %d", k, len(g), len(w))
		}
		for ts, v := range w {
			if gv, ok := g[ts]; !ok || math.Float64bits(gv) != math.Float64bits(v) {
				t.Errorf("series %s at %d: %v (present %v), want %v", k, ts, gv, ok, v)
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("series %s in the store was not sent", k)
		}
	}
}

// cell is one cell of a table, all of it.
type cell struct {
	row, family, qualifier string
	ts                     int64
	value                  string
}

// cells reads every version of every cell of an hbtsdb table.
func cells(t testing.TB, st kv.Store, table string) []cell {
	t.Helper()
	sc := st.Scan(context.Background(), table, nil, nil, kv.MaxVersions(1000))
	defer sc.Close()
	var out []cell
	for sc.Next() {
		r := sc.Row()
		for _, c := range r.Cells {
			out = append(out, cell{string(r.Key), c.Family, string(c.Qualifier), c.Timestamp, string(c.Value)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawCells counts the raw cells (every version) of the data table.
func rawCells(t testing.TB, st kv.Store) int {
	t.Helper()
	n := 0
	for _, c := range cells(t, st, schema.TableData) {
		if c.family == schema.FamilyRaw {
			n++
		}
	}
	return n
}
