package promapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/query"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// QueryOptions configure the PromQL engine and the read endpoints. Zero fields
// take the defaults of DefaultQueryOptions.
type QueryOptions struct {
	// LookbackDelta is how far back an instant vector selector looks for the
	// newest sample [5m], as Prometheus' --query.lookback-delta.
	LookbackDelta time.Duration
	// UseStartTimestamps makes rate, increase, irate and resets use the start
	// timestamps stored with samples (a counter's created time), as Prometheus'
	// --enable-feature=use-start-timestamps [false, as there].
	UseStartTimestamps bool
	// MaxSamples bounds the samples one query may hold in memory at once [50e6],
	// as Prometheus' --query.max-samples; over it the query fails (422).
	MaxSamples int
	// Timeout bounds one query, queueing included [2m]; over it: 503 timeout.
	Timeout time.Duration
	// MaxConcurrent bounds the queries executed at once [20]; more wait in a
	// queue (within Timeout), as in Prometheus.
	MaxConcurrent int
	// MaxQueryLength bounds the bytes of a PromQL expression (the query
	// parameter) and of each match[] selector [16 KiB], checked before anything
	// parses them: the parser takes time quadratic in a chain of binary
	// operators (32 KiB of "1+1+..." parse in seconds). Over it: 400 bad_data.
	MaxQueryLength int
	// FormatMaxDepth bounds the nesting depth of an expression that
	// /api/v1/format_query pretty-prints [256]: Prometheus' pretty-printer takes
	// time cubic in it (1 000 nested "+" take seconds). Over it: 400 bad_data.
	FormatMaxDepth int
	// CORSOrigin is the origins (an anchored regular expression) whose browser
	// requests the Prometheus API answers with Access-Control-Allow-Origin, as
	// Prometheus' --web.cors.origin; nil is Prometheus' default ".*" (any).
	CORSOrigin *regexp.Regexp
	// RemoteReadSampleLimit bounds the samples of one SAMPLES remote-read
	// request, summed over its queries [50e6]; over it the request fails with
	// 400 "exceeded sample limit", as Prometheus answers (per query) there.
	RemoteReadSampleLimit int
	// RemoteReadMaxQueries bounds the queries of one remote-read request [100];
	// over it: 400 before any is run.
	RemoteReadMaxQueries int
	// RemoteReadConcurrency bounds the remote-read requests served at once [10].
	RemoteReadConcurrency int
	// RemoteReadMaxBytesInFrame bounds one frame of a STREAMED_XOR_CHUNKS
	// response [1 MiB].
	RemoteReadMaxBytesInFrame int
	// RemoteReadMaxInflightBytes bounds the bytes of remote-read request bodies
	// held at once, compressed and decoded, across requests [128 MiB]; over it:
	// 429 with Retry-After. One request may take up to 32 MiB compressed and
	// 32 MiB decoded, twice (Prometheus' handler decodes it again).
	RemoteReadMaxInflightBytes int64
	// RemoteReadBodyTimeout bounds the time a remote-read request body may
	// take to arrive [30s]; over it: 408 and the connection is closed.
	RemoteReadBodyTimeout time.Duration
	// LastMaxN is the largest n /api/v1/last accepts [1000].
	LastMaxN int
	// MaxMemory bounds, in bytes, the Go heap of the process while PromQL
	// queries and remote reads run [0: no bound]: over it, every query and
	// remote read then running is cancelled and answered 503 (errorType
	// unavailable) naming the bound (memoryGuard). The process should run with
	// a Go memory limit of the same value (debug.SetMemoryLimit), so that
	// garbage is collected before it counts.
	MaxMemory int64
}

// DefaultQueryOptions are Prometheus' defaults for the same settings.
func DefaultQueryOptions() QueryOptions {
	return QueryOptions{
		LookbackDelta:              5 * time.Minute,
		MaxSamples:                 50_000_000,
		Timeout:                    2 * time.Minute,
		MaxConcurrent:              20,
		MaxQueryLength:             16 << 10,
		FormatMaxDepth:             256,
		RemoteReadSampleLimit:      50_000_000,
		RemoteReadMaxQueries:       100,
		RemoteReadConcurrency:      10,
		RemoteReadMaxBytesInFrame:  1 << 20,
		RemoteReadMaxInflightBytes: 128 << 20,
		RemoteReadBodyTimeout:      30 * time.Second,
		LastMaxN:                   1000,
	}
}

