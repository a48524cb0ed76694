// Package e2e holds hbtsdb's end-to-end tests: a real Prometheus server, built from the
// Go module we already depend on (testing/prometheus/prometheus.sh), scrapes itself and
// a synthetic target every second and remote-writes to a real `tsdb serve` process
// (built from this checkout, with -race when the tests run with -race) — with
// remote-write 1.0 and with 2.0, on the embedded store and on a real HBase, directly
// and through a proxy that aborts the first attempt of every request while tsdb is
// writing it (so that Prometheus retries).
//
// What the tests prove: every sample Prometheus holds up to a cut-off time T is stored
// by tsdb exactly once and exactly — the same series (label sets equal, escapes and
// non-ASCII included), the same millisecond timestamps (explicit ones too), the same
// float64 values to the last bit (denormals, ±Inf, NaN, stale markers with their NaN
// payload) — and it survives the process: the store is opened in-process after
// `tsdb serve` has stopped and read through db.DB's reader. Prometheus is the
// reference three ways: its remote-read API (raw samples, stale markers included,
// compared bit for bit), its query API (a range selector at T: raw samples without
// stale markers, NaN compared as NaN) and query_range for a few selectors,
// recomputed from tsdb's samples with Prometheus' lookback and staleness rules. Metric
// metadata is compared with Prometheus' metadata API, and the synthetic target's
// series are checked against what it exposed (one stale marker per replaced series,
// at the first sample of its successor; a scrape that failed is logged and its stale
// markers expected, and the check goes on).
//
// At the end of one run per store (remote write 1.0, no aborts), while both still
// run, tsdb's query side is compared with Prometheus on the same data
// (checkQueryAPIs in promql_diff_test.go): 76 PromQL expressions (diffQueries: rate,
// irate, increase, delta, histogram_quantile over the target's classic histogram,
// aggregations, topk/bottomk, offset, @, subqueries, every matcher type,
// absent/absent_over_time, label_replace/label_join, time functions, comparisons
// with bool, vector matching with on/ignoring/group_left, staleness of
// e2e_flapping), as instant queries at two times and as range queries over the
// window from the first scrape to T, must give the same result type, series,
// timestamps, values within 1e-9 relative (NaN = NaN) and annotations;
// /api/v1/series and /api/v1/labels are compared for several match[] sets. The raw
// remote-read protocol is checked by hand (remoteread_test.go: SAMPLES decoded,
// STREAMED_XOR_CHUNKS frames parsed as uvarint length, CRC32-Castagnoli, message)
// against Prometheus' own remote read, bit for bit. Then a second Prometheus with
// no data of its own and only `remote_read: [{url: tsdb, read_recent: true}]`
// answers every query again — once as it negotiates (streamed chunks), once forced
// to SAMPLES by a proxy that rewrites its accepted response types.
//
// TestTLSRemoteWrite (tls_test.go) runs tsdb behind a web config file (TLS with a
// test CA, basic auth, a write-only and a read-only user): a real Prometheus
// remote-writes over TLS as the write-only user and gets everything in, while a
// second queue with a wrong password gets 401 and nothing stored; tsdb's answer
// (read over HTTPS as the read-only user) equals Prometheus' own, and a second
// Prometheus remote-reads it over TLS as the read-only user.
//
// TestPrometheusNativeHistograms (histogram_test.go) scrapes a client_golang target
// (histtarget_test.go) with the protobuf format: exponential native histograms with
// negative observations and a zero bucket, a float gauge histogram, a histogram that
// resets, classic histograms (kept beside the native ones, and converted to custom
// buckets, NHCB, by a second job), a counter with a created timestamp, exemplars on
// counters and observations. Prometheus keeps exemplars and start timestamps
// (exemplar-storage, st-storage) and remote-writes with 1.0 and 2.0 to four tsdb
// (both stores; the 2.0 ones compact into histogram chunks as they run); the
// raw series, 28 histogram expressions (histogram_quantile, _count, _sum, _avg, _stddev, _stdvar, _fraction, rate, increase, resets,
// aggregation; instant and range), remote read SAMPLES and STREAMED_XOR_CHUNKS and
// /api/v1/query_exemplars must equal Prometheus' own answers — the query API's JSON
// text to the byte, remote read's histograms field by field (histcompare_test.go
// says what may differ: empty buckets, a chunk's first counter-reset hint) — with
// nothing failed, retried or dropped, and over 2.0 the counter's and the
// histograms' samples carry the target's created timestamp as start timestamp.
//
// TestRollupsAnswerAsPrometheus (rollup_oracle_test.go) reaches the rollups, which
// the runs above, seconds long, never do: two weeks of a few series at one
// sample a minute (counters with resets, gauges, gaps, a series that starts and
// ends inside a window) are backfilled into Prometheus by its promtool (`promtool
// tsdb create-blocks-from openmetrics`, TSDB_TEST_PROMTOOL) and sent to tsdb by
// remote write, which `tsdb compact --once` then compacts into chunks and 5m and
// 1h rollups, on both stores. query_range at 5m and 1h steps over days —
// selectors, max/min/last/present/sum_over_time, aggregations of them, and rate,
// increase, count_over_time and others that read raw data — must give Prometheus'
// answer to the bit, and where a rollup serves a query, the answer's infos must
// say which, and its read counts (stats=all: data.stats.hbtsdb) show rollup cells
// read and no raw or chunk cell.
//
// TestVmctlMigratesPrometheusIntoTSDB (vmctl_test.go) migrates two days of history
// backfilled into Prometheus the same way into tsdb with VictoriaMetrics' vmctl
// (remote read, then tsdb's /api/v1/import; TSDB_TEST_VMCTL, built by
// testing/vmctl/vmctl.sh): tsdb's /api/v1/export must hold the history to the bit,
// 20 query_range requests must answer as Prometheus does to the bit, and the
// export imported into a fresh store must export the same bytes.
//
// One difference is Prometheus', not tsdb's: Prometheus' remote-write encoders omit a
// sample value that compares equal to 0, so -0 reaches every receiver as +0 (see
// onTheWire). TestHarnessWithReferenceReceiver, a control run against a minimal
// in-memory receiver, shows that the harness passes when the receiver is exact.
//
// The tests need the Prometheus binary (TSDB_TEST_PROMETHEUS=<path>; the rollup
// comparison also promtool, TSDB_TEST_PROMTOOL=<path>, the vmctl one vmctl,
// TSDB_TEST_VMCTL=<path>) and, for the HBase
// half, a test HBase (TSDB_TEST_HBASE_ZK, see testing/hbasetest). Without them they
// skip and say how to get them; under `make test` (TSDB_TEST_REQUIRE_E2E=1,
// TSDB_TEST_REQUIRE_HBASE=1) a missing one fails instead. TSDB_TEST_E2E_DURATION sets
// how long each run scrapes (30s); TSDB_TEST_E2E_KEEP=1 keeps the store of a failed
// run. The package contains only tests and is imported by nothing.
package e2e
