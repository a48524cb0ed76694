# hbtsdb — `make test` runs everything: gofmt and vet, every Go test with -race, and the
# real-HBase suites against an HBase that testing/hbase/hbase.sh resolves from Maven
# Central (cached under ~/.cache/hbtsdb) and starts on free loopback ports. HBase is
# stopped again even when a test fails. Under `make test` no HBase test may skip:
# TSDB_TEST_REQUIRE_HBASE=1 turns a missing HBase into a failure.

GO          ?= go
HBASE       := testing/hbase/hbase.sh
GOTESTFLAGS ?= -race -count=1 -timeout 45m

.PHONY: test vet unit test-with-hbase hbase-start hbase-stop build bench fuzz

test: vet test-with-hbase

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Unit tests only: fast, no HBase (the HBase suites skip and say so).
unit:
	$(GO) test $(GOTESTFLAGS) ./...

test-with-hbase:
	@set -e; \
	trap '$(HBASE) stop' EXIT INT TERM; \
	zk=$$($(HBASE) start); \
	echo "HBase for tests at ZooKeeper $$zk"; \
	TSDB_TEST_HBASE_ZK=$$zk TSDB_TEST_REQUIRE_HBASE=1 $(GO) test $(GOTESTFLAGS) ./...

hbase-start:
	@$(HBASE) start

hbase-stop:
	@$(HBASE) stop

build:
	$(GO) build -o bin/tsdb ./cmd/tsdb

# Storage benchmarks on both backends (starts HBase like `make test`).
bench:
	@set -e; \
	trap '$(HBASE) stop' EXIT INT TERM; \
	zk=$$($(HBASE) start); \
	TSDB_TEST_HBASE_ZK=$$zk TSDB_TEST_REQUIRE_HBASE=1 $(GO) test -run '^$$' -bench . -benchtime 3x ./storage/... ./schema/...

# Each fuzz target of schema/ for FUZZTIME (default 20s).
FUZZTIME ?= 20s
fuzz:
	@for f in $$($(GO) test -list '^Fuzz' ./schema/ | grep ^Fuzz); do \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./schema/ || exit 1; \
	done
