package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/schema"
)

// labelNames returns the names of the labels of the series with index entries
// on the days of [mint, maxt] that match ms, sorted, at most limit > 0 of them
// (the smallest). Without matchers it reads one index row per name and day
// (index.Postings.LabelNames); with matchers, the labels of the matching
// series.
func (r *Reader) labelNames(ctx context.Context, mint, maxt int64, limit int, ms []*labels.Matcher) ([]string, error) {
	var names []string
	if len(ms) == 0 {
		err := r.eachDay(ctx, mint, maxt, func(day uint32) error {
			ns, err := r.postings.LabelNames(ctx, day)
			names = append(names, ns...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("query: label names: %w", err)
		}
	} else {
		ss, err := r.selectSeries(ctx, mint, maxt, 0, ms)
		if err != nil {
			return nil, fmt.Errorf("query: label names of %s: %w", matchersString(ms), err)
		}
		for _, s := range ss {
			s.labels.Range(func(l labels.Label) { names = append(names, l.Name) })
		}
	}
	return sortedUnique(names, limit), nil
}

// labelValues returns the values label name has in the series with index
// entries on the days of [mint, maxt] that match ms, sorted, at most limit > 0
// of them (the smallest).
func (r *Reader) labelValues(ctx context.Context, mint, maxt int64, name string, limit int, ms []*labels.Matcher) ([]string, error) {
	var values []string
	if len(ms) == 0 {
		err := r.eachDay(ctx, mint, maxt, func(day uint32) error {
			vs, err := r.postings.LabelValues(ctx, day, name)
			values = append(values, vs...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("query: values of label %s: %w", name, err)
		}
	} else {
		ss, err := r.selectSeries(ctx, mint, maxt, 0, ms)
		if err != nil {
			return nil, fmt.Errorf("query: values of label %s in %s: %w", name, matchersString(ms), err)
		}
		for _, s := range ss {
			if v := s.labels.Get(name); v != "" {
				values = append(values, v)
			}
		}
	}
	return sortedUnique(values, limit), nil
}

// eachDay calls fn for every day of [mint, maxt] that has index rows, in order.
func (r *Reader) eachDay(ctx context.Context, mint, maxt int64, fn func(day uint32) error) error {
	mint, maxt, ok := clampRange(mint, maxt)
	if !ok {
		return nil
	}
	for day, last := schema.Day(mint), schema.Day(maxt); ; day++ {
		next, ok, err := r.postings.NextDay(ctx, day, last)
		if err != nil || !ok {
			return err
		}
		if err := fn(next); err != nil {
			return err
		}
		if day = next; day == last {
			return nil
		}
	}
}

func sortedUnique(s []string, limit int) []string {
	slices.Sort(s)
	s = slices.Compact(s)
	if limit > 0 && len(s) > limit {
		s = s[:limit]
	}
	if s == nil {
		s = []string{}
	}
	return s
}
