package promapi

// Tests of POST /api/v1/otlp/v1/metrics: what Prometheus' translator makes of
// each OTLP metric type, stored through the real write pipeline on every
// backend, and every bad input answered with its status and text and nothing
// stored. The comparison with a real Prometheus fed by the OpenTelemetry SDK is
// in e2e/otlp_test.go.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

const (
	ctOTLPProto = "application/x-protobuf"
	ctOTLPJSON  = "application/json"
)

// otlpMetrics is one resource (service checkout, instance i-1) with a gauge, a
// cumulative monotonic sum with an exemplar, an explicit-bucket histogram, an
// exponential histogram and a summary, each with one point at ts.
func otlpMetrics(ts time.Time) pmetric.Metrics { return otlpMetricsOf(ts, "i-1") }

// otlpMetricsOf is otlpMetrics with service.instance.id instance.
func otlpMetricsOf(ts time.Time, instance string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "checkout")
	rm.Resource().Attributes().PutStr("service.instance.id", instance)
	rm.Resource().Attributes().PutStr("deployment.environment", "prod")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	at := pcommon.NewTimestampFromTime(ts)
	start := pcommon.NewTimestampFromTime(ts.Add(-time.Minute))

	g := ms.AppendEmpty()
	g.SetName("queue.depth")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetTimestamp(at)
	gp.SetDoubleValue(3.5)
	gp.Attributes().PutStr("queue", "a")

	c := ms.AppendEmpty()
	c.SetName("orders")
	sum := c.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	cp := sum.DataPoints().AppendEmpty()
	cp.SetStartTimestamp(start)
	cp.SetTimestamp(at)
	cp.SetIntValue(42)
	ex := cp.Exemplars().AppendEmpty()
	ex.SetTimestamp(at)
	ex.SetIntValue(1)
	ex.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	ex.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})

	h := ms.AppendEmpty()
	h.SetName("latency")
	h.SetUnit("s")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := hist.DataPoints().AppendEmpty()
	hp.SetStartTimestamp(start)
	hp.SetTimestamp(at)
	hp.SetCount(6)
	hp.SetSum(2.5)
	hp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hp.BucketCounts().FromRaw([]uint64{2, 3, 1})

	e := ms.AppendEmpty()
	e.SetName("size")
	exp := e.SetEmptyExponentialHistogram()
	exp.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := exp.DataPoints().AppendEmpty()
	ep.SetStartTimestamp(start)
	ep.SetTimestamp(at)
	ep.SetScale(0)
	ep.SetCount(5)
	ep.SetSum(12)
	ep.SetZeroCount(1)
	ep.Positive().SetOffset(0)
	ep.Positive().BucketCounts().FromRaw([]uint64{1, 3})

	s := ms.AppendEmpty()
	s.SetName("rpc")
	sp := s.SetEmptySummary().DataPoints().AppendEmpty()
	sp.SetStartTimestamp(start)
	sp.SetTimestamp(at)
	sp.SetCount(10)
	sp.SetSum(7)
	q := sp.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(0.6)
	return md
}

