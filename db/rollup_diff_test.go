package db_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// The differential test of the rollup promise (README, "Rollups: which
// queries they serve"): wherever an answer of query.ResolutionAuto says it is
// "the same answer as from raw data", it is query.ResolutionRaw's answer to
// the bit, through the real engine; an answer with no rollup info is raw's
// too. A seed makes a store — series of every shape a summary can get wrong
// (counters with resets, gauges, gaps and stale markers, NaN, ±Inf, -0, huge
// and tiny magnitudes, series that start and end mid-window, native
// histograms), written hour by hour as Prometheus sends them, with duplicate
// and late samples, compacted by the real Compactor at random moments with
// rounds that crash part way — and random queries of the shapes Grafana
// panels and recording rules use, at evaluation times a rollup can serve and
// others.

const (
	// diffSeed is the seed TestRollupDiffAnswersAsRaw runs with (one whose
	// stores met each failure the rollup checks guard against: stale cells
	// after a list change, inexact sums, windows past the raw retention);
	// FuzzRollupsAnswerAsRaw tries others.
	diffSeed = 5
	// diffQueries is how many random queries each store of
	// TestRollupDiffAnswersAsRaw answers.
	diffQueries = 200
	// diffHours is how much data a store holds, from rollupDay0.
	diffHours = 50
)

// diffStyle is how a store is written and compacted.
type diffStyle int

const (
	// diffTidy: every round writes every resolution and the last round leaves
	// no raw cell behind, so every bucket has its rollup cells: a query
	// served from a rollup must have read some.
	diffTidy diffStyle = iota
	// diffMessy: rounds with other resolution lists and over some salts only,
	// and late samples left raw at the end.
	diffMessy
	// diffExpired: an embedded store whose clock has moved past the raw
	// retention of part of the data (expiringDB); rollups' answers are
	// compared with raw data's from before it expired.
	diffExpired
)

func (s diffStyle) String() string { return [...]string{"tidy", "messy", "expired"}[s] }

func TestRollupDiffAnswersAsRaw(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		for _, style := range []diffStyle{diffTidy, diffMessy} {
			t.Run(style.String(), func(t *testing.T) {
				newDiffStore(t, b, diffSeed, style).compareQueries(t, diffQueries)
			})
		}
	})
	// The embedded store's clock drives its TTLs; HBase's is real time.
	t.Run("embedded/expired", func(t *testing.T) {
		t.Parallel()
		newExpiredDiffStore(t, diffSeed).compareQueries(t, diffQueries)
	})
}

// FuzzRollupsAnswerAsRaw runs the comparison on other seeds, on the embedded
// store: go test -fuzz FuzzRollupsAnswerAsRaw ./db/. The seed picks the
// store's style too (seed % 3); queries is how many queries it answers (at
// most 500).
func FuzzRollupsAnswerAsRaw(f *testing.F) {
	f.Add(uint64(2), uint16(30))
	f.Fuzz(func(t *testing.T, seed uint64, queries uint16) {
		n := 1 + int(queries)%500
		if style := diffStyle(seed % 3); style == diffExpired {
			newExpiredDiffStore(t, seed).compareQueries(t, n)
		} else {
			newDiffStore(t, schematest.Backends()[0], seed, style).compareQueries(t, n)
		}
	})
}

// diffStore is a store made from a seed, with what its comparisons need.
type diffStore struct {
	seed  uint64
	style diffStyle
	where string // the backend, for failure messages
	d     *db.DB
	// history says what was done to the store, for failure messages.
	history []string
	// expire, for diffExpired only, moves the store's clock past the raw
	// retention of part of its data.
	expire func()
}

