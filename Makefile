# hbtsdb — `make test` runs everything: gofmt and vet, every Go test with -race, the
# real-HBase suites against an HBase that testing/hbase/hbase.sh resolves from Maven
# Central (cached under ~/.cache/hbtsdb) and starts on free loopback ports, and the
# end-to-end tests (e2e/) with a real Prometheus server that
# testing/prometheus/prometheus.sh builds from the Go module proxy at the version in
# go.mod (cached under ~/.cache/hbtsdb/prometheus-<version>) and VictoriaMetrics' vmctl
# that testing/vmctl/vmctl.sh builds likewise (~/.cache/hbtsdb/vmctl-<version>). HBase is stopped again
# even when a test fails. Under `make test` no test may skip: TSDB_TEST_REQUIRE_HBASE=1
# and TSDB_TEST_REQUIRE_E2E=1 turn a missing HBase, Prometheus or browser into a
# failure, TSDB_TEST_REQUIRE_TMPFS=1 a tmpfs that cannot be mounted (the full-disk
# tests; they need root, as CI has) and TSDB_TEST_REQUIRE_CLEAR_REFS=1 a peak RSS that
# cannot be reset (the abuse test; /proc/<pid>/clear_refs). The tests run with -json
# through testing/testreport, which prints the packages' ok lines, the output of failed
# tests only, and at the end the failed and the skipped tests ("skipped tests: none");
# with -fail-on-skip, as here, a test that skipped all the same fails the run.

GO          ?= go
HBASE       := testing/hbase/hbase.sh
PROMETHEUS  := testing/prometheus/prometheus.sh
VMCTL       := testing/vmctl/vmctl.sh
GOTESTFLAGS ?= -race -count=1 -timeout 45m
# Runs `go test -json ...` and reports it (testing/testreport).
TESTREPORT  := $(GO) run ./testing/testreport

.PHONY: test vet unit test-with-hbase test-cluster e2e prometheus vmctl hbase-start hbase-stop build bench fuzz soak bench-compare bench-opentsdb steady dashboards ui

test: vet prometheus vmctl test-with-hbase test-cluster

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags soak ./cmd/tsdb/
	$(GO) vet -tags cluster ./cmd/tsdb/

# Unit tests only: fast, no HBase (the HBase suites skip and say so; the report lists
# the skipped tests).
unit:
	$(TESTREPORT) $(GO) test -json $(GOTESTFLAGS) ./...

# Every test, once, with HBase and Prometheus; HBase is stopped even on failure.
test-with-hbase:
	@$(MAKE) --no-print-directory with-hbase-and-prometheus PKGS=./...

# The HBase cluster tests (cmd/tsdb TestHBaseCluster, build tag cluster): a cluster
# of ZooKeeper, a master and three region servers, each its own JVM
# (HBASE_REGIONSERVERS=3 testing/hbase/hbase.sh start, by the test itself), through
# region splits, moves and merges, a region server's and the master's kill -9, and
# three tsdb processes, under load. About 10 minutes. make test runs them after the
# other tests, not beside them: five more JVMs on a 2-core machine starve the
# end-to-end tests' scrapes.
test-cluster:
	@$(MAKE) --no-print-directory with-hbase-and-prometheus PKGS="-tags cluster -run TestHBaseCluster ./cmd/tsdb/"

# The end-to-end tests only (e2e/): a real Prometheus remote-writing to `tsdb serve`
# on the embedded store and on a real HBase. E2E_DURATION is how long each run
# scrapes (default 30s).
e2e: prometheus vmctl
	@$(MAKE) --no-print-directory with-hbase-and-prometheus PKGS=./e2e/

# Builds the Prometheus server and promtool binaries the end-to-end tests run (once per
# version in go.mod; later runs reuse the cached binaries without network).
prometheus:
	@$(PROMETHEUS) >/dev/null

