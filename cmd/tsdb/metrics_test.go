package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

// upstreamLintExceptions are metrics of Prometheus' own packages that promlint
// finds fault with; their names are Prometheus', and Prometheus exposes them so.
var upstreamLintExceptions = map[string]bool{
	"prometheus_engine_query_duration_histogram_seconds": true, // "should not include type 'histogram'"
}

// scrape reads the server's /metrics and returns its families, failing on
// anything promlint (promtool check metrics) finds.
func scrape(t *testing.T, s *server) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := s.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if upstreamLintExceptions[p.Metric] {
			continue
		}
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// value is the value of the series of family name with exactly the labels
// given as name=value pairs (counter, gauge, untyped, or a histogram's count);
// ok is false when there is no such series.
func value(mfs map[string]*dto.MetricFamily, name string, pairs ...string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(pairs)/2 {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			found := false
			for j := 0; j < len(pairs); j += 2 {
				if l.GetName() == pairs[j] && l.GetValue() == pairs[j+1] {
					found = true
				}
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// /metrics is served, lint-clean, and moves with what the server does: the
// counters by exactly what was sent, the latency histograms by each request.
func TestMetricsMoveUnderLoad(t *testing.T) {
	s := startServe(t, "--storage=embedded:"+t.TempDir())
	s.waitFor(t, "/-/ready", 200)
	before := scrape(t, s)
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "hbtsdb_build_info",
		"hbtsdb_series_created_total", "prometheus_engine_queries", "hbtsdb_kv_operation_duration_seconds"} {
		if _, ok := before[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	now := time.Now().UnixMilli()
	const series = 500
	if code, msg := postBody(s.addr, "/api/v1/write", remoteWriteBody(now, 0, series), remoteWriteHeaders); code != 204 {
		t.Fatalf("remote write: %d %s", code, msg)
	}
	put := fmt.Sprintf(`[{"metric":"m","timestamp":%d,"value":1,"tags":{"host":"a"}},{"metric":"m","timestamp":%[1]d,"value":2,"tags":{}}]`, now/1000)
	if code, msg := postBody(s.addr, "/api/put", []byte(put), nil); code != 400 {
		t.Fatalf("/api/put with one datapoint without tags: %d %s, want 400", code, msg)
	}
	old := remoteWriteBody(now-500*24*3600*1000, series, 1) // older than --retention.raw's 400d
	if code, msg := postBody(s.addr, "/api/v1/write", old, remoteWriteHeaders); code != 400 {
		t.Fatalf("remote write of a sample 500 days old: %d %s, want 400", code, msg)
	}
	hist := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:     []prompb.Label{{Name: "__name__", Value: "latency_seconds"}},
		Histograms: []prompb.Histogram{prompb.FromIntHistogram(now, tsdbutil.GenerateTestHistogram(1)), prompb.FromIntHistogram(now+1, tsdbutil.GenerateTestHistogram(2))},
		Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 0.5, Timestamp: now}},
	}}}
	raw, err := hist.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := postBody(s.addr, "/api/v1/write", snappy.Encode(nil, raw), remoteWriteHeaders); code != 204 {
		t.Fatalf("remote write of 2 histograms and an exemplar: %d %s", code, msg)
	}
	if code, body := s.get("/api/v1/query?query=" + url.QueryEscape("count(abuse_metric)")); code != 200 || !strings.Contains(body, `"500"`) {
		t.Fatalf("count(abuse_metric): %d %s", code, body)
	}
	after := scrape(t, s)

	for _, tc := range []struct {
		name  string
		pairs []string
		delta float64
	}{
		{"hbtsdb_samples_written_total", []string{"protocol", "remote_write_v1"}, series},
		{"hbtsdb_histogram_samples_written_total", []string{"protocol", "remote_write_v1"}, 2},
		{"hbtsdb_exemplars_written_total", []string{"protocol", "remote_write_v1"}, 1},
		{"hbtsdb_write_requests_total", []string{"protocol", "remote_write_v1", "outcome", "success"}, 2},
		{"hbtsdb_samples_written_total", []string{"protocol", "put"}, 1},
		{"hbtsdb_samples_rejected_total", []string{"protocol", "put", "reason", "invalid_datapoint"}, 1},
		{"hbtsdb_samples_rejected_total", []string{"protocol", "remote_write_v1", "reason", "too_old"}, 1},
		{"hbtsdb_write_requests_total", []string{"protocol", "remote_write_v1", "outcome", "rejected"}, 1},
		{"hbtsdb_write_requests_total", []string{"protocol", "put", "outcome", "rejected"}, 1},
		{"hbtsdb_series_created_total", nil, series + 2},
		{"hbtsdb_series_registry_lookups_total", []string{"result", "registered"}, series + 2},
		{"hbtsdb_http_requests_total", []string{"handler", "/api/v1/write", "code", "204"}, 2},
		{"hbtsdb_http_request_duration_seconds", []string{"handler", "/api/v1/write"}, 3},
		{"hbtsdb_http_request_duration_seconds", []string{"handler", "/api/v1/query"}, 1},
		{"prometheus_engine_query_duration_histogram_seconds", []string{"slice", "inner_eval"}, 1},
		// count(abuse_metric) read each series' one raw cell, nothing else.
		{"hbtsdb_query_cells_read_total", []string{"source", "raw"}, series},
		{"hbtsdb_query_cells_read_total", []string{"source", "chunk"}, 0},
		{"hbtsdb_query_cells_read_total", []string{"source", "rollup"}, 0},
	} {
		was, _ := value(before, tc.name, tc.pairs...)
		now, ok := value(after, tc.name, tc.pairs...)
		if !ok {
			t.Errorf("%s%v: not in /metrics", tc.name, tc.pairs)
			continue
		}
		if now-was != tc.delta {
			t.Errorf("%s%v went from %v to %v; want +%v", tc.name, tc.pairs, was, now, tc.delta)
		}
	}
	if was, _ := value(before, "hbtsdb_kv_operation_duration_seconds", "backend", "embedded", "operation", "apply"); true {
		now, _ := value(after, "hbtsdb_kv_operation_duration_seconds", "backend", "embedded", "operation", "apply")
		if now <= was {
			t.Errorf("storage applies observed went from %v to %v; want more after two writes", was, now)
		}
	}
}
