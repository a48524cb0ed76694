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
#   testing/hbase/hbase.sh regionops <zk> <command> [args...]
#                                   region operations through HBase's Java Admin client:
#                                   servers, wait-servers <n>, regions <table>,
#                                   split <table> [<key hex>], move <encoded> [<server>],
#                                   merge <encoded> <encoded>, balance; see RegionOps.java
#   testing/hbase/hbase.sh kill <role>
#                                   cluster mode: kill -9 one JVM (master, rs1, rs2, ...,
#                                   zk), as a crash would; its conf, data and ports stay
#   testing/hbase/hbase.sh restart <role>
#                                   cluster mode: start that JVM again on the same conf
#                                   (a region server registers anew, with a new start
#                                   code); returns once it runs
#
# Cluster mode (HBASE_REGIONSERVERS=N, N >= 1) is pseudo-distributed HBase on the
# local filesystem: one ZooKeeper (ZooKeeperServerMain), one master (HMaster) and N
# region servers (HRegionServer), each its own JVM on its own loopback ports, from the
# same jars. start returns once all N region servers are live. The root directory is
# on Hadoop's RawLocalFileSystem, whose hflush hands the WAL's bytes to the kernel, so
# that an edit HBase acknowledged survives a kill -9 of its region server; the
# default LocalFileSystem wraps it in a checksumming stream that makes no such
# promise (hbase.unsafe.stream.capability.enforce=false is what lets HBase run on
# it at all), and a kill test must not depend on it. The ZooKeeper session timeout is
# HBASE_ZK_SESSION_TIMEOUT so that the master notices a killed region server in
# seconds, not the 3 minutes standalone mode allows for a loaded machine's pauses.
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
#   HBASE_REGIONSERVERS  0: standalone (one JVM); N >= 1: cluster mode with N region
#                    servers [0]
#   HBASE_RS_HEAP    cluster mode: heap of each region server [1g]; the master gets
#                    512m, ZooKeeper 128m
#   HBASE_ZK_SESSION_TIMEOUT  cluster mode: ZooKeeper session timeout in ms [20000]
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
regionservers=${HBASE_REGIONSERVERS:-0}
rs_heap=${HBASE_RS_HEAP:-1g}
zk_session=${HBASE_ZK_SESSION_TIMEOUT:-20000}

