package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/opentsdb"
)

// OpenTSDB's small read endpoints (http://opentsdb.net/docs/build/html/api_http/):
// GET /api/version, GET|POST /api/aggregators, GET|POST /api/suggest,
// /api/search/lookup (opentsdb_lookup.go) and /api/config/filters,
// answered as OpenTSDB 2.4.1 answers them, so that OpenTSDB clients and
// Grafana's OpenTSDB data source find what they expect. /api/put is put.go.
// A metric is the series' __name__, a tag key any other label name, a tag value
// any value of such a label: suggest reads them from the tag index.

// suggestDefaultMax is how many suggestions /api/suggest returns without a
// positive max, OpenTSDB's UniqueId.MAX_SUGGESTIONS.
const suggestDefaultMax = 25

// openTSDBAggregators is /api/aggregators' answer: the list OpenTSDB 2.4.1
// returns, in its order (the iteration order of its aggregator set).
var openTSDBAggregators = []string{"mult", "p90", "zimsum", "mimmax", "sum", "p50", "none", "p95", "ep99r7",
	"pfsum", "p75", "p99", "ep99r3", "ep95r7", "min", "avg", "ep75r7", "dev", "ep95r3", "ep75r3", "ep50r7",
	"ep90r7", "mimmin", "p999", "ep50r3", "ep90r3", "ep999r7", "last", "max", "count", "diff", "median",
	"squareSum", "ep999r3", "first"}

// openTSDBVersion is /api/version's answer: OpenTSDB's keys, in its order, with
// hbtsdb's build.
type openTSDBVersion struct {
	ShortRevision string `json:"short_revision"`
	Repo          string `json:"repo"`
	Host          string `json:"host"`
	Version       string `json:"version"`
	FullRevision  string `json:"full_revision"`
	RepoStatus    string `json:"repo_status"`
	User          string `json:"user"`
	Branch        string `json:"branch"`
	Timestamp     string `json:"timestamp"`
}

// openTSDBHandler serves OpenTSDB's read endpoints from the tag index.
type openTSDBHandler struct {
	q       queryable
	version openTSDBVersion
	limits  QueryOptions
	logger  *slog.Logger
	fail    func(w http.ResponseWriter, r *http.Request, err error)
}

// registerOpenTSDB adds /api/version, /api/aggregators and /api/suggest to r.
// version is hbtsdb's version; the rest of the build comes from opts.BuildInfo.
func registerOpenTSDB(r *mux.Router, q queryable, opts Options) {
	rev := opts.BuildInfo.Revision
	h := &openTSDBHandler{q: q, limits: opts.Query.withDefaults(), version: openTSDBVersion{
		ShortRevision: rev[:min(len(rev), 9)], Repo: "github.com/hbtsdb/hbtsdb", Version: opts.Version,
		FullRevision: rev, User: opts.BuildInfo.BuildUser, Branch: opts.BuildInfo.Branch,
		Timestamp: buildTimestamp(opts.BuildInfo.BuildDate)}}
	h.logger = opts.Logger
	h.fail = func(w http.ResponseWriter, req *http.Request, err error) {
		status, details := readStatus(err), ""
		switch e, ok := errors.AsType[*opentsdb.Error](err); {
		case ok:
			status, details = e.Status, e.Details
		case errors.As(err, new(*suggestError)):
			status = http.StatusBadRequest
		}
		if status >= 500 && status != statusClientClosedRequest {
			opts.Logger.Error("read request failed", "path", req.URL.Path, "status", status, "remote", req.RemoteAddr, "err", err)
		}
		writePutJSON(w, status, openTSDBError(status, err.Error(), details))
	}
	r.HandleFunc("/api/version", h.serveVersion).Methods(http.MethodGet, http.MethodPost)
	r.HandleFunc("/api/aggregators", serveAggregators).Methods(http.MethodGet, http.MethodPost)
	r.HandleFunc("/api/suggest", h.serveSuggest).Methods(http.MethodGet, http.MethodPost)
	r.HandleFunc("/api/search/lookup", h.serveLookup).Methods(http.MethodGet, http.MethodPost)
	r.HandleFunc("/api/config/filters", serveFilterConfig).Methods(http.MethodGet, http.MethodPost)
}

// serveFilterConfig answers /api/config/filters: the tag value filters
// OpenTSDB 2.4.1 loads, with its descriptions and examples, in its order
// (Grafana's OpenTSDB data source lists the filter types from it).
func serveFilterConfig(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = io.WriteString(w, opentsdb.FilterConfigJSON)
}

// buildTimestamp is OpenTSDB's "timestamp" of a build: Unix seconds, from the
// RFC 3339 date Prometheus' build info carries; "" when there is none.
func buildTimestamp(date string) string {
	t, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return ""
	}
	return strconv.FormatInt(t.Unix(), 10)
}

func (h *openTSDBHandler) serveVersion(w http.ResponseWriter, _ *http.Request) {
	writePutJSON(w, http.StatusOK, h.version)
}

