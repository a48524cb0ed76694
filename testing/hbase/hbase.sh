#!/usr/bin/env bash
# hbase.sh — a real Apache HBase for tests and CI, from Maven Central jars.
#
#   testing/hbase/hbase.sh start    resolve (once, cached) and start a standalone HBase,
#                                   wait until a table can be created, print the
#                                   ZooKeeper address (host:port) on stdout. A halted
#                                   instance (see halt) is resumed instead: same ports,
#                                   same data, same address
#   testing/hbase/hbase.sh stop     stop it and remove its data (the logs of a JVM that had
#                                   died on its own are kept in <run dir>.crashed)
#   testing/hbase/hbase.sh halt     shut it down gracefully (the master's cluster shutdown,
#                                   as stop-hbase.sh does: memstores flushed, regions
#                                   closed, WAL closed) but keep its run directory, data,
#                                   ports and conf, for a later start to resume; a fault
#                                   test's HBase outage. Falls back to SIGTERM, then
#                                   SIGKILL, if the JVM has not exited within
#                                   HBASE_HALT_TIMEOUT seconds [120]
#   testing/hbase/hbase.sh status   print the ZooKeeper address if it runs; exit 1 if not
#   testing/hbase/hbase.sh zk       print the ZooKeeper address (same as status)
#   testing/hbase/hbase.sh classpath  resolve the classpath only (warms the cache)
#   testing/hbase/hbase.sh rootdir  print the local directory of the running instance's
#                                   hbase.rootdir (tables under data/default/<table>/);
#                                   exit 1 if it does not run
#   testing/hbase/hbase.sh compact <zk> <table>...
#                                   flush and major-compact the tables (full names, e.g.
#                                   tsdb-data) of the HBase at ZooKeeper <zk>, wait until
#                                   the compactions are done and reopen the tables so that
#                                   the replaced HFiles are archived; see FlushCompact.java
#                                   (compiled with javac once per HBase version and source,
#                                   cached next to the classpath)
#
# Several instances can run at once, one per run directory: give each its own
# HBTSDB_HBASE_RUN for start, stop and every other command (ports are picked free, and
# everything an instance writes, its pid file included, is in its run directory, so
# stop never touches another instance).
#
# Standalone mode runs master, region server and ZooKeeper in one JVM
# (org.apache.hadoop.hbase.master.HMaster start with hbase.cluster.distributed=false)
# on the local filesystem. Every port is a free loopback port, every hostname is
# localhost (gohbase dials the hostname the region server registers in ZooKeeper).
#
# Environment:
#   HBASE_VERSION    Maven version of hbase-server/hbase-zookeeper [2.6.4-hadoop3]
#   HBTSDB_CACHE     cache for the Maven repository and the classpath
#                    [${XDG_CACHE_HOME:-~/.cache}/hbtsdb]
#   HBTSDB_HBASE_RUN where the running instance keeps conf, data, logs and pid
#                    [${TMPDIR:-/tmp}/hbtsdb-hbase-$(id -u)]
#   HBASE_HEAP       JVM heap [2g]
#   HBASE_START_TIMEOUT  seconds to wait for a usable HBase [240]
#   HBASE_HALT_TIMEOUT   seconds halt waits for a graceful shutdown [120]
#   HBASE_JVM_OPTS   extra JVM options (word-split), e.g. to try another GC
#   HBASE_SITE_PROPERTIES  extra hbase-site.xml properties, name=value words
#                    (word-split), appended after (and so overriding) the defaults,
#                    e.g. "hbase.regionserver.wal.enablecompression=false" to
#                    measure without WAL compression
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=${HBASE_VERSION:-2.6.4-hadoop3}
cache=${HBTSDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hbtsdb}
m2="$cache/m2"
cpfile="$cache/hbase-$version.classpath"
run=${HBTSDB_HBASE_RUN:-${TMPDIR:-/tmp}/hbtsdb-hbase-$(id -u)}
heap=${HBASE_HEAP:-2g}
timeout=${HBASE_START_TIMEOUT:-240}
halt_timeout=${HBASE_HALT_TIMEOUT:-120}