// withDefaults returns o with every zero field set to DefaultQueryOptions'.
func (o QueryOptions) withDefaults() QueryOptions {
	d := DefaultQueryOptions()
	setDefault(&o.LookbackDelta, d.LookbackDelta)
	setDefault(&o.MaxSamples, d.MaxSamples)
	setDefault(&o.Timeout, d.Timeout)
	setDefault(&o.MaxConcurrent, d.MaxConcurrent)
	setDefault(&o.MaxQueryLength, d.MaxQueryLength)
	setDefault(&o.FormatMaxDepth, d.FormatMaxDepth)
	if o.CORSOrigin == nil {
		o.CORSOrigin = anyOrigin
	}
	setDefault(&o.RemoteReadSampleLimit, d.RemoteReadSampleLimit)
	setDefault(&o.RemoteReadMaxQueries, d.RemoteReadMaxQueries)
	setDefault(&o.RemoteReadConcurrency, d.RemoteReadConcurrency)
	setDefault(&o.RemoteReadMaxBytesInFrame, d.RemoteReadMaxBytesInFrame)
	setDefault(&o.RemoteReadMaxInflightBytes, d.RemoteReadMaxInflightBytes)
	setDefault(&o.RemoteReadBodyTimeout, d.RemoteReadBodyTimeout)
	setDefault(&o.LastMaxN, d.LastMaxN)
	return o
}

// Validate refuses options that cannot work: every field is a bound or a
// duration that must not be negative (zero takes the default). NewRouter calls
// it; the error names the field and the value.
func (o QueryOptions) Validate() error {
	return errors.Join(
		notNegative("QueryOptions.LookbackDelta", o.LookbackDelta),
		notNegative("QueryOptions.MaxSamples", o.MaxSamples),
		notNegative("QueryOptions.Timeout", o.Timeout),
		notNegative("QueryOptions.MaxConcurrent", o.MaxConcurrent),
		notNegative("QueryOptions.MaxQueryLength", o.MaxQueryLength),
		notNegative("QueryOptions.FormatMaxDepth", o.FormatMaxDepth),
		notNegative("QueryOptions.RemoteReadSampleLimit", o.RemoteReadSampleLimit),
		notNegative("QueryOptions.RemoteReadMaxQueries", o.RemoteReadMaxQueries),
		notNegative("QueryOptions.RemoteReadConcurrency", o.RemoteReadConcurrency),
		notNegative("QueryOptions.RemoteReadMaxBytesInFrame", o.RemoteReadMaxBytesInFrame),
		notNegative("QueryOptions.RemoteReadMaxInflightBytes", o.RemoteReadMaxInflightBytes),
		notNegative("QueryOptions.RemoteReadBodyTimeout", o.RemoteReadBodyTimeout),
		notNegative("QueryOptions.LastMaxN", o.LastMaxN),
		notNegative("QueryOptions.MaxMemory", o.MaxMemory),
	)
}

// setDefault sets *v to def when it is zero.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// notNegative is the error of a field of QueryOptions or WriteLimits whose zero
// value takes the default and whose negative values mean nothing
// (optcheck.NotNegative with promapi's prefix and zero clause).
func notNegative[T int | int64 | time.Duration](field string, v T) error {
	return optcheck.NotNegative("promapi: "+field, v, "0 takes the default")
}

// BuildInfo is what GET /api/v1/status/buildinfo answers (Prometheus' shape).
type BuildInfo = v1.PrometheusVersion

// prometheusAPIPaths are the endpoints of Prometheus' web/api/v1 that hbtsdb
// serves, relative to /api/v1, with their methods. Everything else of that API
// (targets, rules, alerts, admin, TSDB status, its remote write) is not
// registered and answers 404: hbtsdb has no scrape loop, rules or local TSDB.
var prometheusAPIPaths = []struct {
	path    string
	methods []string
}{
	{"/query", []string{http.MethodGet, http.MethodPost}},
	{"/query_range", []string{http.MethodGet, http.MethodPost}},
	{"/query_exemplars", []string{http.MethodGet, http.MethodPost}},
	{"/format_query", []string{http.MethodGet, http.MethodPost}},
	{"/parse_query", []string{http.MethodGet, http.MethodPost}},
	{"/series", []string{http.MethodGet, http.MethodPost}},
	{"/labels", []string{http.MethodGet, http.MethodPost}},
	{"/label/{name}/values", []string{http.MethodGet}},
	{"/status/buildinfo", []string{http.MethodGet}},
}

