package promapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestHealthyAndReady(t *testing.T) {
	var storeErr error
	h := NewRouter(Options{Ready: func(context.Context) error { return storeErr }})
	if code, body := get(t, h, "/-/healthy"); code != 200 || body != "hbtsdb is Healthy.\n" {
		t.Fatalf("/-/healthy = %d %q", code, body)
	}
	if code, body := get(t, h, "/-/ready"); code != 200 || body != "hbtsdb is Ready.\n" {
		t.Fatalf("/-/ready = %d %q", code, body)
	}
	storeErr = errors.New("waiting for HBase at ZooKeeper 127.0.0.1:2181")
	if code, body := get(t, h, "/-/ready"); code != 503 || body != "hbtsdb is not ready: waiting for HBase at ZooKeeper 127.0.0.1:2181\n" {
		t.Fatalf("/-/ready with the store down = %d %q", code, body)
	}
	// Healthy does not depend on the store.
	if code, _ := get(t, h, "/-/healthy"); code != 200 {
		t.Fatalf("/-/healthy with the store down = %d", code)
	}
}

func TestPanicBecomes500(t *testing.T) {
	h := recoverPanics(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	if code, body := get(t, h, "/boom"); code != 500 || body != "internal server error\n" {
		t.Fatalf("panicking handler = %d %q, want 500", code, body)
	}
}

func TestUnknownPathIs404(t *testing.T) {
	if code, _ := get(t, NewRouter(Options{}), "/nope"); code != 404 {
		t.Fatalf("unknown path = %d, want 404", code)
	}
}
