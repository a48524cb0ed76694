package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// OverviewUID is the uid of the "hbtsdb overview" dashboard.
const OverviewUID = "hbtsdb-overview"

// SelfJob is the job label of tsdb's own metrics: what --self-scrape.interval
// writes, and the job_name a Prometheus that scrapes /metrics should use.
const SelfJob = "hbtsdb"

// self is a selector of tsdb's own series of metric, on the instances the
// $instance variable selects, with extra matchers.
func self(metric string, extra ...string) string {
	return metric + selector(append([]string{`job="` + SelfJob + `"`, `instance=~"$instance"`}, extra...)...)
}

// rate is PromQL's rate of sel over Grafana's $__rate_interval.
func rate(sel string) string { return "rate(" + sel + "[$__rate_interval])" }

// quantile is the q-quantile of a classic histogram's rate, by the labels of by
// (le is added).
func quantile(qv float64, bucketSel, by string) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (%s, le) (%s))", qv, by, rate(bucketSel))
}

// orZero is expr, or 0 for every series of fallback that has no series of expr
// with the same values of the labels on (all labels when on is empty): a
// counter of errors or rejections that never moved has no series at all, and
// the panel should show a flat 0 rather than "No data".
func orZero(expr, fallback, on string) string {
	op := " or "
	if on != "" {
		op = " or on (" + on + ") "
	}
	return expr + op + fallback + " * 0"
}

