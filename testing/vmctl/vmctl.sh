#!/usr/bin/env bash
# vmctl.sh — VictoriaMetrics' migration tool vmctl for the end-to-end tests of the
# VictoriaMetrics-compatible import and export endpoints (e2e/vmctl_test.go), built
# from the Go module proxy at a pinned version and cached by version, like
# testing/prometheus/prometheus.sh does for Prometheus.
#
#   testing/vmctl/vmctl.sh [build]  build it unless cached; print the binary's path
#   testing/vmctl/vmctl.sh path     print where the binary is (or would be)
#   testing/vmctl/vmctl.sh version  print the version it builds
#
# The binary lands in $HBTSDB_CACHE/vmctl-<version>/vmctl. A cached binary is reused
# without network and without a build. The build runs `go install <pkg>@<version>`
# from an empty temporary directory with GOWORK=off, so it resolves VictoriaMetrics'
# own go.mod (not ours) and never touches our go.mod or go.sum. v1.148.9 is pinned
# because it builds from this proxy; v1.151.0 does not (it needs a
# prometheus/client_golang/exp pseudo-version the proxy refuses). Cold, it downloads
# its modules and compiles for a few minutes; progress goes to stderr, the full log to
# $HBTSDB_CACHE/vmctl-<version>.log.
#
# Environment:
#   HBTSDB_CACHE   cache directory [${XDG_CACHE_HOME:-~/.cache}/hbtsdb]
#   GO             the go command [go]
#   VMCTL_VERSION  the VictoriaMetrics version to build vmctl from [v1.148.9]
set -euo pipefail

pkg=github.com/VictoriaMetrics/VictoriaMetrics/app/vmctl
cache=${HBTSDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hbtsdb}
gocmd=${GO:-go}
v=${VMCTL_VERSION:-v1.148.9}

log() { echo "vmctl.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=../go-install-cached.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/go-install-cached.sh"

# The version is stamped in (buildinfo.Version): without it vmctl has no --version
# flag, which the cache uses to tell a usable binary.
build() {
  go_install_cached vmctl "$v" "$pkg" vmctl --version \
    -ldflags "-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=vmctl-${v}-hbtsdb"
}

case "${1:-build}" in
  build) build ;;
  path) echo "$cache/vmctl-$v/vmctl" ;;
  version) echo "$v" ;;
  *) die "usage: $0 [build|path|version]" ;;
esac
