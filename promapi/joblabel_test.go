package promapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"

	"github.com/hbtsdb/hbtsdb/kv"
)

// TestRequestsRunUnderTheirJobsLabel: write endpoints run as ingest, the other
// /api/v1/ endpoints as query, and the rest under no job label.
func TestRequestsRunUnderTheirJobsLabel(t *testing.T) {
	var got string
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = kv.JobOf(r.Context()) })
	r := mux.NewRouter()
	r.Use(withJobLabel)
	for _, path := range []string{"/api/v1/write", "/api/put", "/api/v1/query_range", "/api/v1/label/{name}/values",
		"/api/v1/read", "/api/v1/last", "/-/ready", "/metrics"} {
		r.Handle(path, record)
	}
	for _, tc := range []struct{ path, want string }{
		{"/api/v1/write", kv.JobIngest},
		{"/api/put", kv.JobIngest},
		{"/api/v1/query_range", kv.JobQuery},
		{"/api/v1/label/job/values", kv.JobQuery},
		{"/api/v1/read", kv.JobQuery},
		{"/api/v1/last", kv.JobQuery},
		{"/-/ready", kv.JobOther},
		{"/metrics", kv.JobOther},
	} {
		got = ""
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got != tc.want {
			t.Errorf("%s ran as job %q, want %q", tc.path, got, tc.want)
		}
	}
}
