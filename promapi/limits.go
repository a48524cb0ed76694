package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hbtsdb/hbtsdb/write"
)

// Writer stores decoded write requests; write.Writer and db.DB satisfy it. Write
// returns an error wrapping write.ErrInvalid for a request rejected whole (nothing
// written), another error when the store failed (nothing acknowledged), and
// otherwise a Result whose Rejected lists what was invalid while the rest was
// written.
type Writer interface {
	Write(ctx context.Context, req *write.Request) (write.Result, error)
}

// WriteLimits bound the HTTP side of the write endpoints (/api/v1/write and
// /api/put); write.Limits bound what a decoded request may carry. Zero fields take
// the defaults of DefaultWriteLimits.
//
// Memory: a write request holds its body, its decompressed body and the decoded
// request at once, so the worst case is about MaxConcurrentRequests x
// (MaxBodyBytes + 2 x MaxDecompressedBytes).
type WriteLimits struct {
	// MaxBodyBytes bounds the request body as sent (snappy- or gzip-compressed, or
	// plain JSON) [16 MiB]. Over it: 413, checked against Content-Length before
	// anything is read.
	MaxBodyBytes int64
	// MaxDecompressedBytes bounds the body once decompressed [64 MiB]; a snappy
	// body's decoded length is checked before it is decoded. Over it: 400.
	MaxDecompressedBytes int64
	// MaxConcurrentRequests bounds the write requests served at once [64]; one
	// more is answered 429 with Retry-After before its body is read.
	MaxConcurrentRequests int
	// RetryAfter is what a 429 tells the client to wait [1s].
	RetryAfter time.Duration
}

// DefaultWriteLimits are the limits the server runs with unless flags say
// otherwise. 2 000 samples (Prometheus' default batch) take about 100 KiB
// compressed, so the defaults leave two orders of magnitude of headroom while
// bounding memory.
func DefaultWriteLimits() WriteLimits {
	return WriteLimits{
		MaxBodyBytes:          16 << 20,
		MaxDecompressedBytes:  64 << 20,
		MaxConcurrentRequests: 64,
		RetryAfter:            time.Second,
	}
}

// Validate refuses limits that cannot work: every field is a bound or a
// duration whose zero value takes the default and whose negative values mean
// nothing. NewRouter calls it; the error names each field and value.
func (l WriteLimits) Validate() error {
	return errors.Join(
		notNegative("WriteLimits.MaxBodyBytes", l.MaxBodyBytes),
		notNegative("WriteLimits.MaxDecompressedBytes", l.MaxDecompressedBytes),
		notNegative("WriteLimits.MaxConcurrentRequests", l.MaxConcurrentRequests),
		notNegative("WriteLimits.RetryAfter", l.RetryAfter),
	)
}

func (l WriteLimits) withDefaults() WriteLimits {
	d := DefaultWriteLimits()
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.MaxDecompressedBytes <= 0 {
		l.MaxDecompressedBytes = d.MaxDecompressedBytes
	}
	if l.MaxConcurrentRequests <= 0 {
		l.MaxConcurrentRequests = d.MaxConcurrentRequests
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = d.RetryAfter
	}
	return l
}

// limiter bounds the write requests in flight. Acquiring never waits: a request
// over the bound is refused at once, before its body is read, so that an
// overloaded server sheds load instead of queueing it in memory.
type limiter struct {
	slots chan struct{}
}

func newLimiter(n int) *limiter { return &limiter{slots: make(chan struct{}, n)} }

func (l *limiter) tryAcquire() bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (l *limiter) release() { <-l.slots }

// limitConcurrency answers 429 with Retry-After when the limiter is full.
// "Receivers MAY return a 429 HTTP Too Many Requests status code to indicate the
// overloaded server situation. Receivers MAY return the Retry-After header"
// (remote-write 2.0, Retries & Backoff).
func (h *writeHandler) limitConcurrency(next http.Handler, fail func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.inflight.tryAcquire() {
			err := fmt.Errorf("%w: more than %d write requests in flight (--write.max-concurrent-requests); retry later",
				errOverloaded, h.limits.MaxConcurrentRequests)
			w.Header().Set("Retry-After", strconv.Itoa(int((h.limits.RetryAfter+time.Second-1)/time.Second)))
			fail(w, r, err)
			return
		}
		defer h.inflight.release()
		next.ServeHTTP(w, r)
	})
}