# Builds VictoriaMetrics' vmctl (testing/vmctl/vmctl.sh, once per version; later runs
# reuse the cached binary), which e2e/vmctl_test.go migrates data with.
vmctl:
	@$(VMCTL) >/dev/null

.PHONY: with-hbase-and-prometheus
with-hbase-and-prometheus:
	@set -e; \
	prom=$$($(PROMETHEUS)); \
	promtool=$$($(PROMETHEUS) promtool); \
	vmctl=$$($(VMCTL)); \
	trap '$(HBASE) stop' EXIT INT TERM; \
	zk=$$($(HBASE) start); \
	echo "HBase for tests at ZooKeeper $$zk; Prometheus $$prom; promtool $$promtool; vmctl $$vmctl"; \
	TSDB_TEST_HBASE_ZK=$$zk TSDB_TEST_REQUIRE_HBASE=1 \
	TSDB_TEST_PROMETHEUS=$$prom TSDB_TEST_PROMTOOL=$$promtool TSDB_TEST_VMCTL=$$vmctl TSDB_TEST_REQUIRE_E2E=1 \
	TSDB_TEST_REQUIRE_TMPFS=1 TSDB_TEST_REQUIRE_CLEAR_REFS=1 \
	$(if $(E2E_DURATION),TSDB_TEST_E2E_DURATION=$(E2E_DURATION)) \
	$(TESTREPORT) -fail-on-skip $(GO) test -json $(GOTESTFLAGS) $(PKGS)

hbase-start:
	@$(HBASE) start

hbase-stop:
	@$(HBASE) stop

build:
	$(GO) build -o bin/tsdb ./cmd/tsdb

# The query page at / (web/ui, docs/query-page.md): bundles web/ui/src/ and the npm
# packages pinned in web/ui/package-lock.json with esbuild into web/ui/dist/, which
# is committed and embedded in the binary, so that building, serving and `make test`
# need no npm. Needs node and npm; run it after changing web/ui/src/ or the
# packages, and commit web/ui/dist/ (a test fails while dist/ is older than src/).
ui:
	cd web/ui && npm ci --ignore-scripts --no-audit --no-fund && node build.mjs

# Storage benchmarks on both backends (starts HBase like `make test`).
bench:
	@set -e; \
	trap '$(HBASE) stop' EXIT INT TERM; \
	zk=$$($(HBASE) start); \
	TSDB_TEST_HBASE_ZK=$$zk TSDB_TEST_REQUIRE_HBASE=1 $(GO) test -run '^$$' -bench . -benchtime 3x ./kv/... ./schema/...

# The side-by-side benchmark (bench/compare): tsdb (embedded), Prometheus
# and VictoriaMetrics (bench/victoriametrics.sh builds it once from the module proxy)
# under the same remote-write load, in interleaved rounds; prints a Markdown table (also
# written to BENCH_COMPARE_OUT when set). BENCH_COMPARE_FLAGS=-quick for a smoke run.
bench-compare:
	$(GO) run ./bench/compare $(if $(BENCH_COMPARE_OUT),-out $(abspath $(BENCH_COMPARE_OUT))) $(BENCH_COMPARE_FLAGS)

# The OpenTSDB ingest benchmark (bench/opentsdb): the same /api/put load (100 hosts ×
# 100 metrics × 240 points, JSON arrays of 500 datapoints from 32 senders, as
# tcollector and scollector send them) into a real OpenTSDB 2.4.1
# (testing/opentsdb/opentsdb.sh) and into tsdb serve on the same HBase, which
# testing/hbase/hbase.sh starts for the run, in alternating rounds; prints a Markdown
# table of points/s and CPU-seconds per million points of the TSD, tsdb and the HBase
# JVM, and hbtsdb ÷ OpenTSDB (also written to BENCH_OPENTSDB_OUT when set).
# BENCH_OPENTSDB_FLAGS=-quick for a smoke run (about 4 minutes, most of it starting
# HBase and OpenTSDB).
bench-opentsdb:
	$(GO) run ./bench/opentsdb $(if $(BENCH_OPENTSDB_OUT),-out $(abspath $(BENCH_OPENTSDB_OUT))) $(BENCH_OPENTSDB_FLAGS)