func otlpProto(t testing.TB, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func otlpJSON(t testing.TB, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOTLPStoresEveryMetricType: protobuf, gzipped protobuf and JSON requests
// are stored as Prometheus' translator names and shapes them (suffixes, job and
// instance from the service attributes, classic histogram series, a native
// histogram for the exponential one, summary quantiles, target_info), with the
// exact values and timestamps, on every backend.
func TestOTLPStoresEveryMetricType(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.Limits{MaxFutureSkew: 10 * time.Minute, MaxAge: 24 * time.Hour}, testHTTPLimits)
			for _, tc := range []struct {
				name     string
				header   map[string]string
				body     func(md pmetric.Metrics) []byte
				wantBody string
			}{
				{"protobuf", map[string]string{"Content-Type": ctOTLPProto}, func(md pmetric.Metrics) []byte { return otlpProto(t, md) }, ""},
				{"gzipped protobuf", map[string]string{"Content-Type": ctOTLPProto, "Content-Encoding": "gzip"},
					func(md pmetric.Metrics) []byte { return gzipped(t, string(otlpProto(t, md))) }, ""},
				{"JSON", map[string]string{"Content-Type": ctOTLPJSON + "; charset=utf-8"},
					func(md pmetric.Metrics) []byte { return otlpJSON(t, md) }, "{}"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					// Each format writes the series of an instance of its own.
					instance := strings.ReplaceAll(tc.name, " ", "-")
					ts := e.now.Add(-time.Minute)
					r := post(t, e.srv.URL+OTLPPath, tc.header, tc.body(otlpMetricsOf(ts, instance)))
					if r.status != 200 || r.body != tc.wantBody {
						t.Fatalf("got %d %q, want 200 %q", r.status, r.body, tc.wantBody)
					}
					ms := ts.UnixMilli()
					floats, hists := e.storedRaw(t)
					ser := func(name string, extra ...string) string {
						return labels.FromStrings(append([]string{"__name__", name, "instance", instance, "job", "checkout"}, extra...)...).String()
					}
					want := map[string][]cellenc.Sample{
						ser("queue_depth", "queue", "a"):                     {{T: ms, V: 3.5}},
						ser("orders_total"):                                  {{T: ms, V: 42}},
						ser("latency_seconds_bucket", "le", "0.1"):           {{T: ms, V: 2}},
						ser("latency_seconds_bucket", "le", "1"):             {{T: ms, V: 5}},
						ser("latency_seconds_bucket", "le", "+Inf"):          {{T: ms, V: 6}},
						ser("latency_seconds_count"):                         {{T: ms, V: 6}},
						ser("latency_seconds_sum"):                           {{T: ms, V: 2.5}},
						ser("rpc", "quantile", "0.5"):                        {{T: ms, V: 0.6}},
						ser("rpc_count"):                                     {{T: ms, V: 10}},
						ser("rpc_sum"):                                       {{T: ms, V: 7}},
						ser("target_info", "deployment_environment", "prod"): {{T: ms, V: 1}},
					}
					n := 0
					for k, got := range floats {
						if !strings.Contains(k, `instance="`+instance+`"`) {
							continue
						}
						n++
						if w, ok := want[k]; !ok || fmt.Sprint(got) != fmt.Sprint(w) {
							t.Errorf("series %s: got %v, want %v", k, got, w)
						}
					}
					if n != len(want) {
						t.Errorf("stored %d float series of instance %s, want %d", n, instance, len(want))
					}
					size := hists[ser("size")]
					if len(size) != 1 {
						t.Fatalf("native histogram size: %v, want one sample; all: %v", size, hists)
					}
					h := size[0].H
					if h == nil || size[0].FH != nil || size[0].T != ms || h.Count != 5 || h.Sum != 12 || h.ZeroCount != 1 ||
						h.Schema != 0 || fmt.Sprint(h.PositiveSpans, h.PositiveBuckets) != "[{1 2}] [1 2]" {
						t.Errorf("native histogram size: %+v (float %+v), want count 5, sum 12, zero 1, schema 0, "+
							"buckets 1 and 3 from index 1", h, size[0].FH)
					}
				})
			}
		})
	}
}