// newDiffStore writes the seed's series into a fresh store of b hour by hour,
// with compaction rounds in between, as history.run says.
func newDiffStore(t *testing.T, b schematest.Backend, seed uint64, style diffStyle) *diffStore {
	t.Helper()
	st := b.Store(t)
	var clock atomic.Int64
	clock.Store(rollupDay0.UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: b.Settings, Now: now,
		Rollups: b.TableOptions.Rollups, RawRetention: b.TableOptions.RawRetention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	h := &diffHistory{t: t, rng: rand.New(rand.NewPCG(seed, 3)), style: style, d: d, st: st,
		settings: b.Settings, rollups: b.TableOptions.Rollups, clock: &clock,
		series: diffSeries(rand.New(rand.NewPCG(seed, 1)))}
	h.run()
	return &diffStore{seed: seed, style: style, where: b.Name, d: d, history: h.log}
}

// newExpiredDiffStore writes the seed's series into an embedded store whose
// raw retention is 3 days (expiringDB: written late, at 56h, and compacted
// once), and returns it with its clock still before any expiry: expire moves
// it on, to a random moment when the raw data of the first 10 to 40 hours has
// expired.
func newExpiredDiffStore(t *testing.T, seed uint64) *diffStore {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	series := diffSeries(rand.New(rand.NewPCG(seed, 1)))
	clock, d := expiringDB(t, func(d *db.DB) {
		h := &diffHistory{t: t, rng: rng, d: d, series: series}
		for hour := range diffHours {
			h.write(h.hour(hour))
			if hour > 0 && rng.IntN(4) == 0 {
				h.resend(rng.IntN(hour))
			}
		}
	})
	expiry := rollupDay0.Add(10*time.Hour + time.Duration(rng.Int64N(30*time.Hour.Milliseconds()))*time.Millisecond)
	return &diffStore{seed: seed, style: diffExpired, where: "embedded", d: d,
		history: []string{fmt.Sprintf("written at %s and compacted (expiringDB), raw retention 3d; compared at %s, when raw data before %s has expired",
			rollupDay0.Add(56*time.Hour).Format(time.RFC3339), expiry.Add(72*time.Hour).Format(time.RFC3339Nano), expiry.Format(time.RFC3339Nano))},
		expire: func() { clock.Store(expiry.Add(72 * time.Hour).UnixMilli()) }}
}

// diffKinds are the series of a store, one of each kind: what Prometheus
// scrapes, and what float arithmetic and window summaries get wrong.
var diffKinds = []string{
	"counter", "float-counter", "gauge", "extreme", "big-small", "integer", "edges",
	"mid-window", "short", "flapping", "constant", "histogram-counter", "histogram-gauge", "mixed",
}

// diffExtremes are the values of the "extreme" series.
var diffExtremes = []float64{
	math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1, 0.1, 1e9, -1e9,
	1e308, -1e308, math.MaxFloat64, 1e-300, -1e-300, math.SmallestNonzeroFloat64,
}

// diffSeries makes the series of a store: diffHours of data from rollupDay0,
// about one sample a minute (the "edges" series: exactly on the 5m window
// ends), each with gaps that end with a stale marker.
func diffSeries(rng *rand.Rand) []write.Series {
	from := rollupDay0.UnixMilli()
	to := from + diffHours*time.Hour.Milliseconds()
	out := make([]write.Series, len(diffKinds))
	for i, kind := range diffKinds {
		out[i] = diffSeriesOf(rng, i, kind, from, to)
	}
	return out
}

func diffSeriesOf(rng *rand.Rand, i int, kind string, from, to int64) write.Series {
	const minute, hour = int64(60_000), int64(3_600_000)
	name := "d"
	if strings.HasPrefix(kind, "histogram") || kind == "mixed" {
		name = "dh"
	}
	s := write.Series{Labels: labels.FromStrings("__name__", name, "job", fmt.Sprintf("j%d", i%3),
		"instance", fmt.Sprintf("i%02d", i), "kind", kind)}
	step, start, end := minute, from+rng.Int64N(minute), to
	staleOneIn := 150
	switch kind {
	case "edges":
		step, start = 5*minute, from
	case "mid-window":
		start, end = from+3*hour+rng.Int64N(20*hour), to-3*hour-rng.Int64N(20*hour)
	case "short":
		start = from + 3*hour + rng.Int64N(to-from-6*hour)
		end = start + 20*minute + rng.Int64N(50*minute)
	case "flapping":
		staleOneIn = 20
	}
	stale := math.Float64frombits(value.StaleNaN)
	var (
		v        float64
		n        int64
		gapUntil int64
	)
	for ts := start; ts < end; ts += step {
		if step == minute && rng.IntN(8) == 0 {
			ts += rng.Int64N(3000) - 1500 // a late or early scrape
		}
		if ts < gapUntil {
			continue
		}
		isHistogram := name == "dh" && (kind != "mixed" || (ts-from)/(5*hour)%2 == 1)
		if rng.IntN(staleOneIn) == 0 {
			if isHistogram && rng.IntN(2) == 0 {
				s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, H: &histogram.Histogram{Sum: stale}})
			} else {
				s.Samples = append(s.Samples, cellenc.Sample{T: ts, V: stale})
			}
			gapUntil = ts + rng.Int64N(40*minute)
			continue
		}
		n++
		if rng.IntN(200) == 0 {
			n = 0 // a counter reset
		}
		switch kind {
		case "counter":
			if n == 0 {
				v = float64(rng.IntN(5))
			} else {
				v += float64(rng.IntN(100))
			}
		case "float-counter":
			if n == 0 {
				v = 0
			} else {
				v += rng.Float64() * 3.7
			}
		case "gauge":
			v = rng.NormFloat64() * 100
			if rng.IntN(200) == 0 {
				v = math.NaN()
			}
		case "extreme":
			v = diffExtremes[rng.IntN(len(diffExtremes))]
		case "big-small": // sums that are not exact from windows, hour by hour
			switch (ts - from) / hour % 3 {
			case 0:
				v = []float64{1e9, 0.1}[rng.IntN(2)]
			case 1:
				v = -1e9
			default:
				v = []float64{1e308, -1e308, 1e-300}[rng.IntN(3)]
			}
		case "integer":
			v = float64(rng.IntN(2001) - 1000)
		case "edges":
			v = float64(rng.IntN(3))
		case "constant":
			v = 42
		default: // mid-window, short, flapping
			v = float64(rng.IntN(1000)) / 10
		}
		switch {
		case !isHistogram:
			s.Samples = append(s.Samples, cellenc.Sample{T: ts, V: v})
		case kind == "histogram-gauge":
			s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, FH: tsdbutil.GenerateTestGaugeFloatHistogram(rng.Int64N(50))})
		default:
			s.Histograms = append(s.Histograms, cellenc.HistogramSample{T: ts, H: tsdbutil.GenerateTestHistogram(n)})
		}
	}
	return s
}

