#!/usr/bin/env bash
# opentsdb.sh — a real OpenTSDB (TSD) for tests, from Maven Central jars, on the test
# HBase that testing/hbase/hbase.sh starts.
#
#   testing/opentsdb/opentsdb.sh start [<zk host:port>]
#                   resolve net.opentsdb:opentsdb (once, cached), create OpenTSDB's four
#                   tables on that HBase under this instance's table prefix, start
#                   net.opentsdb.tools.TSDMain on a free loopback port, wait until
#                   /api/version answers and print the TSD's URL (http://127.0.0.1:PORT)
#                   on stdout. The ZooKeeper address is the argument or
#                   $TSDB_TEST_HBASE_ZK. A running instance prints its URL again.
#   testing/opentsdb/opentsdb.sh stop
#                   stop the TSD, drop its tables and remove its run directory
#   testing/opentsdb/opentsdb.sh status     print the URL if it runs; exit 1 if not
#   testing/opentsdb/opentsdb.sh classpath  resolve the classpath only (warms the cache)
#
# The tables are <prefix>tsdb {t}, <prefix>tsdb-uid {id, name}, <prefix>tsdb-tree {t}
# and <prefix>tsdb-meta {name}, the families of OpenTSDB's create_table.sh, created
# through gohbase by testing/opentsdb/otsdbtables; the TSD is pointed at them with
# tsd.storage.hbase.{data,uid,tree,meta}_table, so several instances share one HBase
# without seeing each other's data. Metrics are created on first use
# (tsd.core.auto_create_metrics); timestamps in seconds or milliseconds are accepted
# (OpenTSDB 2.x's /api/put tells them apart by their number of digits). Every
# datapoint also marks its series in <prefix>tsdb-meta
# (tsd.core.meta.enable_tsuid_tracking), which /api/search/lookup and
# /api/query/last without back_scan read.
#
# Several instances can run at once, one per run directory (HBTSDB_OPENTSDB_RUN): each
# picks its own port and, unless OPENTSDB_TABLE_PREFIX says otherwise, its own prefix.
#
# Environment:
#   OPENTSDB_VERSION   Maven version of net.opentsdb:opentsdb [2.4.1]
#   HBTSDB_CACHE       cache for the Maven repository and the classpath
#                      [${XDG_CACHE_HOME:-~/.cache}/hbtsdb]
#   HBTSDB_OPENTSDB_RUN  where the running instance keeps conf, logs and pid
#                      [${TMPDIR:-/tmp}/hbtsdb-opentsdb-$(id -u)]
#   OPENTSDB_TABLE_PREFIX  prefix of the four table names [otsdb<random>-]
#   OPENTSDB_HEAP      JVM heap [256m]
#   OPENTSDB_START_TIMEOUT  seconds to wait for /api/version [120]
#   OPENTSDB_EXTRA_CONF  more opentsdb.conf lines ("name = value", one a line),
#                      appended after the defaults above, which they override:
#                      e.g. tsd.storage.enable_compaction = false, or
#                      tsd.storage.enable_appends = true
#   TSDB_TEST_HBASE_ZK ZooKeeper address of the HBase when start has no argument
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=${OPENTSDB_VERSION:-2.4.1}
cache=${HBTSDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hbtsdb}
m2="$cache/m2"
# The classpath is cached per version and per pom, so that a dependency added to
# the pom is resolved on the next start.
cpfile="$cache/opentsdb-$version-$(sha256sum "$here/pom.xml" | cut -c1-12).classpath"
run=${HBTSDB_OPENTSDB_RUN:-${TMPDIR:-/tmp}/hbtsdb-opentsdb-$(id -u)}
heap=${OPENTSDB_HEAP:-256m}
timeout=${OPENTSDB_START_TIMEOUT:-120}

