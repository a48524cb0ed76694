package promapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/opentsdb"
	"github.com/hbtsdb/hbtsdb/query"
)

// DefaultOpenTSDBQueryOptions are the bounds of /api/query unless flags say otherwise.
func DefaultOpenTSDBQueryOptions() OpenTSDBQueryOptions {
	return OpenTSDBQueryOptions{MaxBodyBytes: 1 << 20, MaxSubQueries: 50, MaxFillIntervals: 1_000_000}
}

// OpenTSDBQueryOptions bound OpenTSDB's /api/query and /api/query/last.
// Zero fields take the defaults.
type OpenTSDBQueryOptions struct {
	// MaxBodyBytes bounds a POST body [1 MiB]; over it the answer is 413.
	MaxBodyBytes int64
	// MaxSubQueries bounds the sub-queries (m= or timeseries= parameters, or
	// queries[]) of one request [50]; over it the answer is 400.
	MaxSubQueries int
	// MaxFillIntervals bounds the intervals a filling downsampler ("-zero",
	// "-nan", "-null") emits for one series [1000000], which samples do not
	// bound; over it the answer is 400.
	MaxFillIntervals int
}

func (o OpenTSDBQueryOptions) withDefaults() OpenTSDBQueryOptions {
	d := DefaultOpenTSDBQueryOptions()
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxSubQueries <= 0 {
		o.MaxSubQueries = d.MaxSubQueries
	}
	if o.MaxFillIntervals <= 0 {
		o.MaxFillIntervals = d.MaxFillIntervals
	}
	return o
}

// Validate refuses negative bounds, every one of them; zero takes the default.
func (o OpenTSDBQueryOptions) Validate() error {
	return errors.Join(
		notNegative("OpenTSDBQueryOptions.MaxBodyBytes", o.MaxBodyBytes),
		notNegative("OpenTSDBQueryOptions.MaxSubQueries", o.MaxSubQueries),
		notNegative("OpenTSDBQueryOptions.MaxFillIntervals", o.MaxFillIntervals),
	)
}

// registerOpenTSDBQuery adds OpenTSDB 2.x's GET|POST /api/query and
// /api/query/last (opentsdb_last.go), read endpoints (the memory guard and read statistics of remote read, the read
// role of --web.read-only-users; write-only users get 403).
func registerOpenTSDBQuery(r *mux.Router, q queryable, opts Options, metrics *httpMetrics, guard *memoryGuard, ready func() error) {
	e := otsdbEndpoint{q: q, opts: opts.OpenTSDBQuery.withDefaults(), ready: ready, logger: opts.Logger, now: time.Now}
	r.Handle("/api/query", guard.guardReads(false, withReadStats(metrics, &otsdbQuery{e}))).Methods(http.MethodGet, http.MethodPost)
	r.Handle("/api/query/last", guard.guardReads(false, withReadStats(metrics, &otsdbLast{e}))).Methods(http.MethodGet, http.MethodPost)
}

// otsdbEndpoint is what OpenTSDB's data endpoints share: the read path, the
// bounds of their requests, the store's readiness and the clock of "now" and
// "1h-ago".
type otsdbEndpoint struct {
	q      queryable
	opts   OpenTSDBQueryOptions
	ready  func() error
	logger *slog.Logger
	now    func() time.Time
}

// body reads a POST body, at most --opentsdb.query.max-body-bytes of it
// (413 over that).
func (h *otsdbEndpoint) body(r *http.Request) ([]byte, int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes (--opentsdb.query.max-body-bytes)", h.opts.MaxBodyBytes)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("read request body: %w", err)
	}
	return body, 0, nil
}

// subQueries refuses more sub-queries than --opentsdb.query.max-sub-queries.
func (h *otsdbEndpoint) subQueries(n int) error {
	if n > h.opts.MaxSubQueries {
		return fmt.Errorf("%d sub queries, over the limit of %d (--opentsdb.query.max-sub-queries)", n, h.opts.MaxSubQueries)
	}
	return nil
}

// fail answers OpenTSDB's error JSON, and logs a failure of the server.
func (h *otsdbEndpoint) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status >= 500 && status != statusClientClosedRequest {
		h.logger.Error("opentsdb request failed", "path", r.URL.Path, "status", status, "remote", r.RemoteAddr, "err", err)
	}
	writeOpenTSDBError(w, status, err)
}

// failStatus is the status of a failed read: an opentsdb.Error's (a name that
// does not exist), else readStatus.
func failStatus(err error) int {
	if e, ok := errors.AsType[*opentsdb.Error](err); ok {
		return e.Status
	}
	return readStatus(err)
}

// otsdbQuery serves /api/query (https://opentsdb.net/docs/build/html/api_http/query/index.html):
// the request is parsed and validated by package opentsdb (GET: start, end,
// m, ms, show_tsuids; POST: TSQuery's JSON), answered from the raw samples of
// hbtsdb's read path (never rollups, as remote read), metric = __name__ and
// tags = the other labels, and written in OpenTSDB 2.4.1's JSON. Bad input is
// 400 in OpenTSDB's error JSON, a select limit 422, a store failure 503 or 500.
type otsdbQuery struct{ otsdbEndpoint }