// diffHistory writes a store's series hour by hour and compacts it in
// rounds, as a Prometheus and a compaction worker would, with the clock
// following the samples.
type diffHistory struct {
	t        *testing.T
	rng      *rand.Rand
	style    diffStyle
	d        *db.DB
	st       kv.Store
	settings schema.Settings
	rollups  []schema.Rollup // the store's resolutions
	clock    *atomic.Int64
	series   []write.Series
	log      []string
}

// run writes every hour of the series, each on time (its bucket's on-time
// window: 30 s after the hour) or late (5 to 65 minutes after), re-sends now
// and then an earlier hour (duplicates, changed values, new samples), and
// compacts at random moments; then, the last bucket sealed, compacts until
// nothing is left (a round may crash part way), and a messy store gets late
// samples that stay raw.
func (h *diffHistory) run() {
	for hour := range diffHours {
		delay := 30 * time.Second
		if h.rng.IntN(6) == 0 {
			delay = time.Duration(5+h.rng.IntN(60)) * time.Minute
		}
		h.setClock(rollupDay0.Add(time.Duration(hour+1)*time.Hour + delay))
		h.write(h.hour(hour))
		if hour > 0 && h.rng.IntN(4) == 0 {
			h.resend(h.rng.IntN(hour))
		}
		if h.rng.IntN(5) == 0 {
			h.compact(false)
		}
	}
	h.setClock(rollupDay0.Add((diffHours + 2) * time.Hour))
	h.compact(false)
	h.compact(true)
	if h.style == diffMessy {
		for range 1 + h.rng.IntN(4) {
			h.resend(h.rng.IntN(diffHours))
		}
	}
}

// setClock moves the clock to at, never back.
func (h *diffHistory) setClock(at time.Time) {
	if ms := at.UnixMilli(); ms > h.clock.Load() {
		h.clock.Store(ms)
	}
}

// hour returns the samples of the series in their hour-th hour.
func (h *diffHistory) hour(hour int) []write.Series {
	from := rollupDay0.Add(time.Duration(hour) * time.Hour).UnixMilli()
	to := from + time.Hour.Milliseconds()
	in := func(t int64) bool { return t >= from && t < to }
	var out []write.Series
	for _, s := range h.series {
		part := write.Series{Labels: s.Labels}
		for _, x := range s.Samples {
			if in(x.T) {
				part.Samples = append(part.Samples, x)
			}
		}
		for _, x := range s.Histograms {
			if in(x.T) {
				part.Histograms = append(part.Histograms, x)
			}
		}
		if len(part.Samples)+len(part.Histograms) > 0 {
			out = append(out, part)
		}
	}
	return out
}

func (h *diffHistory) write(series []write.Series) {
	h.t.Helper()
	res, err := h.d.Write(context.Background(), &write.Request{Series: series})
	if err != nil || len(res.Rejected) > 0 {
		h.t.Fatalf("write: %v %+v", err, res.Rejected)
	}
}

// resend writes an earlier hour again, as a Prometheus retrying and a late
// exporter would: a quarter of its samples again (duplicates), a few float
// samples with another value, and a few new samples between the old ones,
// stale markers among them.
func (h *diffHistory) resend(hour int) {
	stale := math.Float64frombits(value.StaleNaN)
	var req []write.Series
	for _, s := range h.hour(hour) {
		again := write.Series{Labels: s.Labels}
		for _, x := range s.Samples {
			switch n := h.rng.IntN(40); {
			case n < 10:
				again.Samples = append(again.Samples, x)
			case n < 11:
				again.Samples = append(again.Samples, cellenc.Sample{T: x.T, V: x.V + 1})
			case n < 12:
				again.Samples = append(again.Samples, cellenc.Sample{T: x.T + 1 + h.rng.Int64N(999), V: h.rng.NormFloat64() * 1e3})
			case n < 13:
				again.Samples = append(again.Samples, cellenc.Sample{T: x.T + 1 + h.rng.Int64N(999), V: stale})
			}
		}
		for _, x := range s.Histograms {
			if h.rng.IntN(4) == 0 {
				again.Histograms = append(again.Histograms, x)
			}
		}
		if len(again.Samples)+len(again.Histograms) > 0 {
			req = append(req, again)
		}
	}
	h.write(req)
	h.logf("hour %d re-sent (%d series)", hour, len(req))
}