func serveAggregators(w http.ResponseWriter, _ *http.Request) {
	writePutJSON(w, http.StatusOK, openTSDBAggregators)
}

// suggestError is a bad /api/suggest request, worded as OpenTSDB words it: HTTP 400.
type suggestError struct{ msg string }

func (e *suggestError) Error() string { return e.msg }

// suggestRequest is one /api/suggest question.
type suggestRequest struct {
	typ, q string
	max    int
}

// parseSuggest reads the question from the query string (GET) or the JSON body
// (POST), as OpenTSDB 2.4.1's SuggestRpc does, with its error texts. The body
// is bounded by QueryOptions.MaxQueryLength.
func (h *openTSDBHandler) parseSuggest(w http.ResponseWriter, r *http.Request) (suggestRequest, error) {
	var typ, q, maxText string
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.limits.MaxQueryLength)))
		if err != nil {
			if errors.As(err, new(*http.MaxBytesError)) {
				return suggestRequest{}, &suggestError{fmt.Sprintf("The request body is over %d bytes (--query.max-length)", h.limits.MaxQueryLength)}
			}
			return suggestRequest{}, fmt.Errorf("read /api/suggest body: %w", err)
		}
		if len(body) == 0 {
			return suggestRequest{}, &suggestError{"Missing message content"}
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return suggestRequest{}, &suggestError{"Unable to parse the given JSON: " + err.Error()}
		}
		fields := make(map[string]string, len(m))
		for k, v := range m {
			switch v := v.(type) {
			case string:
				fields[k] = v
			case float64:
				fields[k] = strconv.FormatFloat(v, 'f', -1, 64)
			case nil:
			default:
				return suggestRequest{}, &suggestError{fmt.Sprintf("Unable to parse the given JSON: %q is not a string", k)}
			}
		}
		typ, q, maxText = fields["type"], fields["q"], fields["max"]
		if typ == "" {
			return suggestRequest{}, &suggestError{"Missing 'type' parameter"}
		}
	} else {
		v := r.URL.Query()
		if !v.Has("type") {
			return suggestRequest{}, &suggestError{"Missing parameter <code>type</code>"}
		}
		typ, q, maxText = v.Get("type"), v.Get("q"), v.Get("max")
	}
	limit := 0
	if maxText != "" {
		n, err := strconv.ParseInt(maxText, 10, 32)
		if err != nil {
			return suggestRequest{}, &suggestError{"Unable to parse 'max' as a number"}
		}
		limit = int(n)
	}
	if limit <= 0 {
		limit = suggestDefaultMax
	}
	switch typ {
	case "metrics", "tagk", "tagv":
	default:
		return suggestRequest{}, &suggestError{"Invalid 'type' parameter:" + typ}
	}
	return suggestRequest{typ: typ, q: q, max: limit}, nil
}

// serveSuggest answers /api/suggest: the names of the asked type that start
// with q, in byte order, at most max; with an empty q those whose first byte is
// in OpenTSDB's scan range ['!', '~'), as its UID table scan returns them.
func (h *openTSDBHandler) serveSuggest(w http.ResponseWriter, r *http.Request) {
	req, err := h.parseSuggest(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.limits.Timeout)
	defer cancel()
	names, err := h.suggestNames(ctx, req.typ)
	if err != nil {
		h.fail(w, r, fmt.Errorf("suggest %s: %w", req.typ, err))
		return
	}
	out := []string{}
	for _, n := range names {
		if len(out) == req.max {
			break
		}
		if suggestMatch(n, req.q) {
			out = append(out, n)
		}
	}
	writePutJSON(w, http.StatusOK, out)
}

// suggestMatch reports whether OpenTSDB's suggest scan for q finds name.
func suggestMatch(name, q string) bool {
	if q == "" {
		return name != "" && name[0] >= '!' && name[0] < '~'
	}
	return strings.HasPrefix(name, q)
}

// suggestNames returns every name of the type (metrics, tagk, tagv) the tag
// index holds, sorted in byte order without duplicates.
func (h *openTSDBHandler) suggestNames(ctx context.Context, typ string) ([]string, error) {
	qr, err := h.q.Querier(0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	defer qr.Close()
	if typ == "metrics" {
		vs, _, err := qr.LabelValues(ctx, labels.MetricName, nil)
		return vs, err
	}
	keys, _, err := qr.LabelNames(ctx, nil)
	if err != nil {
		return nil, err
	}
	keys = dropName(keys)
	if typ == "tagk" {
		return keys, nil
	}
	seen := map[string]bool{}
	var values []string
	for _, k := range keys {
		vs, _, err := qr.LabelValues(ctx, k, nil)
		if err != nil {
			return nil, fmt.Errorf("values of tag %s: %w", k, err)
		}
		for _, v := range vs {
			if !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
	}
	slices.Sort(values)
	return values, nil
}

// dropName returns the label names without __name__, which OpenTSDB calls the metric.
func dropName(names []string) []string {
	out := names[:0:0]
	for _, n := range names {
		if n != labels.MetricName {
			out = append(out, n)
		}
	}
	return out
}