// Overview is "hbtsdb overview": the store's own metrics (job="hbtsdb").
func Overview() (dashboard.Dashboard, error) {
	d := newBoard(OverviewUID, "hbtsdb overview",
		"hbtsdb's own metrics: ingest, rejects, request and storage latency, series churn, queries, "+
			"compaction and the process. From tsdb serve --self-scrape.interval (job=\"hbtsdb\") or a "+
			"Prometheus scraping /metrics with job_name: hbtsdb.",
		"hbtsdb")
	d.labelValuesVar("instance", "instance", `hbtsdb_http_requests_total{job="`+SelfJob+`"}`)

	written := self("hbtsdb_samples_written_total")
	rejected := self("hbtsdb_samples_rejected_total")
	writes := self("hbtsdb_write_requests_total")
	requests := self("hbtsdb_http_requests_total")
	reqBucket := self("hbtsdb_http_request_duration_seconds_bucket")
	storeBucket := self("hbtsdb_kv_operation_duration_seconds_bucket")
	storeCount := self("hbtsdb_kv_operation_duration_seconds_count")
	storeErrors := self("hbtsdb_kv_operation_errors_total")
	lastCompaction := self("hbtsdb_compaction_last_success_timestamp_seconds")

	d.row("Summary")
	d.panel(single("Samples written /s", "cps", "Samples stored per second, all protocols.",
		q{"sum(" + rate(written) + ")", ""}))
	d.panel(single("Samples rejected /s", "cps", "Samples refused per second (invalid labels, too old, out of range), all protocols.",
		q{orZero("sum("+rate(rejected)+")", "sum("+rate(written)+")", ""), ""}))
	d.panel(single("Write p99", "s", "99th percentile of remote-write request latency.",
		q{quantile(0.99, self("hbtsdb_http_request_duration_seconds_bucket", `handler="/api/v1/write"`), "handler"), "{{handler}}"}))
	d.panel(single("New series in range", "short", "Series registered over the dashboard's time range.",
		q{"sum(increase(" + self("hbtsdb_series_created_total") + "[$__range]))", ""}))
	d.panel(single("Compaction lag", "s", "Time since the newest successful compaction round of any selected instance.",
		q{"time() - max(" + lastCompaction + " > 0)", ""}))
	d.panel(single("Heap in use", "bytes", "Go heap in use, summed over the selected instances.",
		q{"sum(" + self("go_memstats_heap_inuse_bytes") + ")", ""}))

	d.row("Ingest")
	d.panel(graph("Samples written /s by protocol", "cps",
		"Samples stored per second: remote_write_v1, remote_write_v2, put (OpenTSDB /api/put).",
		q{"sum by (protocol) (" + rate(written) + ")", "{{protocol}}"}).Span(6))
	d.panel(graph("Samples rejected /s by reason", "cps",
		"Samples refused per second by protocol and reason: invalid_labels, too_old (older than --retention.raw), "+
			"out_of_range (in the future or not storable), invalid_datapoint (/api/put); 0 while a protocol has none.",
		q{orZero("sum by (protocol, reason) ("+rate(rejected)+")", "sum by (protocol) ("+rate(written)+")", "protocol"),
			"{{protocol}} {{reason}}"}).Span(6))
	d.panel(graph("Write requests /s by outcome", "reqps",
		"Write requests per second by protocol and outcome: success, rejected (4xx: the request is wrong; "+
			"Prometheus drops it), failed (5xx/429: the store could not take it; Prometheus retries).",
		q{"sum by (protocol, outcome) (" + rate(writes) + ")", "{{protocol}} {{outcome}}"}).Span(6))
	d.panel(graph("Rejected and failed write requests", "reqps",
		"Write requests that did not succeed: by protocol and outcome, and by endpoint and HTTP status "+
			"(400 bad input, 413 too large, 429 overloaded, 5xx store unavailable).",
		q{"sum by (protocol, outcome) (" + rate(self("hbtsdb_write_requests_total", `outcome!="success"`)) + ")", "{{protocol}} {{outcome}}"},
		q{"sum by (handler, code) (" + rate(self("hbtsdb_http_requests_total", `handler=~"/api/v1/write|/api/put"`, `code!~"2.."`)) + ")", "{{handler}} {{code}}"}).Span(6))

	d.row("Requests")
	d.panel(graph("Requests /s by endpoint and status", "reqps", "HTTP requests per second.",
		q{"sum by (handler, code) (" + rate(requests) + ")", "{{handler}} {{code}}"}))
	d.panel(graph("Request latency by endpoint", "s", "99th and 50th percentile of HTTP request latency.",
		q{quantile(0.99, reqBucket, "handler"), "p99 {{handler}}"},
		q{quantile(0.5, reqBucket, "handler"), "p50 {{handler}}"}))
	d.panel(graph("Mean request latency by endpoint", "s", "Mean HTTP request latency.",
		q{"sum by (handler) (" + rate(self("hbtsdb_http_request_duration_seconds_sum")) + ") / sum by (handler) (" +
			rate(self("hbtsdb_http_request_duration_seconds_count")) + ")", "{{handler}}"}))

	d.row("Storage")
	d.panel(graph("Storage operations /s", "ops", "Round trips to the storage backend (embedded or hbase) by operation.",
		q{"sum by (backend, operation) (" + rate(storeCount) + ")", "{{backend}} {{operation}}"}))
	d.panel(graph("Storage latency p99", "s", "99th percentile of storage round-trip latency by backend and operation.",
		q{quantile(0.99, storeBucket, "backend, operation"), "{{backend}} {{operation}}"}))
	d.panel(graph("Storage errors /s", "ops", "Failed storage round trips by backend and operation; 0 while none fail.",
		q{orZero("sum by (backend, operation) ("+rate(storeErrors)+")", "sum by (backend, operation) ("+rate(storeCount)+")", ""),
			"{{backend}} {{operation}}"}))

	d.row("Series")
	d.panel(graph("New series /s", "cps", "Series registered for the first time: churn.",
		q{"sum(" + rate(self("hbtsdb_series_created_total")) + ")", "new series"}))
	d.panel(graph("Series registry lookups /s by result", "ops",
		"How write requests resolved their series: cache_hit (memory), store_hit (the registry table), "+
			"registered (new), raced (another writer registered it first).",
		q{"sum by (result) (" + rate(self("hbtsdb_series_registry_lookups_total")) + ")", "{{result}}"}))
	d.panel(graph("Series cache hit ratio", "percentunit", "Share of series lookups answered from memory.",
		q{"sum(" + rate(self("hbtsdb_series_registry_lookups_total", `result="cache_hit"`)) + ") / sum(" +
			rate(self("hbtsdb_series_registry_lookups_total")) + ")", "cache hits"}).
		Min(0).Max(1))

	d.row("Queries")
	d.panel(graph("Query requests /s", "reqps", "Prometheus query API requests per second by endpoint and status.",
		q{"sum by (handler, code) (" + rate(self("hbtsdb_http_requests_total", `handler=~"/api/v1/query.*"`)) + ")", "{{handler}} {{code}}"}))
	d.panel(graph("Queries running", "short", "PromQL queries executing or queued at the scrape.",
		q{"sum(" + self("prometheus_engine_queries") + ")", "running"}))
	d.panel(graph("PromQL engine p90 by phase", "s",
		"The PromQL engine's own 90th percentile per phase (slice): queue time, preparation, inner evaluation, result sort.",
		q{"max by (slice) (" + self("prometheus_engine_query_duration_seconds", `quantile="0.9"`) + ")", "{{slice}}"}))

	d.row("Compaction")
	d.panel(graph("Compaction rounds /s by outcome", "ops", "Rounds of the compaction worker by outcome.",
		q{"sum by (outcome) (" + rate(self("hbtsdb_compaction_rounds_total")) + ")", "{{outcome}}"}))
	d.panel(graph("Samples compacted /s", "cps", "Raw samples rewritten into chunks and rollups per second.",
		q{"sum(" + rate(self("hbtsdb_compaction_samples_total")) + ")", "samples"}))
	d.panel(graph("Compaction lag", "s", "Time since each instance's last successful compaction round.",
		q{"time() - (" + lastCompaction + " > 0)", "{{instance}}"}))

	d.row("Process")
	d.panel(graph("Memory", "bytes", "Go heap in use and resident set size.",
		q{self("go_memstats_heap_inuse_bytes"), "heap in use {{instance}}"},
		q{self("process_resident_memory_bytes"), "RSS {{instance}}"}))
	d.panel(graph("CPU", "short", "CPU seconds used per second (cores).",
		q{rate(self("process_cpu_seconds_total")), "{{instance}}"}))
	d.panel(graph("Goroutines", "short", "Goroutines of the process.",
		q{self("go_goroutines"), "{{instance}}"}))

	return d.build()
}
