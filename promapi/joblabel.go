package promapi

import (
	"context"
	"net/http"
	"runtime/pprof"
	"strings"

	"github.com/gorilla/mux"

	"github.com/hbtsdb/hbtsdb/kv"
)

// withJobLabel runs each request under the pprof label kv.JobLabel of its route
// (jobOfRoute), so that CPU profiles tell ingest from queries (goroutines the
// handler starts inherit the label) and kv/kvmetrics counts what each job read.
func withJobLabel(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		job := ""
		if route := mux.CurrentRoute(r); route != nil {
			if tpl, err := route.GetPathTemplate(); err == nil {
				job = jobOfRoute(tpl)
			}
		}
		if job == "" {
			next.ServeHTTP(w, r)
			return
		}
		pprof.Do(r.Context(), pprof.Labels(kv.JobLabel, job), func(ctx context.Context) {
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	})
}

// jobOfRoute is the job of a route's path template: kv.JobIngest for the
// write endpoints (VictoriaMetrics' imports included), kv.JobQuery for every
// other /api/v1/ endpoint (PromQL, series and labels, remote read,
// /api/v1/last, /api/v1/export), "" for the rest.
func jobOfRoute(path string) string {
	switch {
	case path == "/api/v1/write" || path == "/api/put" || path == "/api/v1/import" || path == "/api/v1/import/prometheus":
		return kv.JobIngest
	case strings.HasPrefix(path, "/api/v1/"):
		return kv.JobQuery
	}
	return ""
}