func (h *otsdbQuery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, status, err := h.parse(r)
	if err != nil {
		h.fail(w, r, status, err)
		return
	}
	if err := h.ready(); err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, err)
		return
	}
	src := &otsdbSource{q: h.q, withIDs: req.ShowTSUIDs, names: newNameIndex(h.q)}
	results, err := opentsdb.Run(r.Context(), src, req)
	if err != nil {
		h.fail(w, r, failStatus(err), err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if err := opentsdb.WriteJSON(w, results, req); err != nil && r.Context().Err() == nil {
		h.logger.Error("opentsdb query: write answer", "remote", r.RemoteAddr, "err", err)
	}
}

func (h *otsdbQuery) parse(r *http.Request) (*opentsdb.Request, int, error) {
	var req *opentsdb.Request
	var err error
	if r.Method == http.MethodPost {
		body, status, rerr := h.body(r)
		if rerr != nil {
			return nil, status, rerr
		}
		req, err = opentsdb.ParseJSON(body, h.now())
		if err == nil {
			// Query string parameters of a POST (HttpJsonSerializer reads them too).
			req.Arrays = r.URL.Query().Has("arrays")
		}
	} else {
		req, err = opentsdb.ParseForm(r.URL.Query(), h.now())
	}
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	if err := h.subQueries(len(req.Queries)); err != nil {
		return nil, http.StatusBadRequest, err
	}
	if n := req.FillIntervals(); n > int64(h.opts.MaxFillIntervals) {
		return nil, http.StatusBadRequest, fmt.Errorf("a filling downsampler emits %d intervals per series over this range, "+
			"over the limit of %d (--opentsdb.query.max-fill-intervals): use a longer interval or fill policy none", n, h.opts.MaxFillIntervals)
	}
	return req, 0, nil
}

// readStatus is the status of a failed read.
func readStatus(err error) int {
	switch {
	case errors.Is(err, query.ErrLimitExceeded):
		return http.StatusUnprocessableEntity
	case errors.Is(err, context.Canceled):
		return statusClientClosedRequest
	case unavailable(err), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeOpenTSDBError answers OpenTSDB's error JSON with the status, the
// error's message and, for an opentsdb.Error that has them, its details.
func writeOpenTSDBError(w http.ResponseWriter, status int, err error) {
	var details string
	if e, ok := errors.AsType[*opentsdb.Error](err); ok {
		details = e.Details
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = opentsdb.WriteError(w, status, err.Error(), details)
}

// otsdbSource reads a metric's series for package opentsdb: one Select of
// the read path with __name__ = metric, raw float samples only, without
// Prometheus' staleness markers (remote-written series end with one).
type otsdbSource struct {
	q       queryable
	withIDs bool
	*names
}

func (s *otsdbSource) Series(ctx context.Context, metric string, mint, maxt int64) ([]opentsdb.Series, error) {
	ctx = query.WithResolution(ctx, query.ResolutionRaw)
	name := labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, metric)
	qr, err := s.q.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	defer qr.Close()
	ids := map[string]string{}
	if s.withIDs {
		if ids, err = s.seriesIDs(ctx, mint, maxt, name); err != nil {
			return nil, err
		}
	}
	ss := qr.Select(ctx, true, &storage.SelectHints{Start: mint, End: maxt}, name)
	var out []opentsdb.Series
	var it chunkenc.Iterator
	for ss.Next() {
		ls := ss.At().Labels()
		series := opentsdb.Series{Tags: tagsOf(ls), ID: ids[ls.String()]}
		it = ss.At().Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue // native histograms have no OpenTSDB form
			}
			t, v := it.At()
			if value.IsStaleNaN(v) {
				continue // Prometheus' staleness marker is no sample
			}
			series.Points = append(series.Points, opentsdb.Point{T: t, V: v})
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("read series %s: %w", ls, err)
		}
		if len(series.Points) > 0 {
			out = append(out, series)
		}
	}
	return out, ss.Err()
}

// SeriesByID is opentsdb.IDSource's: the raw float samples of each series
// an ID names (Reader.Samples, without staleness markers), found by its
// labels in the registry.
func (s *otsdbSource) SeriesByID(ctx context.Context, ids []uint64, mint, maxt int64) ([]opentsdb.Series, error) {
	ctx = query.WithResolution(ctx, query.ResolutionRaw)
	rd, err := s.q.QueryReader()
	if err != nil {
		return nil, err
	}
	if rd == nil {
		return nil, errors.New("this store has no reader for tsuids sub-queries")
	}
	lbls, err := rd.SeriesLabels(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []opentsdb.Series
	for i, ls := range lbls {
		if ls.IsEmpty() {
			continue
		}
		samples, err := rd.Samples(ctx, ls, mint, maxt)
		if err != nil {
			return nil, err
		}
		series := opentsdb.Series{Metric: ls.Get(labels.MetricName), Tags: tagsOf(ls), ID: opentsdb.FormatTSUID(ids[i])}
		for _, smp := range samples {
			if !value.IsStaleNaN(smp.V) {
				series.Points = append(series.Points, opentsdb.Point{T: smp.T, V: smp.V})
			}
		}
		out = append(out, series)
	}
	return out, nil
}

// seriesIDs maps each selected series' labels to its series ID in upper-case
// hex, OpenTSDB's TSUID form.
func (s *otsdbSource) seriesIDs(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (map[string]string, error) {
	rd, err := s.q.QueryReader()
	if err != nil || rd == nil {
		return map[string]string{}, err
	}
	refs, err := rd.SeriesRefs(ctx, mint, maxt, ms...)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]string, len(refs))
	for _, ref := range refs {
		ids[ref.Labels.String()] = opentsdb.FormatTSUID(ref.ID)
	}
	return ids, nil
}
