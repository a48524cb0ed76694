package promapi

import (
	"encoding/json"
	"net/http"
)

// apiResponse is the envelope of every Prometheus HTTP API answer
// (https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview),
// used by the endpoints hbtsdb implements itself (/api/v1/metadata,
// /api/v1/last); the ones served by Prometheus' web/api/v1 write the same.
type apiResponse struct {
	Status    string   `json:"status"`
	Data      any      `json:"data,omitempty"`
	ErrorType string   `json:"errorType,omitempty"`
	Error     string   `json:"error,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Infos     []string `json:"infos,omitempty"`
}

// apiErrorType is a Prometheus API errorType and the status code Prometheus
// answers it with (web/api/v1 getDefaultErrorCode).
type apiErrorType struct {
	name   string
	status int
}

var (
	errBadDataType     = apiErrorType{"bad_data", http.StatusBadRequest}
	errExecType        = apiErrorType{"execution", http.StatusUnprocessableEntity}
	errCanceledType    = apiErrorType{"canceled", statusClientClosedRequest}
	errTimeoutType     = apiErrorType{"timeout", http.StatusServiceUnavailable}
	errInternalType    = apiErrorType{"internal", http.StatusInternalServerError}
	errUnavailableType = apiErrorType{"unavailable", http.StatusServiceUnavailable}
)

// respondData writes a success envelope around data.
func respondData(w http.ResponseWriter, data any) {
	writeJSON(w, http.StatusOK, apiResponse{Status: "success", Data: data})
}

// respondError writes Prometheus' error envelope.
func respondError(w http.ResponseWriter, typ apiErrorType, err error) {
	writeJSON(w, typ.status, apiResponse{Status: "error", ErrorType: typ.name, Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v apiResponse) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
