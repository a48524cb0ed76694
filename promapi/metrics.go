package promapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hbtsdb/hbtsdb/write"
)

// httpMetrics are the HTTP surface's own metrics, registered on
// Options.Registerer: every routed request by route and status code, its
// latency by route, and what the write endpoints stored and rejected by
// protocol. Names follow Prometheus' conventions (hbtsdb_ prefix, _total
// counters, base units).
type httpMetrics struct {
	requests        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	writeRequests   *prometheus.CounterVec
	samplesWritten  *prometheus.CounterVec
	histsWritten    *prometheus.CounterVec
	exemplarsStored *prometheus.CounterVec
	samplesRejected *prometheus.CounterVec
	cellsRead       *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_http_requests_total",
			Help: "HTTP requests answered, by route (handler) and status code.",
		}, []string{"handler", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hbtsdb_http_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer, by route (handler).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"handler"}),
		writeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_write_requests_total",
			Help: "Write requests answered, by protocol (remote_write_v1, remote_write_v2, put, otlp, vm_import, vm_import_prometheus) and outcome: " +
				"success (2xx), rejected (4xx: invalid input, nothing or part of it stored) or failed (5xx: the store failed; the sender retries).",
		}, []string{"protocol", "outcome"}),
		samplesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_samples_written_total",
			Help: "Float samples durably stored by the write endpoints, by protocol.",
		}, []string{"protocol"}),
		histsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_histogram_samples_written_total",
			Help: "Native histogram samples durably stored by remote write, by protocol.",
		}, []string{"protocol"}),
		exemplarsStored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_exemplars_written_total",
			Help: "Exemplars durably stored by remote write, by protocol (invalid ones and repeats of stored ones are not counted).",
		}, []string{"protocol"}),
		samplesRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_samples_rejected_total",
			Help: "Samples not stored because they were invalid (the request's answer says why), by protocol and reason: " +
				"invalid_labels, too_old (older than --retention.raw), out_of_range (in the future or not storable), " +
				"invalid_histogram (a native histogram sample that does not validate), " +
				"duplicate_sample (a histogram at the timestamp of a float sample of its series in the same request), " +
				"invalid_datapoint (an /api/put datapoint that does not decode).",
		}, []string{"protocol", "reason"}),
		cellsRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hbtsdb_query_cells_read_total",
			Help: "Cells PromQL queries and remote reads read, by source: raw (the data table's raw cells), " +
				"chunk (its compressed chunk cells) and rollup (rollup cells used, one per series and data bucket).",
		}, []string{"source"}),
	}
	for _, source := range []string{"raw", "chunk", "rollup"} {
		m.cellsRead.WithLabelValues(source)
	}
	reg.MustRegister(m.requests, m.duration, m.writeRequests, m.samplesWritten, m.histsWritten, m.exemplarsStored, m.samplesRejected, m.cellsRead)
	return m
}

// instrument is mux middleware counting and timing every routed request by its
// route template (/api/v1/label/{name}/values, not each name).
func (m *httpMetrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler := "other"
		if route := mux.CurrentRoute(r); route != nil {
			if tpl, err := route.GetPathTemplate(); err == nil {
				handler = tpl
			}
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		status := http.StatusInternalServerError // unless the handler returns
		defer func() {
			m.requests.WithLabelValues(handler, strconv.Itoa(status)).Inc()
			m.duration.WithLabelValues(handler).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
		status = sw.status
	})
}

// writeOutcome is the outcome label of a write request answered with status.
func writeOutcome(status int) string {
	switch {
	case status >= 200 && status < 300:
		return "success"
	case status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != statusClientClosedRequest:
		return "rejected"
	default:
		return "failed"
	}
}

// metricsHandler serves the gatherer's metrics in the text or OpenMetrics
// format, as Prometheus scrapes them.
func metricsHandler(g prometheus.Gatherer, reg prometheus.Registerer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}

// ingestTally is what one write request stored and rejected: the handlers fill
// it in (writeAndTally, tallyRejected), and countWrites reads it once the
// request is answered.
type ingestTally struct {
	series, samples, rejected int
	histograms, exemplars     int
	byReason                  map[string]int // rejected samples by reason label
}

// reject adds n rejected samples of reason to the tally.
func (t *ingestTally) reject(reason string, n int) {
	if n <= 0 {
		return
	}
	if t.byReason == nil {
		t.byReason = map[string]int{}
	}
	t.rejected += n
	t.byReason[reason] += n
}

// rejectReason is the reason label of a write.Rejection's kind.
func rejectReason(kind error) string {
	switch {
	case errors.Is(kind, write.ErrInvalidLabels):
		return "invalid_labels"
	case errors.Is(kind, write.ErrTooOld):
		return "too_old"
	case errors.Is(kind, write.ErrOutOfRange):
		return "out_of_range"
	case errors.Is(kind, write.ErrInvalidHistogram):
		return "invalid_histogram"
	case errors.Is(kind, write.ErrDuplicateSample):
		return "duplicate_sample"
	default:
		return "invalid"
	}
}

type tallyKey struct{}

// writeAndTally writes req with wr and adds what was stored and rejected to
// the request's tally; it returns how many samples the writer rejected.
func writeAndTally(ctx context.Context, wr Writer, req *write.Request) (write.Result, int, error) {
	res, err := wr.Write(ctx, req)
	rejected := 0
	if err == nil {
		for _, r := range res.Rejected {
			rejected += r.Samples
		}
	}
	if t, ok := ctx.Value(tallyKey{}).(*ingestTally); ok && err == nil {
		t.series += res.SeriesWritten
		t.samples += res.SamplesWritten
		t.histograms += res.HistogramsWritten
		t.exemplars += res.ExemplarsWritten
		for _, r := range res.Rejected {
			t.reject(rejectReason(r.Kind), r.Samples)
		}
	}
	return res, rejected, err
}

// tallyRejected adds n rejected samples of reason to the request's tally.
func tallyRejected(ctx context.Context, reason string, n int) {
	if t, ok := ctx.Value(tallyKey{}).(*ingestTally); ok {
		t.reject(reason, n)
	}
}

// countWrites wraps a write endpoint: once next has answered, the request's
// status and tally go to the ingest summary's stats and to the write metrics
// (either may be nil). protocol names the request's protocol.
func countWrites(stats *IngestStats, m *httpMetrics, protocol func(*http.Request) string, next http.Handler) http.Handler {
	if stats == nil && m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tally := &ingestTally{}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), tallyKey{}, tally)))
		if stats != nil {
			stats.add(sw.status, tally)
		}
		if m != nil {
			p := protocol(r)
			m.writeRequests.WithLabelValues(p, writeOutcome(sw.status)).Inc()
			m.samplesWritten.WithLabelValues(p).Add(float64(tally.samples))
			m.histsWritten.WithLabelValues(p).Add(float64(tally.histograms))
			m.exemplarsStored.WithLabelValues(p).Add(float64(tally.exemplars))
			for reason, n := range tally.byReason {
				m.samplesRejected.WithLabelValues(p, reason).Add(float64(n))
			}
		}
	})
}

// remoteWriteProtocol is the protocol label of a remote-write request: 2.0 when
// its Content-Type asks for io.prometheus.write.v2.Request, else 1.0.
func remoteWriteProtocol(r *http.Request) string {
	if msgType, err := negotiate(r); err == nil && msgType == remoteapi.WriteV2MessageType {
		return "remote_write_v2"
	}
	return "remote_write_v1"
}

func putProtocol(*http.Request) string { return "put" }