# The steady-state benchmark (bench/steady): tsdb serve with compaction on and
# one-minute buckets under a real-time remote-write load (5 000 samples/s) with range
# queries all along, for STEADY_DURATION (default 60m) on the embedded store and then on
# a standalone HBase that it starts like bench/compare -hbase (in STEADY_HBASE_RUN,
# default a directory of the run), VictoriaMetrics beside tsdb under the same load.
# Prints a Markdown report per backend (per tenth: CPU per sample by ingest, compaction,
# store background and queries; query p50/p99; compaction rows/s and lag; disk per
# sample; then whole-life CPU per sample and SIGTERM-to-exit), also written to STEADY_OUT
# when set. STEADY_FLAGS passes more flags (e.g. -tsdb-bin, -hosts, -vm=false). Both
# backends take about 2 h 15 min at the default.
STEADY_DURATION ?= 60m
steady:
	$(GO) run ./bench/steady -hbase -duration $(STEADY_DURATION) $(if $(STEADY_HBASE_RUN),-hbase-run $(abspath $(STEADY_HBASE_RUN))) \
		$(if $(STEADY_OUT),-out $(abspath $(STEADY_OUT))) $(STEADY_FLAGS)

# The Grafana dashboards (dashboards/): regenerates dashboards/json/*.json
# from the Go in dashboards/ (Grafana's foundation SDK). Run it after changing a
# dashboard and commit dashboards/json; a test fails while the JSON differs.
dashboards:
	$(GO) run ./dashboards/gen -out dashboards/json

# The soak test (cmd/tsdb TestSoak, built only with -tags soak): tsdb serve with --web.enable-pprof under a
# remote-write load of 300,000 series (TSDB_TEST_SOAK_SERIES) with churn and a few
# queries, for SOAK_DURATION on the embedded store and then on HBase (started like
# `make test`), its heap, goroutines, open files and RSS sampled every 10s; fails
# if they keep growing after the warm-up. The samples (CSV) and a plot (SVG) go to
# SOAK_OUT (default: the test's temporary directory, also printed in the log).
# Without -race: the server measured is the test binary, and the race detector
# would multiply its memory.
SOAK_DURATION ?= 10m
soak:
	@set -e; \
	trap '$(HBASE) stop' EXIT INT TERM; \
	zk=$$($(HBASE) start); \
	echo "HBase for the soak at ZooKeeper $$zk"; \
	TSDB_TEST_HBASE_ZK=$$zk TSDB_TEST_REQUIRE_HBASE=1 TSDB_TEST_SOAK_DURATION=$(SOAK_DURATION) \
	$(if $(SOAK_OUT),TSDB_TEST_SOAK_OUT=$(abspath $(SOAK_OUT))) \
	$(GO) test -tags soak -count=1 -timeout 3h -v -run '^TestSoak$$' ./cmd/tsdb/

# Every fuzz target of the module (schema/ codecs, promapi/wire decoders of
# untrusted network input, ...), each for FUZZTIME (default 20s); the first
# failure stops the run and leaves the failing input under the package's
# testdata/fuzz/.
FUZZTIME ?= 20s
fuzz:
	@set -e; \
	list=$$($(GO) test -list '^Fuzz' ./...); \
	targets=$$(echo "$$list" | awk '/^Fuzz/ { names[n++] = $$1 } /^ok/ { for (i = 0; i < n; i++) print $$2 "," names[i]; n = 0 }'); \
	echo "fuzz: $$(echo "$$targets" | wc -l) targets, $(FUZZTIME) each"; \
	for t in $$targets; do \
		pkg=$${t%%,*}; target=$${t#*,}; \
		echo "fuzz: $$pkg $$target"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done
