# go-install-cached.sh — sourced by testing/prometheus/prometheus.sh and
# bench/victoriametrics.sh: builds a Go program from the module proxy at a pinned
# version, once, into a cache directory keyed by name and version.
#
#   go_install_cached <name> <version> <pkg> <binary> <version-flag> [go install flags...]
#
# prints the path of $cache/<name>-<version>/<binary>, building it first unless a
# cached binary exists and answers <version-flag>. The build runs `go install
# <pkg>@<version>` from an empty temporary directory with GOWORK=off, so that it
# resolves the program's own go.mod (not ours) and never touches our go.mod or
# go.sum. One build at a time per name and version (a second caller waits, then
# finds the binary); a line of progress every 30 s on stderr, the full log in
# $cache/<name>-<version>.log. The caller sets cache, gocmd and log/die.

# cached_binary_usable succeeds when bin exists and answers its version flag.
cached_binary_usable() {
  local bin=$1 flag=$2
  [ -x "$bin" ] && "$bin" "$flag" >/dev/null 2>&1
}

go_install_cached() {
  local name=$1 v=$2 pkg=$3 binary=$4 vflag=$5
  shift 5
  local d="$cache/$name-$v"
  local bin="$d/$binary"
  if cached_binary_usable "$bin" "$vflag"; then
    echo "$bin"
    return 0
  fi
  command -v "$gocmd" >/dev/null || die "$gocmd not found: install Go 1.26"
  mkdir -p "$cache"
  exec 9>"$cache/$name-$v.lock"
  flock 9
  if cached_binary_usable "$bin" "$vflag"; then
    echo "$bin"
    return 0
  fi

  local t0=$SECONDS buildlog="$cache/$name-$v.log"
  # tmp and ticker are global: the EXIT trap cleans them up.
  tmp=$(mktemp -d "$cache/$name-$v.tmp.XXXXXX")
  trap 'rm -rf "$tmp"; if [ -n "${ticker:-}" ]; then kill "$ticker" 2>/dev/null || true; fi' EXIT
  log "building $pkg@$v from the module proxy into $d (first run only; a few minutes cold)"
  log "full build log: $buildlog"
  (
    cd "$tmp"
    GOWORK=off GO111MODULE=on GOBIN="$tmp" "$gocmd" install -v "$@" "$pkg@$v"
  ) >"$buildlog" 2>&1 &
  local gopid=$!
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
  cached_binary_usable "$tmp/$binary" "$vflag" || die "the built binary does not run: $tmp/$binary $vflag"
  mkdir -p "$d"
  mv "$tmp/$binary" "$bin.new"
  mv "$bin.new" "$bin"
  log "built $bin ($(du -m "$bin" | cut -f1) MB) in $((SECONDS - t0))s"
  echo "$bin"
}