// logf adds a line to the history, after the clock's day and time.
func (h *diffHistory) logf(format string, args ...any) {
	at := "--"
	if h.clock != nil {
		at = time.UnixMilli(h.clock.Load()).UTC().Format("02T15:04:05")
	}
	h.log = append(h.log, at+": "+fmt.Sprintf(format, args...))
}

// errCrash ends a compaction round part way, as a crash would.
var errCrash = errors.New("crash")

// crashingStore is a real store whose writes end, as at a crash, once left of
// them have been made: a write after that fails unmade, or (afterWrite) is
// made and fails all the same, as a crash before its answer arrived.
type crashingStore struct {
	kv.Store
	left       atomic.Int64
	afterWrite bool
}

func (c *crashingStore) crashed() bool { return c.left.Add(-1) < 0 }

func (c *crashingStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	if !c.crashed() {
		return c.Store.Apply(ctx, table, muts)
	}
	if c.afterWrite {
		_ = c.Store.Apply(ctx, table, muts)
	}
	return errCrash
}

func (c *crashingStore) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	if !c.crashed() {
		return c.Store.CheckAndPut(ctx, table, expected, put)
	}
	if c.afterWrite {
		_, _ = c.Store.CheckAndPut(ctx, table, expected, put)
	}
	return false, errCrash
}

// compact runs a round of the real Compactor at the clock: its salts in a
// random order, in batches of 2, 7 or 500 rows. A round that is not final
// crashes part way one time in three, and in a messy store may leave salts
// out and write another resolution list than the store's.
func (h *diffHistory) compact(final bool) {
	h.t.Helper()
	rollups := h.rollups
	if h.style == diffMessy && !final {
		rollups = h.someRollups()
	}
	st := kv.Store(h.st)
	crash := "no crash"
	if !final && h.rng.IntN(3) == 0 {
		c := &crashingStore{Store: h.st, afterWrite: h.rng.IntN(2) == 0}
		c.left.Store(h.rng.Int64N(40))
		st = c
		crash = fmt.Sprintf("a crash due after %d writes (the last one made: %v)", c.left.Load(), c.afterWrite)
	}
	batch := []int{2, 7, 500}[h.rng.IntN(3)]
	c, err := compact.NewCompactor(st, h.settings, compact.Options{Rollups: rollups, BatchRows: batch,
		Now: func() time.Time { return time.UnixMilli(h.clock.Load()) }})
	if err != nil {
		h.t.Fatal(err)
	}
	salts := h.rng.Perm(h.settings.Salts)
	if h.style == diffMessy && !final {
		salts = salts[:1+h.rng.IntN(len(salts))]
	}
	for i, salt := range salts {
		_, err := c.CompactSalt(context.Background(), byte(salt))
		if errors.Is(err, errCrash) {
			crash += fmt.Sprintf(", which came in salt %d", salt)
			salts = salts[:i+1]
			break
		}
		if err != nil {
			h.t.Fatalf("compact salt %d: %v", salt, err)
		}
	}
	h.logf("round writing %q, salts %v, batches of %d rows, %s", schema.FormatRollups(rollups), salts, batch, crash)
}

// someRollups is a random resolution list of the store's resolutions: none,
// one or both.
func (h *diffHistory) someRollups() []schema.Rollup {
	var out []schema.Rollup
	for _, ro := range h.rollups {
		if h.rng.IntN(2) == 0 {
			out = append(out, ro)
		}
	}
	return out
}

// compareQueries runs n random queries from raw data and from rollups and
// reports every broken promise; then checks that the queries did reach the
// rollups, lest the test pass on a read path that never serves from one.
func (s *diffStore) compareQueries(t *testing.T, n int) {
	t.Helper()
	gen := &queryGen{rng: rand.New(rand.NewPCG(s.seed, 2)), expired: s.style == diffExpired}
	var checks []diffCheck
	for range n {
		checks = append(checks, checksOf(t, gen.next(), "")...)
	}
	// Raw data's answers first: in an expired store, from before it expired.
	raw := make([]*promql.Result, len(checks))
	for i, c := range checks {
		r, done := execPromQL(context.Background(), t, s.d, c.expr, c.start, c.end, c.step, query.ResolutionRaw)
		defer done()
		raw[i] = r
	}
	if s.expire != nil {
		s.expire()
	}
	var tally diffTally
	for i, c := range checks {
		s.compare(t, i, c, raw[i], &tally)
	}
	t.Logf("seed %d, %s store: %d queries (%d checks), %d with data; %d served from a rollup as raw's answer (compared; %d with range functions computed from windows), %d said they may differ, %d read raw data",
		s.seed, s.style, n, len(checks), tally.withData, tally.same, tally.funcs, tally.differ, tally.raw)
	if t.Failed() {
		t.Logf("the store's history (times: day of the month, UTC):\n  %s", strings.Join(s.history, "\n  "))
	}
	if n >= 100 && (tally.same < n/10 || tally.withData < n/2 || tally.funcs < n/40) {
		t.Errorf("the queries reached the rollups too seldom to prove anything: %+v", tally)
	}
}

