package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	commonmodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/schema"
)

// TestRollupsAnswerAsPrometheus compares tsdb's answers served from its 5m and
// 1h rollups with a real Prometheus' answers on the same two weeks of history.
// Prometheus is backfilled by its own promtool (`promtool tsdb
// create-blocks-from openmetrics`) and serves the blocks it wrote; tsdb gets
// the same samples by remote write 1.0 (all of them late: their buckets ended
// long ago), is compacted by `tsdb compact --once` into chunks and rollups
// (the store must then hold no raw cell, and a chunk and a rollup cell of each
// resolution for every bucket with samples), and is restarted to answer.
//
// Every query_range of oracleQueries, at a 1h step over the whole history and
// at a 5m step over two ranges of days, aligned to the step, must give
// Prometheus' answer exactly as its JSON prints it (the same float64 bits),
// with the same annotations but tsdb's "served from the … rollup" info. Where
// rollups serve a query (oracleQuery.rollup), that info must name the
// resolution query/resolution.go chooses, and the answer's read counts
// (stats=all: data.stats.hbtsdb) must show that the rollup tables answered
// (rollup cells read, no raw or chunk cell); where it reads raw data, no
// rollup cell may be read unless the answer says a rollup served it.
func TestRollupsAnswerAsPrometheus(t *testing.T) {
	promBin := prometheusBinary(t)
	promtool := promtoolBinary(t)
	ctx := context.Background()
	began := time.Now()
	h := newOracleHistory(time.Now())
	t.Logf("history: %d series, %d samples, %d buckets with samples, [%s, %s)",
		len(h.series), h.samples(), h.buckets(), fmtDate(h.start), fmtDate(h.end))

	dir := t.TempDir()
	ps := backfillPrometheus(t, promBin, promtool, dir, h)
	reqs := h.requests()
	want := oracleReferences(ctx, t, ps.url, h, reqs)
	t.Logf("Prometheus backfilled and asked %d requests in %s", len(reqs), time.Since(began).Round(time.Millisecond))

	stores := []struct {
		name string
		new  func(*testing.T) store
	}{
		{"embedded", embeddedStore},
		{"hbase", hbaseStore},
	}
	for _, sf := range stores {
		t.Run(sf.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			st := sf.new(t)
			dir := t.TempDir()
			tsdb := backfillTSDB(t, dir, st, h)
			compareOracle(ctx, t, tsdb, reqs, want)
			tsdb.stopAndCheck(t)
			t.Logf("%s: backfilled, compacted and compared in %s", st.name, time.Since(began).Round(time.Millisecond))
		})
	}
}

// oracleHistory is the history both stores get: a few series of one sample a
// minute (oracleInterval) over two weeks (oracleDays), whose buckets are all
// sealed when the test runs (it ends a day or more before now).
type oracleHistory struct {
	// start and end (ms) are UTC midnights; every sample lies in [start, end).
	start, end int64
	series     []*series
}

// oracleInterval is the interval between a series' samples, and oracleDays the
// length of the history: weeks, yet small enough for a minute or two of
// compaction under -race (which makes the embedded store's Pebble check its
// invariants at every seek).
const (
	oracleInterval = time.Minute
	oracleDays     = 14
)