// newPromQLEngine is the real PromQL engine with opts' limits. The Prometheus
// 3 defaults that are no longer flags there (@ modifier, negative offsets) are on.
//
// It is query.Engine: Prometheus' engine, with rate & co. served from rollups
// where they give raw data's answer.
func newPromQLEngine(opts QueryOptions, reg prometheus.Registerer, logger *slog.Logger) *query.Engine {
	return query.NewEngine(promql.EngineOpts{
		Logger:               logger,
		Reg:                  reg,
		MaxSamples:           opts.MaxSamples,
		Timeout:              opts.Timeout,
		ActiveQueryTracker:   newQueryGate(opts.MaxConcurrent),
		LookbackDelta:        opts.LookbackDelta,
		UseStartTimestamps:   opts.UseStartTimestamps,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		Parser:               parser.NewParser(parser.Options{}),
	})
}

// registerPrometheusAPI mounts Prometheus' own API handlers (web/api/v1) for
// prometheusAPIPaths on r, over q and engine. storeErr, when it returns an
// error, answers 503 (errorType "unavailable") before any handler runs.
func registerPrometheusAPI(r *mux.Router, q storage.SampleAndChunkQueryable, engine promql.QueryEngine, opts QueryOptions,
	build BuildInfo, storeErr func() error, guard *memoryGuard, metrics *httpMetrics, logger *slog.Logger) {
	ready := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			if err := storeErr(); err != nil {
				respondError(w, errUnavailableType, err)
				return
			}
			next(w, req)
		}
	}
	noConfig := func() config.Config { return config.Config{} }
	api := v1.NewAPI(timeoutEngine{engine}, q, nil, exemplarsOf(q), nil, nil, nil, noConfig, map[string]string{},
		v1.GlobalURLOptions{}, ready, nil, "", false, false, 0, logger, nil,
		opts.RemoteReadSampleLimit, opts.RemoteReadConcurrency, opts.RemoteReadMaxBytesInFrame, false, opts.CORSOrigin,
		nil, &build, nil, nil, nil, nil, renderStats, false, nil, false, false, false,
		opts.LookbackDelta, false, false, nil, nil, v1.OpenAPIOptions{}, parser.NewParser(parser.Options{}), false,
		opts.Timeout)
	prom := route.New()
	api.Register(prom.WithPrefix("/api/v1"))
	for _, p := range prometheusAPIPaths {
		var h http.Handler = prom
		switch p.path {
		case "/query":
			h = guard.guardReads(true, withReadStats(metrics, withResolution(true, prom)))
		case "/query_range":
			h = guard.guardReads(true, withReadStats(metrics, withResolution(false, prom)))
		case "/query_exemplars":
			// Exemplar reads hold what they found in memory as queries do.
			h = guard.guardReads(true, prom)
		case "/format_query":
			h = boundFormatDepth(opts.FormatMaxDepth, prom)
		}
		// The length bound comes first: everything after it may parse the query.
		h = boundQueryLength(opts.MaxQueryLength, h)
		// OPTIONS is a browser's CORS preflight, answered by Prometheus' handler.
		r.Handle("/api/v1"+p.path, h).Methods(append(p.methods, http.MethodOptions)...)
	}
}

// queryGate is promql's QueryTracker reduced to what hbtsdb needs: at most n
// queries execute at once; the engine waits for a slot within the query's
// timeout and reports "query queue" timeouts and cancellations as Prometheus
// does. It keeps no file of active queries (Prometheus' tracker does, to log
// them after a crash).
type queryGate struct{ slots chan struct{} }

func newQueryGate(n int) *queryGate { return &queryGate{slots: make(chan struct{}, n)} }

func (g *queryGate) GetMaxConcurrent() int { return cap(g.slots) }

func (g *queryGate) Insert(ctx context.Context, _ string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // a query whose deadline passed never runs, even with a free slot
	}
	select {
	case g.slots <- struct{}{}:
		return 0, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (g *queryGate) Delete(int) { <-g.slots }

func (g *queryGate) Close() error { return nil }
