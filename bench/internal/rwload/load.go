// Package rwload is the remote-write load of the benchmarks (bench/compare,
// bench/steady): node-exporter-like series (hosts × series per host, counters
// and gauges, or native histograms), their samples generated step by step as
// Prometheus' queue manager sends them (one prompb.TimeSeries per sample,
// sharded over senders by series), encoded as remote write 1.0 or 2.0 request
// bodies (protobuf, snappy) and posted with the headers the specification
// requires.
package rwload

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Load is the shape of the remote-write load: Hosts × SeriesPerHost series, each with
// Samples samples Interval apart, sent by Senders senders in requests of RequestSize
// samples. With Histograms, every series is a native histogram: each sample an
// integer histogram of schema 3 with a zero bucket and Buckets populated buckets in
// two spans.
type Load struct {
	Hosts         int
	SeriesPerHost int
	// Samples is the number of samples per series of a load sent at once
	// (Generate, Encode); a Stepper sends as many steps as it is asked for.
	Samples     int
	Interval    time.Duration
	Senders     int
	RequestSize int
	Histograms  bool
	Buckets     int
	// V2 sends remote write 2.0 (io.prometheus.write.v2.Request) instead of 1.0:
	// a symbol table per request, one TimeSeries per sample too.
	V2 bool
}

// Load kinds, as the benchmarks' -load flag names them.
const (
	KindFloats     = "floats"
	KindHistograms = "histograms"
)

// Kind is the -load name of the load.
func (l Load) Kind() string {
	if l.Histograms {
		return KindHistograms
	}
	return KindFloats
}

// Validate checks that every size is positive and that the benchmarks' queries
// have their series (host-001; series 0, 1 and 7).
func (l Load) Validate() error {
	switch {
	case l.Hosts < 2:
		return fmt.Errorf("load: -hosts must be at least 2 (the instant query selects host-001), got %d", l.Hosts)
	case l.SeriesPerHost < 8:
		return fmt.Errorf("load: -series must be at least 8 (the queries use series 0, 1 and 7), got %d", l.SeriesPerHost)
	case l.Samples < 2:
		return fmt.Errorf("load: -samples must be at least 2, got %d", l.Samples)
	case l.Interval <= 0:
		return fmt.Errorf("load: -interval must be positive, got %s", l.Interval)
	case l.Senders < 1:
		return fmt.Errorf("load: -senders must be at least 1, got %d", l.Senders)
	case l.RequestSize < 1:
		return fmt.Errorf("load: -request-size must be at least 1, got %d", l.RequestSize)
	case l.Histograms && (l.Buckets < 4 || l.Buckets > 160):
		return fmt.Errorf("load: -buckets must be in [4, 160], got %d", l.Buckets)
	}
	return nil
}

// ProtoName is the remote-write version the load is sent with.
func (l Load) ProtoName() string {
	if l.V2 {
		return "2.0"
	}
	return "1.0"
}

// SampleKind describes the load's samples for a report.
func (l Load) SampleKind() string {
	if l.Histograms {
		return fmt.Sprintf("native histogram samples (integer, schema 3, %d buckets in 2 spans, a zero bucket)", l.Buckets)
	}
	return "float samples"
}

// Series is the number of series of the load.
func (l Load) Series() int { return l.Hosts * l.SeriesPerHost }

// TotalSamples is the number of samples Generate and Encode send.
func (l Load) TotalSamples() int { return l.Series() * l.Samples }

// Span is the time from the first sample to the last of Generate and Encode.
func (l Load) Span() time.Duration { return time.Duration(l.Samples-1) * l.Interval }

