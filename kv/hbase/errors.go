package hbase

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/region"

	"github.com/hbtsdb/hbtsdb/kv"
)

// classifiedError is an error from gohbase or HBase with the kv sentinel it
// maps to. Error() is a one-line summary (a Java exception's stack trace is cut to
// its first line); Unwrap exposes both the sentinel and the original error.
type classifiedError struct {
	sentinel error // nil when the error maps to no sentinel
	msg      string
	err      error
}

func (e *classifiedError) Error() string { return e.msg }

func (e *classifiedError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.err}
	}
	return []error{e.sentinel, e.err}
}

// Java exception classes (by simple name) and the sentinel each maps to. HBase sends
// them as "HBase Java exception <class>:\n<stack>" (gohbase region.exceptionToError)
// or, for master procedures, "procedure exception: <class>: <message>".
var javaExceptions = map[string]error{
	"TableNotFoundException":          kv.ErrTableNotFound,
	"NoSuchColumnFamilyException":     kv.ErrInvalidArgument,
	"InvalidFamilyOperationException": kv.ErrInvalidArgument,
	"FailedSanityCheckException":      kv.ErrInvalidArgument,
	"DoNotRetryIOException":           kv.ErrInvalidArgument,
	"IllegalArgumentException":        kv.ErrInvalidArgument,
	"WrongRowIOException":             kv.ErrInvalidArgument,
	"TableNotEnabledException":        kv.ErrUnavailable,
	"TableNotDisabledException":       kv.ErrUnavailable,
	"RegionTooBusyException":          kv.ErrUnavailable,
	"CallQueueTooBigException":        kv.ErrUnavailable,
	"RpcThrottlingException":          kv.ErrUnavailable,
	"PleaseHoldException":             kv.ErrUnavailable,
	"ServerNotRunningYetException":    kv.ErrUnavailable,
	"NotServingRegionException":       kv.ErrUnavailable,
	"RegionOpeningException":          kv.ErrUnavailable,
	"RegionMovedException":            kv.ErrUnavailable,
	"CallTimeoutException":            kv.ErrUnavailable,
	"ConnectException":                kv.ErrUnavailable,
	"MasterNotRunningException":       kv.ErrUnavailable,
	// A scan whose region split, merged, moved or closed under it: the region
	// server no longer knows the scanner (or saw its calls out of order). The
	// cluster test (cmd/tsdb TestHBaseCluster) met these as 500s of remote
	// read while a region split; the scan can be asked again.
	"UnknownScannerException":        kv.ErrUnavailable,
	"OutOfOrderScannerNextException": kv.ErrUnavailable,
	"ScannerResetException":          kv.ErrUnavailable,
	"RegionServerStoppedException":   kv.ErrUnavailable,
	"RegionServerAbortedException":   kv.ErrUnavailable,
}

// javaException extracts the exception class and the one-line message of an HBase
// server exception from gohbase's error text; ok is false for other errors.
func javaException(err error) (class, message string, ok bool) {
	text := err.Error()
	for _, marker := range []string{"HBase Java exception ", "procedure exception: "} {
		i := strings.Index(text, marker)
		if i < 0 {
			continue
		}
		rest := text[i+len(marker):]
		end := strings.IndexAny(rest, ":\n")
		if end < 0 {
			return rest, "", true
		}
		class = rest[:end]
		// The stack trace starts with "<class>: <message>" on its first line.
		body := strings.TrimLeft(rest[end:], ":\n ")
		if line, _, _ := strings.Cut(body, "\n"); line != "" {
			message = strings.TrimPrefix(strings.TrimPrefix(line, class), ": ")
		}
		return class, message, true
	}
	return "", "", false
}

// simpleName is the class name without its package.
func simpleName(class string) string {
	return class[strings.LastIndexByte(class, '.')+1:]
}

// classify maps an error of a gohbase call made under ctx (the operation's context,
// see Store.begin) to one that wraps the kv sentinel callers branch on:
//
//   - the store was closed meanwhile: ErrClosed;
//   - ctx was cancelled: ctx.Err() (context.Canceled);
//   - ctx expired: context.DeadlineExceeded and ErrUnavailable (HBase did not answer
//     in time, which a caller may retry);
//   - gohbase.TableNotFound, TableNotFoundException: ErrTableNotFound;
//   - NoSuchColumnFamilyException and other DoNotRetryIOExceptions (a cell too
//     large, an increment of a cell that is not 8 bytes, ...): ErrInvalidArgument;
//   - gohbase's retryable, region and server errors, unreachable servers, busy or
//     moving regions: ErrUnavailable.
//
// Any other error is returned with a one-line message and no sentinel.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(context.Cause(ctx), kv.ErrClosed) {
		return &classifiedError{sentinel: kv.ErrClosed, msg: kv.ErrClosed.Error(), err: err}
	}
	if ctxErr := ctx.Err(); ctxErr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if ctxErr == nil {
			ctxErr = err
		}
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return &classifiedError{sentinel: kv.ErrUnavailable, msg: "no answer from HBase before the deadline: " + ctxErr.Error(), err: ctxErr}
		}
		return &classifiedError{msg: ctxErr.Error(), err: ctxErr}
	}
	var (
		retryable  region.RetryableError
		server     region.ServerError
		notServing region.NotServingRegionError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, gohbase.TableNotFound):
		return &classifiedError{sentinel: kv.ErrTableNotFound, msg: kv.ErrTableNotFound.Error(), err: err}
	case errors.Is(err, gohbase.ErrClientClosed), errors.Is(err, gohbase.ErrCannotFindRegion),
		errors.Is(err, gohbase.NotExecutedError),
		errors.As(err, &retryable), errors.As(err, &server), errors.As(err, &notServing),
		errors.As(err, &netErr):
		return &classifiedError{sentinel: kv.ErrUnavailable, msg: firstLine(err.Error()), err: err}
	}
	if class, message, ok := javaException(err); ok {
		name := simpleName(class)
		if i := strings.Index(message, " in region "); i > 0 && name == "NoSuchColumnFamilyException" {
			message = message[:i] // the rest is the region's name and the table's whole schema
		}
		if len(message) > maxMessage {
			message = message[:maxMessage] + "..."
		}
		msg := "HBase " + name
		if message != "" {
			msg += ": " + message
		}
		return &classifiedError{sentinel: javaExceptions[name], msg: msg, err: err}
	}
	return &classifiedError{msg: firstLine(err.Error()), err: err}
}

// maxMessage caps the length of an HBase exception message in an error.
const maxMessage = 300

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// isJavaException reports whether err is the HBase exception with the simple class
// name, such as "TableExistsException".
func isJavaException(err error, name string) bool {
	class, _, ok := javaException(err)
	return ok && simpleName(class) == name
}
