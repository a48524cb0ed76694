package query

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

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
	if max := r.opts.MaxSeries; max > 0 && len(ids) > max && (limit <= 0 || limit > max) {
		return nil, fmt.Errorf("query: %d series match %s, more than the limit of %d: %w", len(ids), matchersString(ms), max, ErrTooManySeries)
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

func (r *Reader) newSeries(id uint64, ls labels.Labels) series {
	host := schema.HostOf(ls, r.settings.HostLabels)
	return series{id: id, labels: ls, host: host, metric: ls.Get(model.MetricNameLabel), salt: schema.Salt(host, r.settings.SaltBuckets)}
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ids      []uint64
		firstErr error
		sem      = make(chan struct{}, r.opts.Concurrency)
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	for day, last := schema.Day(mint), schema.Day(maxt); ; day++ {
		next, ok, err := r.postings.NextDay(ctx, day, last)
		if err != nil {
			fail(fmt.Errorf("query: %w", err))
			break
		}
		if !ok {
			break
		}
		day = next
		sem <- struct{}{}
		wg.Add(1)
		go func(day uint32) {
			defer func() { <-sem; wg.Done() }()
			dayIDs, err := r.dayIDs(ctx, day, ms)
			if err != nil {
				fail(fmt.Errorf("day %d: %w", day, err))
				return
			}
			mu.Lock()
			ids = append(ids, dayIDs...)
			mu.Unlock()
		}(day)
		if day == last {
			break
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
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
