package promapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// TestQueryMemoryBound: PromQL queries that together grow the heap past
// --query.max-memory are cancelled and answered 503 (errorType unavailable)
// naming the bound, and the queries after them run. The subquery below holds
// about 6.3 million points per series of the fixture's three cpu series (the
// 100 minutes of data plus the lookback, at a 1 ms resolution), some 300 MB,
// well under --query.max-samples; the bound is 96 MiB above the heap before.
func TestQueryMemoryBound(t *testing.T) {
	const heavy = "max_over_time(cpu[6300s:1ms])"
	runtime.GC()
	limit := int64(readHeapObjects()) + 96<<20
	// As tsdb serve runs: the bound is the Go memory limit too.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	e := newQueryEnv(t, schematest.Backends()[0], Options{Query: QueryOptions{MaxMemory: limit}})

	const concurrent = 3
	var wg sync.WaitGroup
	var refused atomic.Int32
	for range concurrent {
		wg.Go(func() {
			status, _, body := e.get(t, false, "/api/v1/query", q("query", heavy, "time", "1700006000"))
			var resp apiResponse
			if err := json.Unmarshal([]byte(body), &resp); err != nil {
				t.Errorf("answer is not JSON: %d %s", status, body)
				return
			}
			const wantPrefix = "read memory limit: the heap holds "
			if status != http.StatusServiceUnavailable || resp.ErrorType != "unavailable" ||
				!strings.HasPrefix(resp.Error, wantPrefix) || !strings.Contains(resp.Error, "more than --query.max-memory") {
				t.Errorf("heavy query = %d %s, want 503 unavailable %q... naming --query.max-memory", status, body, wantPrefix)
				return
			}
			refused.Add(1)
		})
	}
	wg.Wait()
	if n := refused.Load(); n != concurrent {
		t.Fatalf("%d of %d heavy queries refused", n, concurrent)
	}
	// The guard lets the next ones in, once the cancelled queries' garbage is
	// collected (the runtime would do it on its own, at its own time).
	runtime.GC()
	if status, _, body := e.get(t, false, "/api/v1/query", q("query", "count(cpu)", "time", "1700000300")); status != 200 ||
		!strings.Contains(body, `"value":[1700000300,"3"]`) {
		t.Errorf("a light query after the cancelled ones = %d %s", status, body)
	}
}

// TestQueryMemoryBoundOff: without a bound (the default) the same heavy query
// answers, so the test above fails on a guard that cancels nothing.
func TestQueryMemoryBoundOff(t *testing.T) {
	e := newQueryEnv(t, schematest.Backends()[0], Options{})
	status, _, body := e.get(t, false, "/api/v1/query", q("query", "max_over_time(cpu[6300s:1ms])", "time", "1700006000"))
	if status != 200 || !strings.Contains(body, `"value":[1700006000,"198"]`) {
		t.Errorf("heavy query without a bound = %d %.300s", status, body)
	}
}

// TestGuardedRemoteRead: a remote read the guard cancels is answered 503 in
// plain text with the guard's reason, whatever the handler made of its
// cancelled context; reads that finish first keep their answer.
func TestGuardedRemoteRead(t *testing.T) {
	var heap atomic.Uint64
	g := newMemoryGuard(1000, slog.New(slog.DiscardHandler))
	g.heap = heap.Load
	started := make(chan struct{})
	h := g.guardReads(false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("quick") != "" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		close(started)
		<-r.Context().Done()
		http.Error(w, "storage: "+r.Context().Err().Error(), http.StatusInternalServerError)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	get := func(path string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/x-protobuf", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/?quick=1"); status != 200 || body != "ok" {
		t.Fatalf("quick read under the bound = %d %q", status, body)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		status, body := get("/")
		want := "read memory limit: the heap holds 1001B, more than --query.max-memory 1000B: " +
			"the 1 queries and remote reads running were cancelled to free memory; retry, or ask for less " +
			"(fewer series, a shorter range, a larger step or subquery resolution)\n"
		if status != http.StatusServiceUnavailable || body != want {
			t.Errorf("cancelled read = %d %q, want 503 %q", status, body, want)
		}
	}()
	<-started
	heap.Store(1001)
	<-done
	heap.Store(0)
	if status, body := get("/?quick=1"); status != 200 || body != "ok" {
		t.Errorf("quick read after the trip = %d %q", status, body)
	}
}