// diffTally counts the checks of a comparison by how they were answered.
// funcs counts those of same whose range functions the store computed
// from windows (query/rollupfunc.go).
type diffTally struct{ withData, same, funcs, differ, raw int }

// diffCheck is one query compared. shapeOnly says that the engine's answer
// to it is not reproducible to the bit, even from raw data: it aggregates
// with an operator whose float result depends on the order of its input
// (sum, avg, stddev, stdvar; min and max of -0 and 0, or NaN) the output of a
// function or an operation, which the engine assembles from a map, in a
// random order. Then only its series and timestamps are compared, and the
// arguments of those aggregations are checks of their own (of: the query
// they come from).
type diffCheck struct {
	diffCase
	shapeOnly bool
	of        string
}

// checksOf returns the checks of c: c itself, and the arguments of its
// order-sensitive aggregations, recursively.
func checksOf(t *testing.T, c diffCase, of string) []diffCheck {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(c.expr)
	if err != nil {
		t.Fatalf("%s: %v", c.expr, err)
	}
	args := orderSensitiveArgs(expr)
	out := []diffCheck{{diffCase: c, shapeOnly: len(args) > 0, of: of}}
	for _, a := range args {
		part := c
		part.expr = a.String()
		out = append(out, checksOf(t, part, c.expr)...)
	}
	return out
}

// orderSensitiveArgs returns the arguments of the outermost aggregations of
// n whose result depends on the engine's order of their input: every
// aggregation but count of anything but a plain selector (whose series come
// in the order the storage returns them).
func orderSensitiveArgs(n parser.Node) []parser.Expr {
	if a, ok := n.(*parser.AggregateExpr); ok && a.Op != parser.COUNT {
		if _, sel := a.Expr.(*parser.VectorSelector); !sel {
			return []parser.Expr{a.Expr}
		}
	}
	var out []parser.Expr
	for _, c := range parser.Children(n) {
		out = append(out, orderSensitiveArgs(c)...)
	}
	return out
}

// compare answers c from rollups (ResolutionAuto) and checks it against raw,
// raw data's answer (with the store's clock before any expiry), by what its
// info says.
func (s *diffStore) compare(t *testing.T, i int, c diffCheck, raw *promql.Result, tally *diffTally) {
	t.Helper()
	ctx, stats := query.WithReadStats(context.Background())
	auto, done := execPromQL(ctx, t, s.d, c.expr, c.start, c.end, c.step, query.ResolutionAuto)
	defer done()
	rawWarnings, rawInfos := annotationsOf(raw, c.expr)
	warnings, infos := annotationsOf(auto, c.expr)
	claim, otherInfos := claimOf(infos)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s\n%s\ninfos %q", s.describe(i, c), fmt.Sprintf(format, args...), infos)
	}
	if claimed, _ := claimOf(rawInfos); claimed != claimNone {
		fail("resolution=raw says it was served from a rollup: %q", rawInfos)
	}
	if len(answerOf(auto.Value)) > 0 {
		tally.withData++
	}
	switch claim {
	case claimDiffers:
		tally.differ++
		return
	case claimNone:
		tally.raw++
		if s.style == diffExpired {
			// Read from raw data now: compared with raw data now.
			var doneNow func()
			raw, doneNow = execPromQL(context.Background(), t, s.d, c.expr, c.start, c.end, c.step, query.ResolutionRaw)
			defer doneNow()
			rawWarnings, rawInfos = annotationsOf(raw, c.expr)
		}
		if n := stats.RollupCells(); n > 0 {
			fail("no rollup info, but %d rollup cells read", n)
		}
		if n := stats.FuncSeries(); n > 0 {
			fail("no rollup info, but a range function computed from the windows of %d series", n)
		}
	case claimSameAsRaw:
		tally.same++
		if stats.FuncSeries() > 0 {
			tally.funcs++
		}
		// In a tidy or expired store every bucket has its rollup cells: an
		// answer served from them read some.
		if s.style != diffMessy && len(answerOf(auto.Value)) > 0 && stats.RollupCells() == 0 {
			fail("served from a rollup, but no rollup cell read (%d raw cells, %d chunk cells)", stats.RawCells(), stats.ChunkCells())
		}
	}
	if diff := diffAnswers(raw.Value, auto.Value, !c.shapeOnly); diff != "" {
		fail("%s", diff)
	}
	if !slices.Equal(rawWarnings, warnings) || !slices.Equal(rawInfos, otherInfos) {
		fail("annotations %q %q, from raw data %q %q", warnings, otherInfos, rawWarnings, rawInfos)
	}
}

