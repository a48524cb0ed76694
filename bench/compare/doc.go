// Command compare is the side-by-side benchmark: it loads tsdb (embedded
// store), a Prometheus server (remote-write receiver) and a VictoriaMetrics single-node
// server with the same remote-write 1.0 load and measures, per server, what that load
// costs and how fast the same PromQL queries answer afterwards.
//
// Run it from the module root:
//
//	go run ./bench/compare            # the full load, 3 interleaved rounds (~several minutes)
//	go run ./bench/compare -quick     # a smoke run: a tiny load, one round
//	make bench-compare                # the same as the first line (BENCH_COMPARE_OUT=f.md, BENCH_COMPARE_FLAGS=-quick)
//	go run ./bench/compare -hbase     # also tsdb on a real HBase, started for the run (see "tsdb on HBase")
//	go run ./bench/compare -load histograms -proto 2   # 1 000 native histogram series, remote write 2.0
//
// # The servers
//
// tsdb is built from this working tree (`go build`, a release build without -race;
// -tsdb-bin runs a given binary instead, e.g. one built from a clean commit) and
// runs as `tsdb serve --storage=embedded:<dir>`; Prometheus is the binary the end-to-end
// tests use (testing/prometheus/prometheus.sh builds it at go.mod's version), run with
// --web.enable-remote-write-receiver and an empty scrape configuration; VictoriaMetrics
// is built from the Go module proxy by bench/victoriametrics.sh (cached by version under
// ~/.cache/hbtsdb, a few minutes the first time) and runs with its query result cache
// off (-search.disableCache, as neither peer caches results) and
// -search.latencyOffset=0s (so it answers the newest samples as the peers do). Each
// server listens on a free loopback port and gets a fresh data directory every round.
//
// # The load
//
// Shaped like node-exporter: -hosts hosts (100) × -series series (100) × -samples samples
// (240) at -interval (15s), the span ending when the round starts: 2.4 M samples by
// default. Each host has one series of each of -series metric names; even series are
// counters, odd ones gauges; series 0 is the counter `c` and series 1 the gauge `g`, so
// that `rate(c[5m])` and `avg by (host) (g)` each select one series per host. Labels:
// __name__, job="node", host="host-NNN", series="N". Samples go out as Prometheus'
// queue manager sends them: -senders senders (4), each owning the series whose label
// hash falls on it, each sending its samples in time order (every series at step k
// before any at step k+1) in requests of -request-size samples (2 000), one
// prompb.TimeSeries per sample, protobuf + snappy, one request at a time per sender.
// The request bodies are encoded before the timed ingest starts.
//
// With -load histograms, every series is a native histogram instead: an
// integer histogram of schema 3 with a zero bucket and -buckets populated buckets (30)
// in two spans, every bucket growing by 0 to 4 observations per step; -hosts defaults
// to 10, so 1 000 series × 240 samples = 240 000 histogram samples. Series 0 is `h`,
// the others node_hist_<i>; the queries become
// `histogram_quantile(0.9, sum by (job) (rate(h[5m])))` (interval and 5 m steps),
// `histogram_count(rate(node_hist_1[5m]))` and the one-series instant query.
// VictoriaMetrics, which stores no native histograms, is left out. -proto 2 sends the
// same samples as remote write 2.0 (io.prometheus.write.v2.Request with its symbol
// table, still one TimeSeries per sample; VictoriaMetrics left out too); -proto 1 (the
// default) sends 1.0.
//
// # What it measures, per server per round
//
//   - samples/s: samples over the wall time from the first request to the last answer
//     (on a shared machine this depends on the neighbours: read it with the next line);
//   - server CPU-seconds per million samples: utime+stime of the server process
//     (/proc/<pid>/stat) just before the first request and right after the last
//     answer ("ingest"), and again once the server has gone idle after the ingest
//     (under 5 % of a core for a second, at most -settle, default 20 s: "incl.
//     background work" — compactions and merges the ingest left behind);
//   - peak RSS: VmHWM of /proc/<pid>/status at the end of the round (ingest + queries);
//   - disk: the apparent size of the files under the data directory once the server
//     went idle after the ingest, after asking it to flush where it has a way
//     (VictoriaMetrics /internal/force_flush, then 11 s for its in-memory parts to reach
//     disk; Prometheus and tsdb have none: Prometheus holds the hour in its head and
//     WAL, tsdb writes through to Pebble), and again after a graceful stop (SIGTERM),
//     when each has written out what it buffers;
//   - query latency: the median of -query-runs runs (20), after one warm-up run that
//     also checks the answer, of `sum by (job) (rate(c[5m]))` over the span at the
//     interval step and at a 5 m step, `avg by (host) (g)` over the span at a 5 m step,
//     and `{host="host-001",series="7"}` (one series by two matchers) instant at the
//     span's end. Each must return data, and the same number of series on all three
//     servers; a difference is printed as a WARNING and marked in the table.
//
// # tsdb on HBase
//
// With -hbase, a fourth server, "tsdb (HBase)", runs `tsdb serve --storage=hbase:<zk>`
// against a standalone HBase that testing/hbase/hbase.sh starts for the run
// (HBTSDB_HBASE_RUN=<-hbase-run, default <workdir>/hbase>; master, region server and
// ZooKeeper in one JVM on the local filesystem) and stops at the end. -hbase-run <dir>
// alone uses the HBase hbase.sh already runs in that directory, and -hbase-zk
// <host:port> any running HBase (without the JVM and disk figures below); on an
// HBase that outlives the run, each round's tables are dropped once measured (not
// with -keep). Every round
// gets tables of its own (--hbase.table-prefix=bench<run>-r<round>-<server>-, created by
// tsdb serve at start), so each starts empty while the JVM stays warm. Per round it
// measures, besides tsdb's own figures (its data directory is unused: "–"):
//
//   - the HBase JVM's CPU-seconds per million samples (utime+stime of the pid in the
//     run directory) over the ingest, and until tsdb and then the JVM went idle;
//   - the WAL HBase wrote, in bytes per sample: the growth of the files under the root
//     directory's WALs/ and oldWALs/ (a WAL keeps its name when archived) from before
//     the ingest until idle;
//   - the round's tables on disk (data/default/<prefix>*) after `hbase.sh compact`
//     flushed and major-compacted them, in bytes per sample.
//
// -servers picks the servers (tsdb, tsdb-base, tsdb-hbase, tsdb-hbase-base, prometheus,
// victoriametrics); -tsdb-base-bin <binary> adds the "base" twins of the tsdb servers,
// run from another binary (e.g. one built from an older commit in a git worktree) in
// the same rounds, for before/after figures under the same neighbours; -tsdb-args passes
// flags to every tsdb serve (e.g. --web.enable-pprof, to profile a round). A before/after
// of the HBase write path:
//
//	go run ./bench/compare -hbase -servers tsdb-hbase,tsdb-hbase-base -tsdb-base-bin /tmp/tsdb-old
//
// Rounds are interleaved (tsdb, Prometheus, VictoriaMetrics, tsdb, ...; -rounds, default
// 3) so that a neighbour's load on a shared machine falls on all three; the table shows
// the medians over rounds and a ratio column, tsdb ÷ the best peer (best: highest
// samples/s, lowest of everything else). The table is printed to stdout as Markdown and
// written to -out when given; progress goes to stderr.
package main
