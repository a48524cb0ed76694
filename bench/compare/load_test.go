package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

func TestLoadSendsEverySampleOnceShardedBySeriesInTimeOrder(t *testing.T) {
	l := load{hosts: 5, seriesPerHost: 10, samples: 12, interval: 15 * time.Second, senders: 3, requestSize: 7}
	start := time.UnixMilli(1_700_000_000_000)
	type key struct{ host, series string }
	owner := map[key]int{}
	lastTS := map[key]int64{}
	lastValue := map[key]float64{}
	perSender := make([]int, l.senders)
	requests := 0
	err := l.generate(start, func(sender int, wr *prompb.WriteRequest) error {
		requests++
		if len(wr.Timeseries) > l.requestSize {
			t.Fatalf("request of %d samples, want at most %d", len(wr.Timeseries), l.requestSize)
		}
		seen := map[key]bool{}
		for _, ts := range wr.Timeseries {
			if len(ts.Samples) != 1 {
				t.Fatalf("a TimeSeries with %d samples, want 1 (as Prometheus' queue manager sends them)", len(ts.Samples))
			}
			var name string
			var k key
			for _, lb := range ts.Labels {
				switch lb.Name {
				case "__name__":
					name = lb.Value
				case "host":
					k.host = lb.Value
				case "series":
					k.series = lb.Value
				}
			}
			if seen[k] {
				t.Fatalf("series %v twice in one request", k)
			}
			seen[k] = true
			if o, ok := owner[k]; ok && o != sender {
				t.Fatalf("series %v sent by senders %d and %d, want one owner", k, o, sender)
			}
			owner[k] = sender
			s := ts.Samples[0]
			if prev, found := lastTS[k]; found && s.Timestamp != prev+l.interval.Milliseconds() {
				t.Fatalf("series %v: sample at %d after %d, want one interval later", k, s.Timestamp, prev)
			} else if !found && s.Timestamp != start.UnixMilli() {
				t.Fatalf("series %v starts at %d, want %d", k, s.Timestamp, start.UnixMilli())
			}
			if name == "c" || (len(name) > 12 && name[:12] == "node_counter") {
				if prev, ok := lastValue[k]; ok && s.Value < prev {
					t.Fatalf("counter %v went down: %g after %g", k, s.Value, prev)
				}
			}
			lastTS[k], lastValue[k] = s.Timestamp, s.Value
			perSender[sender]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for sender, n := range perSender {
		if n == 0 {
			t.Errorf("sender %d sent nothing", sender)
		}
		total += n
	}
	if total != l.totalSamples() {
		t.Errorf("sent %d samples, want %d", total, l.totalSamples())
	}
	if len(owner) != l.hosts*l.seriesPerHost {
		t.Errorf("%d series, want %d", len(owner), l.hosts*l.seriesPerHost)
	}
	// Every sender's requests are full but its last.
	wantMin := 0
	for _, n := range perSender {
		wantMin += (n + l.requestSize - 1) / l.requestSize
	}
	if requests != wantMin {
		t.Errorf("%d requests, want %d (full requests but each sender's last)", requests, wantMin)
	}
	for k, ts := range lastTS {
		if want := start.Add(l.span()).UnixMilli(); ts != want {
			t.Errorf("series %v ends at %d, want %d", k, ts, want)
		}
	}
}

func TestLoadDefaultsAreTheIssuesLoad(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.load.totalSamples(); got != 2_400_000 {
		t.Errorf("default load has %d samples, want 2 400 000", got)
	}
	if c.load.span() != 239*15*time.Second || c.load.requestSize != 2000 || c.load.senders != 4 || c.rounds != 3 {
		t.Errorf("defaults %+v rounds %d, want the issue's load: 240 samples at 15 s, 2 000 per request, 4 senders, 3 rounds", c.load, c.rounds)
	}
}

func TestQueriesSelectOneSeriesPerHostForCAndG(t *testing.T) {
	l := load{hosts: 3, seriesPerHost: 8, samples: 2, interval: time.Second, senders: 2, requestSize: 5}
	names := map[string]int{}
	for _, s := range l.series() {
		names[s.labels[0].Value]++
	}
	if names["c"] != l.hosts || names["g"] != l.hosts {
		t.Errorf("c has %d series and g %d, want one per host (%d)", names["c"], names["g"], l.hosts)
	}
}

func TestEncodedRequestsDecodeToTheLoad(t *testing.T) {
	l := load{hosts: 4, seriesPerHost: 8, samples: 5, interval: 15 * time.Second, senders: 2, requestSize: 10}
	end := time.UnixMilli(1_700_000_012_345)
	el, err := l.encode(end)
	if err != nil {
		t.Fatal(err)
	}
	if want := end.Truncate(l.interval); !el.end.Equal(want) || !el.start.Equal(want.Add(-l.span())) {
		t.Errorf("span [%s, %s], want the one ending at %s", el.start, el.end, want)
	}
	total := 0
	for sender, bodies := range el.bodies {
		for i, body := range bodies {
			raw, err := snappy.Decode(nil, body)
			if err != nil {
				t.Fatalf("sender %d request %d: snappy: %v", sender, i, err)
			}
			var wr prompb.WriteRequest
			if err := wr.Unmarshal(raw); err != nil {
				t.Fatalf("sender %d request %d: protobuf: %v", sender, i, err)
			}
			if len(wr.Timeseries) != el.samples[sender][i] {
				t.Errorf("sender %d request %d: %d samples, recorded %d", sender, i, len(wr.Timeseries), el.samples[sender][i])
			}
			total += len(wr.Timeseries)
		}
	}
	if total != l.totalSamples() {
		t.Errorf("encoded %d samples, want %d", total, l.totalSamples())
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %g, want %g", tc.in, got, tc.want)
		}
	}
}

func TestQuickShrinksTheLoadButExplicitFlagsWin(t *testing.T) {
	c, err := parseFlags([]string{"-quick", "-hosts", "20"})
	if err != nil {
		t.Fatal(err)
	}
	if c.load.hosts != 20 || c.load.seriesPerHost != 10 || c.load.samples != 40 || c.rounds != 1 {
		t.Errorf("-quick -hosts 20 gave %+v rounds %d, want 20 hosts × 10 series × 40 samples, 1 round", c.load, c.rounds)
	}
}

// TestHistogramLoadSendsValidGrowingHistograms: with -load histograms every sample
// is one valid integer native histogram of -buckets buckets, and each series'
// counts never go down (a counter histogram without resets).
func TestHistogramLoadSendsValidGrowingHistograms(t *testing.T) {
	c, err := parseFlags([]string{"-load", "histograms", "-buckets", "24", "-samples", "6", "-request-size", "7"})
	if err != nil {
		t.Fatal(err)
	}
	l := c.load
	if !l.histograms || l.hosts != 10 || l.seriesPerHost != 100 || l.buckets != 24 {
		t.Fatalf("-load histograms gave %+v, want 10 hosts × 100 series of 24-bucket histograms", l)
	}
	last := map[string]*histogram.Histogram{}
	total := 0
	err = l.generate(time.UnixMilli(1_700_000_000_000), func(_ int, wr *prompb.WriteRequest) error {
		for _, ts := range wr.Timeseries {
			if len(ts.Samples) != 0 || len(ts.Histograms) != 1 {
				t.Fatalf("a TimeSeries with %d samples and %d histograms, want one histogram", len(ts.Samples), len(ts.Histograms))
			}
			h := ts.Histograms[0].ToIntHistogram()
			if err := h.Validate(); err != nil {
				t.Fatalf("invalid histogram %s: %v", h, err)
			}
			if n := len(h.PositiveBuckets); n != l.buckets {
				t.Fatalf("%d buckets, want %d", n, l.buckets)
			}
			key := fmt.Sprint(ts.Labels)
			if prev, ok := last[key]; ok && (h.Count < prev.Count || h.Sum < prev.Sum || h.ZeroCount < prev.ZeroCount) {
				t.Fatalf("series %s went down: %s after %s", key, h, prev)
			}
			last[key] = h
			total++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != l.totalSamples() || len(last) != l.hosts*l.seriesPerHost {
		t.Errorf("%d histograms of %d series, want %d of %d", total, len(last), l.totalSamples(), l.hosts*l.seriesPerHost)
	}
	if _, err := parseFlags([]string{"-load", "summaries"}); err == nil || err.Error() != `-load: "summaries", want floats or histograms` {
		t.Errorf("-load summaries: error %v", err)
	}
}

// TestV2RequestsCarryTheSameSamples: -proto 2 encodes the same samples as 1.0, as
// remote write 2.0 requests (labels through the symbol table).
func TestV2RequestsCarryTheSameSamples(t *testing.T) {
	for _, hist := range []bool{false, true} {
		l := load{hosts: 2, seriesPerHost: 8, samples: 3, interval: 15 * time.Second, senders: 1, requestSize: 1000, histograms: hist, buckets: 8}
		end := time.UnixMilli(1_700_000_012_345)
		v1, err := l.encode(end)
		if err != nil {
			t.Fatal(err)
		}
		l.v2 = true
		v2, err := l.encode(end)
		if err != nil {
			t.Fatal(err)
		}
		if !v2.v2 || len(v1.bodies[0]) != 1 || len(v2.bodies[0]) != 1 {
			t.Fatalf("histograms=%v: %d and %d requests, want one each, the second marked v2 (%v)", hist, len(v1.bodies[0]), len(v2.bodies[0]), v2.v2)
		}
		var r1 prompb.WriteRequest
		var r2 writev2.Request
		for _, d := range []struct {
			body []byte
			into interface{ Unmarshal([]byte) error }
		}{{v1.bodies[0][0], &r1}, {v2.bodies[0][0], &r2}} {
			raw, err := snappy.Decode(nil, d.body)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.into.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
		}
		if len(r1.Timeseries) != l.totalSamples() || len(r2.Timeseries) != len(r1.Timeseries) {
			t.Fatalf("histograms=%v: %d and %d series, want %d", hist, len(r1.Timeseries), len(r2.Timeseries), l.totalSamples())
		}
		var b labels.ScratchBuilder
		for i, ts := range r2.Timeseries {
			want := r1.Timeseries[i]
			ls, err := ts.ToLabels(&b, r2.Symbols)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(ls); got != fmt.Sprint(protoLabelsOf(want.Labels)) {
				t.Fatalf("series %d: labels %s, want %s", i, got, protoLabelsOf(want.Labels))
			}
			switch {
			case hist && (len(ts.Histograms) != 1 || !ts.Histograms[0].ToIntHistogram().Equals(want.Histograms[0].ToIntHistogram()) || ts.Histograms[0].Timestamp != want.Histograms[0].Timestamp):
				t.Fatalf("series %d: histograms %v, want %v", i, ts.Histograms, want.Histograms)
			case !hist && (len(ts.Samples) != 1 || ts.Samples[0].Value != want.Samples[0].Value || ts.Samples[0].Timestamp != want.Samples[0].Timestamp):
				t.Fatalf("series %d: samples %v, want %v", i, ts.Samples, want.Samples)
			}
		}
	}
}

func protoLabelsOf(pls []prompb.Label) labels.Labels {
	b := labels.NewScratchBuilder(len(pls))
	for _, l := range pls {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels()
}
