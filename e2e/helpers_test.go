package e2e

import (
	"errors"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
)

// The tests below check the harness itself; they need neither Prometheus nor tsdb.

func TestParseAPITimestamp(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"1732921234", 1732921234000},
		{"1732921234.5", 1732921234500},
		{"1732921234.05", 1732921234050},
		{"1732921234.007", 1732921234007},
		{"0.001", 1},
		{"-1.5", -1500},
	}
	for _, c := range cases {
		got, err := parseAPITimestamp(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseAPITimestamp(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := parseAPITimestamp("1.0001"); err == nil {
		t.Error("a timestamp finer than a millisecond parsed without error")
	}
	for _, ms := range []int64{0, 7, 1732921234000, 1732921234567, 1732921234050} {
		if got, err := parseAPITimestamp(apiTime(ms)); err != nil || got != ms {
			t.Errorf("apiTime(%d) = %q parses to %d, %v", ms, apiTime(ms), got, err)
		}
	}
}

func TestParseAPIValueKeepsEveryBit(t *testing.T) {
	for kind, v := range specialValues {
		s := strings.Trim(formatLikeAPI(v), `"`)
		got, err := parseAPIValue(s)
		if err != nil || !sameBits(v, got) {
			t.Errorf("%s: %q parses to %s (%v), want %s", kind, s, fmtValue(got), err, fmtValue(v))
		}
	}
	nan, err := parseAPIValue("NaN")
	if err != nil || !math.IsNaN(nan) {
		t.Errorf(`parseAPIValue("NaN") = %v, %v`, nan, err)
	}
}

// formatLikeAPI formats v as Prometheus' API does (jsonutil.MarshalFloat):
// exponent form below 1e-6 and from 1e21, shortest round-trip digits.
func formatLikeAPI(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	f := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	return strconv.FormatFloat(v, f, -1, 64)
}

func TestCompareSetsFindsEveryKindOfDifference(t *testing.T) {
	ls := func(s ...string) labels.Labels { return labels.FromStrings(s...) }
	a := ls("__name__", "a", "job", "x")
	b := ls("__name__", "b", "job", "x")
	c := ls("__name__", "c", "job", "x")
	want := seriesSet{
		a.String(): {labels: a, samples: []sample{{1000, 1}, {2000, 2}, {3000, 3}}},
		b.String(): {labels: b, samples: []sample{{1000, 1}}},
	}
	got := seriesSet{
		a.String(): {labels: a, samples: []sample{{1000, 1}, {2000, 0}, {4000, 4}}},
		c.String(): {labels: c, samples: []sample{{1000, 1}}},
	}
	diffs := compareSets(want, got, bitsEqual)
	wantDiffs := []string{
		"at 2000", // 2 stored as 0
		"sample 3000",
		"sample 4000",
		`series {__name__="b", job="x"}: missing in tsdb`,
		`series {__name__="c", job="x"}: in tsdb only`,
	}
	if len(diffs) != len(wantDiffs) {
		t.Fatalf("%d differences, want %d:%s", len(diffs), len(wantDiffs), summarize(diffs, 10))
	}
	for i, w := range wantDiffs {
		if !strings.Contains(diffs[i], w) {
			t.Errorf("difference %d = %q, want it to mention %q", i, diffs[i], w)
		}
	}
	if d := compareSets(want, want, bitsEqual); len(d) != 0 {
		t.Errorf("a set differs from itself:%s", summarize(d, 10))
	}
}

func TestAPIEqualTreatsNaNAsTheAPIShowsIt(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	if !apiEqual(math.NaN(), math.Float64frombits(0x7ff8000000000001)) {
		t.Error("API NaN does not match a stored NaN")
	}
	if apiEqual(math.NaN(), stale) {
		t.Error("API NaN matches a stale marker, which the API never shows")
	}
	if apiEqual(0, math.Copysign(0, -1)) {
		t.Error("a stored -0 matches 0")
	}
	if !apiEqual(math.Copysign(0, -1), 0) || !bitsEqual(math.Copysign(0, -1), 0) {
		t.Error("-0, which remote write sends as 0, does not match a stored 0")
	}
}

func TestEvalRangeFollowsLookbackAndStaleness(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	raw := []sample{{1000, 1}, {3000, 3}, {5000, stale}, {9000, 9}}
	got := evalRange(raw, 0, 12000, 1000, 2500)
	want := []sample{{1000, 1}, {2000, 1}, {3000, 3}, {4000, 3}, {5000 + 4000, 9}, {10000, 9}, {11000, 9}}
	// At 5000..8000 the newest sample is the stale marker (or older than the
	// lookback), so the series has no value there.
	if len(got) != len(want) {
		t.Fatalf("evalRange = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("evalRange = %v, want %v", got, want)
		}
	}
}

// TestTargetExpositionParses parses the synthetic target's page with Prometheus' own
// text parser: every series it is meant to expose is there with its exact value and
// labels.
func TestTargetExpositionParses(t *testing.T) {
	now := time.UnixMilli(1732921234567)
	page := exposition(5, now)
	p, err := textparse.New([]byte(page), "text/plain; version=0.0.4; charset=utf-8", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	var explicitTS *int64
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, page)
		}
		if e != textparse.EntrySeries {
			continue
		}
		var ls labels.Labels
		p.Labels(&ls)
		_, ts, v := p.Series()
		got[ls.String()] = v
		if ls.Get(labels.MetricName) == metricExplicitT {
			explicitTS = ts
		}
	}
	for kind, v := range specialValues {
		k := labels.FromStrings(labels.MetricName, metricSpecial, "kind", kind).String()
		if g, ok := got[k]; !ok || !sameBits(v, g) {
			t.Errorf("%s: parsed %s (present %v), want %s", k, fmtValue(g), ok, fmtValue(v))
		}
	}
	for which, v := range labelEscapes {
		k := labels.FromStrings(labels.MetricName, metricLabels, "value", v, "which", which).String()
		if _, ok := got[k]; !ok {
			t.Errorf("%s: not parsed", k)
		}
	}
	if explicitTS == nil || *explicitTS != now.UnixMilli()-2500+7 {
		t.Errorf("%s: timestamp %v, want %d", metricExplicitT, explicitTS, now.UnixMilli()-2500+7)
	}
	if g := got[labels.FromStrings(labels.MetricName, metricFlapping, "generation", "1").String()]; g != 5 {
		t.Errorf("%s{generation=\"1\"} = %v at scrape 5, want 5", metricFlapping, g)
	}
}

