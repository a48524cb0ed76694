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

# shellcheck source=../testing/go-install-cached.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/testing/go-install-cached.sh"

build() { go_install_cached victoriametrics "$v" "$pkg" victoria-metrics -version; }

case "${1:-build}" in
  build) build ;;
  path) echo "$cache/victoriametrics-$v/victoria-metrics" ;;
  version) echo "$v" ;;
  *) die "usage: $0 [build|path|version]" ;;
esac