log() { echo "hbase.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=../lib/jvm.sh
. "$here/../lib/jvm.sh"

resolve_classpath() {
  resolve_maven_classpath "$cpfile" "$here/pom.xml" -Dhbase.version="$version" "org.apache.hbase:hbase-server:$version"
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

# running succeeds when the instance runs: standalone, its one JVM; in cluster mode,
# its ZooKeeper (a master or region server may be down on purpose, see kill).
running() {
  local pidfile="$run/pid"
  if [ -f "$run/cluster" ]; then pidfile="$run/pid.zk"; fi
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# write_conf writes hbase-site.xml and log4j.properties into a conf directory
# [$run/conf]; the JVM started on it logs to $run/logs/<log name> [hbase.log]. With
# cluster=1 the conf is of a pseudo-distributed cluster's master or region server
# (cluster mode, see the header): HBase does not start ZooKeeper itself.
write_conf() {
  local zk_port=$1 master_port=$2 rs_port=$3 conf=${4:-$run/conf} logname=${5:-hbase.log} cluster=${6:-} extra
  extra=$(site_properties) || exit 1
  mkdir -p "$conf" "$run/root" "$run/zk" "$run/tmp" "$run/logs"
  local distributed=false session=180000 cluster_props=
  if [ -n "$cluster" ]; then
    distributed=true session=$zk_session
    cluster_props="  <!-- Cluster mode: the WAL's hflush must reach the kernel (see the header). -->
  <property><name>fs.file.impl</name><value>org.apache.hadoop.fs.RawLocalFileSystem</value></property>"
  fi
  cat >"$conf/hbase-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>$distributed</value></property>
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
       standalone HBase shuts itself down. Standalone mode (HMasterCommandLine's
       local cluster) replaces zookeeper.session.timeout with
       zookeeper.session.timeout.localHBaseCluster, 10 s by default: a run of
       make test beside other work saw a 19 s pause end its HBase
       ("received expired from ZooKeeper, aborting"), so both are set. -->
  <property><name>zookeeper.session.timeout</name><value>$session</value></property>
  <property><name>zookeeper.session.timeout.localHBaseCluster</name><value>$session</value></property>
  <property><name>hbase.zookeeper.property.maxSessionTimeout</name><value>180000</value></property>
  <property><name>hbase.hregion.memstore.flush.size</name><value>67108864</value></property>
  <!-- WAL compression, as README recommends for production: a dictionary of the
       row keys, families and qualifiers a WAL has seen. It cut the WAL HBase
       writes per sample to about a third (docs/performance.md). -->
  <property><name>hbase.regionserver.wal.enablecompression</name><value>true</value></property>
$cluster_props
$extra
</configuration>
EOF
  cat >"$conf/log4j.properties" <<EOF
log4j.rootLogger=INFO,FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$run/logs/$logname
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
  if [ "$regionservers" -gt 0 ] || [ -f "$run/cluster" ]; then
    cluster_start
    return
  fi
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

# cluster_start starts a pseudo-distributed cluster (cluster mode, see the header):
# ZooKeeper, the master and HBASE_REGIONSERVERS region servers, each its own JVM, and
# returns once a table can be used and every region server is live.
cluster_start() {
  if running; then
    log "already running (ZooKeeper pid $(cat "$run/pid.zk"))"
    cat "$run/zk.addr"
    return 0
  fi
  [ "$regionservers" -gt 0 ] || regionservers=$(cat "$run/cluster")
  command -v java >/dev/null || die "java not found: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
  local t0=$SECONDS
  resolve_classpath
  keep_crash_logs
  rm -rf "$run"
  local zk_port master_port i role
  zk_port=$(free_port); master_port=$(free_port)
  mkdir -p "$run/zk" "$run/logs"
  echo "$regionservers" >"$run/cluster"
  write_conf "$zk_port" "$master_port" 0 "$run/conf" master.log 1
  for i in $(seq 1 "$regionservers"); do
    write_conf "$zk_port" "$master_port" "$(free_port)" "$run/conf-rs$i" "rs$i.log" 1
  done
  cat >"$run/zoo.cfg" <<EOF
tickTime=2000
dataDir=$run/zk
clientPort=$zk_port
clientPortAddress=127.0.0.1
maxClientCnxns=0
maxSessionTimeout=180000
admin.enableServer=false
EOF
  echo "127.0.0.1:$zk_port" >"$run/zk.addr"
  log "starting an HBase $version cluster: ZooKeeper 127.0.0.1:$zk_port, a master, $regionservers region servers (data and logs in $run)"
  launch_role zk
  local deadline=$((SECONDS + timeout))
  until (exec 3<>"/dev/tcp/127.0.0.1/$zk_port") 2>/dev/null; do
    role_alive zk || { tail -20 "$run/logs/zk.stdout.log" >&2 2>/dev/null; die "ZooKeeper exited during start; see $run/logs/"; }
    [ $SECONDS -lt $deadline ] || die "ZooKeeper not listening after ${timeout}s; see $run/logs/"
    sleep 0.5
  done
  launch_role master
  for i in $(seq 1 "$regionservers"); do launch_role "rs$i"; done
  local probe_log="$run/logs/probe.log"
  (cd "$repo" && go build -o "$run/hbaseprobe" ./testing/hbase/hbaseprobe) || die "cannot build the readiness probe"
  until "$run/hbaseprobe" -zk "127.0.0.1:$zk_port" -timeout 20s >"$probe_log" 2>&1; do
    for role in master $(seq -f 'rs%g' 1 "$regionservers"); do
      role_alive "$role" && continue
      tail -40 "$run/logs/$role.log" "$run/logs/$role.stdout.log" >&2 2>/dev/null || true
      die "$role exited during start; see $run/logs/"
    done
    if [ $SECONDS -ge $deadline ]; then
      tail -20 "$probe_log" >&2 || true
      die "HBase cluster not usable after ${timeout}s; see $run/logs/ and $probe_log"
    fi
    sleep 2
  done
  HBTSDB_REGIONOPS_STALL_SECONDS=$timeout regionops "127.0.0.1:$zk_port" wait-servers "$regionservers" ||
    die "not all $regionservers region servers came up; see $run/logs/"
  log "HBase cluster ready in $((SECONDS - t0))s"
  cat "$run/zk.addr"
}

# launch_role starts one JVM of a cluster (zk, master, rs<N>) in the background on
# its conf, with its pid in $run/pid.<role>.
launch_role() {
  local role=$1 main conf="$run/conf" heap args=(start)
  case $role in
    zk) main=org.apache.zookeeper.server.ZooKeeperServerMain heap=128m args=("$run/zoo.cfg") ;;
    master) main=org.apache.hadoop.hbase.master.HMaster heap=512m ;;
    rs[0-9]*)
      [ -d "$run/conf-$role" ] || die "no region server $role in this cluster"
      main=org.apache.hadoop.hbase.regionserver.HRegionServer heap=$rs_heap conf="$run/conf-$role" ;;
    *) die "unknown role $role: zk, master or rs<N>" ;;
  esac
  (cd "$run" && exec setsid java -Xms64m -Xmx"$heap" -XX:+UseG1GC "${jdk_flags[@]}" \
    -XX:ErrorFile="$run/logs/hs_err_pid%p.log" ${HBASE_JVM_OPTS:-} \
    -Djava.io.tmpdir="$run/tmp" -Dzookeeper.admin.enableServer=false \
    -Dhbase.log.dir="$run/logs" -Dhbase.log.file="$role.log" \
    -Dlog4j.configuration="file:$conf/log4j.properties" \
    -cp "$conf:$(cat "$cpfile")" "$main" "${args[@]}" \
    >>"$run/logs/$role.stdout.log" 2>&1 </dev/null) &
  echo $! >"$run/pid.$role"
}

