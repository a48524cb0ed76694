// Command opentsdb is the OpenTSDB ingest benchmark: it sends the same load
// through OpenTSDB's HTTP write API, POST /api/put, into a real OpenTSDB TSD
// and into hbtsdb (tsdb serve --storage=hbase:<zk>) on the same HBase, and
// prints the points per second each stores, the CPU-seconds per million
// points of the TSD's JVM, of tsdb serve and of the HBase JVM, and the ratio
// (the project's goal: hbtsdb ≥ 10× OpenTSDB's points/s).
//
// Run it from the module root:
//
//	go run ./bench/opentsdb             # the full load, 3 alternating rounds (OpenTSDB is slow: ~15 minutes)
//	go run ./bench/opentsdb -quick      # a smoke run: a tiny load, one round
//	make bench-opentsdb                 # the first line (BENCH_OPENTSDB_OUT=f.md, BENCH_OPENTSDB_FLAGS=-quick)
//	go run ./bench/opentsdb -hbase-zk 127.0.0.1:2181   # a running HBase (no HBase JVM figures)
//	go run ./bench/opentsdb -tsdb-profile /tmp/tsdb.pprof   # and where tsdb's time goes
//
// # The stores
//
// HBase: a standalone HBase (master, region server and ZooKeeper in one JVM,
// local filesystem) that testing/hbase/hbase.sh starts for the run in
// <workdir>/hbase (HBTSDB_HBASE_RUN) and stops at the end; -hbase-run <dir> uses
// the one hbase.sh already runs in that directory, -hbase-zk <host:port> any
// running HBase (without the HBase JVM, WAL and table figures, which need its
// pid and files).
//
// OpenTSDB: testing/opentsdb/opentsdb.sh starts OpenTSDB 2.4.1 (jars from Maven
// Central, cached) on that HBase every round, in a run directory of its own
// (HBTSDB_OPENTSDB_RUN=<workdir>/round-<n>/opentsdb-run), on four tables of the
// round's prefix that it creates, with a JVM heap of -tsd-heap (1g) and its
// defaults otherwise (tsd.core.auto_create_metrics on, compaction on); its stop
// drops the tables. hbtsdb: tsdb built from the working tree (go build ./cmd/tsdb,
// or -tsdb-bin), run as tsdb serve --storage=hbase:<zk> --hbase.table-prefix=<the
// round's prefix>, which creates its tables; they are dropped once measured.
// Both start on empty tables every round, so every series of the load is new to
// both; the HBase JVM stays warm.
//
// # The load
//
// -hosts hosts (100) × -metrics metrics (100) × -points points (240) = 2.4 M
// points, -interval (1 s) apart, the span ending when the round starts. A series
// is metric bench.m<NNN> with tags host=host-<NNN> and dc=dc<host mod 4>; even
// metrics are integer counters, odd ones float gauges. It goes out as
// tcollector and scollector send it: JSON arrays of -batch datapoints (500,
// scollector's batch size; tcollector sends what it gathered in 5 s), timestamps
// in seconds, fields in the order metric, timestamp, value, tags, from
// -senders concurrent senders (32), each one request in flight like one
// collector (a TSD serves many collectors at once; under sync a request waits for
// asynchbase to flush, every second or at 1 024 buffered puts, so too few
// senders make OpenTSDB wait on its flush timer rather than work), each owning the hosts h with h mod senders == its number and
// sending them in time order. -gzip gzips the bodies, as scollector does.
// The bodies are encoded before the clock starts, once per round: both targets
// receive the same bytes (TestBothTargetsReceiveIdenticalRequests).
//
// Why 1 s and not the collectors' usual 15 s: a benchmark sends an hour of
// 15 s points in a minute, a replay that real collectors never send. On it,
// tsdb takes most points as late (their 1 h bucket ended more than 3 m before:
// a pending mark per request and row besides the cell) and OpenTSDB starts
// compacting the previous hour's rows at once. In real time neither happens
// during the hour. 240 points at 1 s lie in the current (or just ended) hour,
// as collectors' points do; the table prints tsdb's late share anyway.
// -interval 15s measures the replay.
//
// Before the clock starts, each target gets a warm-up of -warmup points per
// series (5) on metrics warmup.* in the same span (the JVM's JIT, both clients'
// region lookups); the measured series stay new.
//
// # Acknowledgement and failures
//
// Every request is POST /api/put?details&sync. sync makes OpenTSDB (2.2+)
// answer only once HBase acknowledged each put of the request; without it
// OpenTSDB answers as soon as the points are queued in asynchbase, and counts
// as success points HBase may yet refuse (PutDataPointRpc.processDataPoint in
// OpenTSDB 2.4.1). details makes both answer {"success":S,"failed":F,
// "errors":[...]}. OpenTSDB 2.4.1 answers 200, not 400, when only HBase failed
// puts, so the counts decide: a point is stored when "success" counts it; a
// request that fails (a transport error or timeout, any other status, an answer
// without counts) fails all its points. hbtsdb answers once the points are in
// HBase either way (a 2xx means they are in HBase's WAL) and ignores sync.
// Failures do not stop the run: they are counted per target and round with
// their most frequent reasons, and a run with any is printed as a run with
// failures. -sync=false measures OpenTSDB's queued acknowledgement instead.
//
// # What it measures, per target per round
//
//   - points/s: points stored over the wall time from the first request to the
//     last answer;
//   - server CPU-seconds per million points: utime+stime (/proc/<pid>/stat) of
//     the TSD's JVM or of tsdb serve, over the ingest, and until it and the HBase
//     JVM had each used under 5 % of a core over -idle (11 s, longer than
//     OpenTSDB's 10 s compaction flush interval; at most -settle after the
//     ingest): "until idle", the work the ingest left behind included;
//   - the same of the HBase JVM, over the same two intervals;
//   - peak RSS of the server (VmHWM);
//   - the WAL HBase wrote, in bytes per point (the growth of the files under
//     WALs/ and oldWALs/ from before the ingest until idle), and the round's
//     tables after hbase.sh compact flushed and major-compacted them (-tables).
//
// Rounds alternate the order (OpenTSDB first in odd rounds, hbtsdb in even
// ones) so that neither always follows the other on the same HBase, and a
// neighbour's load on a shared machine falls on both; the table shows the
// medians over rounds, the points/s of every round, and hbtsdb ÷ OpenTSDB.
// Progress lines (points answered, points/s) go to stderr every -progress; the
// table goes to stdout as Markdown, and to -out when given.
package main
