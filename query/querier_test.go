package query_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

const hour = 3600_000

// fixture is a store on one backend with a known data set:
//
//	a: cpu{host="h1", job="node", cpu="0"}  day 0 and day 2, incl. bucket edges and a stale marker
//	b: cpu{host="h1", job="node", cpu="1"}  day 0 only
//	c: cpu{host="h2", job="api"}            day 2 only (no cpu label)
//	d: mem{host="h1", job="node"}           day 0; bucket 0 holds a stored XOR chunk and raw cells
type fixture struct {
	st       kv.Store
	settings schema.Settings
	reg      *index.Registry
	post     *index.Postings
}

var (
	serA = labels.FromStrings("__name__", "cpu", "host", "h1", "job", "node", "cpu", "0")
	serB = labels.FromStrings("__name__", "cpu", "host", "h1", "job", "node", "cpu", "1")
	serC = labels.FromStrings("__name__", "cpu", "host", "h2", "job", "api")
	serD = labels.FromStrings("__name__", "mem", "host", "h1", "job", "node")
)

func newFixture(t *testing.T, b schematest.Backend) *fixture {
	t.Helper()
	ctx := context.Background()
	b.TableOptions.RawRetention = 0
	st := b.Store(t)
	f := &fixture{st: st, settings: b.Settings, reg: index.NewRegistry(st, index.RegistryOptions{}), post: index.NewPostings(st, index.PostingsOptions{})}
	w, err := write.New(st, b.Settings, f.reg, f.post, write.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stale := math.Float64frombits(value.StaleNaN)
	req := write.Request{Series: []write.Series{
		{Labels: serA, Samples: []cellenc.Sample{{T: 0, V: 1}, {T: hour - 1, V: 2}, {T: hour, V: 3}, {T: hour + 1, V: stale}, {T: 2*day + 5, V: 4}}},
		{Labels: serB, Samples: []cellenc.Sample{{T: 10, V: 10}, {T: 2 * hour, V: 11}}},
		{Labels: serC, Samples: []cellenc.Sample{{T: 2*day + 7, V: 20}}},
		{Labels: serD, Samples: []cellenc.Sample{{T: 30, V: 103}, {T: 50, V: 105}}},
	}}
	if res, err := w.Write(ctx, &req); err != nil || res.SamplesWritten != 10 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	// A stored chunk in d's bucket 0 with samples at 20, 30, 40; the raw cell at
	// 30 (written after compaction) wins over the chunk's.
	ids := make([]uint64, 1)
	if err := f.reg.Lookup(ctx, []labels.Labels{serD}, ids); err != nil || ids[0] == 0 {
		t.Fatalf("Lookup = %v, %v", ids, err)
	}
	chk := chunkenc.NewXORChunk()
	app, _ := chk.Appender()
	for _, s := range []cellenc.Sample{{T: 20, V: 2}, {T: 30, V: 3}, {T: 40, V: 4}} {
		app.Append(0, s.T, s.V)
	}
	row := schema.DataRowKey(nil, schema.DataKey{Salt: schema.Salt("h1", b.Settings.Salts), Host: "h1", Metric: "mem", SeriesID: ids[0]})
	q, _ := schema.AppendChunkQualifier(nil, 20, b.Settings.BucketWidth)
	put := kv.Put(row, schema.FamilyChunk, q, 40, cellenc.AppendChunkValue(nil, byte(chunkenc.EncXOR), chk.Bytes()))
	if err := st.Apply(ctx, schema.TableData, []kv.Mutation{put}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) reader(opts query.Options) *query.Reader {
	return query.NewReader(f.st, f.settings, f.reg, f.post).WithOptions(opts)
}

// dump renders a series set as "labels: t=bits ..." lines, values as their bit
// patterns so that NaN payloads are compared exactly.
func dump(t *testing.T, ss storage.SeriesSet) string {
	t.Helper()
	var b strings.Builder
	for ss.Next() {
		s := ss.At()
		fmt.Fprintf(&b, "%s:", s.Labels())
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			fmt.Fprintf(&b, " %d=%s", ts, bits(v))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
	}
	if err := ss.Err(); err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	return b.String()
}

func bits(v float64) string {
	if math.IsNaN(v) {
		return fmt.Sprintf("NaN(%#x)", math.Float64bits(v))
	}
	return fmt.Sprint(v)
}

func sel(t *testing.T, r *query.Reader, mint, maxt int64, hints *storage.SelectHints, ms ...*labels.Matcher) string {
	t.Helper()
	q, err := r.Querier(mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	return dump(t, q.Select(context.Background(), true, hints, ms...))
}

func m(typ labels.MatchType, n, v string) *labels.Matcher { return labels.MustNewMatcher(typ, n, v) }

const (
	lineA = `{__name__="cpu", cpu="0", host="h1", job="node"}: 0=1 3599999=2 3600000=3 3600001=NaN(0x7ff0000000000002) 172800005=4` + "\n"
	lineB = `{__name__="cpu", cpu="1", host="h1", job="node"}: 10=10 7200000=11` + "\n"
	lineC = `{__name__="cpu", host="h2", job="api"}: 172800007=20` + "\n"
	lineD = `{__name__="mem", host="h1", job="node"}: 20=2 30=103 40=4 50=105` + "\n"
)

func TestSelect(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			r := f.reader(query.Options{Plan: query.PlanIndex})
			all := int64(3 * day)
			for _, tc := range []struct {
				name       string
				mint, maxt int64
				ms         []*labels.Matcher
				want       string
			}{
				{"equality, sorted by labels, stale marker bits kept, across buckets and days", 0, all, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu")}, lineA + lineB + lineC},
				{"two equalities intersect", 0, all, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "cpu", "1")}, lineB},
				{"not-equal keeps series without the label", 0, all, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchNotEqual, "cpu", "0")}, lineB + lineC},
				{"regex over a value range", 0, all, []*labels.Matcher{m(labels.MatchRegexp, "job", "n.*e")}, lineA + lineB + lineD},
				{"set regex as several equality reads", 0, all, []*labels.Matcher{m(labels.MatchRegexp, "__name__", "cpu|mem"), m(labels.MatchRegexp, "cpu", "1|7")}, lineB},
				{"negative regex keeps series without the label", 0, all, []*labels.Matcher{m(labels.MatchNotRegexp, "cpu", "0|1"), m(labels.MatchEqual, "host", "h2")}, lineC},
				{"negative regex alone over every series", 0, all, []*labels.Matcher{m(labels.MatchNotRegexp, "job", "no.*")}, lineC},
				{"empty equality selects series lacking the label", 0, all, []*labels.Matcher{m(labels.MatchEqual, "cpu", ""), m(labels.MatchRegexp, "job", ".+")}, lineC + lineD},
				{"regex matching the empty string", 0, all, []*labels.Matcher{m(labels.MatchRegexp, "cpu", "1|"), m(labels.MatchEqual, "host", "h1")}, lineB + lineD},
				{"not-empty selects series with the label", 0, all, []*labels.Matcher{m(labels.MatchNotEqual, "cpu", "")}, lineA + lineB},
				{"the day of maxt only", 2 * day, all, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu")}, `{__name__="cpu", cpu="0", host="h1", job="node"}: 172800005=4` + "\n" + lineC},
				{"bounds inclusive at bucket edges", hour - 1, hour, []*labels.Matcher{m(labels.MatchEqual, "cpu", "0")}, `{__name__="cpu", cpu="0", host="h1", job="node"}: 3599999=2 3600000=3` + "\n"},
				{"series without samples in the range are left out", hour + 2, 2 * hour, []*labels.Matcher{m(labels.MatchEqual, "host", "h1")}, `{__name__="cpu", cpu="1", host="h1", job="node"}: 7200000=11` + "\n"},
				{"chunk and raw merged, raw wins, cut to range", 25, 45, []*labels.Matcher{m(labels.MatchEqual, "__name__", "mem")}, `{__name__="mem", host="h1", job="node"}: 30=103 40=4` + "\n"},
				{"an empty day in between costs nothing", day, 2*day - 1, []*labels.Matcher{m(labels.MatchEqual, "job", "node")}, ""},
				{"negative range", -10, -1, []*labels.Matcher{m(labels.MatchEqual, "job", "node")}, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := sel(t, r, tc.mint, tc.maxt, nil, tc.ms...); got != tc.want {
						t.Errorf("Select(%d, %d, %v) =\n%s\nwant\n%s", tc.mint, tc.maxt, tc.ms, got, tc.want)
					}
				})
			}

			t.Run("hints narrow the range and limit the series", func(t *testing.T) {
				got := sel(t, r, 0, all, &storage.SelectHints{Start: 0, End: 10, Limit: 1}, m(labels.MatchEqual, "host", "h1"))
				want := `{__name__="cpu", cpu="0", host="h1", job="node"}: 0=1` + "\n"
				if got != want {
					t.Errorf("got\n%s\nwant\n%s", got, want)
				}
			})
			t.Run("series hints return labels only", func(t *testing.T) {
				got := sel(t, r, 0, all, &storage.SelectHints{Start: 0, End: all, Func: "series"}, m(labels.MatchEqual, "__name__", "mem"))
				if want := `{__name__="mem", host="h1", job="node"}:` + "\n"; got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
			t.Run("limits fail one over, with errors naming the limit", func(t *testing.T) {
				cpu := []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu")}     // a, b, c: 8 samples
				cpuH1 := append(slices.Clip(cpu), m(labels.MatchEqual, "host", "h1")) // a, b: 7 samples
				limitHint := &storage.SelectHints{Start: 0, End: all, Limit: 2}
				for _, tc := range []struct {
					name   string
					opts   query.Options
					hints  *storage.SelectHints
					ms     []*labels.Matcher
					want   string
					wantIs error
				}{
					{name: "index plan: as many series as MaxSeries pass", opts: query.Options{Plan: query.PlanIndex, MaxSeries: 3}, ms: cpu,
						want: lineA + lineB + lineC},
					{name: "index plan: one series over MaxSeries fails before handing out a series", opts: query.Options{Plan: query.PlanIndex, MaxSeries: 2}, ms: cpu,
						want:   `error: query: 3 series match {__name__="cpu"}, more than the limit of 2: too many series: query limit exceeded` + "\n",
						wantIs: query.ErrTooManySeries},
					{name: "index plan: a hints limit at MaxSeries cuts the series first", opts: query.Options{Plan: query.PlanIndex, MaxSeries: 2}, hints: limitHint, ms: cpu,
						want: lineA + lineB},
					{name: "index plan: as many samples as MaxSamples pass", opts: query.Options{Plan: query.PlanIndex, MaxSamples: 8}, ms: cpu,
						want: lineA + lineB + lineC},
					{name: "index plan: one sample over MaxSamples fails at the series that goes over", opts: query.Options{Plan: query.PlanIndex, MaxSamples: 7}, ms: cpu,
						want:   lineA + lineB + "error: query: more than 7 samples in 3 series: too many samples: query limit exceeded\n",
						wantIs: query.ErrTooManySamples},
					{name: "host scan: as many series as MaxSeries pass", opts: query.Options{Plan: query.PlanHostScan, MaxSeries: 2}, ms: cpuH1,
						want: lineA + lineB},
					{name: "host scan: one series over MaxSeries fails", opts: query.Options{Plan: query.PlanHostScan, MaxSeries: 1}, ms: cpuH1,
						want:   `error: query: 2 series match {__name__="cpu", host="h1"}, more than the limit of 1: too many series: query limit exceeded` + "\n",
						wantIs: query.ErrTooManySeries},
					{name: "host scan: as many samples as MaxSamples pass", opts: query.Options{Plan: query.PlanHostScan, MaxSamples: 7}, ms: cpuH1,
						want: lineA + lineB},
					{name: "host scan: one sample over MaxSamples fails", opts: query.Options{Plan: query.PlanHostScan, MaxSamples: 6}, ms: cpuH1,
						want:   "error: query: more than 6 samples in cpu on host h1: too many samples: query limit exceeded\n",
						wantIs: query.ErrTooManySamples},
				} {
					t.Run(tc.name, func(t *testing.T) {
						q, err := f.reader(tc.opts).Querier(0, all)
						if err != nil {
							t.Fatal(err)
						}
						defer q.Close()
						ss := q.Select(context.Background(), true, tc.hints, tc.ms...)
						if got := dump(t, ss); got != tc.want {
							t.Errorf("got\n%s\nwant\n%s", got, tc.want)
						}
						err = ss.Err()
						if tc.wantIs != nil && (!errors.Is(err, tc.wantIs) || !errors.Is(err, query.ErrLimitExceeded)) {
							t.Errorf("Err = %v, want it to wrap %v and ErrLimitExceeded", err, tc.wantIs)
						}
					})
				}
			})
			t.Run("label names and values", func(t *testing.T) {
				q, _ := r.Querier(0, all)
				defer q.Close()
				ctx := context.Background()
				check := func(what string, got []string, err error, want ...string) {
					t.Helper()
					if err != nil || !slices.Equal(got, want) {
						t.Errorf("%s = %q, %v; want %q", what, got, err, want)
					}
				}
				got, _, err := q.LabelNames(ctx, nil)
				check("LabelNames()", got, err, "__name__", "cpu", "host", "job")
				got, _, err = q.LabelNames(ctx, nil, m(labels.MatchEqual, "__name__", "mem"))
				check("LabelNames(mem)", got, err, "__name__", "host", "job")
				got, _, err = q.LabelNames(ctx, &storage.LabelHints{Limit: 2})
				check("LabelNames(limit 2)", got, err, "__name__", "cpu")
				got, _, err = q.LabelValues(ctx, "job", nil)
				check("LabelValues(job)", got, err, "api", "node")
				got, _, err = q.LabelValues(ctx, "cpu", nil, m(labels.MatchEqual, "job", "node"), m(labels.MatchNotEqual, "cpu", "1"))
				check("LabelValues(cpu, matchers)", got, err, "0")
				got, _, err = q.LabelValues(ctx, "__name__", &storage.LabelHints{Limit: 1})
				check("LabelValues(__name__, limit 1)", got, err, "cpu")
				q2, _ := r.Querier(2*day, all)
				got, _, err = q2.LabelValues(ctx, "host", nil)
				check("LabelValues(host) on day 2", got, err, "h1", "h2")
				got, _, err = q2.LabelValues(ctx, "cpu", nil, m(labels.MatchEqual, "host", "h1"))
				check("LabelValues(cpu, host=h1) on day 2", got, err, "0")
			})
			t.Run("chunk querier", func(t *testing.T) {
				q, _ := r.ChunkQuerier(0, all)
				defer q.Close()
				ss := q.Select(context.Background(), true, nil, m(labels.MatchRegexp, "__name__", "cpu|mem"))
				var got []string
				for ss.Next() {
					s := ss.At()
					it := s.Iterator(nil)
					for it.Next() {
						c := it.At()
						var vals []string
						ci := c.Chunk.Iterator(nil)
						for ci.Next() == chunkenc.ValFloat {
							ts, v := ci.At()
							vals = append(vals, fmt.Sprintf("%d=%s", ts, bits(v)))
						}
						got = append(got, fmt.Sprintf("%s [%d,%d] %s", s.Labels().Get("cpu")+s.Labels().Get("__name__"), c.MinTime, c.MaxTime, strings.Join(vals, " ")))
					}
				}
				want := []string{
					"0cpu [0,3599999] 0=1 3599999=2",
					"0cpu [3600000,3600001] 3600000=3 3600001=NaN(0x7ff0000000000002)",
					"0cpu [172800005,172800005] 172800005=4",
					"1cpu [10,10] 10=10",
					"1cpu [7200000,7200000] 7200000=11",
					"cpu [172800007,172800007] 172800007=20",
					"mem [20,50] 20=2 30=103 40=4 50=105",
				}
				if err := ss.Err(); err != nil || !slices.Equal(got, want) {
					t.Errorf("chunks = %q, %v; want %q", got, err, want)
				}
			})
		})
	}
}