// describe is what a failure message needs to reproduce check i: the seed
// makes the store and the queries again (the store's history is logged once,
// at the end of a failed comparison).
func (s *diffStore) describe(i int, c diffCheck) string {
	what := c.diffCase.String()
	if c.of != "" {
		what += fmt.Sprintf(" (an argument of %s)", c.of)
	}
	return fmt.Sprintf("seed %d, %s store on %s, check %d: %s\n(reproduce with diffSeed = %d in TestRollupDiffAnswersAsRaw/%s/%s)",
		s.seed, s.style, s.where, i, what, s.seed, s.where, s.style)
}

// annotationsOf returns a result's warnings and infos, sorted.
func annotationsOf(r *promql.Result, expr string) (warnings, infos []string) {
	warnings, infos = r.Warnings.AsStrings(expr, 0, 0)
	slices.Sort(warnings)
	slices.Sort(infos)
	return warnings, infos
}

// claim is what an answer's infos say of rollups.
type claim int

const (
	// claimNone: no info mentions a rollup; the answer was read from raw data.
	claimNone claim = iota
	// claimSameAsRaw: served from a rollup, and no info says that the answer
	// differs: then it is raw data's (README: "A rollup serves a query only
	// when the answer is the same as from raw data"), whether the info says
	// so ("the same answer as from raw data") or only which rollup served
	// the part of the range whose raw data expired.
	claimSameAsRaw
	// claimDiffers: an info says that the answer differs, or may differ,
	// from raw data's (a resolution asked for, windows that are not the
	// query's ranges past the raw retention).
	claimDiffers
)

// claimOf reads the infos of an answer: what they claim (the weakest claim
// of any), and the infos that do not mention rollups.
func claimOf(infos []string) (claim, []string) {
	c, others := claimNone, []string{}
	for _, s := range infos {
		switch {
		case !strings.Contains(s, "rollup"):
			others = append(others, s)
		case strings.Contains(s, "differ"):
			c = max(c, claimDiffers)
		default:
			c = max(c, claimSameAsRaw)
		}
	}
	return c, others
}

// answerSeries is one series of an answer, whatever its type.
type answerSeries struct {
	metric     labels.Labels
	floats     []promql.FPoint
	histograms []promql.HPoint
}

// answerOf returns the series of an answer (a matrix, a vector or a scalar),
// sorted by labels.
func answerOf(v parser.Value) []answerSeries {
	var out []answerSeries
	switch v := v.(type) {
	case promql.Matrix:
		for _, s := range v {
			out = append(out, answerSeries{s.Metric, s.Floats, s.Histograms})
		}
	case promql.Vector:
		for _, s := range v {
			a := answerSeries{metric: s.Metric}
			if s.H != nil {
				a.histograms = []promql.HPoint{{T: s.T, H: s.H}}
			} else {
				a.floats = []promql.FPoint{{T: s.T, F: s.F}}
			}
			out = append(out, a)
		}
	case promql.Scalar:
		out = []answerSeries{{floats: []promql.FPoint{{T: v.T, F: v.V}}}}
	}
	slices.SortStableFunc(out, func(a, b answerSeries) int { return labels.Compare(a.metric, b.metric) })
	return out
}

// diffAnswers describes the first difference between raw data's answer and
// the rollups': the same series, the same timestamps and, when exact, floats
// of the same bits (NaN payloads too) and histograms equal bit for bit
// (FloatHistogram.Equals); "" when they are the same.
func diffAnswers(raw, rollups parser.Value, exact bool) string {
	want, got := answerOf(raw), answerOf(rollups)
	sameF, sameH := sameFloat, sameHistogram
	if !exact {
		sameF = func(a, b promql.FPoint) bool { return a.T == b.T }
		sameH = func(a, b promql.HPoint) bool { return a.T == b.T }
	}
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(want):
			return fmt.Sprintf("series %s only from rollups (%d points)", got[i].metric, len(got[i].floats)+len(got[i].histograms))
		case i >= len(got):
			return fmt.Sprintf("series %s only from raw data (%d points)", want[i].metric, len(want[i].floats)+len(want[i].histograms))
		case !labels.Equal(want[i].metric, got[i].metric):
			return fmt.Sprintf("series %d is %s from rollups, %s from raw data", i, got[i].metric, want[i].metric)
		}
		if d := diffPoints(want[i].floats, got[i].floats, sameF, formatFloat); d != "" {
			return fmt.Sprintf("series %s: %s", want[i].metric, d)
		}
		if d := diffPoints(want[i].histograms, got[i].histograms, sameH, formatHistogram); d != "" {
			return fmt.Sprintf("series %s: %s", want[i].metric, d)
		}
	}
	return ""
}

