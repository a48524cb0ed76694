# jvm.sh — shell functions the launchers of real JVM servers for tests share
# (testing/hbase/hbase.sh, testing/opentsdb/opentsdb.sh): a classpath resolved from
# Maven Central once and cached, and free loopback ports. Sourced, not run; the
# sourcing script defines die.

# classpath_ok succeeds when the classpath file exists and every jar on it is
# present, so a second start needs no network.
classpath_ok() {
  local cpfile=$1 jar
  [ -s "$cpfile" ] || return 1
  while IFS= read -r jar; do
    [ -f "$jar" ] || return 1
  done < <(tr ':' '\n' < "$cpfile")
}

# resolve_maven_classpath <classpath file> <pom> <-Dname=version> <what> resolves
# the pom's dependencies into the Maven repository $m2 (first run only) and writes
# their classpath to the file; <what> names them in messages. The Maven log is kept
# next to the classpath file.
resolve_maven_classpath() {
  local cpfile=$1 pom=$2 prop=$3 what=$4
  if classpath_ok "$cpfile"; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found: install Maven (Debian: apt-get install maven)"
  mkdir -p "$(dirname "$cpfile")"
  log "resolving $what from Maven Central into $m2 (first run only)"
  local t0=$SECONDS tmp="$cpfile.tmp.$$" mvnlog="${cpfile%.classpath}.mvn.log"
  if ! mvn -B -q -f "$pom" -Dmaven.repo.local="$m2" "$prop" \
      dependency:build-classpath -Dmdep.outputFile="$tmp" >"$mvnlog" 2>&1; then
    tail -30 "$mvnlog" >&2
    die "Maven could not resolve $what (full log: $mvnlog)"
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
