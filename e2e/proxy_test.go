package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// abortingProxy sits between Prometheus and tsdb and aborts remote-write requests
// while tsdb is still working on them: it forwards the first attempt of every
// request (a body it has not seen before) with a deadline drawn from [0, maxDelay),
// most of them short, and when the deadline passes first it closes the connection to
// tsdb (whose request context is then canceled mid-write) and answers Prometheus
// 502, so that Prometheus sends the batch again; retries pass untouched. This is
// what happens for real when Prometheus reshards its queues (it cancels in-flight
// requests and sends them again) or a load balancer times out: whatever point of
// the write an abort hits, the retry must store everything exactly once.
type abortingProxy struct {
	srv      *httptest.Server
	maxDelay time.Duration

	mu   sync.Mutex
	seen map[[sha256.Size]byte]bool

	requests atomic.Int64
	aborted  atomic.Int64 // requests canceled before tsdb answered
}

func startAbortingProxy(t *testing.T, upstream string, maxDelay time.Duration) *abortingProxy {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &abortingProxy{maxDelay: maxDelay, seen: map[[sha256.Size]byte]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.aborted.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		p.mu.Lock()
		first := !p.seen[sum]
		p.seen[sum] = true
		p.mu.Unlock()
		if !first {
			rp.ServeHTTP(w, r)
			return
		}
		f := rand.Float64()
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(f*f*float64(p.maxDelay)))
		defer cancel()
		rp.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// proxied is a receiver whose write URL goes through an abortingProxy.
type proxied struct {
	receiver
	proxy *abortingProxy
	path  string
}

func (p proxied) writeURL() string { return p.proxy.srv.URL + p.path }

func (p proxied) stopAndCheck(t *testing.T) {
	t.Helper()
	t.Logf("aborting proxy: %d requests, %d aborted while tsdb worked on them", p.proxy.requests.Load(), p.proxy.aborted.Load())
	if p.proxy.aborted.Load() == 0 {
		t.Errorf("the aborting proxy aborted no request: the run did not test retries")
	}
	p.receiver.stopAndCheck(t)
}
