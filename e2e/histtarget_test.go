package e2e

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"google.golang.org/protobuf/proto"
)

// The histogram target's metric families (histTarget).
const (
	// metricHistLatency is a native histogram (schema 3) that also exposes
	// classic buckets: negative observations, observations in its zero bucket
	// (threshold 1e-3) and exemplars.
	metricHistLatency = "e2e_hist_latency_seconds"
	// metricHistSizes is a native-only histogram (no classic buckets), schema 0,
	// with large values.
	metricHistSizes = "e2e_hist_sizes_bytes"
	// metricHistClassic is a classic-only histogram; the hist-nhcb job converts
	// it (and every other classic histogram) to a native histogram with custom
	// buckets (schema -53).
	metricHistClassic = "e2e_hist_classic_seconds"
	// metricHistResetting is a native histogram that is replaced by a new one
	// every histResetEvery scrapes: a counter reset, with a new created
	// timestamp.
	metricHistResetting = "e2e_hist_resetting"
	// metricHistGauge is a gauge histogram with float counts: a float native
	// histogram whose counter-reset hint is "gauge".
	metricHistGauge = "e2e_hist_gauge"
	// metricHistRequests is a counter with a created timestamp and exemplars.
	metricHistRequests = "e2e_hist_requests_total"

	histResetEvery = 10
)

// histTarget is a scrape target built on client_golang that exposes native
// histograms (exponential, with negative observations and a zero bucket, integer
// and float, counter and gauge), classic histograms, counters with created
// timestamps, and exemplars on counters and histogram observations. It serves the
// protobuf exposition format when Prometheus asks for it (scrape_protocols:
// [PrometheusProto]), which native histograms and created timestamps need.
// A scrape with ?observe=1 (job hist-native's) first makes a few observations
// that depend on the scrape number, so that each series gets at most one new
// exemplar per scrape interval.
type histTarget struct {
	srv *httptest.Server
	reg *prometheus.Registry

	mu        sync.Mutex
	scrapes   int
	latency   prometheus.Histogram
	sizes     prometheus.Histogram
	classic   prometheus.Histogram
	resetting prometheus.Histogram
	requests  *prometheus.CounterVec
}

func startHistTarget(t *testing.T) *histTarget {
	tg := &histTarget{reg: prometheus.NewRegistry()}
	tg.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                           metricHistLatency,
		Help:                           "A native histogram with classic buckets too, negative observations and a zero bucket.",
		Buckets:                        []float64{-1, -0.1, 0, 0.01, 0.1, 1, 10},
		NativeHistogramBucketFactor:    1.1,
		NativeHistogramZeroThreshold:   1e-3,
		NativeHistogramMaxBucketNumber: 1000,
		NativeHistogramMaxExemplars:    4,
	})
	tg.sizes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                         metricHistSizes,
		Help:                         "A native-only histogram.",
		NativeHistogramBucketFactor:  2,
		NativeHistogramZeroThreshold: prometheus.NativeHistogramZeroThresholdZero,
		NativeHistogramMaxExemplars:  -1,
	})
	tg.classic = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    metricHistClassic,
		Help:    "A classic histogram.",
		Buckets: []float64{0.005, 0.05, 0.5, 5, 50},
	})
	tg.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricHistRequests,
		Help: "A counter with a created timestamp and exemplars.",
	}, []string{"code"})
	tg.reg.MustRegister(tg.latency, tg.sizes, tg.classic, tg.requests, histGaugeCollector{tg})
	tg.requests.WithLabelValues("200")
	tg.requests.WithLabelValues("500")
	tg.newResetting()

	handler := promhttp.HandlerFor(histGatherer{tg.reg}, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("observe") == "1" {
			tg.observe()
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

// hostPort is the target's address for a scrape config.
func (tg *histTarget) hostPort() string { return strings.TrimPrefix(tg.srv.URL, "http://") }

// newResetting (re)creates e2e_hist_resetting; tg.mu is held or not yet shared.
func (tg *histTarget) newResetting() {
	if tg.resetting != nil {
		tg.reg.Unregister(tg.resetting)
	}
	tg.resetting = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                         metricHistResetting,
		Help:                         "A native histogram that is replaced (reset) every few scrapes.",
		NativeHistogramBucketFactor:  1.5,
		NativeHistogramZeroThreshold: 0.5,
	})
	tg.reg.MustRegister(tg.resetting)
}

