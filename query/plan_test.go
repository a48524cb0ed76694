package query

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/schema"
)

// TestChoosePlan drives the scan-vs-index decision with the inputs of its
// estimate and checks the plan and both costs, on each side of every boundary:
// n = 0, n against HostScanMaxSeries, and scan against index cost (equal costs
// take the scan).
func TestChoosePlan(t *testing.T) {
	const (
		hourMs = int64(time.Hour / time.Millisecond)
		dayMs  = 24 * hourMs
	)
	eq := func(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, n, v) }
	re := func(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchRegexp, n, v) }
	fixed := []*labels.Matcher{eq("__name__", "cpu"), eq("host", "h1")}
	with := func(ms ...*labels.Matcher) []*labels.Matcher {
		return append(append([]*labels.Matcher{}, fixed...), ms...)
	}
	auto := Options{}.withDefaults()
	maxSeries := func(n int) Options { o := auto; o.HostScanMaxSeries = n; return o }
	forced := func(p Plan) Options { o := auto; o.Plan = p; return o }

	for _, tc := range []struct {
		name       string
		opts       Options
		series     int64
		mint, maxt int64
		ms         []*labels.Matcher
		// wantIndex and wantScan are the costs in round trips; checked unless
		// wantScan is 0 (a scan costs at least 1).
		wantIndex, wantScan int64
		want                Plan
	}{
		{name: "a forced index plan is taken without an estimate", opts: forced(PlanIndex),
			series: 1, maxt: hourMs - 1, ms: fixed, want: PlanIndex},
		{name: "a forced host scan is taken without an estimate, whatever it costs", opts: forced(PlanHostScan),
			series: 1, maxt: 100*hourMs - 1, ms: fixed, want: PlanHostScan},
		{name: "a negative HostScanMaxSeries disables the scan without an estimate", opts: maxSeries(-1),
			series: 1, maxt: hourMs - 1, ms: fixed, want: PlanIndex},
		{name: "no series of the host and metric in the range takes the index", opts: auto,
			series: 0, maxt: hourMs - 1, ms: fixed, wantIndex: 0, wantScan: 1, want: PlanIndex},
		{name: "one series in one bucket costs one round trip either way and takes the scan", opts: auto,
			series: 1, maxt: hourMs - 1, ms: fixed, wantIndex: 1, wantScan: 1, want: PlanHostScan},
		{name: "one series in 99 buckets still streams in one round trip and takes the scan", opts: auto,
			series: 1, maxt: 99*hourMs - 1, ms: fixed, wantIndex: 1, wantScan: 1, want: PlanHostScan},
		{name: "one series in 100 buckets costs the scan a second round trip and takes the index", opts: auto,
			series: 1, maxt: 100*hourMs - 1, ms: fixed, wantIndex: 1, wantScan: 2, want: PlanIndex},
		{name: "buckets count from the bucket of mint to the bucket of maxt", opts: auto,
			series: 1, mint: hourMs - 1, maxt: 99 * hourMs, ms: fixed, wantIndex: 1, wantScan: 2, want: PlanIndex},
		{name: "n at HostScanMaxSeries takes the scan", opts: maxSeries(10),
			series: 10, maxt: hourMs - 1, ms: fixed, wantIndex: 10, wantScan: 1, want: PlanHostScan},
		{name: "n one over HostScanMaxSeries takes the index, cheaper scan or not", opts: maxSeries(10),
			series: 11, maxt: hourMs - 1, ms: fixed, want: PlanIndex},
		{name: "zero HostScanMaxSeries means the default: n at 1000 takes the scan", opts: Options{HostScanMaxSeries: 0}.withDefaults(),
			series: DefaultHostScanMaxSeries, maxt: hourMs - 1, ms: fixed, wantIndex: 1000, wantScan: 11, want: PlanHostScan},
		{name: "zero HostScanMaxSeries means the default: n at 1001 takes the index", opts: Options{}.withDefaults(),
			series: DefaultHostScanMaxSeries + 1, maxt: hourMs - 1, ms: fixed, want: PlanIndex},
		{name: "over 10 days an other equality costs a read a day: 7 series cost the same and take the scan", opts: auto,
			series: 7, maxt: 10*dayMs - 1, ms: with(eq("job", "node")), wantIndex: 17, wantScan: 17, want: PlanHostScan},
		{name: "over 10 days an other equality costs a read a day: 8 series make the scan dearer and take the index", opts: auto,
			series: 8, maxt: 10*dayMs - 1, ms: with(eq("job", "node")), wantIndex: 18, wantScan: 20, want: PlanIndex},
		{name: "a set regex costs two reads a day and tips 8 series to the scan", opts: auto,
			series: 8, maxt: 10*dayMs - 1, ms: with(re("job", "node|api")), wantIndex: 28, wantScan: 20, want: PlanHostScan},
		{name: "a regex with a literal prefix costs three reads a day", opts: auto,
			series: 8, maxt: 10*dayMs - 1, ms: with(re("job", "no.*")), wantIndex: 38, wantScan: 20, want: PlanHostScan},
		{name: "any other matcher costs four reads a day", opts: auto,
			series: 8, maxt: 10*dayMs - 1, ms: with(labels.MustNewMatcher(labels.MatchNotEqual, "job", "api")), wantIndex: 48, wantScan: 20, want: PlanHostScan},
		{name: "a matcher on the host label that is not an equality is an other matcher", opts: auto,
			series: 8, maxt: 10*dayMs - 1, ms: with(re("host", "h1|h2")), wantIndex: 28, wantScan: 20, want: PlanHostScan},
		{name: "without other matchers the index plan costs only n", opts: auto,
			series: 8, maxt: 10*dayMs - 1, ms: fixed, wantIndex: 8, wantScan: 20, want: PlanIndex},
		{name: "days count from the day of mint to the day of maxt", opts: auto,
			series: 8, mint: dayMs - 1, maxt: 9 * dayMs, ms: with(eq("job", "node")), wantIndex: 18, wantScan: 16, want: PlanHostScan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := costInputs{series: tc.series, mint: tc.mint, maxt: tc.maxt, width: time.Hour, hostLabel: "host", ms: tc.ms}
			estimated := false
			got, err := choosePlan(tc.opts, func() (costInputs, error) {
				estimated = true
				return in, nil
			})
			if err != nil || got != tc.want {
				t.Fatalf("choosePlan = %d, %v; want %d", got, err, tc.want)
			}
			wantEstimate := tc.opts.Plan == PlanAuto && tc.opts.HostScanMaxSeries >= 0
			if estimated != wantEstimate {
				t.Errorf("estimated = %v, want %v", estimated, wantEstimate)
			}
			if tc.wantScan != 0 {
				if index, scan := in.costs(); index != tc.wantIndex || scan != tc.wantScan {
					t.Errorf("costs = index %d, scan %d; want index %d, scan %d", index, scan, tc.wantIndex, tc.wantScan)
				}
			}
		})
	}

	t.Run("an estimate that fails fails the plan", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := choosePlan(auto, func() (costInputs, error) { return costInputs{}, boom }); !errors.Is(err, boom) {
			t.Errorf("err = %v, want boom", err)
		}
	})
}