// TestOTLPBadInput: every malformed or refused request is answered with its
// status and a text that names the problem, and stores nothing.
func TestOTLPBadInput(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			limits := WriteLimits{MaxBodyBytes: 8 << 10, MaxDecompressedBytes: 16 << 10, MaxConcurrentRequests: 8}
			e := newEnv(t, b, write.Limits{MaxFutureSkew: 10 * time.Minute, MaxAge: 24 * time.Hour}, limits)
			ok := otlpMetrics(e.now)
			delta := pmetric.NewMetrics()
			ok.CopyTo(delta)
			delta.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(1).Sum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			// Without its exemplar, which is within the exemplar retention and
			// would be stored (as over remote write).
			old := otlpMetrics(e.now.Add(-48 * time.Hour))
			old.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(1).Sum().DataPoints().At(0).Exemplars().RemoveIf(
				func(pmetric.Exemplar) bool { return true })
			big := strings.Repeat("x", 20<<10)
			for _, tc := range []struct {
				name   string
				header map[string]string
				body   []byte
				status int
				want   string
				// metadata: the request's valid metric metadata is stored
				// even though its samples are not (as with remote write 2.0):
				// only the data table must be unchanged.
				metadata bool
			}{
				{"malformed protobuf", map[string]string{"Content-Type": ctOTLPProto}, []byte{0x0a, 0xff, 0xff}, 400,
					"invalid write request: OTLP protobuf body does not decode as an ExportMetricsServiceRequest: " +
						"unexpected EOF", false},
				{"malformed JSON", map[string]string{"Content-Type": ctOTLPJSON}, []byte(`{"resourceMetrics": [`), 400,
					"invalid write request: OTLP JSON body does not decode as an ExportMetricsServiceRequest: " +
						"ReadObject", false},
				{"text/plain", map[string]string{"Content-Type": "text/plain"}, otlpProto(t, ok), 415,
					`unsupported media type: Content-Type "text/plain"; OTLP/HTTP takes application/x-protobuf or application/json`, false},
				{"no Content-Type", nil, otlpProto(t, ok), 415,
					`unsupported media type: Content-Type "": mime: no media type; OTLP/HTTP takes application/x-protobuf or application/json`, false},
				{"snappy", map[string]string{"Content-Type": ctOTLPProto, "Content-Encoding": "snappy"}, otlpProto(t, ok), 415,
					`unsupported media type: Content-Encoding "snappy" is not accepted; OTLP/HTTP takes gzip or none`, false},
				{"not gzip", map[string]string{"Content-Type": ctOTLPProto, "Content-Encoding": "gzip"}, otlpProto(t, ok), 400,
					"invalid write request: body is not gzip-compressed: gzip: invalid header", false},
				{"over the body limit", map[string]string{"Content-Type": ctOTLPJSON}, []byte(big), 413,
					"request body too large: Content-Length 20480 bytes is over the limit of 8192 bytes (--write.max-body-bytes)", false},
				{"over the decompressed limit", map[string]string{"Content-Type": ctOTLPJSON, "Content-Encoding": "gzip"},
					gzipped(t, big), 400,
					"invalid write request: gzip-decoded body is over the limit of 16384 bytes (--write.max-decompressed-bytes)", false},
				{"delta without a delta mode", map[string]string{"Content-Type": ctOTLPProto}, otlpProto(t, delta), 400,
					`invalid write request: otlp: invalid temporality and type combination for metric "orders" ` +
						"(delta temporality is stored only with --otlp.delta-to-cumulative or --otlp.native-delta-ingestion)", false},
				{"samples older than the retention", map[string]string{"Content-Type": ctOTLPProto}, otlpProto(t, old), 400,
					"invalid write request: 12 samples rejected, 0 written: timestamp " +
						fmt.Sprint(e.now.Add(-48*time.Hour).UnixMilli()), true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before, floats, hists := e.cells(t), e.stored(t), e.storedHistograms(t)
					r := post(t, e.srv.URL+OTLPPath, tc.header, tc.body)
					got := strings.TrimSuffix(r.body, "\n")
					if r.status != tc.status || !strings.HasPrefix(got, tc.want) {
						t.Errorf("got %d %q\nwant %d %q", r.status, got, tc.status, tc.want)
					}
					if after := e.cells(t); after != before && !tc.metadata {
						t.Errorf("a refused request changed the store: %d cells before, %d after", before, after)
					}
					if f, h := e.stored(t), e.storedHistograms(t); len(f) != len(floats) || len(h) != len(hists) ||
						countSamples(f) != countSamples(floats) {
						t.Errorf("a refused request stored samples: %d float series before, %d after; %d histogram series "+
							"before, %d after", len(floats), len(f), len(hists), len(h))
					}
				})
			}
		})
	}
}