log() { echo "hbase.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# classpath_ok succeeds when the cached classpath exists and every jar on it is present,
# so a second start needs no network.
classpath_ok() {
  [ -s "$cpfile" ] || return 1
  local jar
  while IFS= read -r jar; do
    [ -f "$jar" ] || return 1
  done < <(tr ':' '\n' < "$cpfile")
}

resolve_classpath() {
  if classpath_ok; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found: install Maven (Debian: apt-get install maven)"
  mkdir -p "$cache"
  log "resolving org.apache.hbase:hbase-server:$version from Maven Central into $m2 (first run only)"
  local t0=$SECONDS tmp="$cpfile.tmp.$$"
  if ! mvn -B -q -f "$here/pom.xml" -Dmaven.repo.local="$m2" -Dhbase.version="$version" \
      dependency:build-classpath -Dmdep.outputFile="$tmp" >"$cache/mvn-$version.log" 2>&1; then
    tail -30 "$cache/mvn-$version.log" >&2
    die "Maven could not resolve HBase $version (full log: $cache/mvn-$version.log)"
  fi
  mv "$tmp" "$cpfile"
  log "classpath cached in $cpfile ($((SECONDS - t0))s)"
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on, below the
# kernel's ephemeral range: a port from inside it can be taken by any outgoing
# connection between this check and the JVM's bind (a CI run lost its ZooKeeper port
# that way), one below it only by another listener.
free_port() {
  local p lo=20000 hi=40000 eph_lo
  if read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && [ "$eph_lo" -gt 12000 ]; then
    lo=10000 hi=$eph_lo
  fi
  for _ in $(seq 1 200); do
    p=$((lo + RANDOM % (hi - lo)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free port found on 127.0.0.1"
}

# site_properties prints HBASE_SITE_PROPERTIES' name=value words as properties.
site_properties() {
  local kv
  for kv in ${HBASE_SITE_PROPERTIES:-}; do
    case $kv in
      *=*) printf '  <property><name>%s</name><value>%s</value></property>\n' "${kv%%=*}" "${kv#*=}" ;;
      *) die "HBASE_SITE_PROPERTIES: \"$kv\" is not name=value" ;;
    esac
  done
}

running() {
  [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null
}

write_conf() {
  local zk_port=$1 master_port=$2 rs_port=$3 extra
  extra=$(site_properties) || exit 1
  mkdir -p "$run/conf" "$run/root" "$run/zk" "$run/tmp" "$run/logs"
  cat >"$run/conf/hbase-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$run/root</value></property>
  <property><name>hbase.tmp.dir</name><value>$run/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$zk_port</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$run/zk</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.master.hostname</name><value>localhost</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>localhost</value></property>
  <property><name>hbase.regionserver.hostname</name><value>localhost</value></property>
  <property><name>hbase.master.port</name><value>$master_port</value></property>
  <property><name>hbase.regionserver.port</name><value>$rs_port</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>hbase.master.procedurestore.provider</name><value>region</value></property>
  <property><name>hbase.regionserver.handler.count</name><value>16</value></property>
  <!-- A loaded 2-core CI machine can pause the JVM for seconds; with the default
       40 s ZooKeeper session a pause expires the region server's session and
       standalone HBase shuts itself down. -->
  <property><name>zookeeper.session.timeout</name><value>180000</value></property>
  <property><name>hbase.zookeeper.property.maxSessionTimeout</name><value>180000</value></property>
  <property><name>hbase.hregion.memstore.flush.size</name><value>67108864</value></property>
  <!-- WAL compression, as README recommends for production: a dictionary of the
       row keys, families and qualifiers a WAL has seen. It cut the WAL HBase
       writes per sample to about a third (docs/performance.md). -->
  <property><name>hbase.regionserver.wal.enablecompression</name><value>true</value></property>
$extra
</configuration>
EOF
  cat >"$run/conf/log4j.properties" <<EOF
log4j.rootLogger=INFO,FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$run/logs/hbase.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
EOF
}

# The JDK 11+ flags HBase's own bin/hbase adds (add_jdk11_jvm_flags).
jdk_flags=(
  -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
  --add-modules jdk.unsupported
  --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports java.base/sun.net.dns=ALL-UNNAMED
  --add-exports java.base/sun.net.util=ALL-UNNAMED
)

start() {
  if running; then
    log "already running (pid $(cat "$run/pid"))"
    cat "$run/zk.addr"
    return 0
  fi
  command -v java >/dev/null || die "java not found: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
  local t0=$SECONDS
  resolve_classpath
  local zk_port
  if [ -f "$run/halted" ]; then
    # Resume a halted instance: same conf (so the same ports: clients find
    # ZooKeeper where it was), same data. Standalone HBase refuses to start when
    # its ZooKeeper port is taken meanwhile rather than move to another one.
    zk_port=$(grep -o 'clientPort</name><value>[0-9]*' "$run/conf/hbase-site.xml" | grep -o '[0-9]*$')
    rm -f "$run/halted"
    touch "$run/resumed"
    log "resuming halted HBase $version (ZooKeeper 127.0.0.1:$zk_port, data $run, log $run/logs/hbase.log)"
  else
    keep_crash_logs
    fresh_conf
  fi
  launch_jvm

  # Ready means a table can be created, written and read back by gohbase, the client
  # hbtsdb itself uses.
  local deadline=$((SECONDS + timeout)) probe_log="$run/logs/probe.log" port_retries=3
  (cd "$repo" && go build -o "$run/hbaseprobe" ./testing/hbase/hbaseprobe) || die "cannot build the readiness probe"
  until "$run/hbaseprobe" -zk "127.0.0.1:$zk_port" -timeout 20s >"$probe_log" 2>&1; do
    if ! running; then
      # A port picked free was taken before the JVM bound it (HBase's own ZooKeeper
      # then refuses to move to another port): a fresh instance starts again on
      # other ports; a resumed one cannot, its clients know its ports.
      if [ ! -f "$run/resumed" ] && [ $port_retries -gt 0 ] &&
        grep -q 'Could not start ZK at requested port\|BindException\|Address already in use' "$run/logs/hbase.log" "$run/logs/stdout.log" 2>/dev/null; then
        port_retries=$((port_retries - 1))
        log "a port was taken during start; starting again on other ports"
        fresh_conf
        launch_jvm
        (cd "$repo" && go build -o "$run/hbaseprobe" ./testing/hbase/hbaseprobe) || die "cannot build the readiness probe"
        continue
      fi
      tail -40 "$run/logs/stdout.log" "$run/logs/hbase.log" >&2 2>/dev/null || true
      die "HBase exited during start; see $run/logs/ (hbase.log, stdout.log, hs_err_pid*.log if the JVM crashed)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -20 "$probe_log" >&2 || true
      stop_jvm
      die "HBase not usable after ${timeout}s; see $run/logs/hbase.log (kept) and $probe_log"
    fi
    sleep 2
  done
  rm -f "$run/resumed"
  log "HBase ready in $((SECONDS - t0))s"
  cat "$run/zk.addr"
}

# fresh_conf wipes the run directory and writes a conf on newly picked free ports.
fresh_conf() {
  rm -rf "$run"
  local master_port rs_port
  zk_port=$(free_port); master_port=$(free_port); rs_port=$(free_port)
  write_conf "$zk_port" "$master_port" "$rs_port"
  echo "127.0.0.1:$zk_port" >"$run/zk.addr"
  log "starting HBase $version (ZooKeeper 127.0.0.1:$zk_port, data $run, log $run/logs/hbase.log)"
}

# launch_jvm starts HBase's JVM in the background on the conf in $run.
launch_jvm() {
  # setsid: the JVM gets its own session so that the caller's Ctrl-C or exit does not
  # leave it half-dead; stop() kills it by pid.
  (cd "$run" && exec setsid java -Xms256m -Xmx"$heap" -XX:+UseG1GC "${jdk_flags[@]}" \
    -XX:ErrorFile="$run/logs/hs_err_pid%p.log" ${HBASE_JVM_OPTS:-} \
    -Djava.io.tmpdir="$run/tmp" \
    -Dhbase.log.dir="$run/logs" -Dhbase.log.file=hbase.log \
    -Dlog4j.configuration="file:$run/conf/log4j.properties" \
    -cp "$run/conf:$(cat "$cpfile")" \
    org.apache.hadoop.hbase.master.HMaster start \
    >>"$run/logs/stdout.log" 2>&1 </dev/null) &
  echo $! >"$run/pid"
}

stop_jvm() {
  if [ -f "$run/pid" ]; then
    local pid
    pid=$(cat "$run/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$run/pid"
  fi
}

# keep_crash_logs saves the logs of a JVM that died on its own (a crash report
# hs_err_pid*.log, or a pid file whose process is gone) to $run.crashed, outside the
# run directory that the next start wipes, and says so with the crash's first lines.
keep_crash_logs() {
  local died=
  if [ -f "$run/pid" ] && ! kill -0 "$(cat "$run/pid")" 2>/dev/null; then died=1; fi
  if compgen -G "$run/logs/hs_err_pid*.log" >/dev/null; then died=1; fi
  [ -n "$died" ] || return 0
  rm -rf "$run.crashed"
  cp -r "$run/logs" "$run.crashed" 2>/dev/null || return 0
  log "HBase had died before this stop; its logs are kept in $run.crashed"
  local report
  for report in "$run.crashed"/hs_err_pid*.log; do
    [ -f "$report" ] || continue
    grep -m1 -A1 'SIGSEGV\|SIGBUS\|Problematic frame' "$report" >&2 || true
    grep -m1 '^Current thread' "$report" >&2 || true
  done
  tail -5 "$run.crashed/hbase.log" >&2 2>/dev/null || true
}

# halt shuts the instance down the way stop-hbase.sh does (HMaster stop: the
# master's cluster shutdown, which flushes and closes every region and the WAL) and
# waits for the JVM to exit, keeping the run directory for start to resume.
halt() {
  running || die "not running"
  local pid t0=$SECONDS
  pid=$(cat "$run/pid")
  log "halting HBase (pid $pid), keeping $run"
  if ! java -Xmx256m "${jdk_flags[@]}" -Dlog4j.configuration="file:$here/log4j-client.properties" \
      -cp "$run/conf:$(cat "$cpfile")" org.apache.hadoop.hbase.master.HMaster stop --shutDownCluster \
      >>"$run/logs/halt.log" 2>&1 </dev/null; then
    log "HMaster stop failed (see $run/logs/halt.log); sending SIGTERM"
    kill "$pid" 2>/dev/null || true
  fi
  local deadline=$((SECONDS + halt_timeout))
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      log "HBase still runs ${halt_timeout}s after the shutdown request; killing it"
      kill -9 "$pid" 2>/dev/null || true
      break
    fi
    sleep 1
  done
  rm -f "$run/pid"
  touch "$run/halted"
  log "halted in $((SECONDS - t0))s"
}

stop() {
  keep_crash_logs
  stop_jvm
  rm -rf "$run"
  log "stopped"
}

status() {
  if running; then
    cat "$run/zk.addr"
  else
    log "not running"
    return 1
  fi
}

rootdir() {
  if running; then
    echo "$run/root"
  else
    log "not running"
    return 1
  fi
}

# tools_dir prints the directory of the compiled FlushCompact tool, compiling it first
# if needed: the directory is named for the HBase version and the source's hash, so an
# edited source or another version gets a build of its own.
tools_dir() {
  resolve_classpath
  command -v javac >/dev/null || die "javac not found: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
  local src="$here/FlushCompact.java" sum dir tmp
  sum=$(sha256sum "$src" | cut -c1-12)
  dir="$cache/tools-$version-$sum"
  if [ ! -f "$dir/FlushCompact.class" ]; then
    tmp="$dir.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    if ! javac -nowarn -d "$tmp" -cp "$(cat "$cpfile")" "$src" >"$tmp/javac.log" 2>&1; then
      cat "$tmp/javac.log" >&2
      rm -rf "$tmp"
      die "cannot compile $src"
    fi
    # Another compact may have built it meanwhile: keep the first one.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  fi
  echo "$dir"
}

compact() {
  [ $# -ge 2 ] || die "usage: $0 compact <zookeeper host:port> <table>..."
  local dir
  dir=$(tools_dir)
  java -Xmx512m "${jdk_flags[@]}" -Dlog4j.configuration="file:$here/log4j-client.properties" \
    -cp "$dir:$(cat "$cpfile")" FlushCompact "$@"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  halt) halt ;;
  status | zk) status ;;
  classpath) resolve_classpath; cat "$cpfile" ;;
  rootdir) rootdir ;;
  compact) shift; compact "$@" ;;
  *) die "usage: $0 start|stop|halt|status|zk|classpath|rootdir|compact <zk> <table>..." ;;
esac
