package promapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Options configures the HTTP surface.
type Options struct {
	// Ready reports whether the server can serve data requests (the store answers
	// and its schema was checked). nil means always ready.
	Ready func(ctx context.Context) error
	// ReadyTimeout bounds one readiness check [2s].
	ReadyTimeout time.Duration
	// Logger receives one line per failed request worth an operator's attention.
	Logger *slog.Logger
	// Writer stores what POST /api/v1/write and POST /api/put decode. nil answers
	// them 503 (no store yet).
	Writer Writer
	// WriteLimits bound the write endpoints' requests; zero fields take the
	// defaults of DefaultWriteLimits.
	WriteLimits WriteLimits

	// Queryable answers PromQL (/api/v1/query, query_range), the series and label
	// endpoints and remote read (POST /api/v1/read): db.DB. nil answers them 503.
	Queryable storage.SampleAndChunkQueryable
	// Reader answers /api/v1/last and /api/v1/metadata: db.DB's Reader(). nil
	// answers them 503.
	Reader Reader
	// ReadReady reports why reads cannot be served yet (the store is not open);
	// the read endpoints answer 503 while it returns an error. nil means ready.
	ReadReady func() error
	// Query configures the PromQL engine and the read endpoints' limits; zero
	// fields take the defaults of DefaultQueryOptions.
	Query QueryOptions
	// BuildInfo is what /api/v1/status/buildinfo answers.
	BuildInfo BuildInfo
}

// NewRouter returns the handler of every endpoint hbtsdb serves.
func NewRouter(opts Options) http.Handler {
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
	r.Handle("/api/v1/write", wh.remoteWrite()).Methods(http.MethodPost)
	r.Handle("/api/put", wh.put()).Methods(http.MethodPost)

	opts.Query = opts.Query.withDefaults()
	readReady := func() error {
		if opts.ReadReady != nil {
			if err := opts.ReadReady(); err != nil {
				return fmt.Errorf("%w: %w", kv.ErrUnavailable, err)
			}
		}
		if opts.Queryable == nil {
			return fmt.Errorf("%w: %w", kv.ErrUnavailable, errNoWriter)
		}
		return nil
	}
	rh := &readHandler{rd: opts.Reader, ready: readReady, limits: opts.Query, logger: opts.Logger}
	r.HandleFunc("/api/v1/last", rh.last).Methods(http.MethodGet, http.MethodPost)
	r.HandleFunc("/api/v1/metadata", rh.metadata).Methods(http.MethodGet)
	r.Handle("/api/v1/read", remoteRead(opts.Queryable, opts.Query, readReady, opts.Logger)).Methods(http.MethodPost)
	engine := newPromQLEngine(opts.Query, opts.Logger)
	registerPrometheusAPI(r, opts.Queryable, engine, opts.Query, opts.BuildInfo, readReady, opts.Logger)
	return recoverPanics(opts.Logger, r)
}

// healthy answers 200 while the process runs, as Prometheus' /-/healthy does.
func healthy(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "hbtsdb is Healthy.")
}

// ready answers 200 only while the store answers, 503 otherwise, so that a load
// balancer or Kubernetes stops sending traffic to a process whose store is down.
func ready(opts Options) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if opts.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), opts.ReadyTimeout)
			defer cancel()
			if err := opts.Ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "hbtsdb is not ready: %v\n", err)
				return
			}
		}
		fmt.Fprintln(w, "hbtsdb is Ready.")
	}
}

// recoverPanics turns a panic in a handler into a 500 and a log line: a bug must
// never take the process down or hand a client a broken connection without a status.
func recoverPanics(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				http.Error(w, "internal server error", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