// TestOTLPStoreFailure: a store that fails is answered 503, so that OTLP
// senders retry (remote write answers 500 for a failure that is not the
// store's unavailability, which OTLP senders would not retry), as is a server
// whose store is not open yet; a request the writer refuses whole is 400.
func TestOTLPStoreFailure(t *testing.T) {
	body := otlpProto(t, otlpMetrics(time.Now()))
	hdr := map[string]string{"Content-Type": ctOTLPProto}
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"store unavailable", fmt.Errorf("hbase: region server down: %w", kv.ErrUnavailable), 503},
		// 500 for remote write; OTLP senders retry only 429, 502, 503 and 504.
		{"table dropped", fmt.Errorf("apply data: %w", kv.ErrTableNotFound), 503},
		{"request rejected whole", fmt.Errorf("%w: 14 series is over the limit of 2 series per request", write.ErrInvalid), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &scriptedWriter{err: tc.err}
			srv := httptest.NewServer(writeRouter(t, w, WriteLimits{}, nil))
			defer srv.Close()
			r := post(t, srv.URL+OTLPPath, hdr, body)
			if want := tc.err.Error() + "\n"; r.status != tc.status || r.body != want {
				t.Errorf("got %d %q, want %d %q", r.status, r.body, tc.status, want)
			}
			if w.calls.Load() != 1 {
				t.Errorf("the writer was called %d times, want once", w.calls.Load())
			}
		})
	}
	t.Run("no store yet", func(t *testing.T) {
		h, err := NewRouter(Options{DB: func() (DB, error) { return nil, errors.New("opening the store") }})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		if r := post(t, srv.URL+OTLPPath, hdr, body); r.status != 503 || r.body != "store unavailable: opening the store\n" {
			t.Errorf("got %d %q, want 503", r.status, r.body)
		}
	})
}

// TestOTLPDeltaToCumulative: with ConvertDelta, two delta points of a sum are
// stored as their running total.
func TestOTLPDeltaToCumulative(t *testing.T) {
	b := schematest.Backends()[0]
	st := b.Store(t)
	e := newEnvOn(t, st, b.Settings, write.Limits{MaxFutureSkew: 10 * time.Minute, MaxAge: 24 * time.Hour}, testHTTPLimits)
	h, err := NewRouter(Options{DB: StaticDB(writeOnlyStore{e.writer}), OTLP: OTLPOptions{ConvertDelta: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	start := e.now.Add(-3 * time.Minute)
	for i, v := range []int64{5, 7} {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("jobs")
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		p := s.DataPoints().AppendEmpty()
		p.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i) * time.Minute)))
		p.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i+1) * time.Minute)))
		p.SetIntValue(v)
		if r := post(t, srv.URL+OTLPPath, map[string]string{"Content-Type": ctOTLPProto}, otlpProto(t, md)); r.status != 200 {
			t.Fatalf("delta point %d: %d %q", i, r.status, r.body)
		}
	}
	got := e.stored(t)[`{__name__="jobs_total"}`]
	want := []cellenc.Sample{{T: start.Add(time.Minute).UnixMilli(), V: 5}, {T: start.Add(2 * time.Minute).UnixMilli(), V: 12}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("jobs_total: %v, want %v", got, want)
	}
}

