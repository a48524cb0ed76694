package promapi

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
)

// registerVM adds the VictoriaMetrics-compatible endpoints, so that vmctl and
// VictoriaMetrics' clients migrate data in and out of hbtsdb:
//
//	GET  /health                    "OK" while the process runs, as VictoriaMetrics answers (vmctl asks it first)
//	POST /api/v1/import             JSON lines (vmimport.go)
//	POST /api/v1/import/prometheus  Prometheus' text format (vmimport.go)
//	GET|POST /api/v1/export         JSON lines (vmexport.go)
//
// The imports are write endpoints (the write handler's limits and metrics, the
// write role of --web.write-only-users); export is a read endpoint (the
// memory guard and read statistics of remote read, the read role).
func registerVM(r *mux.Router, wh *writeHandler, q queryable, opts Options, metrics *httpMetrics, guard *memoryGuard, ready func() error) {
	r.HandleFunc("/health", vmHealth).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/api/v1/import", countWrites(opts.Ingest, metrics, vmImportProtocol, wh.vmImport())).Methods(http.MethodPost)
	r.Handle("/api/v1/import/prometheus", countWrites(opts.Ingest, metrics, vmImportPrometheusProtocol,
		wh.vmImportPrometheus())).Methods(http.MethodPost)
	export := newVMExport(q, opts.Export, ready, opts.Logger)
	r.Handle("/api/v1/export", guard.guardReads(false, withReadStats(metrics, export))).Methods(http.MethodGet, http.MethodPost)
}

// vmHealth answers "OK", as VictoriaMetrics' /health does.
func vmHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "OK")
}

func vmImportProtocol(*http.Request) string           { return "vm_import" }
func vmImportPrometheusProtocol(*http.Request) string { return "vm_import_prometheus" }
