package opentsdbtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// askTimeout bounds one request to the TSD.
const askTimeout = 2 * time.Minute

// Put posts an /api/put body (a JSON array of datapoints) to the TSD with
// ?sync&details, so that it answers once HBase has every datapoint, and
// fails t unless every datapoint was stored.
func (tsd *TSD) Put(t testing.TB, body []byte) {
	t.Helper()
	status, answer := tsd.Post(t, "/api/put?sync&details", body)
	var res struct {
		Success, Failed int
		Errors          []json.RawMessage
	}
	if err := json.Unmarshal(answer, &res); err != nil || status != http.StatusOK || res.Failed != 0 || len(res.Errors) != 0 {
		t.Fatalf("OpenTSDB /api/put = %d %s (%v), want 200 with every datapoint stored", status, answer, err)
	}
}

// Post posts body to the TSD's path (e.g. "/api/annotation") and returns the
// status and the answer.
func (tsd *TSD) Post(t testing.TB, path string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := (&http.Client{Timeout: askTimeout}).Post(tsd.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s%s: %v", tsd.URL, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(fmt.Errorf("POST %s%s: %w", tsd.URL, path, err))
	}
	return resp.StatusCode, b
}

// Get asks the TSD for pathAndQuery (e.g. "/api/query?start=1h-ago&m=sum:x")
// and returns the status and the answer.
func (tsd *TSD) Get(t testing.TB, pathAndQuery string) (int, []byte) {
	t.Helper()
	resp, err := (&http.Client{Timeout: askTimeout}).Get(tsd.URL + pathAndQuery)
	if err != nil {
		t.Fatalf("GET %s%s: %v", tsd.URL, pathAndQuery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(fmt.Errorf("GET %s%s: %w", tsd.URL, pathAndQuery, err))
	}
	return resp.StatusCode, b
}