// fakeClock is a clock whose Sleep advances its time at once, so that a wait's
// stall is measured in polls, not in the machine's speed.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time        { return c.now }
func (c *fakeClock) Sleep(d time.Duration) { c.now = c.now.Add(d) }

func TestWaitForProgress(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name string
		// poll answers the nth poll (from 1).
		poll      func(n int) (progress int, done bool, err error)
		wantErr   string // "" for none
		wantIs    error
		wantPolls int
	}{
		{
			name:      "it returns once the poll reports done",
			poll:      func(n int) (int, bool, error) { return 0, n == 3, nil },
			wantPolls: 3,
		},
		{
			// 100 polls 1s apart, with a stall of 10s: the wait outlasts its
			// stall tenfold because the progress moves every 5 polls.
			name:      "it keeps waiting past the stall while the progress moves",
			poll:      func(n int) (int, bool, error) { return n / 5, n == 100, nil },
			wantPolls: 100,
		},
		{
			// The progress reaches 5 at poll 5 (10s of stall end at poll 15).
			name:      "it fails once the progress has not moved for the stall",
			poll:      func(n int) (int, bool, error) { return min(n, 5), false, nil },
			wantErr:   "wait for the counter: no progress for 10s (progress still 5)",
			wantIs:    errNoProgress,
			wantPolls: 15,
		},
		{
			name: "it returns the poll's error at once",
			poll: func(n int) (int, bool, error) {
				if n == 4 {
					return 0, false, boom
				}
				return n, false, nil
			},
			wantErr:   "wait for the counter: boom",
			wantIs:    boom,
			wantPolls: 4,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1732921234, 0)}
			polls := 0
			err := waitForProgressOn(clk, 10*time.Second, time.Second, "the counter", func() (int, bool, error) {
				polls++
				return c.poll(polls)
			})
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case c.wantErr != "" && (err == nil || err.Error() != c.wantErr):
				t.Fatalf("error %v, want %q", err, c.wantErr)
			case c.wantIs != nil && !errors.Is(err, c.wantIs):
				t.Fatalf("error %v does not wrap %v", err, c.wantIs)
			}
			if polls != c.wantPolls {
				t.Errorf("%d polls, want %d", polls, c.wantPolls)
			}
		})
	}
}

// TestWaitForProgressOnTheRealClock: the real clock stalls too (1 ms of it).
func TestWaitForProgressOnTheRealClock(t *testing.T) {
	err := waitForProgressOn(realClock{}, time.Millisecond, time.Millisecond, "nothing", func() (string, bool, error) {
		return "same", false, nil
	})
	if !errors.Is(err, errNoProgress) || !strings.HasPrefix(err.Error(), "wait for nothing: no progress for ") {
		t.Errorf("error %v, want a stall", err)
	}
}

