package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
)

// otlpRounds is how many times the test records and exports, at least
// otlpRoundGap apart; exemplars are recorded every otlpExemplarEvery rounds.
// tsdb keeps --exemplars.per-slot exemplars per --exemplars.slot, in places of
// slot/per-slot (1s by default: one exemplar a second per series, which an SDK
// exporting every 60s never reaches); the test runs with places of 20ms, less
// than the 2 x otlpRoundGap between exemplars, so that tsdb keeps every one, as
// Prometheus does.
const (
	otlpRounds        = 12
	otlpRoundGap      = 20 * time.Millisecond
	otlpExemplarEvery = 2
)

// TestOTLPAgainstPrometheus: the OpenTelemetry Go SDK's OTLP/HTTP metric
// exporter (gzip) sends counters, up-down counters, gauges, explicit-bucket
// and exponential histograms, with exemplars of sampled spans, to tsdb (each
// store) and to a real Prometheus with --web.enable-otlp-receiver, the same
// collected batches to both, with one resource attribute promoted on both
// (--otlp.promote-resource-attributes, otlp: promote_resource_attributes).
// The raw series (floats and native histograms, as the query API's JSON text),
// PromQL over them and query_exemplars must be equal to the byte.
func TestOTLPAgainstPrometheus(t *testing.T) {
	promBin := prometheusBinary(t)
	for _, s := range []struct {
		name string
		mk   func(*testing.T) store
	}{{"embedded", embeddedStore}, {"hbase", hbaseStore}} {
		t.Run(s.name, func(t *testing.T) {
			st := s.mk(t)
			dir := t.TempDir()
			st.flags = append(st.flags, "--otlp.promote-resource-attributes=deployment.environment",
				"--exemplars.slot=1s", "--exemplars.per-slot=50")
			tsdb := startTSDB(t, dir, st)
			ps := startOTLPPrometheus(t, promBin, dir)
			first, last := sendOTLP(t, tsdb.baseURL(), ps.url)
			compareOTLP(t, ps.url, tsdb.baseURL(), first, last)
			if err := ps.stop(); err != nil {
				t.Errorf("stop Prometheus: %v", err)
			}
			tsdb.stopAndCheck(t)
		})
	}
}

// startOTLPPrometheus starts a Prometheus that scrapes nothing and takes OTLP,
// with exemplar storage and deployment.environment promoted to a label.
func startOTLPPrometheus(t *testing.T, bin, dir string) *promServer {
	t.Helper()
	cfg := "otlp:\n  promote_resource_attributes: [deployment.environment]\n"
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		p := startProcess(t, "prometheus", dir, bin, "--config.file="+cfgPath,
			"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--web.enable-otlp-receiver", "--enable-feature=exemplar-storage", "--log.level=info")
		if ps := readyPrometheus(t, p, port, attempt, cfg); ps != nil {
			return ps
		}
	}
}

// sendOTLP records otlpRounds rounds of measurements with the SDK, collects
// each with a manual reader and exports the same batch to tsdb and to
// Prometheus; it returns the first and last collection times (ms).
func sendOTLP(t *testing.T, tsdbURL, promURL string) (first, last int64) {
	t.Helper()
	ctx := context.Background()
	exporter := func(base string) *otlpmetrichttp.Exporter {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		e, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(u.Host), otlpmetrichttp.WithInsecure(),
			otlpmetrichttp.WithURLPath("/api/v1/otlp/v1/metrics"), otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Shutdown(ctx) })
		return e
	}
	toTSDB, toProm := exporter(tsdbURL), exporter(promURL)

	reader := sdkmetric.NewManualReader()
	res := resource.NewSchemaless(attribute.String("service.name", "otlp-e2e"),
		attribute.String("service.instance.id", "i-1"), attribute.String("deployment.environment", "test"),
		attribute.String("host.name", "h1"))
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "e2e.size"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "e2e.latency"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: []float64{0.01, 0.1, 1}}})))
	t.Cleanup(func() { _ = provider.Shutdown(ctx) })
	meter := provider.Meter("hbtsdb/e2e", metric.WithInstrumentationVersion("1.0"))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	requests, err := meter.Float64Counter("e2e.requests", metric.WithUnit("{request}"), metric.WithDescription("Requests served."))
	must(err)
	inflight, err := meter.Int64UpDownCounter("e2e.inflight", metric.WithDescription("Requests in flight."))
	must(err)
	temp, err := meter.Float64Gauge("e2e.temperature", metric.WithUnit("Cel"))
	must(err)
	latency, err := meter.Float64Histogram("e2e.latency", metric.WithUnit("s"))
	must(err)
	size, err := meter.Float64Histogram("e2e.size", metric.WithUnit("By"))
	must(err)

	for i := range otlpRounds {
		rctx := ctx
		if i%otlpExemplarEvery == 0 {
			// A sampled span makes the SDK's trace-based filter keep exemplars.
			rctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{0xe2, 0xe, byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},
				SpanID:  trace.SpanID{0x5b, byte(i), 1, 2, 3, 4, 5, 6}, TraceFlags: trace.FlagsSampled}))
		}
		for _, method := range []string{"GET", "POST"} {
			attrs := metric.WithAttributes(attribute.String("method", method))
			requests.Add(rctx, 1.5+float64(i), attrs)
			latency.Record(rctx, 0.003*float64(i+1)*float64(len(method)), attrs)
			size.Record(rctx, float64(100*(i+1)+len(method)), attrs)
		}
		inflight.Add(rctx, int64(3-i%5))
		temp.Record(rctx, 20.25+float64(i)/8, metric.WithAttributes(attribute.String("room", "a")))

		// Distinct millisecond timestamps: wait for the clock to move on.
		for time.Now().UnixMilli() <= last+otlpRoundGap.Milliseconds() {
			time.Sleep(5 * time.Millisecond)
		}
		var rm metricdata.ResourceMetrics
		must(reader.Collect(ctx, &rm))
		ts := collectedAt(rm)
		if first == 0 {
			first = ts
		}
		last = ts
		if err := toTSDB.Export(ctx, &rm); err != nil {
			t.Fatalf("round %d: export to tsdb: %v", i, err)
		}
		if err := toProm.Export(ctx, &rm); err != nil {
			t.Fatalf("round %d: export to Prometheus: %v", i, err)
		}
	}
	return first, last
}