// observe makes the observations of one scrape.
func (tg *histTarget) observe() {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	n := tg.scrapes
	tg.scrapes++
	if n > 0 && n%histResetEvery == 0 {
		tg.newResetting()
	}
	trace := prometheus.Labels{"trace_id": fmt.Sprintf("%016x", uint64(n)*0x9e3779b97f4a7c15)}
	for i := range 6 {
		// Positive and negative values over five orders of magnitude.
		v := math.Sin(float64(n*7+i)) * math.Pow(10, float64(i%5-2))
		if i == 3 {
			tg.latency.(prometheus.ExemplarObserver).ObserveWithExemplar(v, trace)
			continue
		}
		tg.latency.Observe(v)
	}
	tg.latency.Observe(0)       // the zero bucket
	tg.latency.Observe(-0.0004) // within the zero threshold
	tg.sizes.(prometheus.ExemplarObserver).ObserveWithExemplar(float64(1+n%13)*1024*float64(n%5+1), trace)
	tg.sizes.Observe(float64(n*n) + 0.5)
	tg.classic.Observe(float64(n%10) * 0.03)
	tg.classic.Observe(7.5)
	for i := range n%4 + 1 {
		tg.resetting.Observe(float64(i) * 1.7)
	}
	tg.requests.WithLabelValues("200").(prometheus.ExemplarAdder).AddWithExemplar(float64(n%3+1), trace)
	if n%3 == 0 {
		tg.requests.WithLabelValues("500").Inc()
	}
}

// histGaugeCollector exposes e2e_hist_gauge, a gauge histogram with float counts
// (client_golang's own histograms are counters with integer counts).
type histGaugeCollector struct{ tg *histTarget }

var histGaugeDesc = prometheus.NewDesc(metricHistGauge, "A float gauge histogram.", nil, nil)

func (histGaugeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- histGaugeDesc }

func (c histGaugeCollector) Collect(ch chan<- prometheus.Metric) {
	c.tg.mu.Lock()
	n := c.tg.scrapes
	c.tg.mu.Unlock()
	ch <- histGaugeMetric{n: n}
}

// histGaugeMetric is e2e_hist_gauge at scrape n: schema 1, a zero bucket, two
// positive spans and one negative span, fractional counts that go up and down.
type histGaugeMetric struct{ n int }

func (histGaugeMetric) Desc() *prometheus.Desc { return histGaugeDesc }

func (m histGaugeMetric) Write(out *dto.Metric) error {
	f := float64(m.n%7) + 0.25
	pos := []float64{f * 0.5, 1.5, f * 0.1, 3.3, 0.7}
	neg := []float64{0.125 * f, 2}
	zero := 0.5 * f
	count := zero
	for _, c := range pos {
		count += c
	}
	for _, c := range neg {
		count += c
	}
	out.Histogram = &dto.Histogram{
		SampleCountFloat: proto.Float64(count),
		SampleSum:        proto.Float64(f*12.375 - 3.5),
		Schema:           proto.Int32(1),
		ZeroThreshold:    proto.Float64(0.01),
		ZeroCountFloat:   proto.Float64(zero),
		PositiveSpan:     []*dto.BucketSpan{{Offset: proto.Int32(-2), Length: proto.Uint32(3)}, {Offset: proto.Int32(2), Length: proto.Uint32(2)}},
		PositiveCount:    pos,
		NegativeSpan:     []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}},
		NegativeCount:    neg,
	}
	return nil
}

// histGatherer gathers the target's registry and marks e2e_hist_gauge a gauge
// histogram (client_golang's registry types every histogram a counter one).
type histGatherer struct{ reg *prometheus.Registry }

func (g histGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == metricHistGauge {
			mf.Type = dto.MetricType_GAUGE_HISTOGRAM.Enum()
		}
	}
	return mfs, err
}