func TestHostScanPlanEqualsIndexPlan(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			index, scan, auto := f.reader(query.Options{Plan: query.PlanIndex}), f.reader(query.Options{Plan: query.PlanHostScan}), f.reader(query.Options{})
			for _, tc := range []struct {
				mint, maxt int64
				ms         []*labels.Matcher
				want       string
			}{
				{0, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h1")}, lineA + lineB},
				{0, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h1"), m(labels.MatchEqual, "cpu", "1")}, lineB},
				{0, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h1"), m(labels.MatchRegexp, "cpu", "0|2")}, lineA},
				{2 * day, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h1")}, `{__name__="cpu", cpu="0", host="h1", job="node"}: 172800005=4` + "\n"},
				{hour, 2 * hour, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h1"), m(labels.MatchNotEqual, "job", "api")}, `{__name__="cpu", cpu="0", host="h1", job="node"}: 3600000=3 3600001=NaN(0x7ff0000000000002)` + "\n" + `{__name__="cpu", cpu="1", host="h1", job="node"}: 7200000=11` + "\n"},
				{0, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "mem"), m(labels.MatchEqual, "host", "h1")}, lineD},
				{25, 45, []*labels.Matcher{m(labels.MatchEqual, "__name__", "mem"), m(labels.MatchEqual, "host", "h1")}, `{__name__="mem", host="h1", job="node"}: 30=103 40=4` + "\n"},
				{0, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h2"), m(labels.MatchEqual, "job", "node")}, ""},
				{0, 3 * day, []*labels.Matcher{m(labels.MatchEqual, "__name__", "cpu"), m(labels.MatchEqual, "host", "h3")}, ""},
			} {
				for name, r := range map[string]*query.Reader{"index": index, "scan": scan, "auto": auto} {
					if got := sel(t, r, tc.mint, tc.maxt, nil, tc.ms...); got != tc.want {
						t.Errorf("%s plan: Select(%d, %d, %v) =\n%s\nwant\n%s", name, tc.mint, tc.maxt, tc.ms, got, tc.want)
					}
				}
			}
		})
	}
}
