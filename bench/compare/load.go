package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// load is the shape of the remote-write load: hosts × seriesPerHost series, each with
// samples samples interval apart, sent by senders senders in requests of requestSize
// samples. With histograms, every series is a native histogram (-load histograms):
// each sample an integer histogram of schema 3 with a zero bucket and buckets
// populated buckets in two spans.
type load struct {
	hosts         int
	seriesPerHost int
	samples       int
	interval      time.Duration
	senders       int
	requestSize   int
	histograms    bool
	buckets       int
	// v2 sends remote write 2.0 (io.prometheus.write.v2.Request, -proto 2)
	// instead of 1.0: a symbol table per request, one TimeSeries per sample too.
	v2 bool
}

// Load kinds (-load).
const (
	loadFloats     = "floats"
	loadHistograms = "histograms"
)

// kind is the -load name of the load.
func (l load) kind() string {
	if l.histograms {
		return loadHistograms
	}
	return loadFloats
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
	case l.histograms && (l.buckets < 4 || l.buckets > 160):
		return fmt.Errorf("load: -buckets must be in [4, 160], got %d", l.buckets)
	}
	return nil
}

// protoName is the remote-write version the load is sent with.
func (l load) protoName() string {
	if l.v2 {
		return "2.0"
	}
	return "1.0"
}

// sampleKind describes the load's samples for the report.
func (l load) sampleKind() string {
	if l.histograms {
		return fmt.Sprintf("native histogram samples (integer, schema 3, %d buckets in 2 spans, a zero bucket)", l.buckets)
	}
	return "float samples"
}

// totalSamples is the number of samples the load sends.
func (l load) totalSamples() int { return l.hosts * l.seriesPerHost * l.samples }

// span is the time from the first sample to the last.
func (l load) span() time.Duration { return time.Duration(l.samples-1) * l.interval }

// metricName is the name of series i of a host: series 0 is the counter c, series 1 the
// gauge g, the others node_counter_<i> (even i) and node_gauge_<i> (odd i). In a
// histogram load, series 0 is the histogram h and the others node_hist_<i>.
func (l load) metricName(i int) string {
	switch {
	case l.histograms && i == 0:
		return "h"
	case l.histograms:
		return "node_hist_" + strconv.Itoa(i)
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
	// hist is the histogram series' state (a histogram load): its cumulative
	// zero bucket and bucket counts.
	hist *genHistogram
}

// genHistogram is a native histogram series' cumulative counts.
type genHistogram struct {
	zero    uint64
	buckets []int64 // absolute counts, len(load.buckets)
	sum     float64
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
				{Name: "__name__", Value: l.metricName(i)},
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
			gs := genSeries{
				labels:  lbls,
				counter: i%2 == 0,
				sender:  int(sum % uint64(l.senders)),
				value:   float64(sum % 1000),
				rng:     sum | 1,
			}
			if l.histograms {
				gs.hist = &genHistogram{buckets: make([]int64, l.buckets)}
			}
			out = append(out, gs)
		}
	}
	return out
}

// next advances s by one step and returns its new value: counters grow by a random
// amount in [0, 10), gauges walk randomly around their start.
func (s *genSeries) next() float64 {
	// xorshift64: cheap, deterministic per series.
	r := s.rand()
	if s.counter {
		s.value += math.Floor(r * 10)
	} else {
		s.value += math.Round((r-0.5)*100) / 10
	}
	return s.value
}

// rand returns the next pseudo-random number in [0, 1) of s (xorshift64).
func (s *genSeries) rand() float64 {
	s.rng ^= s.rng << 13
	s.rng ^= s.rng >> 7
	s.rng ^= s.rng << 17
	return float64(s.rng>>11) / (1 << 53)
}

