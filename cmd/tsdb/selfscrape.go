package main

import (
	"context"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// selfScrapeJob is the job label of the self-scraped series, as a Prometheus
// scraping tsdb would name it in the dashboards' examples.
const selfScrapeJob = "hbtsdb"

// selfScrape writes what g gathers into the store of rdb every interval, with
// job="hbtsdb" and instance=instance, as VictoriaMetrics' -selfScrapeInterval
// does: the overview dashboard (dashboards/) then works with no Prometheus
// running. The samples go through the write pipeline like any other, with the
// metrics' type and help as metadata. A failed round is logged and the next
// one tries again; nothing is written while the store is not open. It returns
// when ctx is done.
func selfScrape(ctx context.Context, g prometheus.Gatherer, rdb *readyDB, every time.Duration, instance string, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d := rdb.openDB()
			if d == nil {
				continue
			}
			mfs, err := g.Gather()
			if err != nil {
				logger.Warn("self-scrape: gathering the metrics failed in part; writing the rest", "err", err)
			}
			req := familiesToRequest(mfs, now.UnixMilli(), labels.FromStrings(model.JobLabel, selfScrapeJob, model.InstanceLabel, instance))
			res, err := d.Write(ctx, &req)
			if err != nil && ctx.Err() == nil {
				logger.Warn("self-scrape: writing tsdb's own metrics failed; the next round tries again", "err", err)
			} else if len(res.Rejected) > 0 {
				logger.Warn("self-scrape: some of tsdb's own metrics were rejected", "rejected", len(res.Rejected),
					"first", res.Rejected[0].Reason)
			}
		}
	}
}

// familiesToRequest is the write request of one scrape of mfs at ts (ms), as
// Prometheus would store it: each counter, gauge and untyped metric a series;
// a summary its quantile series and _sum and _count; a histogram its _bucket
// series (le, +Inf included) and _sum and _count. target's labels are added to
// every series (a metric's own label of the same name wins, as with
// honor_labels). Metadata carries each family's type and help.
func familiesToRequest(mfs []*dto.MetricFamily, ts int64, target labels.Labels) write.Request {
	var req write.Request
	var b labels.Builder
	add := func(name string, m *dto.Metric, v float64, extra ...string) {
		b.Reset(target)
		for _, l := range m.GetLabel() {
			b.Set(l.GetName(), l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Set(extra[i], extra[i+1])
		}
		b.Set(model.MetricNameLabel, name)
		req.Series = append(req.Series, write.Series{Labels: b.Labels(), Samples: []cellenc.Sample{{T: ts, V: v}}})
	}
	for _, mf := range mfs {
		name := mf.GetName()
		var typ model.MetricType
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				typ = model.MetricTypeCounter
				add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				typ = model.MetricTypeGauge
				add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				typ = model.MetricTypeUnknown
				add(name, m, m.GetUntyped().GetValue())
			case dto.MetricType_SUMMARY:
				typ = model.MetricTypeSummary
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, m, q.GetValue(), model.QuantileLabel, formatFloat(q.GetQuantile()))
				}
				add(name+"_sum", m, s.GetSampleSum())
				add(name+"_count", m, float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				typ = model.MetricTypeHistogram
				h := m.GetHistogram()
				buckets := h.GetBucket()
				sort.Slice(buckets, func(i, j int) bool { return buckets[i].GetUpperBound() < buckets[j].GetUpperBound() })
				for _, bk := range buckets {
					if math.IsInf(bk.GetUpperBound(), +1) {
						continue
					}
					add(name+"_bucket", m, float64(bk.GetCumulativeCount()), model.BucketLabel, formatFloat(bk.GetUpperBound()))
				}
				add(name+"_bucket", m, float64(h.GetSampleCount()), model.BucketLabel, "+Inf")
				add(name+"_sum", m, h.GetSampleSum())
				add(name+"_count", m, float64(h.GetSampleCount()))
			}
		}
		if typ != "" {
			req.Metadata = append(req.Metadata, schema.Metadata{Metric: name, Type: typ, Help: mf.GetHelp(), Unit: mf.GetUnit()})
		}
	}
	return req
}

// formatFloat writes a quantile or bucket bound as Prometheus' text format does.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