// TestHostMetric checks which matchers fix the host and the metric, the
// condition for the host/metric scan to be considered at all.
func TestHostMetric(t *testing.T) {
	r := &Reader{settings: schema.Settings{HostLabels: []string{"host", "instance"}}}
	eq := func(n, v string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, n, v) }
	for _, tc := range []struct {
		name string
		ms   []*labels.Matcher
		want string // "hostLabel/host/metric", or "" when not fixed
	}{
		{"the metric and the first host label fixed by equalities", []*labels.Matcher{eq("__name__", "cpu"), eq("host", "h1")}, "host/h1/cpu"},
		{"a later host label fixes the host when the earlier ones are matched absent", []*labels.Matcher{eq("__name__", "cpu"), eq("host", ""), eq("instance", "i1")}, "instance/i1/cpu"},
		{"a later host label alone does not: a series may have an earlier one", []*labels.Matcher{eq("__name__", "cpu"), eq("instance", "i1")}, ""},
		{"every host label matched absent fixes no host", []*labels.Matcher{eq("__name__", "cpu"), eq("host", ""), eq("instance", "")}, ""},
		{"no metric matcher fixes nothing", []*labels.Matcher{eq("host", "h1")}, ""},
		{"an empty metric fixes nothing", []*labels.Matcher{eq("__name__", ""), eq("host", "h1")}, ""},
		{"a regex on the metric fixes nothing", []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "cpu"), eq("host", "h1")}, ""},
		{"a regex on the host fixes nothing", []*labels.Matcher{eq("__name__", "cpu"), labels.MustNewMatcher(labels.MatchRegexp, "host", "h1")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hm, ok := r.hostMetric(tc.ms)
			got := ""
			if ok {
				got = fmt.Sprintf("%s/%s/%s", hm.hostLabel, hm.host, hm.metric)
			}
			if got != tc.want {
				t.Errorf("hostMetric = %q, want %q", got, tc.want)
			}
		})
	}
}