// nextHistogram advances a histogram series by one step (every bucket grows by 0..4
// observations, the zero bucket by 0..2) and returns its new value as remote write
// carries it, at ts: schema 3, zero threshold 0.001, the buckets in two spans with a
// gap of two empty buckets, counts as deltas.
func (s *genSeries) nextHistogram(ts int64) prompb.Histogram {
	g := s.hist
	g.zero += uint64(s.rand() * 3)
	count := g.zero
	for i := range g.buckets {
		n := int64(s.rand() * 5)
		g.buckets[i] += n
		count += uint64(g.buckets[i])
		// Bucket i of the first span has index 10+i, upper bound 2^((10+i)/8).
		g.sum += float64(n) * math.Exp2(float64(10+i)/8)
	}
	first := len(g.buckets) - len(g.buckets)/4
	h := &histogram.Histogram{
		Schema:        3,
		ZeroThreshold: 0.001,
		ZeroCount:     g.zero,
		Count:         count,
		Sum:           g.sum,
		PositiveSpans: []histogram.Span{
			{Offset: 10, Length: uint32(first)},
			{Offset: 2, Length: uint32(len(g.buckets) - first)},
		},
		PositiveBuckets: make([]int64, len(g.buckets)),
	}
	var prev int64
	for i, c := range g.buckets {
		h.PositiveBuckets[i] = c - prev
		prev = c
	}
	return prompb.FromIntHistogram(ts, h)
}

// generate calls emit with each request of the load, in the order each sender sends
// them: for every step from start (the first sample's time) on, every series, and a
// sender's request is emitted when it holds requestSize samples (and at the end, with
// what is left). Each sample (float or histogram) is its own prompb.TimeSeries, as
// Prometheus' queue manager sends them. emit must not keep wr: it is reused.
func (l load) generate(start time.Time, emit func(sender int, wr *prompb.WriteRequest) error) error {
	series := l.series()
	pending := make([]prompb.WriteRequest, l.senders)
	for i := range pending {
		pending[i].Timeseries = make([]prompb.TimeSeries, 0, l.requestSize)
	}
	samples := make([]prompb.Sample, l.senders*l.requestSize)
	var hists []prompb.Histogram
	if l.histograms {
		hists = make([]prompb.Histogram, l.senders*l.requestSize)
	}
	t0 := start.UnixMilli()
	step := l.interval.Milliseconds()
	for k := range l.samples {
		ts := t0 + int64(k)*step
		for i := range series {
			s := &series[i]
			wr := &pending[s.sender]
			n := len(wr.Timeseries)
			at := s.sender*l.requestSize + n
			if l.histograms {
				hs := hists[at : at+1 : at+1]
				hs[0] = s.nextHistogram(ts)
				wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: s.labels, Histograms: hs})
			} else {
				sm := samples[at : at+1 : at+1]
				sm[0] = prompb.Sample{Timestamp: ts, Value: s.next()}
				wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: s.labels, Samples: sm})
			}
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
	v2      bool      // the bodies are remote write 2.0 requests
}

// toV2 turns a 1.0 request into the 2.0 request Prometheus' queue manager would send
// for the same samples: labels as references into the request's symbol table, each
// sample (float or histogram) its own TimeSeries.
func toV2(wr *prompb.WriteRequest) *writev2.Request {
	symbols := writev2.NewSymbolTable()
	out := &writev2.Request{Timeseries: make([]writev2.TimeSeries, 0, len(wr.Timeseries))}
	var b labels.ScratchBuilder
	for _, ts := range wr.Timeseries {
		b.Reset()
		for _, l := range ts.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		v2 := writev2.TimeSeries{LabelsRefs: symbols.SymbolizeLabels(b.Labels(), nil)}
		for _, smp := range ts.Samples {
			v2.Samples = append(v2.Samples, writev2.Sample{Value: smp.Value, Timestamp: smp.Timestamp})
		}
		for _, h := range ts.Histograms {
			v2.Histograms = append(v2.Histograms, writev2.FromIntHistogram(0, h.Timestamp, h.ToIntHistogram()))
		}
		out.Timeseries = append(out.Timeseries, v2)
	}
	out.Symbols = symbols.Symbols()
	return out
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
		v2:      l.v2,
	}
	err := l.generate(start, func(sender int, wr *prompb.WriteRequest) error {
		var raw []byte
		var err error
		if l.v2 {
			raw, err = toV2(wr).Marshal()
		} else {
			raw, err = wr.Marshal()
		}
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
