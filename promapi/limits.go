package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
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
// Memory: the bodies of the write requests being received or served, as sent
// and once decompressed, are bounded together by MaxInflightBytes (buffers grow
// by doubling as bytes arrive, so they take at most about twice that); the
// decoded requests of the MaxConcurrentRequests being decoded and written come
// on top.
type WriteLimits struct {
	// MaxBodyBytes bounds the request body as sent (snappy- or gzip-compressed, or
	// plain JSON) [16 MiB]. Over it: 413, checked against Content-Length before
	// anything is read. Content-Length is never allocated up front: buffers grow
	// as bytes arrive.
	MaxBodyBytes int64
	// MaxDecompressedBytes bounds the body once decompressed [64 MiB]; a snappy
	// body's decoded length is checked before it is decoded. Over it: 400.
	MaxDecompressedBytes int64
	// MaxConcurrentRequests bounds the write requests decoded and written at once
	// [64]. A request takes its slot only once its whole body has arrived, so
	// slow senders hold none; one more is answered 429 with Retry-After.
	MaxConcurrentRequests int
	// MaxInflightBytes bounds the bytes of write request bodies held in memory
	// at once across all requests, as received and as decompressed [256 MiB].
	// A request whose next bytes do not fit is answered 429 with Retry-After.
	// It must be at least MaxBodyBytes + MaxDecompressedBytes, so that one
	// request of the largest size can be served.
	MaxInflightBytes int64
	// BodyReadTimeout bounds the time from the start of the handler until the
	// whole body has arrived [30s]; a body that takes longer is answered 408 and
	// its connection closed.
	BodyReadTimeout time.Duration
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
		MaxInflightBytes:      256 << 20,
		BodyReadTimeout:       30 * time.Second,
		RetryAfter:            time.Second,
	}
}

// Validate refuses limits that cannot work: every field is a bound or a
// duration whose zero value takes the default and whose negative values mean
// nothing, and the in-flight bytes must hold one request of the largest size.
// NewRouter calls it; the error names each field and value.
func (l WriteLimits) Validate() error {
	err := errors.Join(
		notNegative("WriteLimits.MaxBodyBytes", l.MaxBodyBytes),
		notNegative("WriteLimits.MaxDecompressedBytes", l.MaxDecompressedBytes),
		notNegative("WriteLimits.MaxConcurrentRequests", l.MaxConcurrentRequests),
		notNegative("WriteLimits.MaxInflightBytes", l.MaxInflightBytes),
		notNegative("WriteLimits.BodyReadTimeout", l.BodyReadTimeout),
		notNegative("WriteLimits.RetryAfter", l.RetryAfter),
	)
	if err != nil {
		return err
	}
	d := l.withDefaults()
	if need := d.MaxBodyBytes + d.MaxDecompressedBytes; d.MaxInflightBytes < need {
		return fmt.Errorf("promapi: WriteLimits.MaxInflightBytes (%d) must be at least promapi: WriteLimits.MaxBodyBytes "+
			"+ promapi: WriteLimits.MaxDecompressedBytes (%d + %d = %d), or a request of the largest size could never be served",
			d.MaxInflightBytes, d.MaxBodyBytes, d.MaxDecompressedBytes, need)
	}
	return nil
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
	if l.MaxInflightBytes <= 0 {
		l.MaxInflightBytes = d.MaxInflightBytes
	}
	if l.BodyReadTimeout <= 0 {
		l.BodyReadTimeout = d.BodyReadTimeout
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = d.RetryAfter
	}
	return l
}

// retryAfter is the Retry-After header's value: RetryAfter in whole seconds,
// rounded up.
func (l WriteLimits) retryAfter() string {
	return strconv.Itoa(int((l.RetryAfter + time.Second - 1) / time.Second))
}

// limiter bounds the write requests in flight. Acquiring never waits: a request
// over the bound is refused at once, so that an overloaded server sheds load
// instead of queueing it in memory.
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

// acquireSlot takes one of the MaxConcurrentRequests slots, or fails with
// errOverloaded (429 with Retry-After: "Receivers MAY return a 429 HTTP Too Many
// Requests status code to indicate the overloaded server situation. Receivers
// MAY return the Retry-After header", remote-write 2.0, Retries & Backoff). It
// is called once the whole body has arrived, so that slow senders hold no slot.
// The caller releases the slot with h.inflight.release.
func (h *writeHandler) acquireSlot() error {
	if !h.inflight.tryAcquire() {
		return fmt.Errorf("%w: more than %d write requests in flight (--write.max-concurrent-requests); retry later",
			errOverloaded, h.limits.MaxConcurrentRequests)
	}
	return nil
}

// byteBudget bounds the bytes of request bodies held at once across requests
// (MaxInflightBytes). Like limiter, it never waits.
type byteBudget struct {
	mu   sync.Mutex
	used int64
	max  int64
	// what and flag name the bodies and the flag of max in errors
	// ("write request bodies", "--write.max-inflight-bytes").
	what, flag string
}

func (b *byteBudget) tryReserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse is how many bytes are reserved now.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// reservation is what one request holds of the byte budget; release gives it
// all back when the request is answered.
type reservation struct {
	budget *byteBudget
	held   int64
}

// reserve takes n more bytes, or fails with errOverloaded (429).
func (r *reservation) reserve(n int64) error {
	if n <= 0 {
		return nil
	}
	if !r.budget.tryReserve(n) {
		return fmt.Errorf("%w: more than %d bytes of %s in flight (%s); retry later",
			errOverloaded, r.budget.max, r.budget.what, r.budget.flag)
	}
	r.held += n
	return nil
}

func (r *reservation) release() {
	r.budget.release(r.held)
	r.held = 0
}

// setRetryAfter adds Retry-After to a 429 answer.
func (h *writeHandler) setRetryAfter(w http.ResponseWriter, status int) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", h.limits.retryAfter())
	}
}
