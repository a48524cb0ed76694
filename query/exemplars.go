package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

var _ storage.ExemplarQueryable = (*Reader)(nil)

// ExemplarQuerier returns a Prometheus exemplar querier over the exemplar
// table (schema/exemplar.go); its reads are bound to ctx (and
// Options.Timeout per Select). It cannot fail.
func (r *Reader) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	return &exemplarQuerier{r: r, ctx: ctx}, nil
}

type exemplarQuerier struct {
	r   *Reader
	ctx context.Context
}

// Select returns the exemplars in [start, end] (inclusive, ms) of the series
// that match any of matcherSets (each set ANDed, the sets ORed), as
// Prometheus' exemplar storage (tsdb/exemplar.go) does: one QueryResult per
// series with at least one exemplar in the range, sorted by series labels
// (labels.Compare), its exemplars ascending by timestamp (then value, then
// labels: exemplar.Compare), exact repeats once; an empty, non-nil list when
// there are none. Series are found by the tag index for the days of the range
// (as Querier's Select finds them: Options.MaxSeries applies per set), then
// each series' exemplar rows in the range are one scan, Options.Concurrency
// series at a time. More than Options.MaxSamples exemplars fail with an error
// wrapping ErrTooManySamples.
func (q *exemplarQuerier) Select(start, end int64, matcherSets ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	out := []exemplar.QueryResult{}
	start, end, ok := clampRange(start, end)
	if !ok || len(matcherSets) == 0 {
		return out, nil
	}
	ctx, cancel := q.r.withTimeout(q.ctx)
	defer cancel()

	var selected []series
	seen := map[uint64]bool{}
	for _, ms := range matcherSets {
		ss, err := q.r.selectSeries(ctx, start, end, 0, ms)
		if err != nil {
			return nil, fmt.Errorf("query: exemplars of %s: %w", matchersString(ms), err)
		}
		for _, s := range ss {
			if !seen[s.id] {
				seen[s.id] = true
				selected = append(selected, s)
			}
		}
	}
	if len(matcherSets) > 1 {
		slices.SortFunc(selected, func(a, b series) int { return labels.Compare(a.labels, b.labels) })
	}

	results := make([][]exemplar.Exemplar, len(selected))
	var (
		mu    sync.Mutex
		total int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(q.r.opts.Concurrency)
	for i := range selected {
		g.Go(func() error {
			ex, err := q.r.readExemplars(gctx, &selected[i], start, end)
			if err != nil {
				return err
			}
			mu.Lock()
			total += len(ex)
			over := q.r.opts.MaxSamples > 0 && total > q.r.opts.MaxSamples
			mu.Unlock()
			if over {
				return fmt.Errorf("query: more than %d exemplars in the range: %w", q.r.opts.MaxSamples, ErrTooManySamples)
			}
			results[i] = ex
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, ex := range results {
		if len(ex) > 0 {
			out = append(out, exemplar.QueryResult{SeriesLabels: selected[i].labels, Exemplars: ex})
		}
	}
	return out, nil
}

// readExemplars reads the exemplars of s in [start, end] (clamped, start <=
// end): one scan of its exemplar rows of the buckets of the range, cells
// filtered by timestamp (the cell timestamp is the exemplar's), sorted by
// exemplar.Compare, exact repeats dropped.
func (r *Reader) readExemplars(ctx context.Context, s *series, start, end int64) ([]exemplar.Exemplar, error) {
	width := r.settings.BucketWidth
	from, to := schema.SeriesRowRange(s.salt, s.host, s.metric, s.id, schema.BucketStart(start, width), schema.BucketStart(end, width))
	until := end + 1
	if end >= kv.MaxTimestamp {
		until = kv.MaxTimestamp + 1
	}
	sc := r.st.Scan(ctx, schema.TableExemplars, from, to, kv.Families(schema.FamilyExemplars), kv.TimeRange(start, until))
	defer sc.Close()
	var out []exemplar.Exemplar
	for sc.Next() {
		row := sc.Row()
		for _, c := range row.Cells {
			if c.Family != schema.FamilyExemplars {
				continue
			}
			e, err := cellenc.DecodeExemplarValue(c.Value)
			if err != nil {
				return nil, fmt.Errorf("query: exemplars of series %d (%s): row %x cell %x: %w", s.id, s.labels, row.Key, c.Qualifier, err)
			}
			if e.Ts >= start && e.Ts <= end {
				out = append(out, e)
			}
		}
	}
	if err := sc.Err(); errors.Is(err, kv.ErrTableNotFound) {
		// A store created before exemplars were stored, not yet provisioned
		// (provision.Open creates the table): it has none.
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("query: exemplars of series %d (%s): %w", s.id, s.labels, err)
	}
	slices.SortFunc(out, exemplar.Compare)
	return slices.CompactFunc(out, func(a, b exemplar.Exemplar) bool {
		return exemplar.Compare(a, b) == 0 && a.HasTs == b.HasTs
	}), nil
}
