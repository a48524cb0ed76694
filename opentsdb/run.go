package opentsdb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Series is one stored series as a Source hands it out.
type Series struct {
	// Metric is the series' metric name; IDSource.SeriesByID sets it (a
	// Source's Series need not: they are of the metric asked for).
	Metric string
	// Tags are the series' labels without __name__.
	Tags map[string]string
	// ID names the series in "tsuids" (hbtsdb's series ID in hex).
	ID string
	// Points are the raw samples in time order, timestamps unique.
	Points []Point
}

// Source hands out the series of a metric whose samples in [mint, maxt]
// (ms, inclusive) a query reads. It may return series with other tags:
// Run applies the filters itself.
type Source interface {
	Series(ctx context.Context, metric string, mint, maxt int64) ([]Series, error)
}

// IDSource is a Source that also hands out series by ID, for tsuids
// sub-queries; a Source that is not one answers them 400.
type IDSource interface {
	Source
	// SeriesByID returns the series of ids, with their Metric and samples
	// in [mint, maxt] (ms, inclusive), in the order of ids; an ID that names
	// no series is left out.
	SeriesByID(ctx context.Context, ids []uint64, mint, maxt int64) ([]Series, error)
}

// Result is one group of one sub-query's answer: one element of /api/query's
// JSON array.
type Result struct {
	Metric string
	// Tags are the tags every series of the group has with one value.
	Tags map[string]string
	// AggregateTags are the tags the group's series have with several values.
	AggregateTags []string
	// TSUIDs are the group's series IDs, sorted.
	TSUIDs []string
	// Points are the aggregated values within the query's [Start, End].
	Points []Point
	// Ints says which Points are integers, which OpenTSDB writes without a
	// fraction ("5", not "5.0"); nil when none is.
	Ints []bool
	// Fill is the sub-query's fill policy (null writes NaN as null).
	Fill FillPolicy
}

// maxTimespan is OpenTSDB's row width, Const.MAX_TIMESPAN (seconds): the
// scan bounds, and so the data a query aggregates, are rounded to it.
const maxTimespan = 3600

// scanRange is TsdbQuery.getScanStartTimeSeconds and getScanEndTimeSeconds
// in milliseconds: the span group's bounds, which decide which samples around
// the query's range take part (a rate's first point, interpolation across the
// query's edges, filled intervals).
func scanRange(start, end int64, ds *Downsample) (int64, int64) {
	s := start / 1000
	if ds != nil && !ds.All {
		s -= (1000 * s % ds.Interval) / 1000
	}
	s -= s % maxTimespan
	if s < 0 {
		s = 0
	}
	// TsdbQuery converts a millisecond end to seconds and bumps it a second
	// ("end - (end * 1000) < 1" holds for every positive end).
	e := end/1000 + 1
	if ds != nil && !ds.All {
		aligned := e + (ds.Interval-(1000*e)%ds.Interval)/1000
		if off := aligned % maxTimespan; off != 0 {
			aligned += maxTimespan - off
		}
		e = aligned
	} else {
		e += maxTimespan - e%maxTimespan
	}
	return s * 1000, e * 1000
}

