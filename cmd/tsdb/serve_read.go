package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/grafana/regexp"

	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/query"
)

// registerQueryFlags binds the PromQL engine's and the read endpoints' options
// (promapi.QueryOptions) and the per-selector limits (query.Options). Names follow
// Prometheus' flags where there is one.
func (o *serveOptions) registerQueryFlags() {
	b, q, sel := o.flags, &o.http.Query, &o.selectLimits
	b.duration("query.lookback-delta", "promapi: QueryOptions.LookbackDelta", "How far back PromQL looks for the "+
		"newest sample of a series at each evaluation step (Prometheus' --query.lookback-delta).", &q.LookbackDelta)
	b.flag("query.use-start-timestamps", "promapi: QueryOptions.UseStartTimestamps", "Let rate, increase, irate "+
		"and resets use the start timestamps stored with samples (remote write 2.0's start_timestamp, a counter's "+
		"created time), as Prometheus' --enable-feature=use-start-timestamps; off, as there, by default.").
		BoolVar(&q.UseStartTimestamps)
	b.int("query.max-samples", "promapi: QueryOptions.MaxSamples", "Most samples one PromQL query may hold in memory "+
		"at once; over it the query fails with 422 (errorType execution).", &q.MaxSamples)
	b.duration("query.timeout", "promapi: QueryOptions.Timeout", "Longest a PromQL query may take, waiting for a slot "+
		"included; over it: 503 (errorType timeout). A request's own timeout parameter can only shorten it.", &q.Timeout)
	b.int("query.max-concurrency", "promapi: QueryOptions.MaxConcurrent", "PromQL queries executed at once; more wait "+
		"for a slot within --query.timeout.", &q.MaxConcurrent)
	bytesFlag(b, "query.max-length", "promapi: QueryOptions.MaxQueryLength", "Longest PromQL expression (the query "+
		"parameter) and match[] selector accepted, checked before parsing; over it: 400 (errorType bad_data).",
		&q.MaxQueryLength)
	b.int("query.format-max-depth", "promapi: QueryOptions.FormatMaxDepth", "Deepest nesting of an expression "+
		"that /api/v1/format_query pretty-prints (its time grows with the cube of the depth); over it: 400.",
		&q.FormatMaxDepth)
	b.flag("web.cors.origin", "", `Regex for CORS origin of the Prometheus API, fully anchored, as Prometheus' `+
		`--web.cors.origin. Example: 'https?://(domain1|domain2)\.com'`).Default(".*").SetValue(corsValue{&q.CORSOrigin})
	b.int("remote-read.sample-limit", "promapi: QueryOptions.RemoteReadSampleLimit", "Most samples one remote-read "+
		"request may return in a SAMPLES response, summed over its queries; over it: 400 (streamed chunk responses "+
		"are bounded per frame instead).", &q.RemoteReadSampleLimit)
	b.int("remote-read.max-queries", "promapi: QueryOptions.RemoteReadMaxQueries", "Most queries one remote-read "+
		"request may hold; over it: 400 before any runs.", &q.RemoteReadMaxQueries)
	b.int("remote-read.concurrent-limit", "promapi: QueryOptions.RemoteReadConcurrency", "Remote-read requests "+
		"(POST /api/v1/read) served at once; more wait.", &q.RemoteReadConcurrency)
	bytesFlag(b, "remote-read.max-bytes-in-frame", "promapi: QueryOptions.RemoteReadMaxBytesInFrame", "Largest frame "+
		"of a STREAMED_XOR_CHUNKS remote-read response, before compression.", &q.RemoteReadMaxBytesInFrame)
	q.MaxMemory = roundedDown(machineMemory() / 2)
	bytesFlag(b, "query.max-memory", "promapi: QueryOptions.MaxMemory", "Bound on the process's Go heap while "+
		"PromQL queries and remote reads run: over it (after a forced garbage collection) every query and remote "+
		"read then running is cancelled and answered 503 naming this flag. Default: half the memory of the "+
		"machine or of the process's cgroup, whichever is less. 0: no bound.", &q.MaxMemory)
	bytesFlag(b, "remote-read.max-inflight-bytes", "promapi: QueryOptions.RemoteReadMaxInflightBytes", "Bytes of "+
		"remote-read request bodies held at once, compressed and decoded (twice), across requests; over it: 429 "+
		"with Retry-After.", &q.RemoteReadMaxInflightBytes)
	b.duration("remote-read.body-read-timeout", "promapi: QueryOptions.RemoteReadBodyTimeout", "Longest a "+
		"remote-read request body may take to arrive; over it: 408 and the connection is closed.",
		&q.RemoteReadBodyTimeout)
	b.int("query.last-max-n", "promapi: QueryOptions.LastMaxN", "Largest n that GET /api/v1/last accepts (readings "+
		"per series).", &q.LastMaxN)
	b.int("query.max-series", "query: Options.MaxSeries", "Most series one selector of a query (or one remote-read "+
		"query) may match; over it the query fails with 422 (errorType execution) naming the selector. 0: no limit.",
		&sel.MaxSeries)
	b.int("query.max-fetched-samples", "query: Options.MaxSamples", "Most samples one selector of a query (or one "+
		"remote-read query) may read from the store; over it the query fails with 422. 0: no limit.", &sel.MaxSamples)
	b.flag("query.resolution", "query: Options.Resolution", "What PromQL queries are served from when a request "+
		"has no resolution parameter: auto (a rollup wherever its answer is raw data's, raw data otherwise), raw, "+
		"or one of --rollups' resolutions (5m, 1h: forced, the answer may differ from raw data's).").
		Default("auto").SetValue(resolutionValue{&sel.Resolution})
}

