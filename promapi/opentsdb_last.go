package promapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/hbtsdb/hbtsdb/opentsdb"
	"github.com/hbtsdb/hbtsdb/query"
)

// otsdbLast serves OpenTSDB's /api/query/last
// (http://opentsdb.net/docs/build/html/api_http/query/last.html), as
// QueryRpc.handleLastDataPointQuery and TSUIDQuery answer it, parsed by
// package opentsdb:
//
//   - with back_scan N > 0, each sub-query names one series, the metric
//     with exactly those tags, and its newest point in the current hour and
//     the N hours before is answered (TSUIDQuery reads those rows newest
//     first);
//   - without (back_scan 0), every series of the metric that has the given
//     tags (and maybe others) answers its newest point: OpenTSDB reads the
//     row of the hour it last wrote each series in, which tsd-meta's tsuid
//     tracking records; hbtsdb, which does not track writes, reads the
//     newest row the series has. The two differ only for a series whose
//     newest point is older than its last write (a back-fill), for which
//     OpenTSDB answers nothing.
//
// Points are raw samples (never rollups), without Prometheus' staleness
// markers; tsuids are hbtsdb's series IDs in hex. A metric, tag key or tag
// value never written is 400 "No such name for ..." as in OpenTSDB, bad
// input 400 with OpenTSDB's messages, a store failure 500 or 503.
type otsdbLast struct{ otsdbEndpoint }

func (h *otsdbLast) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, status, err := h.parse(r)
	if err != nil {
		h.fail(w, r, status, err)
		return
	}
	if err := h.ready(); err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, err)
		return
	}
	reader, err := h.q.QueryReader()
	if err != nil {
		h.fail(w, r, readStatus(err), err)
		return
	}
	if reader == nil {
		h.fail(w, r, http.StatusInternalServerError, errors.New("this store has no reader for /api/query/last"))
		return
	}
	names := newNameIndex(h.q)
	var points []opentsdb.LastPoint
	for _, sub := range req.Queries {
		var ps []opentsdb.LastPoint
		if len(sub.TSUIDs) > 0 {
			ps, err = h.byID(r.Context(), reader, names, sub.TSUIDs, req.BackScan)
		} else if req.BackScan > 0 {
			ps, err = h.backScan(r.Context(), reader, names, sub, req.BackScan)
		} else {
			ps, err = h.newest(r.Context(), reader, names, sub)
		}
		if err != nil {
			h.fail(w, r, failStatus(err), err)
			return
		}
		points = append(points, ps...)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if err := opentsdb.WriteLastJSON(w, points, req.Resolve); err != nil && r.Context().Err() == nil {
		h.logger.Error("opentsdb last: write answer", "remote", r.RemoteAddr, "err", err)
	}
}

func (h *otsdbLast) parse(r *http.Request) (*opentsdb.LastRequest, int, error) {
	if r.Method != http.MethodPost {
		req, err := opentsdb.ParseLastForm(r.URL.Query())
		if err == nil {
			err = h.subQueries(len(req.Queries))
		}
		return req, http.StatusBadRequest, err
	}
	body, status, err := h.body(r)
	if err != nil {
		return nil, status, err
	}
	req, err := opentsdb.ParseLastJSON(body)
	if err == nil {
		err = h.subQueries(len(req.Queries))
	}
	return req, http.StatusBadRequest, err
}

// backScan answers a sub-query with a back scan: the newest point of the one
// series with exactly the sub-query's tags, in [the current hour - n hours,
// the current hour's end).
func (h *otsdbLast) backScan(ctx context.Context, rd *query.Reader, names *names, sub opentsdb.LastSubQuery, n int) ([]opentsdb.LastPoint, error) {
	lbls := seriesLabels(sub)
	hour := h.now().Unix()
	hour -= hour % 3600
	mint, maxt := (hour-int64(n)*3600)*1000, (hour+3600)*1000-1
	samples, err := rd.Samples(ctx, lbls, mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("last point of %s: %w", lbls, err)
	}
	for i := len(samples) - 1; i >= 0; i-- {
		if value.IsStaleNaN(samples[i].V) {
			continue
		}
		id, err := seriesID(ctx, rd, lbls, samples[i].T)
		if err != nil {
			return nil, err
		}
		return []opentsdb.LastPoint{{Metric: sub.Metric, Tags: sub.Tags, T: samples[i].T, V: samples[i].V, TSUID: id}}, nil
	}
	return nil, checkLastNames(ctx, names, sub)
}