// Run answers req from src: for each sub-query, the series of its metric that
// pass its filters, grouped by its group-by filters' tag values (every series
// its own group with the "none" aggregator), each group downsampled, turned
// into rates and aggregated as OpenTSDB 2.4.1 does, cut to [Start, End].
// Groups are in the order of their group-by tag values.
func Run(ctx context.Context, src Source, req *Request) ([]Result, error) {
	var out []Result
	for i := range req.Queries {
		rs, err := runSub(ctx, src, req, &req.Queries[i])
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func runSub(ctx context.Context, src Source, req *Request, q *SubQuery) ([]Result, error) {
	startTime, endTime := scanRange(req.Start, req.End, q.Downsample)
	// The scan covers rows [startTime, endTime) seconds.
	metric, series, err := q.read(ctx, src, startTime, endTime-1)
	if err != nil {
		return nil, err
	}
	var groupKeys []string
	for _, f := range q.Filters {
		if f.GroupBy && !slices.Contains(groupKeys, f.Tagk) {
			groupKeys = append(groupKeys, f.Tagk)
		}
	}
	sort.Strings(groupKeys)
	groups := map[string][]*Series{}
	for i := range series {
		s := &series[i]
		if !q.matches(s.Tags) {
			continue
		}
		key := groupKey(s, i, groupKeys, q.Agg.Name == "none")
		groups[key] = append(groups[key], s)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Result
	for _, k := range keys {
		g := groups[k]
		pts := make([][]Point, len(g))
		for i, s := range g {
			p := s.Points
			if q.Downsample != nil {
				p = q.Downsample.downsample(p, startTime, endTime, req.Start, req.End)
			} else {
				p = from(p, startTime)
			}
			if q.Rate {
				p = rate(p, q.RateOptions, q.Downsample == nil)
			}
			pts[i] = p
		}
		agg, ints := aggregate(pts, startTime, endTime, q.Agg, q.Rate, q.Downsample == nil)
		r := Result{Metric: metric, Fill: q.Fill}
		r.Tags, r.AggregateTags = groupTags(g)
		for _, s := range g {
			r.TSUIDs = append(r.TSUIDs, s.ID)
		}
		sort.Strings(r.TSUIDs)
		for i, p := range agg {
			if p.T >= req.Start && p.T <= req.End {
				r.Points = append(r.Points, p)
				if ints != nil {
					r.Ints = append(r.Ints, ints[i])
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// read returns the metric a sub-query reads and the series it may select,
// with their samples in [mint, maxt]: those of its metric (after
// TsdbQuery's name checks when src is a Names), or those its tsuids name,
// which must share one metric ("One or more TSUIDs did not share the same
// metric", as TsdbQuery says; it compares the metric UIDs of the tsuids,
// hbtsdb the metrics of the series).
func (q *SubQuery) read(ctx context.Context, src Source, mint, maxt int64) (string, []Series, error) {
	if len(q.TSUIDs) == 0 {
		series, err := src.Series(ctx, q.Metric, mint, maxt)
		if err != nil {
			return "", nil, fmt.Errorf("opentsdb: read metric %s: %w", q.Metric, err)
		}
		if names, ok := src.(Names); ok {
			if err := q.checkNames(ctx, names, series); err != nil {
				return "", nil, err
			}
		}
		return q.Metric, series, nil
	}
	ids, ok := src.(IDSource)
	if !ok {
		return "", nil, badRequest("tsuids sub-queries are not supported by this store: query by metric and tags")
	}
	series, err := ids.SeriesByID(ctx, q.TSUIDs, mint, maxt)
	if err != nil {
		return "", nil, fmt.Errorf("opentsdb: read %d tsuids: %w", len(q.TSUIDs), err)
	}
	var metric string
	for _, s := range series {
		switch {
		case metric == "":
			metric = s.Metric
		case s.Metric != metric:
			return "", nil, badRequest("One or more TSUIDs did not share the same metric [%s] [%s]", metric, s.Metric)
		}
	}
	// Only series with samples take part (a Source hands out no others).
	kept := series[:0]
	for _, s := range series {
		if len(s.Points) > 0 {
			kept = append(kept, s)
		}
	}
	return metric, kept, nil
}

// from is a span iterator's seek: the points at or after t.
func from(pts []Point, t int64) []Point {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].T >= t })
	return pts[i:]
}

// matches reports whether a series is selected: it has every filter's tag key
// (OpenTSDB's row-key regex asks for them), passes every filter, and with
// ExplicitTags has no other tag.
func (q *SubQuery) matches(tags map[string]string) bool {
	keys := map[string]bool{}
	for _, f := range q.Filters {
		if _, ok := tags[f.Tagk]; !ok {
			return false
		}
		if !f.Match(tags) {
			return false
		}
		keys[f.Tagk] = true
	}
	return !q.ExplicitTags || len(keys) == len(tags)
}

// groupKey names a series' group: its group-by tag values (each series, the
// i-th of the source's, alone with the "none" aggregator).
func groupKey(s *Series, i int, groupKeys []string, alone bool) string {
	if alone {
		return strconv.Itoa(i)
	}
	var b strings.Builder
	for _, k := range groupKeys {
		b.WriteString(s.Tags[k])
		b.WriteByte(0)
	}
	return b.String()
}

// groupTags is SpanGroup.computeTags: tags with one value across the group's
// series (a key some series lack still counts), and the keys with several.
func groupTags(g []*Series) (map[string]string, []string) {
	tags := map[string]string{}
	discards := map[string]bool{}
	for _, s := range g {
		for k, v := range s.Tags {
			if discards[k] {
				continue
			}
			if old, ok := tags[k]; !ok {
				tags[k] = v
			} else if old != v {
				discards[k] = true
				delete(tags, k)
			}
		}
	}
	return tags, sortedKeys(discards)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FillIntervals is the most intervals a filling downsampler of req emits for
// one series (the scanned range over the interval), 0 without one: what
// bounds the answer of a query whose series hold few samples, so that a
// caller can refuse "1ms-sum-zero" over a year.
func (req *Request) FillIntervals() int64 {
	var most int64
	for _, q := range req.Queries {
		ds := q.Downsample
		if ds == nil || ds.All || ds.Fill == FillNone {
			continue
		}
		s, e := scanRange(req.Start, req.End, ds)
		if n := (ds.align(e) - ds.align(s)) / ds.Interval; n > most {
			most = n
		}
	}
	return most
}
