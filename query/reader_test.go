package query_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

const day = 24 * 3600_000

func TestReader(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b.TableOptions.RawRetention = 0 // samples from 1970 on
			st := b.Store(t)
			w, err := write.New(st, b.Settings, nil, nil, write.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := query.NewReader(st, b.Settings, nil, nil)
			upA := labels.FromStrings("__name__", "up", "job", "node", "instance", "a")
			upB := labels.FromStrings("__name__", "up", "job", "node", "instance", "b")
			upC := labels.FromStrings("__name__", "up", "job", "api", "instance", "a")
			load := labels.FromStrings("__name__", "load", "job", "node", "instance", "a")
			// Day 0: upA, upB, load. Day 3: upC, upA. Days 1, 2: nothing.
			req := write.Request{Series: []write.Series{
				{Labels: upA, Samples: []cellenc.Sample{{T: 1000, V: 1}, {T: 3*day + 5, V: 2}, {T: 3600_000 + 1, V: 3}}},
				{Labels: upB, Samples: []cellenc.Sample{{T: 2000, V: 4}}},
				{Labels: load, Samples: []cellenc.Sample{{T: 3000, V: 5}}},
				{Labels: upC, Samples: []cellenc.Sample{{T: 3*day + 7, V: 6}}},
			}}
			if res, err := w.Write(ctx, &req); err != nil || res.SamplesWritten != 6 {
				t.Fatalf("Write = %+v, %v", res, err)
			}
			eq := func(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, n, v) }
			for _, tc := range []struct {
				name       string
				mint, maxt int64
				matchers   []*labels.Matcher
				want       []labels.Labels
			}{
				{"one equality matcher", 0, 4 * day, []*labels.Matcher{eq("__name__", "up")}, []labels.Labels{upC, upA, upB}},
				{"intersected equality matchers", 0, 4 * day, []*labels.Matcher{eq("__name__", "up"), eq("instance", "a")}, []labels.Labels{upC, upA}},
				{"only the days of the range", 0, day - 1, []*labels.Matcher{eq("__name__", "up")}, []labels.Labels{upA, upB}},
				{"a range of empty days", day, 3*day - 1, []*labels.Matcher{eq("__name__", "up")}, nil},
				{"the day of maxt is included", 2 * day, 3 * day, []*labels.Matcher{eq("job", "api")}, []labels.Labels{upC}},
				{"a regex matcher filters", 0, 4 * day, []*labels.Matcher{eq("job", "node"), labels.MustNewMatcher(labels.MatchRegexp, "__name__", "u.")}, []labels.Labels{upA, upB}},
				{"a negative matcher filters", 0, 4 * day, []*labels.Matcher{eq("instance", "a"), labels.MustNewMatcher(labels.MatchNotEqual, "job", "node")}, []labels.Labels{upC}},
				{"without an equality matcher every series of the days is a candidate", 0, 4 * day, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "instance", "b|c")}, []labels.Labels{upB}},
				{"an empty equality matcher asks for the label's absence", 0, 4 * day, []*labels.Matcher{eq("__name__", "load"), eq("host", "")}, []labels.Labels{load}},
				{"no matcher lists every series", 0, kv.MaxTimestamp, nil, []labels.Labels{load, upC, upA, upB}},
				{"an unknown value matches nothing", 0, 4 * day, []*labels.Matcher{eq("__name__", "down")}, nil},
				{"maxt before mint is empty", 5, 4, nil, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got, err := r.SeriesInRange(ctx, tc.mint, tc.maxt, tc.matchers...)
					if err != nil || !slices.EqualFunc(got, tc.want, labels.Equal) {
						t.Errorf("SeriesInRange = %v, %v; want %v", got, err, tc.want)
					}
				})
			}

			for _, tc := range []struct {
				name       string
				lbls       labels.Labels
				mint, maxt int64
				want       []cellenc.Sample
			}{
				{"every sample, sorted across buckets and days", upA, 0, kv.MaxTimestamp, []cellenc.Sample{{T: 1000, V: 1}, {T: 3600_000 + 1, V: 3}, {T: 3*day + 5, V: 2}}},
				{"bounds are inclusive", upA, 1000, 3600_001, []cellenc.Sample{{T: 1000, V: 1}, {T: 3600_000 + 1, V: 3}}},
				{"a range inside a bucket", upA, 1001, 3600_000, nil},
				{"labels with empty values are ignored", labels.FromStrings("__name__", "up", "job", "api", "instance", "a", "x", ""), 0, 4 * day, []cellenc.Sample{{T: 3*day + 7, V: 6}}},
				{"an unknown series has none", labels.FromStrings("__name__", "nope"), 0, 4 * day, nil},
				{"negative bounds are clamped", upB, -100, 2000, []cellenc.Sample{{T: 2000, V: 4}}},
			} {
				t.Run("Samples: "+tc.name, func(t *testing.T) {
					got, err := r.Samples(ctx, tc.lbls, tc.mint, tc.maxt)
					if err != nil || !slices.Equal(got, tc.want) {
						t.Errorf("Samples(%s, %d, %d) = %v, %v; want %v", tc.lbls, tc.mint, tc.maxt, got, err, tc.want)
					}
				})
			}

			t.Run("days far apart cost one scan each, not one per day", func(t *testing.T) {
				late := labels.FromStrings("__name__", "late")
				far := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
				if _, err := w.Write(ctx, &write.Request{Series: []write.Series{{Labels: late, Samples: []cellenc.Sample{{T: far, V: 1}}}}}); err != nil {
					t.Fatal(err)
				}
				got, err := r.SeriesInRange(ctx, 0, kv.MaxTimestamp, eq("__name__", "late"))
				if err != nil || len(got) != 1 {
					t.Errorf("SeriesInRange over all time = %v, %v", got, err)
				}
			})
		})
	}
}
