#!/usr/bin/env bash
# prometheus.sh — a real Prometheus server for the end-to-end tests (e2e/), built from
# the Go module proxy at exactly the version of github.com/prometheus/prometheus in our
# go.mod, and cached by version.
#
#   testing/prometheus/prometheus.sh [build]  build it unless cached; print the binary's path
#   testing/prometheus/prometheus.sh path     print where the binary is (or would be)
#   testing/prometheus/prometheus.sh version  print the version go.mod requires
#
# The binary lands in $HBTSDB_CACHE/prometheus-<version>/prometheus. A cached binary is
# reused without network and without a build; a new version in go.mod builds a new one
# next to the old. The build runs `go install <pkg>@<version>` from an empty temporary
# directory with GOWORK=off, so it resolves Prometheus' own go.mod (not ours) and never
# touches our go.mod or go.sum. Cold, it downloads ~400 modules and compiles for several
# minutes; progress goes to stderr, the full log to $HBTSDB_CACHE/prometheus-<version>.log.
# The build is built without the `builtinassets` tag (the module zip has no compiled web
# UI): the HTTP API, scraping and remote write/read all work, the UI pages answer 500.
#
# Environment:
#   HBTSDB_CACHE  cache directory [${XDG_CACHE_HOME:-~/.cache}/hbtsdb]
#   GO            the go command [go]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
module=github.com/prometheus/prometheus
cache=${HBTSDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hbtsdb}
gocmd=${GO:-go}

log() { echo "prometheus.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# version prints the version of $module that go.mod requires, read from the file
# itself (no network, no module graph): either inside a require block or on a
# one-line `require <module> <version>`.
version() {
  local v
  v=$(awk -v m="$module" '
    $1 == m { print $2; exit }
    $1 == "require" && $2 == m { print $3; exit }
  ' "$repo/go.mod")
  [ -n "$v" ] || die "$module is not required in $repo/go.mod"
  echo "$v"
}

dir() { echo "$cache/prometheus-$(version)"; }

# usable succeeds when the cached binary exists and runs.
usable() {
  local bin=$1
  [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1
}

build() {
  local v d bin
  v=$(version)
  d="$cache/prometheus-$v"
  bin="$d/prometheus"
  if usable "$bin"; then
    echo "$bin"
    return 0
  fi
  command -v "$gocmd" >/dev/null || die "$gocmd not found: install Go 1.26"
  mkdir -p "$cache"
  # One build at a time per version: a second caller waits, then finds the binary.
  exec 9>"$cache/prometheus-$v.lock"
  flock 9
  if usable "$bin"; then
    echo "$bin"
    return 0
  fi

  local t0=$SECONDS buildlog="$cache/prometheus-$v.log"
  # tmp and ticker are global: the EXIT trap cleans them up.
  tmp=$(mktemp -d "$cache/prometheus-$v.tmp.XXXXXX")
  trap 'rm -rf "$tmp"; if [ -n "${ticker:-}" ]; then kill "$ticker" 2>/dev/null || true; fi' EXIT
  log "building $module/cmd/prometheus@$v from the module proxy into $d (first run only; several minutes cold)"
  log "full build log: $buildlog"
  (
    # An empty directory and GOWORK=off: `go install pkg@version` then resolves
    # Prometheus' own module graph and leaves ours alone.
    cd "$tmp"
    GOWORK=off GO111MODULE=on GOBIN="$tmp" "$gocmd" install -v \
      -ldflags "-X github.com/prometheus/common/version.Version=${v#v} -X github.com/prometheus/common/version.Revision=module-proxy -X github.com/prometheus/common/version.Branch=${v} -X github.com/prometheus/common/version.BuildUser=hbtsdb" \
      "$module/cmd/prometheus@$v"
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
    die "go install $module/cmd/prometheus@$v failed (exit $rc); full log: $buildlog"
  fi
  usable "$tmp/prometheus" || die "the built binary does not run: $tmp/prometheus --version"
  mkdir -p "$d"
  mv "$tmp/prometheus" "$bin.new"
  mv "$bin.new" "$bin"
  log "built $bin ($(du -m "$bin" | cut -f1) MB) in $((SECONDS - t0))s"
  echo "$bin"
}

case "${1:-build}" in
  build) build ;;
  path) echo "$(dir)/prometheus" ;;
  version) version ;;
  *) die "usage: $0 [build|path|version]" ;;
esac
