package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// load is the shape of the remote-write load: hosts × seriesPerHost series, each with
// samples samples interval apart, sent by senders senders in requests of requestSize
// samples.
type load struct {
	hosts         int
	seriesPerHost int
	samples       int
	interval      time.Duration
	senders       int
	requestSize   int
}

// validate checks that every size is positive and that the queries have their series.
func (l load) validate() error {
	switch {
	case l.hosts < 2:
		return fmt.Errorf("load: -hosts must be at least 2 (the instant query selects host-001), got %d", l.hosts)
	case l.seriesPerHost < 8:
		return fmt.Errorf("load: -series must be at least 8 (the queries use series 0, 1 and 7), got %d", l.seriesPerHost)
	case l.samples < 2:
		return fmt.Errorf("load: -samples must be at least 2, got %d", l.samples)
	case l.interval <= 0:
		return fmt.Errorf("load: -interval must be positive, got %s", l.interval)
	case l.senders < 1:
		return fmt.Errorf("load: -senders must be at least 1, got %d", l.senders)
	case l.requestSize < 1:
		return fmt.Errorf("load: -request-size must be at least 1, got %d", l.requestSize)
	}
	return nil
}

// totalSamples is the number of samples the load sends.
func (l load) totalSamples() int { return l.hosts * l.seriesPerHost * l.samples }

// span is the time from the first sample to the last.
func (l load) span() time.Duration { return time.Duration(l.samples-1) * l.interval }

// metricName is the name of series i of a host: series 0 is the counter c, series 1 the
// gauge g, the others node_counter_<i> (even i) and node_gauge_<i> (odd i).
func metricName(i int) string {
	switch {
	case i == 0:
		return "c"
	case i == 1:
		return "g"
	case i%2 == 0:
		return "node_counter_" + strconv.Itoa(i)
	default:
		return "node_gauge_" + strconv.Itoa(i)
	}
}

// hostName is the host label of host h: host-000, host-001, ...
func hostName(h int) string { return fmt.Sprintf("host-%03d", h) }

// genSeries is one series of the load with the generator's state.
type genSeries struct {
	labels  []prompb.Label
	counter bool
	sender  int
	value   float64
	rng     uint64
}

// series returns every series of the load, host-major, with the sender that owns it:
// the FNV-64a hash of its labels modulo senders, as Prometheus' queue manager shards
// by series.
func (l load) series() []genSeries {
	out := make([]genSeries, 0, l.hosts*l.seriesPerHost)
	for h := range l.hosts {
		host := hostName(h)
		for i := range l.seriesPerHost {
			lbls := []prompb.Label{
				{Name: "__name__", Value: metricName(i)},
				{Name: "host", Value: host},
				{Name: "job", Value: "node"},
				{Name: "series", Value: strconv.Itoa(i)},
			}
			f := fnv.New64a()
			for _, lb := range lbls {
				f.Write([]byte(lb.Name))
				f.Write([]byte{0xff})
				f.Write([]byte(lb.Value))
				f.Write([]byte{0xff})
			}
			sum := f.Sum64()
			out = append(out, genSeries{
				labels:  lbls,
				counter: i%2 == 0,
				sender:  int(sum % uint64(l.senders)),
				value:   float64(sum % 1000),
				rng:     sum | 1,
			})
		}
	}
	return out
}

// next advances s by one step and returns its new value: counters grow by a random
// amount in [0, 10), gauges walk randomly around their start.
func (s *genSeries) next() float64 {
	// xorshift64: cheap, deterministic per series.
	s.rng ^= s.rng << 13
	s.rng ^= s.rng >> 7
	s.rng ^= s.rng << 17
	r := float64(s.rng>>11) / (1 << 53)
	if s.counter {
		s.value += math.Floor(r * 10)
	} else {
		s.value += math.Round((r-0.5)*100) / 10
	}
	return s.value
}

// generate calls emit with each request of the load, in the order each sender sends
// them: for every step from start (the first sample's time) on, every series, and a
// sender's request is emitted when it holds requestSize samples (and at the end, with
// what is left). Each sample is its own prompb.TimeSeries, as Prometheus' queue manager
// sends them. emit must not keep wr: it is reused.
func (l load) generate(start time.Time, emit func(sender int, wr *prompb.WriteRequest) error) error {
	series := l.series()
	pending := make([]prompb.WriteRequest, l.senders)
	for i := range pending {
		pending[i].Timeseries = make([]prompb.TimeSeries, 0, l.requestSize)
	}
	samples := make([]prompb.Sample, l.senders*l.requestSize)
	t0 := start.UnixMilli()
	step := l.interval.Milliseconds()
	for k := range l.samples {
		ts := t0 + int64(k)*step
		for i := range series {
			s := &series[i]
			wr := &pending[s.sender]
			n := len(wr.Timeseries)
			sm := samples[s.sender*l.requestSize+n : s.sender*l.requestSize+n+1 : s.sender*l.requestSize+n+1]
			sm[0] = prompb.Sample{Timestamp: ts, Value: s.next()}
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: s.labels, Samples: sm})
			if len(wr.Timeseries) == l.requestSize {
				if err := emit(s.sender, wr); err != nil {
					return err
				}
				wr.Timeseries = wr.Timeseries[:0]
			}
		}
	}
	for sender := range pending {
		if len(pending[sender].Timeseries) > 0 {
			if err := emit(sender, &pending[sender]); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodedLoad is the load as request bodies (protobuf, snappy-compressed), per sender
// in sending order, with the number of samples each body holds.
type encodedLoad struct {
	bodies  [][][]byte
	samples [][]int
	start   time.Time // the first sample's time
	end     time.Time // the last sample's time
}

// encode generates the load with its last sample at end (rounded down to the
// interval) and encodes every request.
func (l load) encode(end time.Time) (*encodedLoad, error) {
	end = end.Truncate(l.interval)
	start := end.Add(-l.span())
	el := &encodedLoad{
		bodies:  make([][][]byte, l.senders),
		samples: make([][]int, l.senders),
		start:   start,
		end:     end,
	}
	err := l.generate(start, func(sender int, wr *prompb.WriteRequest) error {
		raw, err := wr.Marshal()
		if err != nil {
			return fmt.Errorf("load: marshal a request of sender %d: %w", sender, err)
		}
		el.bodies[sender] = append(el.bodies[sender], snappy.Encode(nil, raw))
		el.samples[sender] = append(el.samples[sender], len(wr.Timeseries))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return el, nil
}