// newOracleHistory generates the history of oracleDays that ends at the UTC
// midnight of the day before now, from a fixed seed: the same samples, in the
// same place relative to its start, at every run. Timestamps are whole seconds,
// as OpenMetrics writes them exactly (promtool's parser truncates fractions of
// a millisecond). The series:
//
//   - oracle_requests_total (counters): one on the minute, so a sample lies on
//     every window end, with resets; one with resets, a 3h gap, a 7-minute gap
//     and a random 2% of its samples missing; one that starts and ends in the
//     middle of 5m and 1h windows;
//   - oracle_temperature (integer gauges around zero): one a second before the
//     minute, so a sample ends every window a second early; one with gaps of
//     12 minutes, of 2 hours across a UTC midnight (the day rows of the rollup
//     tables) and of a whole day, and 1% of its samples missing;
//   - oracle_ratio (a gauge of three decimals, which float64 cannot hold
//     exactly, with NaN, +Inf and -Inf among them, which max_over_time and
//     min_over_time treat apart: NaN only if all are).
func newOracleHistory(now time.Time) *oracleHistory {
	const day = 24 * time.Hour
	end := now.UTC().Truncate(day).Add(-day)
	start := end.Add(-oracleDays * day)
	h := &oracleHistory{start: start.UnixMilli(), end: end.UnixMilli()}
	rng := rand.New(rand.NewPCG(21, 5))
	at := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
	type gap struct{ from, to int64 }
	add := func(name, job, instance string, offset time.Duration, from, to int64, gaps []gap, drop float64, next func() float64) {
		s := &series{labels: labels.FromStrings(labels.MetricName, name, "job", job, "instance", instance)}
		for m := from; m < to; m += oracleInterval.Milliseconds() {
			ts := m + offset.Milliseconds()
			skip := drop > 0 && rng.Float64() < drop
			for _, g := range gaps {
				skip = skip || (ts >= g.from && ts < g.to)
			}
			v := next() // every minute, so that a gap changes no later value
			if !skip && ts < h.end {
				s.samples = append(s.samples, sample{t: ts, v: v})
			}
		}
		h.series = append(h.series, s)
	}
	counter := func(maxInc int, resetEvery int) func() float64 {
		v := float64(rng.IntN(1000))
		return func() float64 {
			if rng.IntN(resetEvery) == 0 {
				v = float64(rng.IntN(maxInc))
			} else {
				v += float64(rng.IntN(maxInc))
			}
			return v
		}
	}
	walk := func(lo, hi int) func() float64 {
		v := (lo + hi) / 2
		return func() float64 {
			v = min(hi, max(lo, v+rng.IntN(5)-2))
			return float64(v)
		}
	}
	from, to := h.start, h.end
	add("oracle_requests_total", "api", "a", 0, from, to, nil, 0, counter(10, 3000))
	add("oracle_requests_total", "api", "b", 17*time.Second, from, to, []gap{
		{at(3*day + 6*time.Hour + 31*time.Minute), at(3*day + 6*time.Hour + 38*time.Minute)},
		{at(3*day + 10*time.Hour + 7*time.Minute), at(3*day + 13*time.Hour + 7*time.Minute)},
	}, 0.02, counter(100, 8000))
	add("oracle_requests_total", "batch", "c", 42*time.Second,
		at(2*day+2*time.Hour+23*time.Minute), h.end-(day+41*time.Minute).Milliseconds(), nil, 0, counter(5, math.MaxInt))
	add("oracle_temperature", "api", "a", 59*time.Second, from, to, nil, 0, walk(-20, 20))
	add("oracle_temperature", "batch", "c", 29*time.Second, from, to, []gap{
		{at(2*day + 23*time.Hour), at(3*day + time.Hour)},
		{at(3*day + 4*time.Hour + 10*time.Minute), at(3*day + 4*time.Hour + 22*time.Minute)},
		{at(8 * day), at(9 * day)},
	}, 0.01, walk(0, 30))
	add("oracle_ratio", "api", "e", 11*time.Second, from, to, nil, 0, func() float64 {
		switch rng.IntN(50) {
		case 0:
			return math.NaN()
		case 1:
			return math.Inf(1)
		case 2:
			return math.Inf(-1)
		}
		return float64(rng.IntN(1000)) / 1000
	})
	return h
}

// samples is the number of samples of the history.
func (h *oracleHistory) samples() int {
	n := 0
	for _, s := range h.series {
		n += len(s.samples)
	}
	return n
}

// buckets is the number of (series, 1h bucket) pairs with samples: the data rows
// tsdb stores, each compacted into one chunk cell and one rollup cell per
// resolution.
func (h *oracleHistory) buckets() int {
	n := 0
	for _, s := range h.series {
		last := int64(math.MinInt64)
		for _, p := range s.samples {
			if b := schema.BucketStart(p.t, time.Hour); b != last {
				n, last = n+1, b
			}
		}
	}
	return n
}

