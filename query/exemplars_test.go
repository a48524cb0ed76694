package query_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// dumpExemplars renders a Select's results as "series: ts=value{labels} ..." lines.
func dumpExemplars(res []exemplar.QueryResult) string {
	var b strings.Builder
	for _, r := range res {
		fmt.Fprintf(&b, "%s:", r.SeriesLabels)
		for _, e := range r.Exemplars {
			fmt.Fprintf(&b, " %d=%g%s", e.Ts, e.Value, e.Labels)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestExemplarQuerier(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b.TableOptions.RawRetention, b.TableOptions.ExemplarRetention = 0, 0
			st := b.Store(t)
			reg, post := index.NewRegistry(st, index.RegistryOptions{}), index.NewPostings(st, index.PostingsOptions{})
			w, err := write.New(st, b.Settings, reg, post, write.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ex := func(id string, v float64, ts int64) exemplar.Exemplar {
				return exemplar.Exemplar{Labels: labels.FromStrings("trace_id", id), Value: v, Ts: ts, HasTs: true}
			}
			// a: exemplars on both sides of the 1h bucket edge; b: one.
			res, err := w.Write(ctx, &write.Request{Series: []write.Series{
				{Labels: serA, Samples: []cellenc.Sample{{T: hour - 1, V: 1}, {T: hour, V: 2}},
					Exemplars: []exemplar.Exemplar{ex("a3", 3, hour+5), ex("a1", 1, hour-1), ex("a2", 2, hour)}},
				{Labels: serB, Samples: []cellenc.Sample{{T: hour, V: 1}}, Exemplars: []exemplar.Exemplar{ex("b1", 9, hour+1)}},
			}})
			if err != nil || res.ExemplarsWritten != 4 {
				t.Fatalf("Write = %+v, %v", res, err)
			}
			r := query.NewReader(st, b.Settings, reg, post)
			eq, err := r.ExemplarQuerier(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cpu := labels.MustNewMatcher(labels.MatchEqual, "__name__", "cpu")
			cpu1 := labels.MustNewMatcher(labels.MatchEqual, "cpu", "1")
			for _, tc := range []struct {
				name       string
				start, end int64
				sets       [][]*labels.Matcher
				want       string
			}{
				{"the range crosses the bucket edge", 0, 2 * hour, [][]*labels.Matcher{{cpu}},
					`{__name__="cpu", cpu="0", host="h1", job="node"}: 3599999=1{trace_id="a1"} 3600000=2{trace_id="a2"} 3600005=3{trace_id="a3"}` + "\n" +
						`{__name__="cpu", cpu="1", host="h1", job="node"}: 3600001=9{trace_id="b1"}` + "\n"},
				{"inclusive bounds within one bucket", hour, hour + 1, [][]*labels.Matcher{{cpu}},
					`{__name__="cpu", cpu="0", host="h1", job="node"}: 3600000=2{trace_id="a2"}` + "\n" +
						`{__name__="cpu", cpu="1", host="h1", job="node"}: 3600001=9{trace_id="b1"}` + "\n"},
				{"a series matched by two sets comes once, in label order", 0, 2 * hour, [][]*labels.Matcher{{cpu1}, {cpu}},
					`{__name__="cpu", cpu="0", host="h1", job="node"}: 3599999=1{trace_id="a1"} 3600000=2{trace_id="a2"} 3600005=3{trace_id="a3"}` + "\n" +
						`{__name__="cpu", cpu="1", host="h1", job="node"}: 3600001=9{trace_id="b1"}` + "\n"},
				{"no sets", 0, 2 * hour, nil, ""},
				{"end before start", 10, 5, [][]*labels.Matcher{{cpu}}, ""},
				{"before 1970 only", -100, -1, [][]*labels.Matcher{{cpu}}, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got, err := eq.Select(tc.start, tc.end, tc.sets...)
					if err != nil || got == nil || dumpExemplars(got) != tc.want {
						t.Errorf("Select = %v (nil: %v)\n%s\nwant\n%s", err, got == nil, dumpExemplars(got), tc.want)
					}
				})
			}

			// More exemplars than MaxSamples fail the Select.
			limited, _ := r.WithOptions(query.Options{MaxSamples: 3}).ExemplarQuerier(ctx)
			_, err = limited.Select(0, 2*hour, []*labels.Matcher{cpu})
			if !errors.Is(err, query.ErrTooManySamples) || err.Error() != "query: more than 3 exemplars in the range: too many samples: query limit exceeded" {
				t.Errorf("over MaxSamples: %v", err)
			}

			// A cell that does not decode is an error naming the series.
			ids := make([]uint64, 1)
			if err := reg.Lookup(ctx, []labels.Labels{serB}, ids); err != nil {
				t.Fatal(err)
			}
			row := schema.DataRowKey(nil, schema.DataKey{Salt: schema.Salt("h1", b.Settings.Salts), Host: "h1", Metric: "cpu", SeriesID: ids[0], BucketStart: hour})
			if err := st.Apply(ctx, schema.TableExemplars, []kv.Mutation{kv.Put(row, schema.FamilyExemplars, []byte{0, 0, 0, 9, 0}, hour+9, []byte{7})}); err != nil {
				t.Fatal(err)
			}
			_, err = eq.Select(0, 2*hour, []*labels.Matcher{cpu1})
			want := fmt.Sprintf(`query: exemplars of series %d ({__name__="cpu", cpu="1", host="h1", job="node"}): row %x cell 0000000900: cellenc: exemplar value of 1 bytes is too short: malformed`, ids[0], row)
			if !errors.Is(err, schema.ErrMalformed) || err.Error() != want {
				t.Errorf("a malformed cell: %v\nwant %s", err, want)
			}
		})
	}
}

// BenchmarkExemplarSelect: Select of the exemplars of 100 series over one
// hour, one exemplar per 10 s slot each (36,000 exemplars), embedded store.
func BenchmarkExemplarSelect(b *testing.B) {
	be := schematest.Backends()[0]
	be.TableOptions.RawRetention, be.TableOptions.ExemplarRetention = 0, 0
	st := be.Store(b)
	ctx := context.Background()
	reg, post := index.NewRegistry(st, index.RegistryOptions{}), index.NewPostings(st, index.PostingsOptions{})
	w, err := write.New(st, be.Settings, reg, post, write.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var req write.Request
	for s := range 100 {
		series := write.Series{Labels: labels.FromStrings("__name__", "lat_bucket", "host", "h", "le", fmt.Sprint(s))}
		for i := range 360 {
			ts := int64(i) * 10_000
			series.Samples = append(series.Samples, cellenc.Sample{T: ts, V: float64(i)})
			series.Exemplars = append(series.Exemplars, exemplar.Exemplar{
				Labels: labels.FromStrings("trace_id", fmt.Sprintf("%032x", s*1000+i)), Value: float64(i) / 7, Ts: ts, HasTs: true})
		}
		req.Series = append(req.Series, series)
	}
	if res, err := w.Write(ctx, &req); err != nil || res.ExemplarsWritten != 36_000 {
		b.Fatalf("Write = %+v, %v", res.ExemplarsWritten, err)
	}
	eq, _ := query.NewReader(st, be.Settings, reg, post).ExemplarQuerier(ctx)
	m := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "lat_bucket")}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := eq.Select(0, hour, m)
		if err != nil || len(res) != 100 {
			b.Fatalf("Select: %d, %v", len(res), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/36_000, "ns/exemplar")
}
