package promapi

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// TestExemplarsOfAClosedDBFailLikeQueries: /api/v1/query_exemplars reaches
// the DB through db.DB.ExemplarQuerier, which refuses a closed DB as the
// DB's other queriers do: both endpoints answer the DB's closed error. (The
// statuses differ: Prometheus' API answers a querier's error with
// "execution", 422, and a store error of the exemplar querier, which
// exemplarErrors marks as such, with "internal", 500.)
func TestExemplarsOfAClosedDBFailLikeQueries(t *testing.T) {
	e := newExemplarEnv(t, schematest.Backends()[0])
	h := mustRouter(t, Options{DB: StaticDB(e.db), Logger: slog.New(slog.DiscardHandler)})
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, h, "/api/v1/query_exemplars?query=up")
	want := `{"status":"error","errorType":"internal","error":"db: exemplar querier: store closed"}`
	if code != http.StatusInternalServerError || strings.TrimSpace(body) != want {
		t.Errorf("query_exemplars on a closed DB = %d %s, want 500 %s", code, body, want)
	}
	code, body = get(t, h, "/api/v1/query?query=up&time=1700000000")
	if code == http.StatusOK || !strings.Contains(body, `"error":"db: querier: store closed"`) {
		t.Errorf("query on a closed DB = %d %s, want the DB's closed error", code, body)
	}
}