// openMetrics writes the history in the OpenMetrics text format with a
// timestamp on every sample, one family after the other, each series' samples
// together and in time order, as promtool's backfill reads it.
func (h *oracleHistory) openMetrics() []byte {
	var b bytes.Buffer
	byName := map[string][]*series{}
	for _, s := range h.series {
		name := s.labels.Get(labels.MetricName)
		byName[name] = append(byName[name], s)
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if family, ok := strings.CutSuffix(name, "_total"); ok {
			fmt.Fprintf(&b, "# TYPE %s counter\n", family)
		} else {
			fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		}
		for _, s := range byName[name] {
			var ls []string
			s.labels.Range(func(l labels.Label) {
				if l.Name != labels.MetricName {
					ls = append(ls, fmt.Sprintf("%s=%q", l.Name, l.Value))
				}
			})
			prefix := name + "{" + strings.Join(ls, ",") + "} "
			for _, p := range s.samples {
				b.WriteString(prefix)
				b.WriteString(strconv.FormatFloat(p.v, 'g', -1, 64))
				b.WriteByte(' ')
				b.WriteString(strconv.FormatInt(p.t/1000, 10))
				b.WriteByte('\n')
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}

// oracleQuery is one PromQL expression of the comparison.
type oracleQuery struct {
	expr string
	// window is the range of the query's range function, 0 for none: with the
	// step it decides which rollup serves a query rollups serve (oracleRollup).
	window time.Duration
	// rollup: rollups serve the query, where the step allows
	// (query/resolution.go: selectors, max/min/last/present/sum_over_time
	// over whole windows, rate & co. computed from the windows, and
	// aggregations of them); else it reads raw data.
	rollup bool
}

// oracleQueries are the expressions compared: those rollups serve, plain and
// aggregated, and functions that read raw data, which must still give
// Prometheus' answer. sum_over_time is asked of integer series only: rollups
// add window sums where raw data adds samples, which is exact for integers.
var oracleQueries = []oracleQuery{
	{expr: `oracle_requests_total`, rollup: true},
	{expr: `oracle_temperature`, rollup: true},
	{expr: `oracle_ratio`, rollup: true},
	{expr: `max_over_time(oracle_temperature[1h])`, window: time.Hour, rollup: true},
	{expr: `max_over_time(oracle_ratio[1h])`, window: time.Hour, rollup: true},
	{expr: `max_over_time(oracle_requests_total[1d])`, window: 24 * time.Hour, rollup: true},
	{expr: `min_over_time(oracle_temperature[5m])`, window: 5 * time.Minute, rollup: true},
	{expr: `min_over_time(oracle_ratio[2h])`, window: 2 * time.Hour, rollup: true},
	{expr: `last_over_time(oracle_requests_total[1h])`, window: time.Hour, rollup: true},
	{expr: `last_over_time(oracle_ratio[5m])`, window: 5 * time.Minute, rollup: true},
	{expr: `present_over_time(oracle_temperature[1h])`, window: time.Hour, rollup: true},
	{expr: `sum_over_time(oracle_temperature[1h])`, window: time.Hour, rollup: true},
	{expr: `sum_over_time(oracle_temperature[1d])`, window: 24 * time.Hour, rollup: true},
	{expr: `sum_over_time(oracle_requests_total[10m])`, window: 10 * time.Minute, rollup: true},
	{expr: `max_over_time(oracle_temperature[1h] offset 1d)`, window: time.Hour, rollup: true},
	{expr: `sum by (job) (oracle_requests_total)`, rollup: true},
	{expr: `sum by (job) (max_over_time(oracle_temperature[1h]))`, window: time.Hour, rollup: true},
	{expr: `max(last_over_time(oracle_requests_total[1h]))`, window: time.Hour, rollup: true},
	{expr: `min by (job) (min_over_time(oracle_temperature[15m]))`, window: 15 * time.Minute, rollup: true},
	{expr: `max(oracle_temperature)`, rollup: true},
	// Computed by tsdb from the windows (query/rollupfunc.go).
	{expr: `rate(oracle_requests_total[1h])`, window: time.Hour, rollup: true},
	{expr: `increase(oracle_requests_total[1h])`, window: time.Hour, rollup: true},
	{expr: `sum by (job) (rate(oracle_requests_total[1h]))`, window: time.Hour, rollup: true},
	{expr: `increase(oracle_requests_total[1d])`, window: 24 * time.Hour, rollup: true},
	{expr: `rate(oracle_requests_total[5m])`, window: 5 * time.Minute, rollup: true},
	{expr: `irate(oracle_requests_total[1h])`, window: time.Hour, rollup: true},
	{expr: `delta(oracle_temperature[2h])`, window: 2 * time.Hour, rollup: true},
	{expr: `idelta(oracle_ratio[1h])`, window: time.Hour, rollup: true},
	{expr: `resets(oracle_requests_total[1d])`, window: 24 * time.Hour, rollup: true},
	{expr: `count_over_time(oracle_temperature[1h])`, window: time.Hour, rollup: true},
	{expr: `count_over_time(oracle_requests_total[5m])`, window: 5 * time.Minute, rollup: true},
	{expr: `changes(oracle_temperature[1h])`, window: time.Hour, rollup: true},
	// Raw data.
	{expr: `avg_over_time(oracle_ratio[1h])`, window: time.Hour},
	{expr: `rate({__name__="oracle_requests_total"}[1h:5m])`, window: time.Hour},
}

// oracleResolutions are the store's rollups (the default --rollups), coarsest
// first.
var oracleResolutions = []time.Duration{time.Hour, 5 * time.Minute}

// oracleRollup is the resolution that serves a query rollups serve at step:
// the coarsest whose windows end at every evaluation time (it divides the step;
// ranges start at a multiple of the step) and, for a range function, fit its
// range whole (it divides the window); 0 if none does.
func oracleRollup(q oracleQuery, step time.Duration) time.Duration {
	if !q.rollup {
		return 0
	}
	for _, r := range oracleResolutions {
		if step%r == 0 && q.window%r == 0 {
			return r
		}
	}
	return 0
}

// oracleRequest is one query_range request of the comparison.
type oracleRequest struct {
	q                oracleQuery
	start, end, step int64 // ms
	// rollup is the resolution that must serve it, 0 for raw data.
	rollup time.Duration
}

func (r oracleRequest) String() string {
	return fmt.Sprintf("%s over [%s, %s] step %s", r.q.expr, fmtDate(r.start), fmtDate(r.end), commonmodel.Duration(time.Duration(r.step)*time.Millisecond))
}

func (r oracleRequest) params() url.Values {
	return url.Values{"query": {r.q.expr}, "start": {apiTime(r.start)}, "end": {apiTime(r.end)}, "step": {apiTime(r.step)}}
}

// requests expands oracleQueries into requests: at a 1h step over the whole
// history and two hours either side, and at a 5m step over two ranges of two
// days (the start of the counter that starts late, the gaps; the end of the
// counter that ends early, and of the history).
func (h *oracleHistory) requests() []oracleRequest {
	const day = 24 * time.Hour
	hour, fiveMin := time.Hour.Milliseconds(), (5 * time.Minute).Milliseconds()
	ranges := []struct{ start, end, step int64 }{
		{h.start - 2*hour, h.end + 2*hour, hour},
		{h.start + (2 * day).Milliseconds(), h.start + (4 * day).Milliseconds(), fiveMin},
		{h.end - (2 * day).Milliseconds(), h.end + hour, fiveMin},
	}
	var out []oracleRequest
	for _, rg := range ranges {
		for _, q := range oracleQueries {
			out = append(out, oracleRequest{q: q, start: rg.start, end: rg.end, step: rg.step,
				rollup: oracleRollup(q, time.Duration(rg.step)*time.Millisecond)})
		}
	}
	return out
}

// fmtDate shows a timestamp (ms) as a UTC date and time, and the timestamp.
func fmtDate(ms int64) string {
	return fmt.Sprintf("%s (%d)", time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05Z"), ms)
}

// backfillPrometheus writes the history into the data directory of a
// Prometheus in dir with promtool and starts that Prometheus on it.
func backfillPrometheus(t *testing.T, promBin, promtool, dir string, h *oracleHistory) *promServer {
	t.Helper()
	input := filepath.Join(dir, "history.om")
	if err := os.WriteFile(input, h.openMetrics(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Into startPrometheus' data directory, in blocks of up to 18h (promtool
	// rounds the duration down to a compaction range): fewer passes over the
	// input than its default 2h blocks, as it reads the input once per block.
	began := time.Now()
	cmd := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", "--max-block-duration=24h",
		input, filepath.Join(dir, "prometheus-data"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	t.Logf("promtool wrote Prometheus' blocks in %s", time.Since(began).Round(time.Millisecond))
	return startPrometheus(t, promBin, dir, promConfig{backfilled: true})
}

// oracleReferences asks Prometheus every request. Each answer must be a
// non-empty matrix, and that of each plain selector must be the history's
// samples under Prometheus' lookback (evalRange), to the bit: the oracle holds
// exactly what tsdb is sent.
func oracleReferences(ctx context.Context, t *testing.T, promURL string, h *oracleHistory, reqs []oracleRequest) []*queryResult {
	t.Helper()
	lookback := (5 * time.Minute).Milliseconds() // Prometheus' default, and tsdb's
	out := make([]*queryResult, len(reqs))
	for i, r := range reqs {
		res, err := apiQuery(ctx, promURL, "/api/v1/query_range", r.params())
		if err != nil {
			t.Fatalf("Prometheus: %s: %v", r, err)
		}
		if res.resultType != "matrix" || len(res.series) == 0 {
			t.Fatalf("Prometheus: %s: a %s of %d series, want a matrix with series: the comparison would prove nothing", r, res.resultType, len(res.series))
		}
		out[i] = res
		if strings.ContainsAny(r.q.expr, "({") {
			continue
		}
		want := seriesSet{}
		for _, s := range h.series {
			if s.labels.Get(labels.MetricName) == r.q.expr {
				if ev := evalRange(s.samples, r.start, r.end, r.step, lookback); len(ev) > 0 {
					want[s.labels.String()] = &series{labels: s.labels, samples: ev}
				}
			}
		}
		if d := compareSets(want, res.series, sameBits); len(d) > 0 {
			t.Fatalf("Prometheus answers %s unlike the history it was backfilled with, in %d places:%s", r, len(d), summarize(d, 10))
		}
	}
	return out
}

// oracleBatch is how many samples one remote-write request carries at most
// (Prometheus' queues send 2 000 by default).
const oracleBatch = 5000

// backfillTSDB starts tsdb serve on st, sends it the history by remote write,
// stops it, compacts the store with tsdb compact --once, checks that the
// store holds chunks and rollups only, and starts tsdb serve on it again. Both
// serves run without their compaction worker, so that only the compact run
// compacts.
func backfillTSDB(t *testing.T, dir string, st store, h *oracleHistory) *tsdbServer {
	t.Helper()
	ctx := context.Background()
	serving := st
	serving.flags = append(slices.Clone(st.flags), "--compact.enabled=false")
	tsdb := startTSDB(t, dir, serving)
	tsdb.checkWriteEndpoint(t)
	requests, began := 0, time.Now()
	for _, s := range h.series {
		var pls []prompb.Label
		s.labels.Range(func(l labels.Label) { pls = append(pls, prompb.Label{Name: l.Name, Value: l.Value}) })
		for batch := range slices.Chunk(s.samples, oracleBatch) {
			ts := prompb.TimeSeries{Labels: pls}
			for _, p := range batch {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.t, Value: p.v})
			}
			code, body, err := postRemoteWrite(ctx, tsdb.writeURL(), &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
			if err != nil {
				t.Fatalf("remote write to tsdb: %v", err)
			}
			if code/100 != 2 {
				t.Fatalf("remote write of %d samples of %s to tsdb: %d %s: %s", len(batch), s.labels, code, http.StatusText(code), bytes.TrimSpace(body))
			}
			requests++
		}
	}
	t.Logf("%s: sent %d samples in %d remote-write requests in %s", st.name, h.samples(), requests, time.Since(began).Round(time.Millisecond))
	tsdb.stopAndCheck(t)

	compactOnce(t, dir, st)
	checkRolledUp(t, st, h.buckets())
	return startTSDB(t, dir, serving)
}

// compactOnce runs tsdb compact --once on st until a round leaves nothing to
// the next (one does, unless another compactor got in its way), and fails the
// test if a round fails or leaves a salt undone.
func compactOnce(t *testing.T, dir string, st store) {
	t.Helper()
	bin := tsdbBinary(t)
	for round := 1; ; round++ {
		args := append([]string{"compact", "--once", "--log.format=json"}, st.flags...)
		began := time.Now()
		p := startProcess(t, fmt.Sprintf("tsdb-compact-%d", round), dir, bin, args...)
		// The round logs its progress when it runs long: waitUntil waits as
		// long as the log grows.
		if err := p.waitUntil("tsdb compact --once to finish", 100*time.Millisecond, func() (bool, error) {
			return p.exited(), nil
		}); err != nil {
			t.Fatalf("%v; last lines of its log:\n%s", err, p.tail(40))
		}
		if p.waitErr != nil {
			t.Fatalf("tsdb compact --once: %v; last lines of its log:\n%s", p.waitErr, p.tail(40))
		}
		got := map[string]int64{}
		for _, l := range p.out.lines() {
			k, v, ok := strings.Cut(l, ": ")
			if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
				got[k] = n
			}
		}
		t.Logf("%s: tsdb compact --once, round %d, %s: %v", st.name, round, time.Since(began).Round(time.Millisecond), got)
		if _, ok := got["buckets_compacted"]; !ok {
			t.Fatalf("tsdb compact --once printed no buckets_compacted line; its output:\n%s", p.tail(40))
		}
		if got["salts_failed"] > 0 || got["salts_busy"] > 0 {
			t.Fatalf("tsdb compact --once left salts undone: %v; its output:\n%s", got, p.tail(40))
		}
		if got["buckets_left_to_next_round"] == 0 && got["buckets_left_raw"] == 0 {
			return
		}
		if round == 3 {
			t.Fatalf("tsdb compact --once still compacts in round %d: %v", round, got)
		}
	}
}

// checkRolledUp opens st in-process (tsdb has stopped) and fails the test unless
// it holds no raw cell, and a chunk cell and a rollup cell of each resolution
// for each of the buckets data buckets with samples.
func checkRolledUp(t *testing.T, st store, buckets int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
	defer cancel()
	s, err := st.open(ctx)
	if err != nil {
		t.Fatalf("open the %s store: %v", st.name, err)
	}
	defer s.Close()
	counts := []struct {
		what, table, family string
		want                int
	}{
		{"raw cells", schema.TableData, schema.FamilyRaw, 0},
		{"chunk cells", schema.TableData, schema.FamilyChunk, buckets},
	}
	for _, res := range oracleResolutions {
		counts = append(counts, struct {
			what, table, family string
			want                int
		}{commonmodel.Duration(res).String() + " rollup cells", schema.RollupTable(res), schema.FamilyRollup, buckets})
	}
	for _, c := range counts {
		n, err := countCells(ctx, s, c.table, c.family)
		if err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("%s: the compacted store holds %d %s, want %d (one per bucket with samples)", st.name, n, c.what, c.want)
		}
	}
}

// oracleReadStats is what tsdb adds to a query answer's stats (stats=all):
// data.stats.hbtsdb, the cells its Selects read from the data table's raw
// family, its chunk family and the rollup tables.
type oracleReadStats struct {
	RawCells    int64 `json:"rawCells"`
	ChunkCells  int64 `json:"chunkCells"`
	RollupCells int64 `json:"rollupCells"`
}

// readStats decodes data.stats.hbtsdb of an answer.
func readStats(stats json.RawMessage) (*oracleReadStats, error) {
	if len(stats) == 0 {
		return nil, fmt.Errorf("the answer has no data.stats although stats=all asked for it")
	}
	var s struct {
		HBTSDB *oracleReadStats `json:"hbtsdb"`
	}
	if err := json.Unmarshal(stats, &s); err != nil {
		return nil, fmt.Errorf("decode data.stats: %w", err)
	}
	if s.HBTSDB == nil {
		return nil, fmt.Errorf("data.stats has no hbtsdb read counts (rawCells, chunkCells, rollupCells): %s", truncate(string(stats), 300))
	}
	return s.HBTSDB, nil
}

// servedFromPrefix starts the info tsdb adds to an answer that a rollup served
// (query/resolution.go), after Prometheus' "PromQL info: ".
const servedFromPrefix = "served from the "

// splitServedInfos separates tsdb's "served from" infos from the others.
func splitServedInfos(infos []string) (served, rest []string) {
	for _, in := range infos {
		if strings.Contains(in, ": "+servedFromPrefix) {
			served = append(served, in)
		} else {
			rest = append(rest, in)
		}
	}
	return served, rest
}

// compareOracle asks tsdb every request with stats=all and compares its answer
// with Prometheus' (want) to the bit, and checks which tables answered.
func compareOracle(ctx context.Context, t *testing.T, tsdb *tsdbServer, reqs []oracleRequest, want []*queryResult) {
	t.Helper()
	var failed, fromRollups int
	var total oracleReadStats
	began := time.Now()
	for i, r := range reqs {
		params := r.params()
		params.Set("stats", "all")
		got, err := apiQuery(ctx, tsdb.baseURL(), "/api/v1/query_range", params)
		if err != nil {
			t.Errorf("tsdb: %s: %v", r, err)
			failed++
		} else {
			var served []string
			served, got.infos = splitServedInfos(got.infos)
			d := compareResults(want[i], got, sameBits)
			d = append(d, checkServed(r, served, got.stats)...)
			if len(d) > 0 {
				t.Errorf("%s: tsdb answers %s unlike Prometheus or from other tables than it should, in %d places:%s", tsdb.store.name, r, len(d), summarize(d, 10))
				failed++
			}
			if len(served) > 0 {
				fromRollups++
			}
			if s, err := readStats(got.stats); err == nil {
				total.RawCells += s.RawCells
				total.ChunkCells += s.ChunkCells
				total.RollupCells += s.RollupCells
			}
		}
		if failed == maxFailedRequests && i+1 < len(reqs) {
			t.Errorf("%s: %d requests failed; not asking the other %d", tsdb.store.name, failed, len(reqs)-i-1)
			break
		}
	}
	t.Logf("%s: %d of %d query_range requests answered as Prometheus does, %d of them served from rollups, in %s; cells read: %+v",
		tsdb.store.name, len(reqs)-failed, len(reqs), fromRollups, time.Since(began).Round(time.Millisecond), total)
}

// checkServed lists what is wrong with where tsdb says it read an answer from
// (its "served from" infos) and where its read counts say it did (stats), for
// request r.
func checkServed(r oracleRequest, served []string, stats json.RawMessage) []string {
	var d []string
	s, err := readStats(stats)
	if err != nil {
		d = append(d, err.Error())
	}
	if r.rollup > 0 {
		want := servedFromPrefix + commonmodel.Duration(r.rollup).String() + " rollup"
		if len(served) != 1 || !strings.Contains(served[0], want) {
			d = append(d, fmt.Sprintf("infos say %q, want one that says %q", served, want))
		}
		if s != nil && (s.RollupCells == 0 || s.RawCells != 0 || s.ChunkCells != 0) {
			d = append(d, fmt.Sprintf("read %+v, want rollup cells only: the whole range is served from the %s rollup of a compacted store", *s, commonmodel.Duration(r.rollup)))
		}
		return d
	}
	switch {
	case s == nil:
	case len(served) > 0 && s.RollupCells == 0:
		d = append(d, fmt.Sprintf("infos say %q, but the query read no rollup cell (%+v)", served, *s))
	case len(served) == 0 && (s.RollupCells != 0 || s.RawCells != 0 || s.ChunkCells == 0):
		d = append(d, fmt.Sprintf("read %+v, want chunk cells only: a query no rollup served, on a compacted store", *s))
	}
	return d
}

// TestOracleHistoryParsesAsPromtoolReadsIt parses the OpenMetrics text of the
// history with the parser promtool's backfill uses: every sample comes back with
// its series, timestamp and bits, in the order written.
func TestOracleHistoryParsesAsPromtoolReadsIt(t *testing.T) {
	h := newOracleHistory(time.UnixMilli(1732921234567))
	if got, want := h.end-h.start, (oracleDays * 24 * time.Hour).Milliseconds(); got != want || h.start%(24*time.Hour).Milliseconds() != 0 {
		t.Fatalf("history [%s, %s): want %d days from a UTC midnight", fmtDate(h.start), fmtDate(h.end), oracleDays)
	}
	p := textparse.NewOpenMetricsParser(h.openMetrics(), labels.NewSymbolTable())
	var got []*series
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		var ls labels.Labels
		p.Labels(&ls)
		_, ts, v := p.Series()
		if ts == nil {
			t.Fatalf("%s: a sample without a timestamp", ls)
		}
		if len(got) == 0 || !labels.Equal(got[len(got)-1].labels, ls) {
			got = append(got, &series{labels: ls})
		}
		got[len(got)-1].samples = append(got[len(got)-1].samples, sample{t: *ts, v: v})
	}
	if len(got) != len(h.series) {
		t.Fatalf("parsed %d runs of series, want the %d series one after the other", len(got), len(h.series))
	}
	want, parsed := seriesSet{}, seriesSet{}
	for i := range got {
		want[h.series[i].labels.String()] = h.series[i]
		parsed[got[i].labels.String()] = got[i]
	}
	if d := compareSets(want, parsed, sameBits); len(d) > 0 {
		t.Fatalf("the parsed history differs in %d places:%s", len(d), summarize(d, 10))
	}
	for _, s := range h.series {
		if len(s.samples) < 10000 {
			t.Errorf("%s: %d samples, want weeks of them", s.labels, len(s.samples))
		}
	}
}

func TestOracleRollupIsTheCoarsestThatFits(t *testing.T) {
	cases := []struct {
		q    oracleQuery
		step time.Duration
		want time.Duration
	}{
		{oracleQuery{expr: "x", rollup: true}, time.Hour, time.Hour},
		{oracleQuery{expr: "x", rollup: true}, 5 * time.Minute, 5 * time.Minute},
		{oracleQuery{expr: "x", rollup: true}, 2 * time.Hour, time.Hour},
		{oracleQuery{expr: "x", rollup: true}, time.Minute, 0},
		{oracleQuery{expr: "max_over_time(x[5m])", window: 5 * time.Minute, rollup: true}, time.Hour, 5 * time.Minute},
		{oracleQuery{expr: "max_over_time(x[1d])", window: 24 * time.Hour, rollup: true}, time.Hour, time.Hour},
		{oracleQuery{expr: "max_over_time(x[1h])", window: time.Hour, rollup: true}, 5 * time.Minute, 5 * time.Minute},
		{oracleQuery{expr: "max_over_time(x[7m])", window: 7 * time.Minute, rollup: true}, time.Hour, 0},
		{oracleQuery{expr: "rate(x[1h])", window: time.Hour}, time.Hour, 0},
	}
	for _, c := range cases {
		if got := oracleRollup(c.q, c.step); got != c.want {
			t.Errorf("%s at step %s: rollup %s, want %s", c.q.expr, c.step, got, c.want)
		}
	}
}
