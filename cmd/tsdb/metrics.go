package main

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newMetricsRegistry is tsdb serve's registry, served at /metrics: Go runtime
// and process metrics, hbtsdb_build_info and the series registry's counters of
// the DB rdb hands out; the HTTP surface, the PromQL engine, the storage and the
// compaction worker register theirs on it as they are built. No global
// registry: every metric comes from an object of this process.
func newMetricsRegistry(rdb *readyDB) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hbtsdb_build_info",
			Help: "Always 1: the version, revision and Go version tsdb was built with.",
			ConstLabels: prometheus.Labels{"version": version, "revision": revision(), "goversion": runtime.Version(),
				"prometheus_engine": prometheusAPIVersion},
		}, func() float64 { return 1 }),
		registryCollector{rdb},
	)
	return reg
}

// registryCollector reports the series registry's counters of the open DB
// (none before the store is open).
type registryCollector struct{ rdb *readyDB }

var (
	seriesCreatedDesc = prometheus.NewDesc("hbtsdb_series_created_total",
		"New series registered by this process (their first sample anywhere).", nil, nil)
	seriesIDCollisionsDesc = prometheus.NewDesc("hbtsdb_series_id_collisions_total",
		"New series whose hash-derived ID another label set already held, registered with a counter ID instead "+
			"(store format 2; expected to stay 0 for billions of series).", nil, nil)
	registryLookupsDesc = prometheus.NewDesc("hbtsdb_series_registry_lookups_total",
		"Label sets the series registry resolved to IDs, by how: cache_hit, store_hit (read from the series table), "+
			"registered (new, registered by this process) or raced (new, but another writer registered it first).",
		[]string{"result"}, nil)
)

func (c registryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- seriesCreatedDesc
	ch <- seriesIDCollisionsDesc
	ch <- registryLookupsDesc
}

func (c registryCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.rdb.openDB()
	if d == nil {
		return
	}
	s := d.RegistryStats()
	ch <- prometheus.MustNewConstMetric(seriesCreatedDesc, prometheus.CounterValue, float64(s.Registered))
	ch <- prometheus.MustNewConstMetric(seriesIDCollisionsDesc, prometheus.CounterValue, float64(s.Collisions))
	for result, n := range map[string]int64{"cache_hit": s.CacheHits, "store_hit": s.StoreHits,
		"registered": s.Registered, "raced": s.Raced} {
		ch <- prometheus.MustNewConstMetric(registryLookupsDesc, prometheus.CounterValue, float64(n), result)
	}
}