// collectedAt is the time (ms) of the data points of a collection.
func collectedAt(rm metricdata.ResourceMetrics) int64 {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[float64]); ok && len(s.DataPoints) > 0 {
				return s.DataPoints[0].Time.UnixMilli()
			}
		}
	}
	return 0
}

// otlpQueries are PromQL over what the SDK sent, as Prometheus' translator
// names it.
var otlpQueries = []string{
	`sum by (method) (rate(e2e_requests_total[1m]))`,
	`increase(e2e_requests_total[1m])`,
	`e2e_inflight`,
	`max_over_time(e2e_temperature_celsius[1m])`,
	`histogram_quantile(0.9, sum by (le) (rate(e2e_latency_seconds_bucket[1m])))`,
	`histogram_quantile(0.5, rate(e2e_size_bytes[1m]))`,
	`histogram_count(e2e_size_bytes)`,
	`histogram_sum(rate(e2e_size_bytes[1m]))`,
	`target_info`,
}

// compareOTLP compares tsdb's query API answers with Prometheus', to the byte.
func compareOTLP(t *testing.T, promURL, tsdbURL string, first, last int64) {
	t.Helper()
	ctx := context.Background()
	end := last + 1
	type query struct {
		what, path string
		params     url.Values
	}
	queries := []query{{
		what: "raw series", path: "/api/v1/query",
		params: url.Values{"query": {`{__name__=~"e2e_.+|target_info"}[5m]`}, "time": {apiTime(end)}},
	}}
	for _, q := range otlpQueries {
		queries = append(queries,
			query{q + " at the end", "/api/v1/query", url.Values{"query": {q}, "time": {apiTime(end)}}},
			query{q + " range", "/api/v1/query_range", url.Values{"query": {q}, "start": {apiTime(first)},
				"end": {apiTime(end)}, "step": {"0.05"}}})
	}
	for i, q := range queries {
		want, err := histAPIQuery(ctx, promURL, q.path, q.params)
		if err != nil {
			t.Fatalf("Prometheus %s: %v", q.what, err)
		}
		if len(want.series) == 0 {
			t.Errorf("Prometheus answers %s with no series: the query compares nothing", q.what)
		}
		if i == 0 {
			t.Logf("Prometheus has %d series, %d float and %d histogram samples from OTLP", len(want.series), want.floats, want.histograms)
			if want.floats == 0 || want.histograms == 0 {
				t.Errorf("Prometheus has %d float and %d histogram samples: nothing to compare", want.floats, want.histograms)
			}
		}
		got, err := histAPIQuery(ctx, tsdbURL, q.path, q.params)
		if err != nil {
			t.Errorf("tsdb %s: %v", q.what, err)
			continue
		}
		if d := want.diff(got); len(d) > 0 {
			t.Errorf("%s: tsdb differs from Prometheus in %d places:%s", q.what, len(d), summarize(d, 10))
		}
	}
	exParams := url.Values{"query": {`{__name__=~"e2e_.+"}`}, "start": {apiTime(first - 1000)}, "end": {apiTime(end)}}
	wantEx, err := histExemplars(ctx, promURL, exParams)
	if err != nil {
		t.Fatalf("Prometheus query_exemplars: %v", err)
	}
	if len(wantEx) == 0 {
		t.Fatal("Prometheus has no exemplars: nothing to compare")
	}
	gotEx, err := histExemplars(ctx, tsdbURL, exParams)
	if err != nil {
		t.Fatalf("tsdb query_exemplars: %v", err)
	}
	if d := compareExemplars(wantEx, gotEx); len(d) > 0 {
		t.Errorf("query_exemplars: tsdb differs from Prometheus in %d places:%s", len(d), summarize(d, 10))
	}
	t.Logf("exemplars of %d series equal", len(wantEx))
}