// diffPoints describes the first point where got differs from want.
func diffPoints[P promql.FPoint | promql.HPoint](want, got []P, same func(a, b P) bool, format func(P) string) string {
	for j := range max(len(want), len(got)) {
		switch {
		case j >= len(want):
			return fmt.Sprintf("point %d only from rollups: %s", j, format(got[j]))
		case j >= len(got):
			return fmt.Sprintf("point %d only from raw data: %s", j, format(want[j]))
		case !same(want[j], got[j]):
			return fmt.Sprintf("point %d:\n  from rollups  %s\n  from raw data %s", j, format(got[j]), format(want[j]))
		}
	}
	return ""
}

func sameFloat(a, b promql.FPoint) bool {
	return a.T == b.T && math.Float64bits(a.F) == math.Float64bits(b.F)
}

func sameHistogram(a, b promql.HPoint) bool { return a.T == b.T && a.H.Equals(b.H) }

func formatFloat(p promql.FPoint) string {
	return fmt.Sprintf("%v (%#016x) at %d (%s)", p.F, math.Float64bits(p.F), p.T, time.UnixMilli(p.T).UTC().Format(time.RFC3339Nano))
}

func formatHistogram(p promql.HPoint) string {
	return fmt.Sprintf("%s (sum %#016x, count %#016x) at %d (%s)", p.H, math.Float64bits(p.H.Sum), math.Float64bits(p.H.Count),
		p.T, time.UnixMilli(p.T).UTC().Format(time.RFC3339Nano))
}

// diffCase is one query: a range query over [start, end] at step, or an
// instant query at start (step 0).
type diffCase struct {
	expr       string
	start, end time.Time
	step       time.Duration
}

func (c diffCase) String() string {
	at := func(t time.Time) string {
		return fmt.Sprintf("%s (%d)", t.UTC().Format(time.RFC3339Nano), t.UnixMilli())
	}
	if c.step == 0 {
		return fmt.Sprintf("%s, instant at %s", c.expr, at(c.start))
	}
	return fmt.Sprintf("%s, range from %s to %s, step %s", c.expr, at(c.start), at(c.end), c.step)
}

// queryGen makes random queries of the shapes Grafana panels and recording
// rules use: selectors, *_over_time, the rate family, aggregations, binary
// operations between them and with scalars, offset and @, subqueries. Half
// of them are "aligned": evaluation times, offsets and @ at window ends and
// ranges of whole windows, as a rollup can serve; the others anything.
type queryGen struct {
	rng     *rand.Rand
	expired bool // for a store past its raw retention
	aligned bool // the query being made is aligned
}

var (
	alignedSteps   = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour, 2 * time.Hour}
	unalignedSteps = []time.Duration{time.Minute, 90 * time.Second, 7 * time.Minute, 10 * time.Minute, 25 * time.Minute, 61 * time.Minute}
	wholeRanges    = []string{"5m", "10m", "15m", "30m", "1h", "90m", "2h", "3h", "6h", "1d"}
	partRanges     = []string{"90s", "7m", "13m", "61m", "2h7m"}
)

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func (g *queryGen) next() diffCase {
	g.aligned = g.rng.IntN(2) == 0
	c := diffCase{expr: g.expr(0)}
	const hour = int64(3_600_000)
	lo := rollupDay0.UnixMilli() + 3*hour
	hi := rollupDay0.UnixMilli() + (diffHours+1)*hour
	if g.rng.IntN(4) == 0 {
		at := lo + g.rng.Int64N(hi-lo)
		if g.aligned {
			at = truncMs(at, pick(g.rng, 5*time.Minute, time.Hour))
		}
		c.start, c.end = time.UnixMilli(at), time.UnixMilli(at)
		return c
	}
	steps := append(slices.Clone(alignedSteps), unalignedSteps...)
	if g.aligned {
		steps = alignedSteps
	}
	c.step = pick(g.rng, steps...)
	points := 2 + g.rng.Int64N(min(300, 40*hour/c.step.Milliseconds()))
	span := points * c.step.Milliseconds()
	start := lo + g.rng.Int64N(max(1, hi-lo-span))
	switch {
	case g.aligned:
		start = truncMs(start, c.step)
	case g.rng.IntN(2) == 0:
		start = truncMs(start, c.step) + g.rng.Int64N(120)*1000 // whole seconds off
	}
	c.start, c.end = time.UnixMilli(start), time.UnixMilli(start+span)
	return c
}

func truncMs(t int64, d time.Duration) int64 { return t / d.Milliseconds() * d.Milliseconds() }

func (g *queryGen) expr(depth int) string {
	switch n := g.rng.IntN(12); {
	case depth >= 2 || n < 5:
		return g.leaf()
	case n < 7:
		return g.aggregation(g.expr(depth + 1))
	case n < 10:
		return g.binary(depth)
	default:
		return g.subquery()
	}
}

func (g *queryGen) aggregation(inner string) string {
	op := pick(g.rng, "sum", "max", "min", "avg", "count")
	return op + pick(g.rng, "", " by (job)", " without (instance)") + " (" + inner + ")"
}

