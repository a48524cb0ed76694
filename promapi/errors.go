package promapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/write"
)

// Sentinel errors of the HTTP surface: promapi's own conditions, which statusOf
// (write endpoints) and readHandler.fail (read endpoints) map to status codes.
// The layers below have their own (write.ErrInvalid for a request the writer
// refuses whole, kv.ErrUnavailable for a store that does not answer), which
// promapi maps but never wraps for a condition of its own.
var (
	// errInvalidBody: a write request body that cannot be read or decoded
	// (empty, not snappy or gzip, over --write.max-decompressed-bytes, not
	// arrived in time): the client's fault, and retrying cannot fix it. HTTP
	// 400. Worded as write.ErrInvalid, so that a sender reads one prefix for
	// every write request refused whole.
	errInvalidBody = errors.New("invalid write request")
	// errUnsupportedMedia: a Content-Type, proto message or Content-Encoding this
	// server does not accept. HTTP 415.
	errUnsupportedMedia = errors.New("unsupported media type")
	// errContentTooLarge: the request body (as sent, before decompression) is over
	// --write.max-body-bytes. HTTP 413.
	errContentTooLarge = errors.New("request body too large")
	// errInvalidRead: a remote-read request that cannot be read (not snappy, a
	// length claim it cannot hold). HTTP 400.
	errInvalidRead = errors.New("invalid remote-read request")
	// errOverloaded: a bound of what is in flight (write requests, bytes of
	// write or remote-read bodies) is reached. HTTP 429 with Retry-After.
	errOverloaded = errors.New("overloaded")
	// errStoreUnavailable: there is no DB to serve from — none is
	// configured, or the Provider has none (yet) and does not say that the
	// store is unavailable (kv.ErrUnavailable). HTTP 503, so that clients
	// retry.
	errStoreUnavailable = errors.New("store unavailable")
)

// statusClientClosedRequest is nginx's status for a request whose client closed
// the connection before the answer.
const statusClientClosedRequest = 499

// statusOf is where an error of a write endpoint (/api/v1/write, /api/put)
// becomes an HTTP status code; the read endpoints map theirs in readHandler.fail
// and Prometheus' handlers (see doc.go).
//
// The remote-write specs decide the classes: "Receivers MUST respond with HTTP
// status code 5xx when the write fails and SHOULD be retried. They MUST respond
// with HTTP status code 4xx when the request is invalid, will never be able to
// succeed and should not be retried" (1.0, Retries & Backoff); 429 is the
// overloaded-server answer a sender MAY retry (2.0, Retries & Backoff); 415 is for
// an unsupported content type or encoding (2.0, Unsupported Request Content).
// Everything that is not known to be the client's fault is a 5xx, so that a
// sender retries instead of dropping data. A store that is not open yet (no
// Provider's DB, errStoreUnavailable) is 503, as is one that does not answer.
func statusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusNoContent
	case errors.Is(err, errUnsupportedMedia):
		return http.StatusUnsupportedMediaType
	case errors.As(err, new(bodyTimeout)):
		return http.StatusRequestTimeout
	case errors.Is(err, errContentTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errOverloaded):
		return http.StatusTooManyRequests
	case errors.Is(err, errInvalidBody), errors.Is(err, write.ErrInvalid), errors.Is(err, errInvalidRead),
		errors.Is(err, kv.ErrInvalidArgument):
		// kv.ErrInvalidArgument: the store refused the data itself (retrying
		// "will not help", kv.go); nothing of the batch is stored.
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled):
		// The client went away (or the server is stopping): nothing was
		// acknowledged, and nobody reads the answer. nginx's 499 says so in the
		// log without counting as a server failure.
		return statusClientClosedRequest
	case unavailable(err), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	default:
		// A dropped table, a bug: not the client's fault.
		return http.StatusInternalServerError
	}
}

// unavailable reports whether err says that there is no store to serve from
// right now: none yet (errStoreUnavailable), or one that does not answer or is
// closed. Every endpoint answers it with 503, so that clients retry.
func unavailable(err error) bool {
	return errors.Is(err, errStoreUnavailable) || errors.Is(err, kv.ErrUnavailable) || errors.Is(err, kv.ErrClosed)
}

// logWriteFailure logs the one line a failed write request is worth: a warning for
// a request the client must fix, an error for one the server failed.
func logWriteFailure(logger *slog.Logger, r *http.Request, status int, err error, attrs ...any) {
	level, msg := slog.LevelWarn, "write request rejected"
	if status == statusClientClosedRequest {
		msg = "write request abandoned by the client"
	} else if status >= 500 {
		level, msg = slog.LevelError, "write request failed"
	}
	attrs = append([]any{"path", r.URL.Path, "status", status, "remote", r.RemoteAddr,
		"user_agent", r.UserAgent(), "err", err}, attrs...)
	logger.Log(r.Context(), level, msg, attrs...)
}

// bodyTimeout is a request body that did not arrive within its read timeout:
// 408 Request Timeout, and the connection is closed. It wraps the error that
// says which flag bounds it (and, on the write endpoints, errInvalidBody: the
// request is refused, not retried by Prometheus, whose sender is what stalled).
type bodyTimeout struct{ error }

func (e bodyTimeout) Unwrap() error { return e.error }
