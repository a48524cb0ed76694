package promapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/opentsdb"
	"github.com/hbtsdb/hbtsdb/query"
)

// serveLookup answers OpenTSDB's /api/search/lookup
// (http://opentsdb.net/docs/build/html/api_http/search/lookup.html) from the
// tag index over all time, where OpenTSDB scans its tsdb-meta table (which
// it fills only with tsd.core.meta.enable_tsuid_tracking or realtime_ts):
// the series of the metric ("*" for any) that have every tag key of the
// pairs, one of a key's values when a pair gives one, and some tag with one
// of the values of the pairs without a key; at most limit [25] of them (0:
// all), sorted by metric and tags (OpenTSDB's order is that of its TSUIDs,
// that is of when their names were first written, so a limit below the
// number of matches may pick other series). A name never written is 404
// "Unable to resolve one or more UIDs", as in OpenTSDB; bad input 400 with
// OpenTSDB's messages.
func (h *openTSDBHandler) serveLookup(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, err := h.parseLookup(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.limits.Timeout)
	defer cancel()
	results, err := h.lookup(ctx, req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if err := opentsdb.WriteLookupJSON(w, req, results, float64(time.Since(start).Microseconds())/1000); err != nil && r.Context().Err() == nil {
		h.logger.Error("opentsdb lookup: write answer", "remote", r.RemoteAddr, "err", err)
	}
}

func (h *openTSDBHandler) parseLookup(w http.ResponseWriter, r *http.Request) (*opentsdb.LookupRequest, error) {
	if r.Method != http.MethodPost {
		return opentsdb.ParseLookupForm(r.URL.Query())
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.limits.MaxQueryLength)))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, &opentsdb.Error{Status: http.StatusBadRequest,
				Message: fmt.Sprintf("The request body is over %d bytes (--query.max-length)", h.limits.MaxQueryLength)}
		}
		return nil, fmt.Errorf("read /api/search/lookup body: %w", err)
	}
	return opentsdb.ParseLookupJSON(body)
}

// lookup finds the series of req, at most req.Limit (> 0) of them.
func (h *openTSDBHandler) lookup(ctx context.Context, req *opentsdb.LookupRequest) ([]opentsdb.LookupSeries, error) {
	rd, err := h.q.QueryReader()
	if err != nil {
		return nil, err
	}
	if rd == nil {
		return nil, errors.New("this store has no reader for /api/search/lookup")
	}
	refs, err := h.lookupRefs(ctx, rd, req)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(refs, func(a, b query.SeriesRef) int {
		if c := strings.Compare(a.Labels.Get(labels.MetricName), b.Labels.Get(labels.MetricName)); c != 0 {
			return c
		}
		return labels.Compare(a.Labels, b.Labels)
	})
	var out []opentsdb.LookupSeries
	for _, ref := range refs {
		tags := tagsOf(ref.Labels)
		if !req.Match(tags) {
			continue
		}
		out = append(out, opentsdb.LookupSeries{TSUID: opentsdb.FormatTSUID(ref.ID), Metric: ref.Labels.Get(labels.MetricName), Tags: tags})
	}
	if len(out) == 0 {
		return nil, h.lookupNames(ctx, req)
	}
	if req.Limit > 0 && len(out) > req.Limit {
		out = out[:req.Limit]
	}
	return out, nil
}

// lookupRefs selects the candidate series of req from the tag index: by the
// metric and the pairs with a key where there are any; otherwise by each
// value of the pairs without a key, under every tag key; otherwise every
// series of every metric.
func (h *openTSDBHandler) lookupRefs(ctx context.Context, rd *query.Reader, req *opentsdb.LookupRequest) ([]query.SeriesRef, error) {
	var ms []*labels.Matcher
	if !req.AnyMetric() {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, req.Metric))
	}
	for k, vs := range req.KeyValues() {
		if vs == nil {
			ms = append(ms, labels.MustNewMatcher(labels.MatchNotEqual, k, ""))
			continue
		}
		quoted := make([]string, len(vs))
		for i, v := range vs {
			quoted[i] = regexp.QuoteMeta(v)
		}
		ms = append(ms, labels.MustNewMatcher(labels.MatchRegexp, k, strings.Join(quoted, "|")))
	}
	if len(ms) > 0 {
		refs, err := rd.SeriesRefs(ctx, 0, math.MaxInt64, ms...)
		if err != nil {
			return nil, fmt.Errorf("lookup %v: %w", ms, err)
		}
		return refs, nil
	}
	qr, err := h.q.Querier(0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	defer qr.Close()
	// Every metric, or every tag key for the values of pairs without a key.
	name, values := labels.MetricName, []string(nil)
	var names []string
	if vs := req.AnyKeyValues(); len(vs) > 0 {
		keys, _, err := qr.LabelNames(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("lookup: tag keys: %w", err)
		}
		names, values = dropName(keys), vs
	} else {
		metrics, _, err := qr.LabelValues(ctx, labels.MetricName, nil)
		if err != nil {
			return nil, fmt.Errorf("lookup: metrics: %w", err)
		}
		names, values = []string{name}, metrics
	}
	seen := map[uint64]bool{}
	var refs []query.SeriesRef
	for _, n := range names {
		for _, v := range values {
			rs, err := rd.SeriesRefs(ctx, 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, n, v))
			if err != nil {
				return nil, fmt.Errorf("lookup %s=%q: %w", n, v, err)
			}
			for _, r := range rs {
				if !seen[r.ID] {
					seen[r.ID] = true
					refs = append(refs, r)
				}
			}
			if req.Limit > 0 && len(refs) >= req.Limit && len(req.AnyKeyValues()) == 0 {
				return refs, nil // every metric: the first metrics' series are the answer
			}
		}
	}
	return refs, nil
}

// lookupNames is TimeSeriesLookup's UID resolution for a lookup that found
// nothing: 404 for the first name (metric, then each pair's key and value)
// that was never written, nil when all were.
func (h *openTSDBHandler) lookupNames(ctx context.Context, req *opentsdb.LookupRequest) error {
	names := newNameIndex(h.q)
	for _, n := range req.Names() {
		ok, err := names.NameExists(ctx, n[0], n[1])
		if err != nil {
			return fmt.Errorf("is there a %s named %q: %w", n[0], n[1], err)
		}
		if !ok {
			return &opentsdb.Error{Status: http.StatusNotFound, Message: "Unable to resolve one or more UIDs",
				Details: fmt.Sprintf("No such name for '%s': '%s'", n[0], n[1])}
		}
	}
	return nil
}
