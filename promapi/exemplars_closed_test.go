package promapi

import (
	"io"
	"net/http"
	"net/url"
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
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := getExemplars(t, e.srv.URL, q("query", "up"))
	resp, err := http.Get(e.srv.URL + "/api/v1/query?" + url.Values{"query": {"up"}, "time": {"1700000000"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	queryBody, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":"error","errorType":"internal","error":"db: exemplar querier: store closed"}`
	if code != http.StatusInternalServerError || body != want {
		t.Errorf("query_exemplars on a closed DB = %d %s, want 500 %s", code, body, want)
	}
	if resp.StatusCode == http.StatusOK || !strings.Contains(string(queryBody), `"error":"db: querier: store closed"`) {
		t.Errorf("query on a closed DB = %d %s, want the DB's closed error", resp.StatusCode, queryBody)
	}
}
