package promapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gorilla/mux"
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
