package promapi

import (
	"strings"
	"testing"
)

// TestQueryPageRoutes: the router serves the query page (web/ui) at / and its
// assets, and every path it served before answers as before.
func TestQueryPageRoutes(t *testing.T) {
	h := mustRouter(t, Options{})
	code, body := get(t, h, "/")
	if code != 200 || !strings.Contains(body, "<title>hbtsdb") {
		t.Fatalf("GET / = %d %.200q, want the query page", code, body)
	}
	for path, want := range map[string]int{
		"/-/healthy":          200,
		"/api/v1/nope":        404,
		"/nope":               404,
		"/assets/nope.js":     404,
		"/api/v1/query":       503, // no store
		"/api/v1/labels":      503,
		"/api/v1/read":        405, // POST only, as before
		"/api/v1/status/tsdb": 404,
	} {
		if code, body := get(t, h, path); code != want {
			t.Errorf("GET %s = %d %.100q, want %d", path, code, body, want)
		}
	}
}
