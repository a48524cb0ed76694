package promapi

import "log/slog"

// writeHandler serves the write endpoints, /api/v1/write and /api/put, which share
// one Writer, one set of limits and one concurrency bound.
type writeHandler struct {
	writer   Writer
	limits   WriteLimits
	logger   *slog.Logger
	inflight *limiter
}

func newWriteHandler(opts Options) *writeHandler {
	limits := opts.WriteLimits.withDefaults()
	return &writeHandler{
		writer:   opts.Writer,
		limits:   limits,
		logger:   opts.Logger,
		inflight: newLimiter(limits.MaxConcurrentRequests),
	}
}
