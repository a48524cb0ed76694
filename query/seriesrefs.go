package query

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/schema"
)

// SeriesRef is one series as the store places it: its ID, labels and where
// its data rows are (schema.Placement).
type SeriesRef struct {
	ID        uint64
	Labels    labels.Labels
	Placement schema.Placement
}

// SeriesRefs returns the series that have index entries on a day (UTC)
// overlapping [mint, maxt] (inclusive, ms) and match every matcher, sorted by
// labels, with their IDs and placements: what a delete needs to find their
// rows. Options.MaxSeries bounds them as it bounds a Select.
func (r *Reader) SeriesRefs(ctx context.Context, mint, maxt int64, matchers ...*labels.Matcher) ([]SeriesRef, error) {
	ss, err := r.selectSeries(ctx, mint, maxt, 0, matchers)
	if err != nil {
		return nil, err
	}
	out := make([]SeriesRef, len(ss))
	for i, s := range ss {
		out[i] = SeriesRef{ID: s.id, Labels: s.labels, Placement: schema.Placement{Salt: s.salt, Host: s.host, Metric: s.metric}}
	}
	return out, nil
}