// setGoMemoryLimit makes --query.max-memory the Go runtime's soft memory limit
// too, unless GOMEMLIMIT sets one: the collector then runs as the heap nears
// the bound, so that the read guard (which cancels reads over it) counts what
// is live rather than garbage. See promapi's memoryGuard.
func setGoMemoryLimit(limit int64, logger *slog.Logger) {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(limit)
	logger.Debug("Go memory limit set", "bytes", limit, "from", "--query.max-memory")
}

// machineMemory is the memory this process may use: the machine's (MemTotal
// of /proc/meminfo), or its cgroup's limit when that is lower (v2 memory.max,
// v1 memory.limit_in_bytes). 0 where neither can be read.
func machineMemory() int64 {
	var total int64
	if kb, err := procKBField("/proc/meminfo", "MemTotal"); err == nil {
		total = int64(kb) << 10
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) means no limit.
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && limit > 0 &&
			(total == 0 || limit < total) {
			total = limit
		}
	}
	return total
}

// procKBField reads a "Name:   123 kB" line of a /proc file (meminfo, a
// process's status) and returns its number of kB.
func procKBField(path, field string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s of %s: %w", field, path, err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read %s of %s: %q: %w", field, path, line, err)
			}
			return kb, nil
		}
	}
	return 0, fmt.Errorf("read %s: not in %s", field, path)
}

// roundedDown rounds n down to whole GiB from 2 GiB on, to whole MiB below, so
// that a default read from the machine prints as a size someone would type.
func roundedDown(n int64) int64 {
	if n >= 2<<30 {
		return n &^ (1<<30 - 1)
	}
	return n &^ (1<<20 - 1)
}

// resolutionValue is a kingpin value for query.Resolution.
type resolutionValue struct{ r *query.Resolution }

func (v resolutionValue) Set(s string) error {
	r, err := query.ParseResolution(s)
	if err != nil {
		return fmt.Errorf("--query.resolution: %w", err)
	}
	*v.r = r
	return nil
}

func (v resolutionValue) String() string {
	if v.r == nil {
		return "auto"
	}
	return v.r.String()
}

// corsValue is a kingpin value for --web.cors.origin.
type corsValue struct{ re **regexp.Regexp }

func (v corsValue) Set(s string) error {
	re, err := promapi.CompileCORSOrigin(s)
	if err != nil {
		return fmt.Errorf("--web.cors.origin: %w", err)
	}
	*v.re = re
	return nil
}

func (v corsValue) String() string {
	if v.re == nil || *v.re == nil {
		return ".*"
	}
	s := (*v.re).String()
	return strings.TrimSuffix(strings.TrimPrefix(s, "^(?:"), ")$")
}

// buildInfo is /api/v1/status/buildinfo's answer. version is the Prometheus
// release whose HTTP API and PromQL engine hbtsdb embeds (the go.mod module
// v0.316.0 is Prometheus 3.16.0), so that clients such as Grafana, which enable
// features by the Prometheus version they read here, treat it as that release;
// branch and revision name hbtsdb's own build.
func buildInfo() promapi.BuildInfo {
	return promapi.BuildInfo{Version: prometheusAPIVersion, Revision: revision(), Branch: "hbtsdb-" + version,
		BuildUser: "hbtsdb", GoVersion: runtime.Version()}
}

// prometheusAPIVersion is the Prometheus release of the go.mod dependency.
const prometheusAPIVersion = "3.16.0"