log() { echo "opentsdb.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=../lib/jvm.sh
. "$here/../lib/jvm.sh"

resolve_classpath() {
  resolve_maven_classpath "$cpfile" "$here/pom.xml" -Dopentsdb.version="$version" "net.opentsdb:opentsdb:$version"
}


running() {
  [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null
}

# tables runs the table helper with its arguments. It is built once per version
# of its source and cached next to the classpath.
tables() {
  command -v go >/dev/null || die "go not found: the table helper testing/opentsdb/otsdbtables is built with it"
  local sum bin tmp
  sum=$(cat "$here/otsdbtables/main.go" "$repo/go.sum" | sha256sum | cut -c1-12)
  bin="$cache/otsdbtables-$sum"
  if [ ! -x "$bin" ]; then
    mkdir -p "$cache"
    tmp="$bin.tmp.$$"
    (cd "$repo" && go build -o "$tmp" ./testing/opentsdb/otsdbtables) || die "cannot build testing/opentsdb/otsdbtables"
    mv "$tmp" "$bin"
  fi
  "$bin" "$@"
}

write_conf() {
  local port=$1 zk=$2 prefix=$3
  mkdir -p "$run/static" "$run/cache" "$run/logs"
  cat >"$run/opentsdb.conf" <<CONF
tsd.network.port = $port
tsd.network.bind = 127.0.0.1
tsd.http.staticroot = $run/static
tsd.http.cachedir = $run/cache
tsd.storage.hbase.zk_quorum = $zk
tsd.storage.hbase.data_table = ${prefix}tsdb
tsd.storage.hbase.uid_table = ${prefix}tsdb-uid
tsd.storage.hbase.tree_table = ${prefix}tsdb-tree
tsd.storage.hbase.meta_table = ${prefix}tsdb-meta
tsd.core.auto_create_metrics = true
tsd.core.meta.enable_tsuid_tracking = true
tsd.core.enable_ui = false
tsd.http.request.enable_chunked = true
tsd.http.request.max_chunk = 1048576
CONF
  if [ -n "${OPENTSDB_EXTRA_CONF:-}" ]; then
    printf '%s\n' "$OPENTSDB_EXTRA_CONF" >>"$run/opentsdb.conf"
  fi
  cat >"$run/logback.xml" <<XML
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$run/logs/opentsdb.log</file>
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{1}: %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.zookeeper" level="WARN"/>
  <logger name="org.hbase.async" level="WARN"/>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
}

start() {
  if running; then
    log "already running (pid $(cat "$run/pid"))"
    cat "$run/url"
    return 0
  fi
  local zk=${1:-${TSDB_TEST_HBASE_ZK:-}}
  [ -n "$zk" ] || die "no HBase: give its ZooKeeper address (start <host:port>) or set TSDB_TEST_HBASE_ZK; testing/hbase/hbase.sh start prints one"
  command -v java >/dev/null || die "java not found: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
  command -v curl >/dev/null || die "curl not found (Debian: apt-get install curl)"
  local t0=$SECONDS
  resolve_classpath
  rm -rf "$run"
  mkdir -p "$run"
  local prefix=${OPENTSDB_TABLE_PREFIX:-otsdb$(date +%s)$RANDOM-} port
  echo "$zk" >"$run/zk"
  echo "$prefix" >"$run/prefix"
  tables -zk "$zk" -prefix "$prefix" >/dev/null || die "cannot create OpenTSDB's tables on the HBase at ZooKeeper $zk"
  port=$(free_port)
  write_conf "$port" "$zk" "$prefix"
  echo "http://127.0.0.1:$port" >"$run/url"
  log "starting OpenTSDB $version on 127.0.0.1:$port (tables ${prefix}tsdb*, HBase at ZooKeeper $zk, log $run/logs/opentsdb.log)"
  # setsid: the JVM gets its own session, so the caller's exit does not leave it
  # half-dead; stop kills it by pid.
  (cd "$run" && exec setsid java -Xms64m -Xmx"$heap" -XX:ErrorFile="$run/logs/hs_err_pid%p.log" \
    -Dlogback.configurationFile="$run/logback.xml" -Djava.io.tmpdir="$run/cache" \
    -cp "$(cat "$cpfile")" net.opentsdb.tools.TSDMain --config="$run/opentsdb.conf" \
    --port="$port" --bind=127.0.0.1 --zkquorum="$zk" --staticroot="$run/static" --cachedir="$run/cache" \
    >>"$run/logs/stdout.log" 2>&1 </dev/null) &
  echo $! >"$run/pid"

  local deadline=$((SECONDS + timeout))
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/api/version" 2>/dev/null; do
    if ! running; then
      tail -40 "$run/logs/stdout.log" "$run/logs/opentsdb.log" >&2 2>/dev/null || true
      die "OpenTSDB exited during start; see $run/logs/"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -20 "$run/logs/opentsdb.log" >&2 2>/dev/null || true
      stop_jvm
      die "OpenTSDB did not answer /api/version after ${timeout}s; see $run/logs/"
    fi
    sleep 0.5
  done
  log "OpenTSDB ready in $((SECONDS - t0))s"
  cat "$run/url"
}

stop_jvm() {
  [ -f "$run/pid" ] || return 0
  local pid
  pid=$(cat "$run/pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$run/pid"
}

stop() {
  stop_jvm
  if [ -f "$run/zk" ] && [ -f "$run/prefix" ]; then
    tables -drop -zk "$(cat "$run/zk")" -prefix "$(cat "$run/prefix")" ||
      log "could not drop tables $(cat "$run/prefix")tsdb* (HBase gone?)"
  fi
  rm -rf "$run"
  log "stopped"
}

status() {
  if running; then
    cat "$run/url"
  else
    log "not running"
    return 1
  fi
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  classpath) resolve_classpath; cat "$cpfile" ;;
  *) die "usage: $0 start [<zk host:port>]|stop|status|classpath" ;;
esac
