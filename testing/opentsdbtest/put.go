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
	return tsd.ask(t, http.MethodPost, path, body)
}

// Get asks the TSD for pathAndQuery (e.g. "/api/query?start=1h-ago&m=sum:x")
// and returns the status and the answer.
func (tsd *TSD) Get(t testing.TB, pathAndQuery string) (int, []byte) {
	t.Helper()
	return tsd.ask(t, http.MethodGet, pathAndQuery, nil)
}

func (tsd *TSD) ask(t testing.TB, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, tsd.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: askTimeout}).Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, tsd.URL, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(fmt.Errorf("%s %s%s: %w", method, tsd.URL, path, err))
	}
	return resp.StatusCode, b
}
