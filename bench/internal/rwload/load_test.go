package rwload

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
	l := Load{Hosts: 5, SeriesPerHost: 10, Samples: 12, Interval: 15 * time.Second, Senders: 3, RequestSize: 7}
	start := time.UnixMilli(1_700_000_000_000)
	type key struct{ host, series string }
	owner := map[key]int{}
	lastTS := map[key]int64{}
	lastValue := map[key]float64{}
	perSender := make([]int, l.Senders)
	requests := 0
	err := l.Generate(start, func(sender int, wr *prompb.WriteRequest) error {
		requests++
		if len(wr.Timeseries) > l.RequestSize {
			t.Fatalf("request of %d samples, want at most %d", len(wr.Timeseries), l.RequestSize)
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
			if prev, found := lastTS[k]; found && s.Timestamp != prev+l.Interval.Milliseconds() {
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
	if total != l.TotalSamples() {
		t.Errorf("sent %d samples, want %d", total, l.TotalSamples())
	}
	if len(owner) != l.Hosts*l.SeriesPerHost {
		t.Errorf("%d series, want %d", len(owner), l.Hosts*l.SeriesPerHost)
	}
	// Every sender's requests are full but its last.
	wantMin := 0
	for _, n := range perSender {
		wantMin += (n + l.RequestSize - 1) / l.RequestSize
	}
	if requests != wantMin {
		t.Errorf("%d requests, want %d (full requests but each sender's last)", requests, wantMin)
	}
	for k, ts := range lastTS {
		if want := start.Add(l.Span()).UnixMilli(); ts != want {
			t.Errorf("series %v ends at %d, want %d", k, ts, want)
		}
	}
}

func TestCAndGHaveOneSeriesPerHost(t *testing.T) {
	l := Load{Hosts: 3, SeriesPerHost: 8, Samples: 2, Interval: time.Second, Senders: 2, RequestSize: 5}
	names := map[string]int{}
	for _, s := range l.series() {
		names[s.labels[0].Value]++
	}
	if names["c"] != l.Hosts || names["g"] != l.Hosts {
		t.Errorf("c has %d series and g %d, want one per host (%d)", names["c"], names["g"], l.Hosts)
	}
}

func TestEncodedRequestsDecodeToTheLoad(t *testing.T) {
	l := Load{Hosts: 4, SeriesPerHost: 8, Samples: 5, Interval: 15 * time.Second, Senders: 2, RequestSize: 10}
	end := time.UnixMilli(1_700_000_012_345)
	el, err := l.Encode(end)
	if err != nil {
		t.Fatal(err)
	}
	if want := end.Truncate(l.Interval); !el.End.Equal(want) || !el.Start.Equal(want.Add(-l.Span())) {
		t.Errorf("span [%s, %s], want the one ending at %s", el.Start, el.End, want)
	}
	total := 0
	for sender, bodies := range el.Bodies {
		for i, body := range bodies {
			raw, err := snappy.Decode(nil, body)
			if err != nil {
				t.Fatalf("sender %d request %d: snappy: %v", sender, i, err)
			}
			var wr prompb.WriteRequest
			if err := wr.Unmarshal(raw); err != nil {
				t.Fatalf("sender %d request %d: protobuf: %v", sender, i, err)
			}
			if len(wr.Timeseries) != el.Samples[sender][i] {
				t.Errorf("sender %d request %d: %d samples, recorded %d", sender, i, len(wr.Timeseries), el.Samples[sender][i])
			}
			total += len(wr.Timeseries)
		}
	}
	if total != l.TotalSamples() {
		t.Errorf("encoded %d samples, want %d", total, l.TotalSamples())
	}
}

// TestV2RequestsCarryTheSameSamples: -proto 2 encodes the same samples as 1.0, as
// remote write 2.0 requests (labels through the symbol table).
func TestV2RequestsCarryTheSameSamples(t *testing.T) {
	for _, hist := range []bool{false, true} {
		l := Load{Hosts: 2, SeriesPerHost: 8, Samples: 3, Interval: 15 * time.Second, Senders: 1, RequestSize: 1000, Histograms: hist, Buckets: 8}
		end := time.UnixMilli(1_700_000_012_345)
		v1, err := l.Encode(end)
		if err != nil {
			t.Fatal(err)
		}
		l.V2 = true
		v2, err := l.Encode(end)
		if err != nil {
			t.Fatal(err)
		}
		if !v2.V2 || len(v1.Bodies[0]) != 1 || len(v2.Bodies[0]) != 1 {
			t.Fatalf("histograms=%v: %d and %d requests, want one each, the second marked v2 (%v)", hist, len(v1.Bodies[0]), len(v2.Bodies[0]), v2.V2)
		}
		var r1 prompb.WriteRequest
		var r2 writev2.Request
		for _, d := range []struct {
			body []byte
			into interface{ Unmarshal([]byte) error }
		}{{v1.Bodies[0][0], &r1}, {v2.Bodies[0][0], &r2}} {
			raw, err := snappy.Decode(nil, d.body)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.into.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
		}
		if len(r1.Timeseries) != l.TotalSamples() || len(r2.Timeseries) != len(r1.Timeseries) {
			t.Fatalf("histograms=%v: %d and %d series, want %d", hist, len(r1.Timeseries), len(r2.Timeseries), l.TotalSamples())
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

// TestHistogramLoadSendsValidGrowingHistograms: in a histogram load every sample
// is one valid integer native histogram of Buckets buckets, and each series'
// counts never go down (a counter histogram without resets).
func TestHistogramLoadSendsValidGrowingHistograms(t *testing.T) {
	l := Load{Hosts: 3, SeriesPerHost: 10, Samples: 6, Interval: 15 * time.Second, Senders: 2, RequestSize: 7,
		Histograms: true, Buckets: 24}
	last := map[string]*histogram.Histogram{}
	total := 0
	err := l.Generate(time.UnixMilli(1_700_000_000_000), func(_ int, wr *prompb.WriteRequest) error {
		for _, ts := range wr.Timeseries {
			if len(ts.Samples) != 0 || len(ts.Histograms) != 1 {
				t.Fatalf("a TimeSeries with %d samples and %d histograms, want one histogram", len(ts.Samples), len(ts.Histograms))
			}
			h := ts.Histograms[0].ToIntHistogram()
			if err := h.Validate(); err != nil {
				t.Fatalf("invalid histogram %s: %v", h, err)
			}
			if n := len(h.PositiveBuckets); n != l.Buckets {
				t.Fatalf("%d buckets, want %d", n, l.Buckets)
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
	if total != l.TotalSamples() || len(last) != l.Series() {
		t.Errorf("%d histograms of %d series, want %d of %d", total, len(last), l.TotalSamples(), l.Series())
	}
}

// TestStepperSendsOneSampleOfEverySeriesPerStepAndCarriesOn: each Step gives
// every series one sample at the step's timestamp, counters keep growing from
// step to step, and Flush sends what a step left in the senders' requests.
func TestStepperSendsOneSampleOfEverySeriesPerStepAndCarriesOn(t *testing.T) {
	l := Load{Hosts: 2, SeriesPerHost: 8, Interval: time.Second, Senders: 3, RequestSize: 5}
	s := l.NewStepper()
	counters := map[string]float64{}
	for step, ts := range []int64{1_000, 2_000, 3_500} {
		seen := map[string]bool{}
		emit := func(_ int, wr *prompb.WriteRequest) error {
			for _, series := range wr.Timeseries {
				key := fmt.Sprint(series.Labels)
				if seen[key] || series.Samples[0].Timestamp != ts {
					t.Fatalf("step %d: series %s twice or at %d, want once at %d", step, key, series.Samples[0].Timestamp, ts)
				}
				seen[key] = true
				if series.Labels[0].Value == "c" {
					if v := series.Samples[0].Value; v < counters[key] {
						t.Fatalf("step %d: counter %s went down from %g to %g", step, key, counters[key], v)
					}
					counters[key] = series.Samples[0].Value
				}
			}
			return nil
		}
		if err := s.Step(ts, emit); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(emit); err != nil {
			t.Fatal(err)
		}
		if len(seen) != l.Series() {
			t.Fatalf("step %d: %d series sent, want %d", step, len(seen), l.Series())
		}
	}
	if len(counters) != l.Hosts {
		t.Errorf("%d series of c, want one per host (%d)", len(counters), l.Hosts)
	}
}
