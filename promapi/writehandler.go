package promapi

import "log/slog"

// writeHandler serves the write endpoints, /api/v1/write and /api/put, which share
// one store, one set of limits, one concurrency bound and one byte budget.
type writeHandler struct {
	store    Provider
	limits   WriteLimits
	logger   *slog.Logger
	inflight *limiter
	bytes    *byteBudget
}

func newWriteHandler(opts Options) *writeHandler {
	limits := opts.WriteLimits.withDefaults()
	return &writeHandler{
		store:    opts.DB,
		limits:   limits,
		logger:   opts.Logger,
		inflight: newLimiter(limits.MaxConcurrentRequests),
		bytes: &byteBudget{max: limits.MaxInflightBytes, what: "write request bodies",
			flag: "--write.max-inflight-bytes"},
	}
}

// writer is the Writer of the store for one request, or an error answered with
// 503 (so that senders retry; Provider.store) while there is none: the store
// is not open yet, or none is configured. It is asked once the body is decoded,
// so that a request that can never succeed is answered 4xx whatever the store.
func (h *writeHandler) writer() (Writer, error) {
	st, err := h.store.store()
	if err != nil {
		return nil, err
	}
	return st, nil
}
