package promapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
)

// mustRouter is NewRouter for options a test knows to be valid.
func mustRouter(t testing.TB, opts Options) http.Handler {
	t.Helper()
	h, err := NewRouter(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// pingStore is a Store whose Ping answers what the test says; nothing else of it
// is used by /-/ready.
type pingStore struct {
	writeOnlyStore
	err error
}

func (p *pingStore) Ping(context.Context) error { return p.err }

func TestHealthyAndReady(t *testing.T) {
	st := &pingStore{}
	var openErr error // why the provider has no store
	h := mustRouter(t, Options{DB: func() (DB, error) {
		if openErr != nil {
			return nil, openErr
		}
		return st, nil
	}})
	if code, body := get(t, h, "/-/healthy"); code != 200 || body != "hbtsdb is Healthy.\n" {
		t.Fatalf("/-/healthy = %d %q", code, body)
	}
	if code, body := get(t, h, "/-/ready"); code != 200 || body != "hbtsdb is Ready.\n" {
		t.Fatalf("/-/ready = %d %q", code, body)
	}
	st.err = errors.New("region server 127.0.0.1:16020 does not answer")
	if code, body := get(t, h, "/-/ready"); code != 503 ||
		body != "hbtsdb is not ready: the store does not answer: region server 127.0.0.1:16020 does not answer\n" {
		t.Fatalf("/-/ready with the store not answering = %d %q", code, body)
	}
	openErr = fmt.Errorf("waiting for the store hbase:127.0.0.1:2181 (attempt 3): %w", kv.ErrUnavailable)
	if code, body := get(t, h, "/-/ready"); code != 503 ||
		body != "hbtsdb is not ready: waiting for the store hbase:127.0.0.1:2181 (attempt 3): store unavailable\n" {
		t.Fatalf("/-/ready with the store not open = %d %q", code, body)
	}
	// Healthy does not depend on the store.
	if code, _ := get(t, h, "/-/healthy"); code != 200 {
		t.Fatalf("/-/healthy with the store down = %d", code)
	}
}

// Without a store every data endpoint answers 503 (so that clients retry), each
// in its protocol's own shape, and /-/ready says why.
func TestNoStoreIs503Everywhere(t *testing.T) {
	h := mustRouter(t, Options{})
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/-/ready", "hbtsdb is not ready: store unavailable: no store is configured\n"},
		{http.MethodGet, "/api/v1/query?query=1", `{"status":"error","errorType":"unavailable","error":"store unavailable: no store is configured"}`},
		{http.MethodGet, "/api/v1/last?host=h&metric=m", `{"status":"error","errorType":"unavailable","error":"store unavailable: no store is configured"}`},
		{http.MethodGet, "/api/v1/metadata", `{"status":"error","errorType":"unavailable","error":"store unavailable: no store is configured"}`},
		{http.MethodPost, "/api/v1/read", "store unavailable: no store is configured\n"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != http.StatusServiceUnavailable || string(body) != tc.body {
			t.Errorf("%s %s = %d %q, want 503 %q", tc.method, tc.path, rec.Code, body, tc.body)
		}
	}
}

func TestNewRouterRefusesInvalidOptions(t *testing.T) {
	_, err := NewRouter(Options{WriteLimits: WriteLimits{MaxConcurrentRequests: -1}, Query: QueryOptions{Timeout: -1}})
	want := "promapi: WriteLimits.MaxConcurrentRequests must not be negative (0 takes the default), got -1\n" +
		"promapi: QueryOptions.Timeout must not be negative (0 takes the default), got -1ns"
	if err == nil || err.Error() != want {
		t.Fatalf("NewRouter = %v, want\n%s", err, want)
	}
}

// TestPanicBecomes500: a handler's panic is a 500 in Prometheus' error envelope
// (plain text on the write and remote-read paths) and one log line that names
// the request and the panic.
func TestPanicBecomes500(t *testing.T) {
	var log bytes.Buffer
	h := recoverPanics(slog.New(slog.NewTextHandler(&log, nil)), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	want := `{"status":"error","errorType":"internal","error":"internal server error"}`
	if rec.Code != 500 || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("panicking handler = %d %q %v, want 500 %s", rec.Code, rec.Body.String(), rec.Header(), want)
	}
	for _, path := range []string{"/api/v1/write", "/api/put", "/api/v1/read"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != 500 || rec.Body.String() != "internal server error\n" {
			t.Errorf("panicking handler on %s = %d %q, want 500 in plain text", path, rec.Code, rec.Body.String())
		}
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `msg="panic serving request" method=GET path=/boom panic=boom stack=`) {
		t.Fatalf("log = %q, want one line per request naming the request and the panic", log.String())
	}
}

func TestUnknownPathIs404(t *testing.T) {
	if code, _ := get(t, mustRouter(t, Options{}), "/nope"); code != 404 {
		t.Fatalf("unknown path = %d, want 404", code)
	}
}