func TestOTLPOptionsValidate(t *testing.T) {
	withPromoteAll := config.DefaultOTLPConfig
	withPromoteAll.PromoteAllResourceAttributes = true
	withPromoteAll.PromoteResourceAttributes = []string{"a"}
	ignoreAlone := config.DefaultOTLPConfig
	ignoreAlone.IgnoreResourceAttributes = []string{"a"}
	empty := config.DefaultOTLPConfig
	empty.PromoteResourceAttributes = []string{"a", " "}
	for _, tc := range []struct {
		name string
		opts OTLPOptions
		want string
	}{
		{"defaults", OTLPOptions{}, ""},
		{"both delta modes", OTLPOptions{ConvertDelta: true, NativeDelta: true}, "promapi: OTLPOptions.ConvertDelta and " +
			"promapi: OTLPOptions.NativeDelta exclude each other (Prometheus: otlp-deltatocumulative and otlp-native-delta-ingestion)"},
		{"promote all and some", OTLPOptions{Config: &withPromoteAll}, "promapi: OTLPOptions.Config: " +
			"'promote_all_resource_attributes' and 'promote_resource_attributes' cannot be configured simultaneously"},
		{"ignore without promote all", OTLPOptions{Config: &ignoreAlone}, "promapi: OTLPOptions.Config: " +
			"'ignore_resource_attributes' cannot be configured unless 'promote_all_resource_attributes' is true"},
		{"an empty attribute", OTLPOptions{Config: &empty}, "promapi: OTLPOptions.Config: " +
			"invalid 'promote_resource_attributes': empty promoted OTel resource attribute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOTLPSharesTheWriteConcurrencyBound: an OTLP request takes a slot of
// --write.max-concurrent-requests once its body has arrived; one more is
// answered 429 with Retry-After, and the first completes.
func TestOTLPSharesTheWriteConcurrencyBound(t *testing.T) {
	w := &scriptedWriter{block: make(chan struct{})}
	srv := httptest.NewServer(writeRouter(t, w, WriteLimits{MaxConcurrentRequests: 1, RetryAfter: 2 * time.Second}, nil))
	defer srv.Close()
	body := otlpProto(t, otlpMetrics(time.Now()))
	hdr := map[string]string{"Content-Type": ctOTLPProto}
	first := make(chan response, 1)
	go func() { first <- post(t, srv.URL+OTLPPath, hdr, body) }()
	for w.calls.Load() == 0 { // the first request is being written
		time.Sleep(time.Millisecond)
	}
	r := post(t, srv.URL+OTLPPath, hdr, body)
	want := "overloaded: more than 1 write requests in flight (--write.max-concurrent-requests); retry later\n"
	if r.status != 429 || r.body != want || r.header.Get("Retry-After") != "2" {
		t.Errorf("second request: %d %q Retry-After %q, want 429 %q 2", r.status, r.body, r.header.Get("Retry-After"), want)
	}
	close(w.block)
	if r := <-first; r.status != 200 {
		t.Errorf("first request: %d %q, want 200", r.status, r.body)
	}
}

// TestOTLPIsCountedAndRecovered: OTLP requests are counted under
// protocol="otlp" in /metrics, and a panic on the path is a plain-text 500.
func TestOTLPIsCountedAndRecovered(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewRouter(Options{DB: StaticDB(writeOnlyStore{&scriptedWriter{}}), Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if r := post(t, srv.URL+OTLPPath, map[string]string{"Content-Type": ctOTLPProto}, otlpProto(t, otlpMetrics(time.Now()))); r.status != 200 {
		t.Fatalf("OTLP: %d %q", r.status, r.body)
	}
	if r := post(t, srv.URL+OTLPPath, map[string]string{"Content-Type": "text/plain"}, []byte("x")); r.status != 415 {
		t.Fatalf("OTLP text/plain: %d %q", r.status, r.body)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 11 float series of one sample each (scriptedWriter counts floats only).
	for _, want := range []string{
		`hbtsdb_write_requests_total{outcome="success",protocol="otlp"} 1`,
		`hbtsdb_write_requests_total{outcome="rejected",protocol="otlp"} 1`,
		`hbtsdb_samples_written_total{protocol="otlp"} 11`,
	} {
		if !strings.Contains(string(text), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var log bytes.Buffer
	ph := recoverPanics(slog.New(slog.NewTextHandler(&log, nil)), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	ph.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, OTLPPath, nil))
	if rec.Code != 500 || rec.Body.String() != "internal server error\n" {
		t.Errorf("panic on %s = %d %q, want 500 in plain text", OTLPPath, rec.Code, rec.Body.String())
	}
}
