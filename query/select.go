package query

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// labelsBatch is the most reverse registry rows one GetRows reads.
const labelsBatch = 5000

// series is one selected series: its ID, labels and the data rows' key parts.
type series struct {
	id     uint64
	labels labels.Labels
	host   string
	metric string
	salt   byte
}

// selectSeries returns the series that have index entries on a day (UTC)
// overlapping [mint, maxt] (inclusive, ms) and match every matcher, sorted by
// labels (labels.Compare). More than limit > 0 is cut to limit; more than
// Options.MaxSeries (without a limit that cuts first) fails with
// ErrTooManySeries.
func (r *Reader) selectSeries(ctx context.Context, mint, maxt int64, limit int, ms []*labels.Matcher) ([]series, error) {
	ids, err := r.seriesIDs(ctx, mint, maxt, ms)
	if err != nil {
		return nil, err
	}
	if maxSeries := r.opts.MaxSeries; maxSeries > 0 && len(ids) > maxSeries && (limit <= 0 || limit > maxSeries) {
		return nil, fmt.Errorf("query: %d series match %s, more than the limit of %d: %w", len(ids), matchersString(ms), maxSeries, ErrTooManySeries)
	}
	out := make([]series, 0, len(ids))
	for start := 0; start < len(ids); start += labelsBatch {
		batch := ids[start:min(start+labelsBatch, len(ids))]
		lsets, err := r.registry.Labels(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("query: labels of %d series: %w", len(batch), err)
		}
		for i, ls := range lsets {
			// The index is exact per day; the check guards against a series whose
			// registry row is missing or changed.
			if ls.IsEmpty() || !matches(ls, ms) {
				continue
			}
			out = append(out, r.newSeries(batch[i], ls))
		}
	}
	slices.SortFunc(out, func(a, b series) int { return labels.Compare(a.labels, b.labels) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// newSeries is the selected series of ID id and labels ls, placed by
// schema.Settings.PlacementOf as the writer placed its rows.
func (r *Reader) newSeries(id uint64, ls labels.Labels) series {
	p := r.settings.PlacementOf(ls)
	return series{id: id, labels: ls, host: p.Host, metric: p.Metric, salt: p.Salt}
}

// seriesIDs returns the IDs of the series matching ms on the days of [mint,
// maxt], ascending. Days without index rows are skipped by one scan per stretch
// (index.Postings.NextDay); the days that exist are read Options.Concurrency at
// a time.
func (r *Reader) seriesIDs(ctx context.Context, mint, maxt int64, ms []*labels.Matcher) ([]uint64, error) {
	maxt = min(maxt, kv.MaxTimestamp)
	if maxt < 0 || maxt < mint {
		return nil, nil
	}
	mint = max(mint, 0)
	// The first error (of NextDay or of a day's read) cancels the reads in
	// flight and is the one returned.
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Concurrency)
	var (
		mu  sync.Mutex
		ids []uint64
	)
	for day, last := schema.Day(mint), schema.Day(maxt); ; day++ {
		next, ok, err := r.postings.NextDay(ctx, day, last)
		if err != nil {
			// Through the group, so that a day's read that failed first wins
			// (its cancellation may be what failed NextDay).
			g.Go(func() error { return fmt.Errorf("query: %w", err) })
			break
		}
		if !ok {
			break
		}
		day = next
		g.Go(func() error {
			dayIDs, err := r.dayIDs(ctx, day, ms)
			if err != nil {
				return fmt.Errorf("day %d: %w", day, err)
			}
			mu.Lock()
			ids = append(ids, dayIDs...)
			mu.Unlock()
			return nil
		})
		if day == last {
			break
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// matchersString formats matchers as a selector, for errors.
func matchersString(ms []*labels.Matcher) string {
	s := "{"
	for i, m := range ms {
		if i > 0 {
			s += ", "
		}
		s += m.String()
	}
	return s + "}"
}
