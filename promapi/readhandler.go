package promapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Reader answers the native read endpoints; *query.Reader and *db.DB satisfy it.
type Reader interface {
	// Last returns the newest n samples of each series of metric on host that
	// matches any of matcherSets (every series when there is none).
	Last(ctx context.Context, host, metric string, n int, matcherSets ...[]*labels.Matcher) ([]query.LastSeries, error)
	// Metadata returns the metadata stored for one metric family.
	Metadata(ctx context.Context, metric string) (schema.Metadata, bool, error)
	// ListMetadata returns the metadata of every metric family, sorted by name,
	// at most limit of them when limit > 0.
	ListMetadata(ctx context.Context, limit int) ([]schema.Metadata, error)
}

// readHandler serves the read endpoints hbtsdb implements itself.
type readHandler struct {
	store  Provider
	limits QueryOptions
	logger *slog.Logger
}

// reader is the Reader once the store can serve reads, and otherwise an error
// that fail answers with 503 (Provider.store).
func (h *readHandler) reader() (Reader, error) {
	return h.store.store()
}

// fail answers a read that failed in the store with Prometheus' error envelope:
// canceled (499) when the client went away, timeout (503) on a deadline,
// unavailable (503) when the store is not open or does not answer, internal
// (500) otherwise; the last three are logged.
func (h *readHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	typ := errInternalType
	switch {
	case errors.Is(err, context.Canceled):
		typ = errCanceledType
	case errors.Is(err, context.DeadlineExceeded):
		typ = errTimeoutType
	case unavailable(err):
		typ = errUnavailableType
	}
	if typ != errCanceledType {
		h.logger.Error("read request failed", "path", r.URL.Path, "status", typ.status, "remote", r.RemoteAddr, "err", err)
	}
	respondError(w, typ, err)
}
