package promapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Admin does what Prometheus' TSDB admin endpoints ask of the store; see
// registerAdmin. Options.Admin nil leaves the endpoints unregistered (404), as
// Prometheus without --web.enable-admin-api.
type Admin interface {
	// DeleteSeries removes the samples of the series matching any of
	// matcherSets with timestamps in [mint, maxt] (inclusive, ms), durably,
	// before it returns nil. An error wrapping kv.ErrInvalidArgument is the
	// request's fault (400), kv.ErrUnavailable the store's (503).
	DeleteSeries(ctx context.Context, matcherSets [][]*labels.Matcher, mint, maxt int64) error
}

// registerAdmin serves, when admin is not nil, Prometheus' admin endpoints
// that make sense here (web/api/v1: POST or PUT):
//
//   - /api/v1/admin/tsdb/delete_series with match[] (one or more series
//     selectors), start and end (RFC 3339 or Unix seconds; the defaults are
//     the beginning and end of time): 204 once the samples are gone, 400
//     naming the parameter that is wrong, 503/500 when the store fails;
//   - /api/v1/admin/tsdb/clean_tombstones: 204. A delete here removes its
//     samples before it answers (it rewrites the rows, compact/delete.go), so
//     there are no tombstones to clean; the endpoint is there for the tools
//     that call it after a delete.
//
// Which users may call them is the server's business (tsdb serve answers
// read-only and write-only users 403).
func registerAdmin(r *mux.Router, admin Admin, logger *slog.Logger) {
	if admin == nil {
		return
	}
	methods := []string{http.MethodPost, http.MethodPut}
	r.HandleFunc("/api/v1/admin/tsdb/delete_series", func(w http.ResponseWriter, req *http.Request) {
		deleteSeries(w, req, admin, logger)
	}).Methods(methods...)
	r.HandleFunc("/api/v1/admin/tsdb/clean_tombstones", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}).Methods(methods...)
}

// deleteSeries is /api/v1/admin/tsdb/delete_series, with Prometheus'
// parameters and error texts (web/api/v1/api.go deleteSeries).
func deleteSeries(w http.ResponseWriter, r *http.Request, admin Admin, logger *slog.Logger) {
	if err := r.ParseForm(); err != nil {
		respondError(w, errBadDataType, fmt.Errorf("error parsing form values: %w", err))
		return
	}
	if len(r.Form["match[]"]) == 0 {
		respondError(w, errBadDataType, errors.New("no match[] parameter provided"))
		return
	}
	mint, err := adminTime(r, "start", 0)
	if err != nil {
		respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "start": %w`, err))
		return
	}
	maxt, err := adminTime(r, "end", kv.MaxTimestamp)
	if err != nil {
		respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "end": %w`, err))
		return
	}
	if maxt < mint {
		respondError(w, errBadDataType, errors.New(`invalid parameter "end": end timestamp must not be before start time`))
		return
	}
	p := parser.NewParser(parser.Options{})
	var sets [][]*labels.Matcher
	for _, s := range r.Form["match[]"] {
		ms, err := p.ParseMetricSelector(s)
		if err != nil {
			respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "match[]": %w`, err))
			return
		}
		if matchesEverything(ms) {
			// Prometheus' query parser refuses such a selector; a delete
			// must not take it as "every series".
			respondError(w, errBadDataType, errors.New(`invalid parameter "match[]": vector selector must contain at least one non-empty matcher`))
			return
		}
		sets = append(sets, ms)
	}
	if err := admin.DeleteSeries(r.Context(), sets, mint, maxt); err != nil {
		typ := errInternalType
		switch status := statusOf(err); {
		case status == http.StatusBadRequest:
			typ = errBadDataType
		case status == http.StatusServiceUnavailable:
			typ = errUnavailableType
		case status == statusClientClosedRequest:
			typ = errCanceledType
		default:
			logger.Error("delete_series failed", "match", r.Form["match[]"], "start", mint, "end", maxt, "err", err)
		}
		respondError(w, typ, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// adminTime is the time parameter name of r in ms, def when absent: Unix
// seconds (with a fraction) or RFC 3339, as Prometheus parses it; clamped to
// the store's [0, kv.MaxTimestamp] (Prometheus' own defaults, its MinTime and
// MaxTime, lie outside).
func adminTime(r *http.Request, name string, def int64) (int64, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("invalid time value for '%s': cannot parse %q to a valid timestamp", name, v)
		}
		ms := math.Round(f * 1000)
		return int64(max(0, min(ms, float64(kv.MaxTimestamp)))), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("invalid time value for '%s': cannot parse %q to a valid timestamp", name, v)
	}
	return max(0, t.UnixMilli()), nil
}

// matchesEverything reports whether every matcher of ms matches the empty
// string, so that the selector would select series by what they lack.
func matchesEverything(ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches("") {
			return false
		}
	}
	return true
}
