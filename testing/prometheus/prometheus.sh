#!/usr/bin/env bash
# prometheus.sh — a real Prometheus server and its promtool for the end-to-end tests
# (e2e/), built from the Go module proxy at exactly the version of
# github.com/prometheus/prometheus in our go.mod, and cached by version.
#
#   testing/prometheus/prometheus.sh [build]       build both unless cached; print the server's path
#   testing/prometheus/prometheus.sh path          print where the server is (or would be)
#   testing/prometheus/prometheus.sh promtool      build promtool unless cached; print its path
#   testing/prometheus/prometheus.sh promtool-path print where promtool is (or would be)
#   testing/prometheus/prometheus.sh version       print the version go.mod requires
#
# The binaries land in $HBTSDB_CACHE/prometheus-<version>/prometheus and .../promtool
# (promtool backfills a server's data directory from an OpenMetrics file, `promtool tsdb
# create-blocks-from openmetrics`, as e2e/rollup_oracle_test.go does). A cached binary
# is reused without network and without a build; a new version in go.mod builds new
# ones next to the old. A build runs `go install <pkg>@<version>` from an empty
# temporary directory with GOWORK=off, so it resolves Prometheus' own go.mod (not ours)
# and never touches our go.mod or go.sum. Cold, the server downloads ~400 modules and
# compiles for several minutes, and promtool, which shares most packages, a minute or
# two more; progress goes to stderr, the full log of the latest build to
# $HBTSDB_CACHE/prometheus-<version>.log. The server is built without the `builtinassets` tag (the module zip has no compiled web
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

# shellcheck source=../go-install-cached.sh
. "$repo/testing/go-install-cached.sh"

# install builds cmd/<binary> of $module (prometheus or promtool) unless cached and
# prints its path. Both share the cache directory and the version stamp; their
# builds share Go's build cache, so the second one compiles little.
install() {
  local binary=$1 v
  v=$(version)
  go_install_cached prometheus "$v" "$module/cmd/$binary" "$binary" --version \
    -ldflags "-X github.com/prometheus/common/version.Version=${v#v} -X github.com/prometheus/common/version.Revision=module-proxy -X github.com/prometheus/common/version.Branch=${v} -X github.com/prometheus/common/version.BuildUser=hbtsdb"
}

# build builds both binaries unless cached and prints the server's path.
build() {
  local server
  server=$(install prometheus)
  install promtool >/dev/null
  echo "$server"
}

case "${1:-build}" in
  build) build ;;
  path) echo "$(dir)/prometheus" ;;
  promtool) install promtool ;;
  promtool-path) echo "$(dir)/promtool" ;;
  version) version ;;
  *) die "usage: $0 [build|path|promtool|promtool-path|version]" ;;
esac
