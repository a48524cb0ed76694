package promapi

import (
	"net/http"
	"sync/atomic"
)

// IngestStats counts what the write endpoints (/api/v1/write, /api/put, OTLP) took in,
// for the periodic ingest summary tsdb serve logs. It is safe for concurrent use;
// the zero value is ready. (Prometheus metrics of the same events are /metrics'
// job; these are plain totals a log line can difference.)
type IngestStats struct {
	requests, failed, series, samples, rejected atomic.Int64
}

// IngestCounts are totals since the IngestStats was made.
type IngestCounts struct {
	// Requests are write requests answered; FailedRequests those of them
	// answered with a status other than 2xx (rejected whole or in part, or the
	// store failed).
	Requests, FailedRequests int64
	// Series and Samples count what was durably stored: Series sums the series
	// each request wrote (a series written by two requests counts twice).
	Series, Samples int64
	// RejectedSamples are samples not stored because they were invalid.
	RejectedSamples int64
}

// Counts returns the totals so far.
func (s *IngestStats) Counts() IngestCounts {
	return IngestCounts{
		Requests: s.requests.Load(), FailedRequests: s.failed.Load(),
		Series: s.series.Load(), Samples: s.samples.Load(), RejectedSamples: s.rejected.Load(),
	}
}

// Sub is c minus an earlier reading.
func (c IngestCounts) Sub(earlier IngestCounts) IngestCounts {
	return IngestCounts{
		Requests: c.Requests - earlier.Requests, FailedRequests: c.FailedRequests - earlier.FailedRequests,
		Series: c.Series - earlier.Series, Samples: c.Samples - earlier.Samples,
		RejectedSamples: c.RejectedSamples - earlier.RejectedSamples,
	}
}

// add counts one answered request (failed unless its status is 2xx) and its tally.
func (s *IngestStats) add(status int, t *ingestTally) {
	s.requests.Add(1)
	if status < 200 || status > 299 {
		s.failed.Add(1)
	}
	s.series.Add(int64(t.series))
	s.samples.Add(int64(t.samples))
	s.rejected.Add(int64(t.rejected))
}

// statusWriter remembers the status code a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (the body read
// deadlines of the write endpoints).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