// binary is a binary operation with a scalar, between two series-per-instance
// expressions on(instance), or between two aggregations by (job): never an
// error of the engine (many-to-many matching).
func (g *queryGen) binary(depth int) string {
	op := pick(g.rng, "+", "-", "*", "/", ">", "<=", " > bool ")
	switch g.rng.IntN(3) {
	case 0:
		scalar := pick(g.rng, "2", "0.1", "-1", "0", "1e308")
		if g.rng.IntN(2) == 0 {
			return "(" + g.expr(depth+1) + ") " + op + " " + scalar
		}
		return scalar + " " + op + " (" + g.expr(depth+1) + ")"
	case 1:
		return "(" + g.leaf() + ") " + op + " on(instance) (" + g.leaf() + ")"
	default:
		by := func() string {
			return pick(g.rng, "sum", "max", "min", "avg", "count") + " by (job) (" + g.leaf() + ")"
		}
		return by() + " " + op + " " + by()
	}
}

// subquery is a range function over a subquery of a leaf, which no rollup
// serves (its evaluation times are not the query's).
func (g *queryGen) subquery() string {
	fn := pick(g.rng, "max_over_time", "min_over_time", "avg_over_time", "sum_over_time", "last_over_time", "rate", "increase", "delta")
	return fmt.Sprintf("%s((%s)[%s:%s]%s)", fn, g.leaf(), pick(g.rng, "1h", "2h", "30m", "7m"), pick(g.rng, "1m", "5m", "7m", "1h"), g.offset())
}

// leaf is an instant vector of one selector: the selector, a function of it,
// or a range function of it.
func (g *queryGen) leaf() string {
	sel := g.selector()
	rangeFuncsFrom := 9
	if g.aligned {
		rangeFuncsFrom = 6 // more of the range functions computed from windows
	}
	switch n := g.rng.IntN(12); {
	case n < 3:
		return sel + g.modifiers()
	case n < 4:
		return pick(g.rng, "timestamp", "histogram_count", "abs") + "(" + sel + g.modifiers() + ")"
	case n < rangeFuncsFrom:
		// Aligned queries get mostly the functions a rollup serves.
		fn := pick(g.rng, "max_over_time", "min_over_time", "sum_over_time", "avg_over_time", "count_over_time",
			"last_over_time", "present_over_time", "stddev_over_time", "quantile_over_time")
		if g.aligned && g.rng.IntN(3) > 0 {
			fn = pick(g.rng, "max_over_time", "min_over_time", "sum_over_time", "last_over_time", "present_over_time")
		}
		arg := ""
		if fn == "quantile_over_time" {
			arg = pick(g.rng, "0", "0.5", "0.9", "1") + ", "
		}
		return fn + "(" + arg + sel + "[" + g.rangeOf(fn) + "]" + g.modifiers() + ")"
	default:
		fn := pick(g.rng, "rate", "increase", "irate", "delta", "idelta", "changes", "resets", "count_over_time")
		return fn + "(" + sel + "[" + g.rangeOf(fn) + "]" + g.modifiers() + ")"
	}
}

func (g *queryGen) selector() string {
	if g.rng.IntN(4) == 0 {
		return pick(g.rng, "dh", `{__name__=~"d|dh"}`)
	}
	return g.floatSelector()
}

// floatSelector selects float series only.
func (g *queryGen) floatSelector() string {
	return pick(g.rng, "d", "d", "d", `d{kind="counter"}`, `d{kind=~"extreme|big-small"}`, `d{job="j1"}`, `d{kind!="gauge"}`,
		`{__name__="d",instance=~"i0[0-4]"}`)
}

// rangeOf is the range of a range function fn: whole windows of 5m or 1h
// when the query is aligned, anything otherwise.
func (g *queryGen) rangeOf(fn string) string {
	switch {
	case g.aligned || g.rng.IntN(2) == 0:
		return pick(g.rng, wholeRanges...)
	}
	return pick(g.rng, partRanges...)
}

// modifiers are a selector's offset and @, at window ends when the query is
// aligned.
func (g *queryGen) modifiers() string {
	return g.offset() + g.at()
}

func (g *queryGen) offset() string {
	if g.aligned {
		return pick(g.rng, "", "", "", " offset 5m", " offset 1h", " offset 1d", " offset -2h")
	}
	return pick(g.rng, "", "", "", " offset 5m", " offset 1h", " offset 7m", " offset 90s", " offset -2h")
}

func (g *queryGen) at() string {
	if g.rng.IntN(4) > 0 {
		return ""
	}
	at := rollupDay0.Add(3*time.Hour + time.Duration(g.rng.Int64N(int64(diffHours*time.Hour))))
	switch n := g.rng.IntN(4); {
	case n == 0:
		return " @ start()"
	case n == 1:
		return " @ end()"
	case g.aligned:
		return fmt.Sprintf(" @ %d", at.Truncate(time.Hour).Unix())
	}
	return fmt.Sprintf(" @ %.3f", float64(at.UnixMilli())/1000)
}
