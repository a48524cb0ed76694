// Package dashboards holds hbtsdb's Grafana dashboards, written as Go with
// Grafana's own typed SDK (github.com/grafana/grafana-foundation-sdk/go) and
// rendered to the JSON that Grafana loads: json/*.json, next to the
// provisioning files in provisioning/ (a Prometheus-type data source with uid
// "hbtsdb" at http://localhost:9201, and a file provider for json/).
//
// Two dashboards:
//
//   - "hbtsdb overview" (uid hbtsdb-overview): the store's own metrics, as
//     tsdb serve --self-scrape.interval writes them into the store (job="hbtsdb",
//     instance=<listen address>) or as a Prometheus scrapes /metrics under
//     job_name: hbtsdb — ingest, rejects, request and storage latency and
//     errors, series churn, query load, compaction lag, the process.
//   - "Hosts" (uid hbtsdb-hosts): node-exporter metrics per host (the `host`
//     label, hbtsdb's first host label): CPU, memory, disk, network and a
//     "last readings" table.
//
// The JSON is generated, never edited: `make dashboards` (go run
// ./dashboards/gen) rewrites json/, and TestGeneratedJSONIsCommitted fails
// when the committed files differ from what this package generates. The
// output is deterministic: fixed uids, panel ids in layout order, no
// timestamps or versions, encoding/json's stable field and key order.
//
// TestPanelQueriesReturnData runs every panel's and every variable's query,
// variables substituted as Grafana would, against a real tsdb serve holding
// node-exporter-shaped data written by remote write 1.0 and its own
// self-scrape.
//
// The dashboards use the SDK's v1 dashboard model (the classic dashboard JSON,
// schemaVersion 42, that file provisioning and "Import dashboard" load), not
// its v2 model, which only Grafana 12's new dashboard API reads. This package
// imports only the SDK and the standard library; only its command
// dashboards/gen imports it.
package dashboards