role_alive() {
  [ -f "$run/pid.$1" ] && kill -0 "$(cat "$run/pid.$1")" 2>/dev/null
}

# kill_role kills one JVM of the cluster with SIGKILL, as a crash would, and waits
# until it is gone.
kill_role() {
  [ -f "$run/cluster" ] || die "kill: not a cluster (start with HBASE_REGIONSERVERS=N)"
  [ $# -eq 1 ] || die "usage: $0 kill zk|master|rs<N>"
  role_alive "$1" || die "kill: $1 does not run"
  local pid
  pid=$(cat "$run/pid.$1")
  kill -9 "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$run/pid.$1"
  log "killed $1 (pid $pid)"
}

# restart_role starts a killed JVM of the cluster again on its conf.
restart_role() {
  [ -f "$run/cluster" ] || die "restart: not a cluster (start with HBASE_REGIONSERVERS=N)"
  [ $# -eq 1 ] || die "usage: $0 restart zk|master|rs<N>"
  if role_alive "$1"; then die "restart: $1 runs (pid $(cat "$run/pid.$1"))"; fi
  launch_role "$1"
  sleep 1
  role_alive "$1" || { tail -20 "$run/logs/$1.stdout.log" >&2 2>/dev/null; die "$1 exited at once; see $run/logs/"; }
  log "restarted $1 (pid $(cat "$run/pid.$1"))"
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
  local pidfile
  for pidfile in "$run"/pid.*; do
    # Cluster mode: region servers and master first, ZooKeeper last (below, as
    # the standalone JVM).
    [ -f "$pidfile" ] && [ "$pidfile" != "$run/pid.zk" ] || continue
    kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
  if [ -f "$run/pid.zk" ]; then mv "$run/pid.zk" "$run/pid"; fi
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
  local pidfile
  for pidfile in "$run"/pid.*; do
    # A cluster's JVM that died on its own (kill removes the pid file of one it killed).
    if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then died=1; fi
  done
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
  tail -5 "$run.crashed"/*.log >&2 2>/dev/null || true
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

# tools_dir prints the directory of the compiled admin tools (FlushCompact,
# RegionOps), compiling them first if needed: the directory is named for the HBase
# version and the sources' hash, so an edited source or another version gets a build
# of its own.
tools_dir() {
  resolve_classpath
  command -v javac >/dev/null || die "javac not found: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
  local srcs=("$here/FlushCompact.java" "$here/RegionOps.java") sum dir tmp
  sum=$(cat "${srcs[@]}" | sha256sum | cut -c1-12)
  dir="$cache/tools-$version-$sum"
  if [ ! -f "$dir/FlushCompact.class" ] || [ ! -f "$dir/RegionOps.class" ]; then
    tmp="$dir.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    if ! javac -nowarn -d "$tmp" -cp "$(cat "$cpfile")" "${srcs[@]}" >"$tmp/javac.log" 2>&1; then
      cat "$tmp/javac.log" >&2
      rm -rf "$tmp"
      die "cannot compile ${srcs[*]}"
    fi
    # Another run may have built it meanwhile: keep the first one.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  fi
  echo "$dir"
}

# admin_tool runs one of the compiled admin tools with HBase's client classpath.
admin_tool() {
  local dir
  dir=$(tools_dir)
  java -Xmx512m "${jdk_flags[@]}" -Dlog4j.configuration="file:$here/log4j-client.properties" \
    -cp "$dir:$(cat "$cpfile")" "$@"
}

compact() {
  [ $# -ge 2 ] || die "usage: $0 compact <zookeeper host:port> <table>..."
  admin_tool FlushCompact "$@"
}

regionops() {
  [ $# -ge 2 ] || die "usage: $0 regionops <zookeeper host:port> <command> [args...]"
  admin_tool RegionOps "$@"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  halt) halt ;;
  status | zk) status ;;
  classpath) resolve_classpath; cat "$cpfile" ;;
  rootdir) rootdir ;;
  compact) shift; compact "$@" ;;
  regionops) shift; regionops "$@" ;;
  kill) shift; kill_role "$@" ;;
  restart) shift; restart_role "$@" ;;
  *) die "usage: $0 start|stop|halt|status|zk|classpath|rootdir|compact <zk> <table>...|regionops <zk> <command>...|kill <role>|restart <role>" ;;
esac
