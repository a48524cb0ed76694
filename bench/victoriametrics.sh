#!/usr/bin/env bash
# victoriametrics.sh — a real VictoriaMetrics single-node server for the side-by-side
# benchmark (bench/compare), built from the Go module proxy at a pinned version and
# cached by version, like testing/prometheus/prometheus.sh does for Prometheus.
#
#   bench/victoriametrics.sh [build]  build it unless cached; print the binary's path
#   bench/victoriametrics.sh path     print where the binary is (or would be)
#   bench/victoriametrics.sh version  print the version it builds
#
# The binary lands in $HBTSDB_CACHE/victoriametrics-<version>/victoria-metrics. A cached
# binary is reused without network and without a build. The build runs
# `go install <pkg>@<version>` from an empty temporary directory with GOWORK=off, so it
# resolves VictoriaMetrics' own go.mod (not ours) and never touches our go.mod or go.sum.
# Cold, it downloads its modules and compiles for a few minutes; progress goes to
# stderr, the full log to $HBTSDB_CACHE/victoriametrics-<version>.log.
#
# Environment:
#   HBTSDB_CACHE     cache directory [${XDG_CACHE_HOME:-~/.cache}/hbtsdb]
#   GO               the go command [go]
#   VM_VERSION       the VictoriaMetrics version to build [v1.151.0]
set -euo pipefail

pkg=github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics
cache=${HBTSDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hbtsdb}
gocmd=${GO:-go}
v=${VM_VERSION:-v1.151.0}

log() { echo "victoriametrics.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# usable succeeds when the cached binary exists and runs.
usable() {
  local bin=$1
  [ -x "$bin" ] && "$bin" -version >/dev/null 2>&1
}

build() {
  local d="$cache/victoriametrics-$v"
  local bin="$d/victoria-metrics"
  if usable "$bin"; then
    echo "$bin"
    return 0
  fi
  command -v "$gocmd" >/dev/null || die "$gocmd not found: install Go 1.26"
  mkdir -p "$cache"
  # One build at a time per version: a second caller waits, then finds the binary.
  exec 9>"$cache/victoriametrics-$v.lock"
  flock 9
  if usable "$bin"; then
    echo "$bin"
    return 0
  fi

  local t0=$SECONDS buildlog="$cache/victoriametrics-$v.log"
  # tmp and ticker are global: the EXIT trap cleans them up.
  tmp=$(mktemp -d "$cache/victoriametrics-$v.tmp.XXXXXX")
  trap 'rm -rf "$tmp"; if [ -n "${ticker:-}" ]; then kill "$ticker" 2>/dev/null || true; fi' EXIT
  log "building $pkg@$v from the module proxy into $d (first run only; a few minutes cold)"
  log "full build log: $buildlog"
  (
    # An empty directory and GOWORK=off: `go install pkg@version` then resolves
    # VictoriaMetrics' own module graph and leaves ours alone.
    cd "$tmp"
    GOWORK=off GO111MODULE=on GOBIN="$tmp" "$gocmd" install -v "$pkg@$v"
  ) >"$buildlog" 2>&1 &
  local gopid=$!
  # Progress: a line every 30s with the number of packages compiled so far.
  (
    while sleep 30; do
      log "still building ($((SECONDS - t0))s, $(grep -c . "$buildlog" 2>/dev/null || echo 0) packages done)"
    done
  ) &
  ticker=$!
  local rc=0
  wait "$gopid" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  ticker=
  if [ "$rc" -ne 0 ]; then
    tail -30 "$buildlog" >&2
    die "go install $pkg@$v failed (exit $rc); full log: $buildlog"
  fi
  usable "$tmp/victoria-metrics" || die "the built binary does not run: $tmp/victoria-metrics -version"
  mkdir -p "$d"
  mv "$tmp/victoria-metrics" "$bin.new"
  mv "$bin.new" "$bin"
  log "built $bin ($(du -m "$bin" | cut -f1) MB) in $((SECONDS - t0))s"
  echo "$bin"
}

case "${1:-build}" in
  build) build ;;
  path) echo "$cache/victoriametrics-$v/victoria-metrics" ;;
  version) echo "$v" ;;
  *) die "usage: $0 [build|path|version]" ;;
esac
