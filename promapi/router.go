package promapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hbtsdb/hbtsdb/web/ui"
)

// Options configures the HTTP surface. Each field's zero value takes the default
// in brackets; NewRouter validates the rest (Validate).
type Options struct {
	// DB hands out the DB every data endpoint serves from, and says why
	// there is none while the store is being opened or is unreachable: those
	// endpoints and /-/ready answer 503 meanwhile. nil answers them all 503.
	DB Provider
	// ReadyTimeout bounds one readiness check [2s].
	ReadyTimeout time.Duration
	// Logger receives one line per failed request worth an operator's attention.
	Logger *slog.Logger
	// WriteLimits bound the write endpoints' requests; zero fields take the
	// defaults of DefaultWriteLimits.
	WriteLimits WriteLimits
	// OTLP configures POST /api/v1/otlp/v1/metrics (otlp.go).
	OTLP OTLPOptions
	// Query configures the PromQL engine and the read endpoints' limits; zero
	// fields take the defaults of DefaultQueryOptions.
	Query QueryOptions
	// BuildInfo is what /api/v1/status/buildinfo answers.
	BuildInfo BuildInfo
	// Ingest, when not nil, counts the write endpoints' requests and what they
	// stored (tsdb serve's periodic ingest summary).
	Ingest *IngestStats
	// Registerer, when not nil, receives the HTTP surface's metrics (requests and
	// latency by route, what the write endpoints stored and rejected; see
	// httpMetrics), the PromQL engine's (prometheus_engine_*) and the remote-read
	// handler's. NewRouter registers them once: one Registerer serves one router.
	Registerer prometheus.Registerer
	// Gatherer, when not nil, is served at GET /metrics.
	Gatherer prometheus.Gatherer
	// Admin, when not nil, serves the TSDB admin endpoints (admin.go); nil
	// leaves them 404, as Prometheus without --web.enable-admin-api.
	Admin Admin
	// Export bounds VictoriaMetrics' /api/v1/export (vmexport.go).
	Export ExportOptions
	// OpenTSDBQuery bounds OpenTSDB's /api/query (otsdbquery.go).
	OpenTSDBQuery OpenTSDBQueryOptions
	// Version is hbtsdb's version, which OpenTSDB's /api/version answers (opentsdb.go).
	Version string
}

// NewRouter returns the handler of every endpoint hbtsdb serves. It fails only on
// options that cannot work (see QueryOptions.Validate and WriteLimits.Validate).
func NewRouter(opts Options) (http.Handler, error) {
	if err := errors.Join(opts.WriteLimits.Validate(), opts.Query.Validate(), opts.OTLP.Validate(), opts.Export.Validate(),
		opts.OpenTSDBQuery.Validate()); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 2 * time.Second
	}
	r := mux.NewRouter()
	r.HandleFunc("/-/healthy", healthy).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/-/ready", ready(opts)).Methods(http.MethodGet, http.MethodHead)
	wh := newWriteHandler(opts)
	var metrics *httpMetrics
	if opts.Registerer != nil {
		metrics = newHTTPMetrics(opts.Registerer)
		r.Use(metrics.instrument)
	}
	r.Use(withJobLabel)
	r.Handle("/api/v1/write", countWrites(opts.Ingest, metrics, remoteWriteProtocol, wh.remoteWrite())).Methods(http.MethodPost)
	r.Handle("/api/put", countWrites(opts.Ingest, metrics, putProtocol, wh.put())).Methods(http.MethodPost)
	if err := registerOTLP(r, wh, opts, metrics); err != nil {
		return nil, err
	}
	if opts.Gatherer != nil {
		r.Handle("/metrics", metricsHandler(opts.Gatherer, opts.Registerer)).Methods(http.MethodGet, http.MethodHead)
	}

	opts.Query = opts.Query.withDefaults()
	storeErr := func() error {
		_, err := opts.DB.store()
		return err
	}
	rh := &readHandler{store: opts.DB, limits: opts.Query, logger: opts.Logger}
	r.HandleFunc("/api/v1/last", rh.last).Methods(http.MethodGet, http.MethodPost)
	r.HandleFunc("/api/v1/metadata", rh.metadata).Methods(http.MethodGet)
	q := queryable{opts.DB}
	guard := newMemoryGuard(opts.Query.MaxMemory, opts.Logger)
	r.Handle("/api/v1/read", guard.guardReads(false, withReadStats(metrics, remoteRead(q, opts.Query, storeErr, opts.Registerer, opts.Logger)))).Methods(http.MethodPost)
	engine := newPromQLEngine(opts.Query, opts.Registerer, opts.Logger)
	registerAdmin(r, opts.Admin, opts.Logger)
	registerVM(r, wh, q, opts, metrics, guard, storeErr)
	registerOpenTSDBQuery(r, q, opts, metrics, guard, storeErr)
	registerOpenTSDB(r, q, opts)
	registerPrometheusAPI(r, q, engine, opts.Query, opts.BuildInfo, storeErr, guard, metrics, opts.Logger)
	// The query page (web/ui) at / and its assets; every other path stays 404.
	page := ui.Handler()
	r.Handle("/", page).Methods(http.MethodGet, http.MethodHead)
	r.PathPrefix(ui.AssetsPrefix).Handler(page).Methods(http.MethodGet, http.MethodHead)
	return recoverPanics(opts.Logger, r), nil
}

// healthy answers 200 while the process runs, as Prometheus' /-/healthy does.
func healthy(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "hbtsdb is Healthy.")
}

// ready answers 200 only while the store is open and answers (DB.Ping), 503
// otherwise, so that a load balancer or Kubernetes stops sending traffic to a
// process whose store is down.
func ready(opts Options) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := opts.ping(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "hbtsdb is not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "hbtsdb is Ready.")
	}
}

// ping is the readiness check: a DB is there and answers within ReadyTimeout.
func (opts Options) ping(ctx context.Context) error {
	st, err := opts.DB.store()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	if err := st.Ping(ctx); err != nil {
		return fmt.Errorf("the store does not answer: %w", err)
	}
	return nil
}

// recoverPanics turns a panic in a handler into a 500 and one log line with the
// stack; the 500 is in Prometheus' error envelope (errorType internal) except
// on the write and remote-read paths, whose other errors are plain text too: a bug must
// never take the process down or hand a client a broken connection without a
// status. http.ErrAbortHandler (a handler aborting a response it has started,
// as the streamed remote read does) is passed on to net/http, which drops the
// connection without a log line.
func recoverPanics(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				switch r.URL.Path {
				case "/api/v1/write", "/api/put", "/api/v1/read", OTLPPath,
					"/api/v1/import", "/api/v1/import/prometheus", "/api/v1/export":
					// Protocols whose other errors are plain text too.
					http.Error(w, "internal server error", http.StatusInternalServerError)
				default:
					respondError(w, errInternalType, errors.New("internal server error"))
				}
			}
		}()
		next.ServeHTTP(w, r)
	})
}
