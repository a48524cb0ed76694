package promapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/alecthomas/units"
)

// Why a guard on the heap: Prometheus' --query.max-samples bounds the samples one
// query holds (about 16 bytes each, up to twice that while its slices grow), so
// the default 50 million let one query take 1.6 GB and the 20 queries allowed at
// once 30 GB; a remote read holds its samples the same way. Nothing in the
// engine adds up what the queries running together hold, so the guard measures
// the one number that matters, the process's Go heap, and cancels the reads
// running while it is over the bound. The heap is the whole process's (write
// buffers and caches included): the bound is what the process may grow to
// because of reads, not a budget of the reads alone.
//
// The heap measured is its objects, live and garbage not yet collected: reading
// it costs nothing, while forcing a collection to see only what is live takes
// long enough with gigabytes of heap (a second or more, on two busy cores) for
// three 1 ms subqueries to allocate 5 GiB more meanwhile, as measured. For
// garbage not to count, the process runs with a Go memory limit at the same
// value (debug.SetMemoryLimit; tsdb serve sets it): the collector then runs as
// the heap nears the bound, and the heap is over it only when what is live is.

// errReadMemory is the cause of the reads the guard cancelled; the middleware
// answers them 503 with its text.
var errReadMemory = errors.New("read memory limit")

const (
	// guardPoll is how often the guard reads the heap while reads run: the
	// overshoot past the bound is what the reads allocate in about this long.
	guardPoll = 10 * time.Millisecond
	// heapObjectsMetric is the bytes of heap objects, live and not yet swept:
	// read without stopping the world.
	heapObjectsMetric = "/memory/classes/heap/objects:bytes"
)

// memoryGuard bounds the memory of the PromQL queries and remote reads running
// at once (QueryOptions.MaxMemory): while any runs it reads the heap every
// guardPoll; over the limit, it cancels every read then running (their answers
// are 503 "unavailable", which Grafana shows and clients may retry), logs
// once, and lets the next ones in. It is idle (no goroutine) while no read
// runs.
type memoryGuard struct {
	limit  uint64
	logger *slog.Logger
	// heap reads the heap's size; a test replaces it.
	heap func() uint64

	mu      sync.Mutex
	running map[*guardedRead]struct{}
	polling bool
}

// guardedRead is one read the guard may cancel.
type guardedRead struct {
	cancel context.CancelCauseFunc
}

// newMemoryGuard returns the guard of limit bytes of heap; 0 is no guard (nil).
func newMemoryGuard(limit int64, logger *slog.Logger) *memoryGuard {
	if limit <= 0 {
		return nil
	}
	return &memoryGuard{
		limit:   uint64(limit),
		logger:  logger,
		heap:    readHeapObjects,
		running: map[*guardedRead]struct{}{},
	}
}

func readHeapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// track registers a read for the life of ctx's request: the returned context
// is cancelled with errReadMemory if the guard trips, and done unregisters it.
func (g *memoryGuard) track(ctx context.Context) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	read := &guardedRead{cancel: cancel}
	g.mu.Lock()
	g.running[read] = struct{}{}
	if !g.polling {
		g.polling = true
		go g.poll()
	}
	g.mu.Unlock()
	return ctx, func() {
		g.mu.Lock()
		delete(g.running, read)
		g.mu.Unlock()
		cancel(nil)
	}
}

// poll samples the heap until no read runs.
func (g *memoryGuard) poll() {
	t := time.NewTicker(guardPoll)
	defer t.Stop()
	for range t.C {
		g.mu.Lock()
		if len(g.running) == 0 {
			g.polling = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		if heap := g.heap(); heap > g.limit {
			g.cancelAll(heap)
		}
	}
}

// cancelAll cancels every read running now.
func (g *memoryGuard) cancelAll(heap uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.running)
	cause := fmt.Errorf("%w: the heap holds %s, more than --query.max-memory %s: the %d "+
		"queries and remote reads running were cancelled to free memory; retry, or ask for less "+
		"(fewer series, a shorter range, a larger step or subquery resolution)",
		errReadMemory, units.Base2Bytes(heap), units.Base2Bytes(g.limit), n)
	for read := range g.running {
		read.cancel(cause)
		delete(g.running, read)
	}
	g.logger.Warn("reads cancelled: over the memory limit", "heap_bytes", heap, "limit_bytes", g.limit,
		"cancelled", n)
}

// guardReads runs next under the guard: the request's context is tracked, and
// an answer to a request the guard cancelled, whatever next made of its
// cancelled context, is replaced by 503 with the guard's reason, in the form
// of the endpoint (api: Prometheus' JSON error envelope; otherwise plain text,
// as remote-read clients expect). A nil guard is next.
func (g *memoryGuard) guardReads(api bool, next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, done := g.track(r.Context())
		defer done()
		gw := &guardedResponse{ResponseWriter: w, ctx: ctx, api: api}
		next.ServeHTTP(gw, r.WithContext(ctx))
	})
}

// guardedResponse replaces the answer of a cancelled read, decided when its
// status is written: a read the guard cancelled before it answered.
type guardedResponse struct {
	http.ResponseWriter
	ctx      context.Context
	api      bool
	decided  bool
	replaced bool
}

func (w *guardedResponse) WriteHeader(status int) {
	if w.decided {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.decided = true
	cause := context.Cause(w.ctx)
	if status == http.StatusOK || !errors.Is(cause, errReadMemory) {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.replaced = true
	h := w.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	if w.api {
		respondError(w.ResponseWriter, errUnavailableType, cause)
		return
	}
	http.Error(w.ResponseWriter, cause.Error(), http.StatusServiceUnavailable)
}

func (w *guardedResponse) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(b), nil // the cancelled read's own answer is dropped
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes of the
// streamed remote-read response).
func (w *guardedResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes on (the streamed remote-read response flushes each frame).
func (w *guardedResponse) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.replaced {
		f.Flush()
	}
}