// MetricName is the name of series i of a host: series 0 is the counter c, series 1 the
// gauge g, the others node_counter_<i> (even i) and node_gauge_<i> (odd i). In a
// histogram load, series 0 is the histogram h and the others node_hist_<i>.
func (l Load) MetricName(i int) string {
	switch {
	case l.Histograms && i == 0:
		return "h"
	case l.Histograms:
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

// HostName is the host label of host h: host-000, host-001, ...
func HostName(h int) string { return fmt.Sprintf("host-%03d", h) }

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
	buckets []int64 // absolute counts, len(Load.Buckets)
	sum     float64
}

// series returns every series of the load, host-major, with the sender that owns it:
// the FNV-64a hash of its labels modulo senders, as Prometheus' queue manager shards
// by series.
func (l Load) series() []genSeries {
	out := make([]genSeries, 0, l.Series())
	for h := range l.Hosts {
		host := HostName(h)
		for i := range l.SeriesPerHost {
			lbls := []prompb.Label{
				{Name: "__name__", Value: l.MetricName(i)},
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
				sender:  int(sum % uint64(l.Senders)),
				value:   float64(sum % 1000),
				rng:     sum | 1,
			}
			if l.Histograms {
				gs.hist = &genHistogram{buckets: make([]int64, l.Buckets)}
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

// Stepper generates the load one step at a time: every Step gives each series its
// next sample, in the request of the sender that owns the series. It keeps the
// series' state (counters keep growing) from step to step. Not safe for
// concurrent use.
type Stepper struct {
	l       Load
	series  []genSeries
	pending []prompb.WriteRequest
	samples []prompb.Sample
	hists   []prompb.Histogram
}

// NewStepper returns a Stepper of l's series, at their first step.
func (l Load) NewStepper() *Stepper {
	s := &Stepper{
		l:       l,
		series:  l.series(),
		pending: make([]prompb.WriteRequest, l.Senders),
		samples: make([]prompb.Sample, l.Senders*l.RequestSize),
	}
	for i := range s.pending {
		s.pending[i].Timeseries = make([]prompb.TimeSeries, 0, l.RequestSize)
	}
	if l.Histograms {
		s.hists = make([]prompb.Histogram, l.Senders*l.RequestSize)
	}
	return s
}

// Step adds every series' next sample, at ts (ms), to its sender's pending
// request, and calls emit with each request that reaches RequestSize samples.
// emit must not keep wr: it is reused.
func (s *Stepper) Step(ts int64, emit func(sender int, wr *prompb.WriteRequest) error) error {
	l := s.l
	for i := range s.series {
		gs := &s.series[i]
		wr := &s.pending[gs.sender]
		at := gs.sender*l.RequestSize + len(wr.Timeseries)
		if l.Histograms {
			hs := s.hists[at : at+1 : at+1]
			hs[0] = gs.nextHistogram(ts)
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: gs.labels, Histograms: hs})
		} else {
			sm := s.samples[at : at+1 : at+1]
			sm[0] = prompb.Sample{Timestamp: ts, Value: gs.next()}
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: gs.labels, Samples: sm})
		}
		if len(wr.Timeseries) == l.RequestSize {
			if err := emit(gs.sender, wr); err != nil {
				return err
			}
			wr.Timeseries = wr.Timeseries[:0]
		}
	}
	return nil
}

// Flush calls emit with every sender's pending request that holds samples.
func (s *Stepper) Flush(emit func(sender int, wr *prompb.WriteRequest) error) error {
	for sender := range s.pending {
		if len(s.pending[sender].Timeseries) > 0 {
			if err := emit(sender, &s.pending[sender]); err != nil {
				return err
			}
			s.pending[sender].Timeseries = s.pending[sender].Timeseries[:0]
		}
	}
	return nil
}

// Generate calls emit with each request of the load, in the order each sender sends
// them: for every step from start (the first sample's time) on, every series, and a
// sender's request is emitted when it holds RequestSize samples (and at the end, with
// what is left). Each sample (float or histogram) is its own prompb.TimeSeries, as
// Prometheus' queue manager sends them. emit must not keep wr: it is reused.
func (l Load) Generate(start time.Time, emit func(sender int, wr *prompb.WriteRequest) error) error {
	s := l.NewStepper()
	t0 := start.UnixMilli()
	step := l.Interval.Milliseconds()
	for k := range l.Samples {
		if err := s.Step(t0+int64(k)*step, emit); err != nil {
			return err
		}
	}
	return s.Flush(emit)
}

// EncodedLoad is the load as request bodies (protobuf, snappy-compressed), per sender
// in sending order, with the number of samples each body holds.
type EncodedLoad struct {
	Bodies  [][][]byte
	Samples [][]int
	Start   time.Time // the first sample's time
	End     time.Time // the last sample's time
	V2      bool      // the bodies are remote write 2.0 requests
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

// EncodeRequest returns the body of wr as the load sends it: protobuf (1.0, or the
// 2.0 request of the same samples with V2), snappy-compressed.
func (l Load) EncodeRequest(wr *prompb.WriteRequest) ([]byte, error) {
	var raw []byte
	var err error
	if l.V2 {
		raw, err = toV2(wr).Marshal()
	} else {
		raw, err = wr.Marshal()
	}
	if err != nil {
		return nil, fmt.Errorf("load: marshal a request: %w", err)
	}
	return snappy.Encode(nil, raw), nil
}

// Encode generates the load with its last sample at end (rounded down to the
// interval) and encodes every request.
func (l Load) Encode(end time.Time) (*EncodedLoad, error) {
	end = end.Truncate(l.Interval)
	start := end.Add(-l.Span())
	el := &EncodedLoad{
		Bodies:  make([][][]byte, l.Senders),
		Samples: make([][]int, l.Senders),
		Start:   start,
		End:     end,
		V2:      l.V2,
	}
	err := l.Generate(start, func(sender int, wr *prompb.WriteRequest) error {
		body, err := l.EncodeRequest(wr)
		if err != nil {
			return fmt.Errorf("sender %d: %w", sender, err)
		}
		el.Bodies[sender] = append(el.Bodies[sender], body)
		el.Samples[sender] = append(el.Samples[sender], len(wr.Timeseries))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return el, nil
}

// StatusError is a remote-write request answered with a status other than 2xx.
type StatusError struct {
	Code int
	Msg  string // the start of the answer's body
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("post: %d %s: %s", e.Code, http.StatusText(e.Code), e.Msg)
}

// Retriable reports whether the sender should send the request again, as
// Prometheus does: on 429 and 5xx (remote write 1.0 and 2.0 specifications).
func (e *StatusError) Retriable() bool {
	return e.Code == http.StatusTooManyRequests || e.Code/100 == 5
}

// Post sends one remote-write request: a snappy-compressed protobuf WriteRequest
// (1.0) or io.prometheus.write.v2.Request (v2) with the headers the spec requires
// (Content-Encoding: snappy, Content-Type: application/x-protobuf, with
// ;proto=io.prometheus.write.v2.Request for 2.0, X-Prometheus-Remote-Write-Version:
// 0.1.0 or 2.0.0). An answer other than 2xx is a *StatusError.
func Post(ctx context.Context, client *http.Client, url string, body []byte, v2 bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("User-Agent", "hbtsdb-bench")
	if v2 {
		req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return &StatusError{Code: resp.StatusCode, Msg: string(bytes.TrimSpace(msg))}
	}
	return nil
}