// byID answers a tsuids sub-query: for each series an ID names, its newest
// point as a sub-query of its metric and exactly its tags finds it, with a
// back scan of n hours or without (n = 0). An ID that names no series, or a
// series without a point there, answers nothing, as OpenTSDB's TSUIDQuery.
func (h *otsdbLast) byID(ctx context.Context, rd *query.Reader, names *names, ids []uint64, n int) ([]opentsdb.LastPoint, error) {
	lbls, err := rd.SeriesLabels(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("series of %d tsuids: %w", len(ids), err)
	}
	var out []opentsdb.LastPoint
	for i, ls := range lbls {
		if ls.IsEmpty() {
			continue
		}
		sub := opentsdb.LastSubQuery{Metric: ls.Get(labels.MetricName), Tags: tagsOf(ls)}
		var ps []opentsdb.LastPoint
		if n > 0 {
			ps, err = h.backScan(ctx, rd, names, sub, n)
		} else {
			ps, err = h.newest(ctx, rd, names, sub)
		}
		if err != nil {
			return nil, err
		}
		// newest answers every series with these tags and maybe others.
		tsuid := opentsdb.FormatTSUID(ids[i])
		for _, p := range ps {
			if p.TSUID == tsuid {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// newest answers a sub-query without a back scan: the newest point of every
// series of the metric that has the sub-query's tags.
func (h *otsdbLast) newest(ctx context.Context, rd *query.Reader, names *names, sub opentsdb.LastSubQuery) ([]opentsdb.LastPoint, error) {
	ms := tagMatchers(sub)
	refs, err := rd.SeriesRefs(ctx, 0, math.MaxInt64, ms...)
	if err != nil {
		return nil, fmt.Errorf("series of %s: %w", sub.Metric, err)
	}
	if len(refs) == 0 {
		return nil, checkLastNames(ctx, names, sub)
	}
	ids := make(map[string]uint64, len(refs))
	var hosts []string
	for _, ref := range refs {
		ids[ref.Labels.String()] = ref.ID
		if !slices.Contains(hosts, ref.Placement.Host) {
			hosts = append(hosts, ref.Placement.Host)
		}
	}
	sort.Strings(hosts)
	var out []opentsdb.LastPoint
	for _, host := range hosts {
		// Two readings: a remote-written series may end with a staleness marker.
		series, err := rd.Last(ctx, host, sub.Metric, 2, ms)
		if err != nil {
			return nil, fmt.Errorf("last points of %s on %q: %w", sub.Metric, host, err)
		}
		for _, s := range series {
			id, ok := ids[s.Labels.String()]
			if !ok {
				continue
			}
			for _, smp := range s.Samples {
				if value.IsStaleNaN(smp.V) {
					continue
				}
				out = append(out, opentsdb.LastPoint{Metric: sub.Metric, Tags: tagsOf(s.Labels),
					T: smp.T, V: smp.V, TSUID: opentsdb.FormatTSUID(id)})
				break
			}
		}
	}
	return out, nil
}

// checkLastNames is TSUIDQuery's UID resolution, for a sub-query that found
// no point: 400 for the first of its metric, tag keys and values (by key)
// that was never written, nil when all were.
func checkLastNames(ctx context.Context, names *names, sub opentsdb.LastSubQuery) error {
	check := func(kind, name string) error {
		ok, err := names.NameExists(ctx, kind, name)
		if err != nil {
			return fmt.Errorf("is there a %s named %q: %w", kind, name, err)
		}
		if !ok {
			msg := fmt.Sprintf("No such name for '%s': '%s'", kind, name)
			return &opentsdb.Error{Status: http.StatusBadRequest, Message: msg, Details: msg}
		}
		return nil
	}
	if err := check(opentsdb.KindMetric, sub.Metric); err != nil {
		return err
	}
	keys := make([]string, 0, len(sub.Tags))
	for k := range sub.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := check(opentsdb.KindTagk, k); err != nil {
			return err
		}
		if err := check(opentsdb.KindTagv, sub.Tags[k]); err != nil {
			return err
		}
	}
	return nil
}

// seriesLabels is the series a sub-query names: __name__ and its tags.
func seriesLabels(sub opentsdb.LastSubQuery) labels.Labels {
	b := labels.NewScratchBuilder(len(sub.Tags) + 1)
	b.Add(labels.MetricName, sub.Metric)
	for k, v := range sub.Tags {
		b.Add(k, v)
	}
	b.Sort()
	return b.Labels()
}

// tagMatchers selects the series of a sub-query's metric with its tags.
func tagMatchers(sub opentsdb.LastSubQuery) []*labels.Matcher {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, sub.Metric)}
	for k, v := range sub.Tags {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, k, v))
	}
	return ms
}

// seriesID is the ID of the series lbls, which has a sample at t, in
// OpenTSDB's TSUID form (upper-case hex).
func seriesID(ctx context.Context, rd *query.Reader, lbls labels.Labels, t int64) (string, error) {
	ms := make([]*labels.Matcher, 0, lbls.Len())
	lbls.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
	refs, err := rd.SeriesRefs(ctx, t, t, ms...)
	if err != nil {
		return "", fmt.Errorf("series ID of %s: %w", lbls, err)
	}
	for _, ref := range refs {
		if labels.Equal(ref.Labels, lbls) {
			return opentsdb.FormatTSUID(ref.ID), nil
		}
	}
	return "", fmt.Errorf("series ID of %s: not in the tag index", lbls)
}

// tagsOf is a series' OpenTSDB tags: its labels without __name__.
func tagsOf(ls labels.Labels) map[string]string {
	tags := make(map[string]string, ls.Len())
	ls.Range(func(l labels.Label) {
		if l.Name != labels.MetricName {
			tags[l.Name] = l.Value
		}
	})
	return tags
}
