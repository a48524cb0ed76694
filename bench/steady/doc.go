// Command steady is the steady-state benchmark: tsdb serve with
// compaction on and one-minute buckets (sixty "hours" in an hour) under a
// real-time remote-write load, with range queries all along, on the embedded
// store and on HBase, and VictoriaMetrics beside it under the same load. It
// reports, per tenth of the run, what ingest, compaction and the store's own
// background work cost per sample, how the queries' latency and the work they
// and the compaction rounds cost the store move as the store ages, and at the
// end the whole-life CPU per sample, the disk per sample and the time from
// SIGTERM to exit.
//
// Run it from the module root:
//
//	go run ./bench/steady                         # an hour on the embedded store, VictoriaMetrics beside it
//	go run ./bench/steady -hbase                  # then an hour on HBase, started for the run (testing/hbase/hbase.sh)
//	make steady                                   # both (STEADY_DURATION=60m, STEADY_OUT=f.md, STEADY_FLAGS=...)
//	go run ./bench/steady -duration 20m -tsdb-bin /tmp/tsdb-old   # a shorter run of another build (before/after)
//
// The short version runs in make test: TestSteadyStateCostsStayFlatAsTheStoreAges
// (steady_test.go), below.
//
// # The servers
//
// tsdb is built from the working tree (a release build; -tsdb-bin runs a
// given binary) and runs as tsdb serve --schema.bucket-width=1m
// --compact.grace=<-grace, 15s> --compact.interval=<-compact-interval, 10s>
// --web.enable-pprof, on a fresh directory (embedded) or on tables of its own
// (HBase, --hbase.table-prefix=steady<run>-; -hbase starts a standalone HBase
// in -hbase-run, default <workdir>/hbase, and stops it at the end; -hbase-run
// alone uses the HBase hbase.sh runs there, -hbase-zk any HBase, without the
// JVM's CPU and the disk). VictoriaMetrics (-vm, on by default) is the binary
// bench/victoriametrics.sh builds once, as bench/compare runs it. The backends
// run one after the other (-backends embedded,hbase), each with a
// VictoriaMetrics of its own beside it.
//
// # The load
//
// Node-exporter-like, as bench/compare's (bench/internal/rwload): -hosts
// hosts (100) × -series series (50), even series counters and odd ones gauges,
// c and g the first two of every host; every -interval (1s) each series gets
// one sample at the current time, sent as Prometheus' queue manager sends
// them: remote write 1.0, one TimeSeries per sample, -senders senders (4)
// sharded by series, requests of at most -request-size samples (2 000),
// protobuf + snappy, 429 and 5xx retried with backoff. 5 000 samples/s by
// default: 18 M in the hour, 60 samples per row of a one-minute bucket. A load
// that falls a minute behind the clock skips steps (counted in the report).
// Every request goes to tsdb and to VictoriaMetrics.
//
// # The queries
//
// `sum by (host) (rate(c[5m]))`, `avg(g)` and `max_over_time(g[10m])`, one
// after the other every -query-every (10s), each a range query over the last
// -query-range (30m) at -query-step (30s) through /api/v1/query_range, with
// resolution=raw (raw data and chunks, no rollups) and stats=all.
//
// # What it measures
//
// Every -scrape-every (5s): tsdb's CPU (and the HBase JVM's, and
// VictoriaMetrics') from /proc, tsdb's /metrics, and the disk (the embedded
// store's directory; the files of the run's HBase tables). All along: CPU
// profiles of tsdb back to back, each -profile-every (30s) long, from
// /debug/pprof/profile. Per tenth of the run (-parts):
//
//   - samples/s acknowledged by tsdb;
//   - tsdb's CPU-seconds per million samples ingested in the tenth, in all
//     (/proc) and split by the profiles: by the pprof label hbtsdb_job
//     (kv.JobLabel: ingest on the write endpoints, queries on the read ones,
//     compaction on the worker), except that Pebble's flushes, compactions,
//     table statistics and file deletions count as "store background" and its
//     WAL writer as "store WAL" whatever label they inherited, the runtime's GC
//     workers as GC and gohbase's region clients as "HBase client";
//   - on HBase, the JVM's CPU-seconds per million samples;
//   - compaction rows/s, the mean round's duration, the largest lag (time
//     since the last round without a failure ended:
//     hbtsdb_compaction_last_success_timestamp_seconds);
//   - disk bytes per sample acknowledged so far;
//   - p50 and p99 latency of each query;
//   - what the work cost the store (kv/kvmetrics: hbtsdb_kv_read_*_total
//     by job): keys Pebble's iterators stepped over (embedded only) and cells
//     returned, per sample in the queries' reach (one series per host, every
//     sample from the start of the bucket of start − range to the end) and per
//     compacted row; tombstones per compacted sample where the build exports
//     hbtsdb_kv_tombstones_total.
//
// A last ÷ first row under each table says what is flat and what grows. After
// the load, it waits (-drain, 10m) until compaction has compacted the last
// bucket, then (-settle, 2m) until each process is idle (under 5 % of a core
// for a second; VictoriaMetrics after /internal/force_flush), and reports the
// whole-life CPU per sample — tsdb's from before the load until then, its
// queries' share (from the profiles) taken out, beside the HBase JVM's and
// VictoriaMetrics' over the same span — then sends SIGTERM and reports the
// time to exit (-stop-limit, 10m, then it is killed) and the disk per sample
// after the stop. The report is Markdown on stdout (and in -out); progress
// lines go to stderr, one a minute.
//
// # The short version in make test
//
// TestSteadyStateCostsStayFlatAsTheStoreAges runs the same code on both
// backends at once (HBase from TSDB_TEST_HBASE_ZK, testing/hbasetest), with
// 200 series at 1 s, --compact.grace=10s, --compact.interval=5s, queries every
// 2 s over the last 10 minutes, a snapshot a second, no profiles and no
// VictoriaMetrics, until four buckets after the first have been compacted
// (about five minutes; it waits on compaction's progress, not on the clock).
// It divides the run by compaction's progress into cycles (cycle k: from the
// snapshot at which k buckets' rows had been compacted to that at which k+1
// had) and fails when compacting a row (the cells its reads returned, and on
// the embedded store the keys they stepped over, per compacted row) costs more
// than costGrowthFactor (1.5) times as much in the last cycle as in the first
// (the keys: plus compactionKeySlack, a bounded cost that shows now that raw
// cells are in the embedded store's head), or a query (the same per sample in its reach) in the second half of the
// cycles as in the first; and when a query fails. Latencies, CPU and the
// shutdown time are logged, never asserted: CI is a busy two-core machine.
// TSDB_TEST_STEADY_BIN runs it against a given tsdb binary.
package main
