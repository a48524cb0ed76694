package query

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/kv"
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

// HasSamples reports whether series ref has a sample (float or histogram)
// with a timestamp in [mint, maxt] (inclusive, ms). It reads the series' rows
// newest first and stops at the first that has one.
func (r *Reader) HasSamples(ctx context.Context, ref SeriesRef, mint, maxt int64) (bool, error) {
	mint, maxt, ok := clampRange(mint, maxt)
	if !ok {
		return false, nil
	}
	width := r.settings.BucketWidth
	p := ref.Placement
	start, stop := schema.SeriesRowRange(p.Salt, p.Host, p.Metric, ref.ID, schema.BucketStart(mint, width), schema.BucketStart(maxt, width))
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyChunk, schema.FamilyRaw), r.readRange(mint, maxt))
	defer sc.Close()
	for sc.Next() {
		b, err := r.decodeRow(ctx, sc.Row(), mint, maxt)
		if err != nil {
			return false, fmt.Errorf("query: samples of series %d (%s): %w", ref.ID, ref.Labels, err)
		}
		if b.Len() > 0 {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("query: samples of series %d (%s): %w", ref.ID, ref.Labels, err)
	}
	return false, nil
}