// TestHistTargetExposition fetches the histogram target's page in the protobuf
// format, as Prometheus does, and parses it with Prometheus' own parser: the
// native histograms are what TestPrometheusNativeHistograms relies on (schemas,
// negative buckets, a zero bucket, a float gauge histogram), with exemplars and
// created timestamps.
func TestHistTargetExposition(t *testing.T) {
	tg := startHistTarget(t)
	const accept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	var page []byte
	var ct string
	for range 3 { // three scrapes: the counters and histograms have grown
		req, err := http.NewRequest(http.MethodGet, tg.srv.URL+"/metrics?observe=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		ct = resp.Header.Get("Content-Type")
	}
	if !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
		t.Fatalf("Content-Type %q: the target did not answer in the protobuf format", ct)
	}
	p, err := textparse.New(page, ct, labels.NewSymbolTable(), textparse.ParserOptions{KeepClassicOnClassicAndNativeHistograms: true})
	if err != nil {
		t.Fatal(err)
	}
	hists := map[string]histogram.FloatHistogram{}
	ints := map[string]bool{}
	exemplars := map[string]int{}
	created := map[string]int64{}
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if e != textparse.EntryHistogram && e != textparse.EntrySeries {
			continue
		}
		var ls labels.Labels
		p.Labels(&ls)
		name := ls.Get(labels.MetricName)
		if e == textparse.EntryHistogram {
			_, _, h, fh := p.Histogram()
			if h != nil {
				ints[name] = true
				fh = h.ToFloat(nil)
			}
			hists[name] = *fh
		}
		var ex exemplar.Exemplar
		for p.Exemplar(&ex) {
			exemplars[name]++
		}
		if st := p.StartTimestamp(); st != 0 {
			created[name] = st
		}
	}
	for _, c := range []struct {
		name            string
		integer         bool
		schema          int32
		negative, zero  bool
		hint            histogram.CounterResetHint
		exemplars, made bool
	}{
		{name: metricHistLatency, integer: true, schema: 3, negative: true, zero: true, exemplars: true, made: true},
		{name: metricHistSizes, integer: true, schema: 0, exemplars: true, made: true},
		{name: metricHistResetting, integer: true, schema: 1, zero: true, made: true},
		{name: metricHistGauge, schema: 1, negative: true, zero: true, hint: histogram.GaugeType},
	} {
		h, ok := hists[c.name]
		switch {
		case !ok:
			t.Errorf("%s: no native histogram", c.name)
			continue
		case ints[c.name] != c.integer:
			t.Errorf("%s: integer %v, want %v", c.name, ints[c.name], c.integer)
		case h.Schema != c.schema:
			t.Errorf("%s: schema %d, want %d", c.name, h.Schema, c.schema)
		case (len(h.NegativeBuckets) > 0) != c.negative:
			t.Errorf("%s: negative buckets %v, want some: %v", c.name, h.NegativeBuckets, c.negative)
		case (h.ZeroCount > 0) != c.zero:
			t.Errorf("%s: zero bucket count %g, want one: %v", c.name, h.ZeroCount, c.zero)
		case h.CounterResetHint != c.hint:
			t.Errorf("%s: counter-reset hint %d, want %d", c.name, h.CounterResetHint, c.hint)
		case (exemplars[c.name] > 0) != c.exemplars:
			t.Errorf("%s: %d exemplars, want some: %v", c.name, exemplars[c.name], c.exemplars)
		case (created[c.name] != 0) != c.made:
			t.Errorf("%s: created timestamp %d, want one: %v", c.name, created[c.name], c.made)
		}
	}
	if _, ok := hists[metricHistClassic]; ok {
		t.Errorf("%s is a native histogram, want a classic one only", metricHistClassic)
	}
	if exemplars[metricHistRequests] == 0 || created[metricHistRequests] == 0 {
		t.Errorf("%s: %d exemplars, created timestamp %d: want both", metricHistRequests, exemplars[metricHistRequests], created[metricHistRequests])
	}
}
