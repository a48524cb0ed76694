package opentsdb

import (
	"context"
	"net/url"
	"testing"
	"time"
)

func TestScanRangeIsTsdbQuerys(t *testing.T) {
	ds1m, err := ParseDownsample("1m-avg")
	if err != nil {
		t.Fatal(err)
	}
	ds7m, err := ParseDownsample("7m-avg")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name               string
		start, end         int64
		ds                 *Downsample
		wantStart, wantEnd int64
	}{
		{"raw: the start's hour, the hour after the end's second plus one", base + 61_000, base + 7200_000, nil, base, base + 3*3600_000},
		{"1m: the start's interval, then its hour; after the end's second plus one, the next interval, then the next hour",
			base + 61_000, base + 3599_000, ds1m, base, base + 7200_000},
		{"7m: the start aligned to 7 minutes may fall in the hour before", base + 60_000, base + 600_000, ds7m,
			base - 3600_000, base + 3600_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, e := scanRange(c.start, c.end, c.ds)
			if s != c.wantStart || e != c.wantEnd {
				t.Fatalf("scanRange = [%d, %d), want [%d, %d)", s, e, c.wantStart, c.wantEnd)
			}
		})
	}
}

func TestRunUsesPointsAroundTheRange(t *testing.T) {
	src := sliceSource{
		{Tags: map[string]string{"host": "a", "dc": "eu"}, ID: "A", Points: []Point{{base, 0}, {base + 100_000, 100}}},
		{Tags: map[string]string{"host": "b", "dc": "eu"}, ID: "B", Points: []Point{{base + 50_000, 7}}},
		{Tags: map[string]string{"host": "c", "dc": "eu", "role": "db"}, ID: "C", Points: []Point{{base + 50_000, 1000}}},
	}
	now := time.UnixMilli(base + 3600_000)
	run := func(t *testing.T, m string) []Result {
		t.Helper()
		req, err := ParseForm(url.Values{"start": {"1356998440"}, "end": {"1356998460"}, "m": {m}}, now)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Run(context.Background(), src, req)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	t.Run("a's 50 at +50s is interpolated from points outside [start, end]", func(t *testing.T) {
		// Alone, a has no timestamp in [start, end]: its group answers no dps.
		rs := run(t, "sum:m{host=a|b}{dc=eu}")
		if len(rs) != 2 || rs[0].Tags["host"] != "a" || len(rs[0].Points) != 0 ||
			rs[1].Tags["host"] != "b" || !samePoints(rs[1].Points, []Point{{base + 50_000, 7}}) {
			t.Fatalf("results %+v", rs)
		}
		rs = run(t, "sum:m{}{host=a|b}")
		if len(rs) != 1 || !samePoints(rs[0].Points, []Point{{base + 50_000, 57}}) {
			t.Fatalf("results %+v", rs)
		}
	})
	t.Run("explicit_tags keeps series with exactly the filters' keys", func(t *testing.T) {
		rs := run(t, "sum:explicit_tags:m{host=*,dc=*}")
		if len(rs) != 2 || rs[0].Tags["host"] != "a" || rs[1].Tags["host"] != "b" {
			t.Fatalf("results %+v", rs)
		}
	})
	t.Run("none keeps every series apart", func(t *testing.T) {
		rs := run(t, "none:m")
		if len(rs) != 3 || len(rs[2].TSUIDs) != 1 || rs[2].TSUIDs[0] != "C" || !samePoints(rs[2].Points, []Point{{base + 50_000, 1000}}) {
			t.Fatalf("results %+v", rs)
		}
	})
	t.Run("tags and aggregateTags are SpanGroup.computeTags'", func(t *testing.T) {
		rs := run(t, "sum:m")
		if len(rs) != 1 || len(rs[0].Tags) != 2 || rs[0].Tags["dc"] != "eu" || rs[0].Tags["role"] != "db" ||
			len(rs[0].AggregateTags) != 1 || rs[0].AggregateTags[0] != "host" {
			t.Fatalf("results %+v", rs)
		}
	})
}