// TestStallTimeoutOutlastsFlushDeadline: Prometheus may flush its queues at
// shutdown, silently, for up to flushDeadline; stop must not kill it meanwhile.
func TestStallTimeoutOutlastsFlushDeadline(t *testing.T) {
	if stallTimeout <= flushDeadline {
		t.Errorf("stallTimeout %s is not longer than Prometheus' flush deadline %s", stallTimeout, flushDeadline)
	}
}

// TestProcessWaitFailsAtOnceWhenTheProcessExits: a wait on a process that exited
// fails without waiting for the stall, and says so.
func TestProcessWaitFailsAtOnceWhenTheProcessExits(t *testing.T) {
	sh := shell(t)
	p := startProcess(t, "sh", t.TempDir(), sh, "-c", "echo starting; exit 3")
	err := p.waitUntil("a line that never comes", time.Millisecond, func() (bool, error) { return false, nil })
	if want := "wait for a line that never comes: sh exited (exit status 3)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if got := p.waitForLine(t, "start line", func(l string) bool { return l == "starting" }); got != "starting" {
		t.Errorf("waitForLine = %q, want the line before the exit", got)
	}
}

// TestProcessStopWaitsForACleanExit: stop returns nil for a process that exits
// with status 0 on SIGTERM.
func TestProcessStopWaitsForACleanExit(t *testing.T) {
	sh := shell(t)
	p := startProcess(t, "sh", t.TempDir(), sh, "-c", `trap "echo bye; exit 0" TERM; echo ready; while :; do sleep 0.01; done`)
	p.waitForLine(t, "ready line", func(l string) bool { return l == "ready" })
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !p.out.contains("bye") {
		t.Errorf("the process did not run its SIGTERM trap; log:\n%s", p.tail(10))
	}
}

func TestSendWatch(t *testing.T) {
	const goal = 1732921234000 // ms
	reading := func(highest, total, retried, pending float64) map[string]float64 {
		return map[string]float64{
			"prometheus_remote_storage_queue_highest_sent_timestamp_seconds": highest,
			"prometheus_remote_storage_samples_total":                        total,
			"prometheus_remote_storage_samples_retried_total":                retried,
			"prometheus_remote_storage_samples_pending":                      pending,
		}
	}
	steps := []struct {
		what     string
		m        map[string]float64
		want     sendProgress
		wantDone bool
	}{
		{"a batch sent", reading(goal/1000-60, 1000, 0, 300),
			sendProgress{highestSent: goal/1000 - 60, sent: 1000}, false},
		{"an attempt in flight counts as sent", reading(goal/1000-60, 1500, 0, 300),
			sendProgress{highestSent: goal/1000 - 60, sent: 1500}, false},
		{"the attempt failed and is retried: no progress, and none lost", reading(goal/1000-60, 1500, 500, 300),
			sendProgress{highestSent: goal/1000 - 60, sent: 1500}, false},
		{"the retry in flight: still no progress", reading(goal/1000-60, 2000, 500, 300),
			sendProgress{highestSent: goal/1000 - 60, sent: 1500}, false},
		{"the goal is reached with 700 samples pending", reading(goal/1000+1, 2500, 500, 700),
			sendProgress{highestSent: goal / 1000, sent: 2000}, false},
		{"500 of them sent", reading(goal/1000+2, 3000, 500, 900),
			sendProgress{highestSent: goal / 1000, sent: 2500}, false},
		{"newer samples beyond those 700 are not progress", reading(goal/1000+9, 4000, 500, 10),
			sendProgress{highestSent: goal / 1000, sent: 2700}, false},
		{"nothing pending: done", reading(goal/1000+10, 4100, 500, 0),
			sendProgress{highestSent: goal / 1000, sent: 2700}, true},
	}
	w := newSendWatch(goal)
	for _, s := range steps {
		got, done := w.observe(s.m)
		if got != s.want || done != s.wantDone {
			t.Fatalf("%s: observe = %v, %v; want %v, %v", s.what, got, done, s.want, s.wantDone)
		}
	}

	// A queue that never reads as empty: done once four times what was
	// pending at the goal (700) has been sent since (2 000 then).
	w = newSendWatch(goal)
	for _, s := range []struct {
		what     string
		m        map[string]float64
		wantDone bool
	}{
		{"before the goal", reading(goal/1000-1, 1000, 0, 300), false},
		{"the goal, 700 pending", reading(goal/1000+1, 2500, 500, 700), false},
		{"2 799 sent since, still some pending", reading(goal/1000+5, 5299, 500, 650), false},
		{"2 800 sent since: done", reading(goal/1000+6, 5300, 500, 650), true},
	} {
		if _, done := w.observe(s.m); done != s.wantDone {
			t.Fatalf("%s: done = %v, want %v", s.what, done, s.wantDone)
		}
	}
}

// shell is the path of sh, which the process tests run.
func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh on $PATH (the process tests run it): %v", err)
	}
	return sh
}
