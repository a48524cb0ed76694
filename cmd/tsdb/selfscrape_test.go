package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/schema"
)

// A scrape becomes the series Prometheus would store for it: a summary's
// quantiles, a histogram's cumulative buckets with +Inf, _sum and _count, the
// target's labels on every series, and the families' metadata.
func TestFamiliesToRequest(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "A counter."}, []string{"job"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "A gauge."})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Help: "A histogram.", Buckets: []float64{0.5, 1}})
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "s", Help: "A summary.", Objectives: map[float64]float64{0.5: 0.01}})
	reg.MustRegister(c, g, h, s)
	c.WithLabelValues("own").Add(3)
	g.Set(-2.5)
	for _, v := range []float64{0.25, 0.75, 2} {
		h.Observe(v)
	}
	s.Observe(4)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	req := familiesToRequest(mfs, 1000, labels.FromStrings("instance", "i:1", "job", "hbtsdb"))
	var got []string
	for _, se := range req.Series {
		if len(se.Samples) != 1 || se.Samples[0].T != 1000 {
			t.Fatalf("%s: samples %v", se.Labels, se.Samples)
		}
		got = append(got, fmt.Sprintf("%s %v", se.Labels, se.Samples[0].V))
	}
	want := []string{
		`{__name__="c_total", instance="i:1", job="own"} 3`, // the metric's own job label wins
		`{__name__="g", instance="i:1", job="hbtsdb"} -2.5`,
		`{__name__="h_seconds_bucket", instance="i:1", job="hbtsdb", le="0.5"} 1`,
		`{__name__="h_seconds_bucket", instance="i:1", job="hbtsdb", le="1"} 2`,
		`{__name__="h_seconds_bucket", instance="i:1", job="hbtsdb", le="+Inf"} 3`,
		`{__name__="h_seconds_sum", instance="i:1", job="hbtsdb"} 3`,
		`{__name__="h_seconds_count", instance="i:1", job="hbtsdb"} 3`,
		`{__name__="s", instance="i:1", job="hbtsdb", quantile="0.5"} 4`,
		`{__name__="s_sum", instance="i:1", job="hbtsdb"} 4`,
		`{__name__="s_count", instance="i:1", job="hbtsdb"} 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantMeta := []schema.Metadata{
		{Metric: "c_total", Type: model.MetricTypeCounter, Help: "A counter."},
		{Metric: "g", Type: model.MetricTypeGauge, Help: "A gauge."},
		{Metric: "h_seconds", Type: model.MetricTypeHistogram, Help: "A histogram."},
		{Metric: "s", Type: model.MetricTypeSummary, Help: "A summary."},
	}
	if fmt.Sprint(req.Metadata) != fmt.Sprint(wantMeta) {
		t.Errorf("metadata %v, want %v", req.Metadata, wantMeta)
	}
}

// With --self-scrape.interval the server's own metrics are queryable with
// job="hbtsdb" and the server's address as instance, metadata included.
func TestServeSelfScrape(t *testing.T) {
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--self-scrape.interval=200ms")
	s.waitFor(t, "/-/ready", 200)
	query := "/api/v1/query?query=" + url.QueryEscape(`hbtsdb_build_info{job="hbtsdb"}`)
	want := fmt.Sprintf(`"instance":%q`, s.addr)
	last, lastLog, lastChange := "", 0, time.Now()
	for {
		code, body := s.get(query)
		if code == 200 && strings.Contains(body, want) && strings.Contains(body, `"1"]`) {
			break
		}
		if code != 200 {
			t.Fatalf("%s: %d %s", query, code, body)
		}
		if body != last || len(s.log()) != lastLog {
			last, lastLog, lastChange = body, len(s.log()), time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("no self-scraped hbtsdb_build_info, and no change for %s: %s; log:\n%s", waitStall, body, s.log())
		}
		select {
		case err := <-s.done:
			t.Fatalf("server exited (%v); log:\n%s", err, s.log())
		case <-time.After(100 * time.Millisecond):
		}
	}
	code, body := s.get("/api/v1/metadata?metric=hbtsdb_http_request_duration_seconds")
	if code != 200 || !strings.Contains(body, `"type":"histogram"`) {
		t.Errorf("metadata of a self-scraped histogram: %d %s", code, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v; log:\n%s", err, s.log())
	}
}
