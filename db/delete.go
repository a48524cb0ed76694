package db

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
)

// DeleteRequest is what to delete: the samples of the series matching any of
// MatcherSets with timestamps in [Mint, Maxt] (inclusive, ms; clamped to the
// store's [0, kv.MaxTimestamp]).
type DeleteRequest struct {
	MatcherSets [][]*labels.Matcher
	Mint, Maxt  int64
}

// Delete removes the samples req names (compact.Delete: raw cells, their part
// of chunk and rollup cells, exemplars), taking each salt's compaction lease
// while it rewrites the salt's rows. opts.Compact.Rollups defaults to the
// DB's Options.Rollups. With opts.DryRun it only counts.
//
// Series are found through the tag index, on the days of the range; their rows
// by deleteRows. Then the tag index entries of the series-days left without
// samples are removed (unindex.go).
func (db *DB) Delete(ctx context.Context, req DeleteRequest, opts compact.DeleteOptions) (compact.DeleteStats, error) {
	var out compact.DeleteStats
	if db.closed.Load() {
		return out, fmt.Errorf("db: delete: %w", kv.ErrClosed)
	}
	mint, maxt := max(req.Mint, 0), min(req.Maxt, kv.MaxTimestamp)
	if mint > maxt {
		return out, fmt.Errorf("db: delete: start %d after end %d: %w", req.Mint, req.Maxt, kv.ErrInvalidArgument)
	}
	if len(req.MatcherSets) == 0 {
		return out, fmt.Errorf("db: delete: no series selector: %w", kv.ErrInvalidArgument)
	}
	if opts.Compact.Rollups == nil {
		opts.Compact.Rollups = db.rollups
	}
	var refs []query.SeriesRef
	seen := make(map[uint64]bool)
	for _, ms := range req.MatcherSets {
		got, err := db.reader.SeriesRefs(ctx, mint, maxt, ms...)
		if err != nil {
			return out, fmt.Errorf("db: delete: select series: %w", err)
		}
		for _, ref := range got {
			if !seen[ref.ID] {
				seen[ref.ID] = true
				refs = append(refs, ref)
			}
		}
	}
	keys, err := db.deleteRows(ctx, refs, mint, maxt)
	if err != nil {
		return out, fmt.Errorf("db: delete: %w", err)
	}
	if opts.DryRun {
		work, err := db.emptyDays(ctx, refs, mint, maxt, true)
		if err != nil {
			return out, fmt.Errorf("db: delete: %w", err)
		}
		out, err = compact.Delete(ctx, db.st, db.settings, opts, keys, mint, maxt)
		if err != nil {
			return out, fmt.Errorf("db: delete: %w", err)
		}
		out.Unindexed = len(work)
		return out, nil
	}
	out, err = compact.Delete(ctx, db.st, db.settings, opts, keys, mint, maxt)
	if err != nil {
		return out, fmt.Errorf("db: delete: %w", err)
	}
	work, err := db.emptyDays(ctx, refs, mint, maxt, false)
	if err != nil {
		return out, fmt.Errorf("db: delete: %w", err)
	}
	out.Unindexed, err = db.unindex(ctx, work)
	if err != nil {
		return out, fmt.Errorf("db: delete: %w", err)
	}
	return out, nil
}

// directBuckets is the most buckets a delete's range may span for deleteRows
// to name every bucket's row of each series (read by compact.Delete whether it
// exists or not) instead of scanning for the rows that exist.
const directBuckets = 48

// listConcurrency is how many series' rows deleteRows lists at once.
const listConcurrency = 8

// deleteRows returns the data row keys of the series refs in the buckets of
// [mint, maxt]: every bucket's when the range spans at most directBuckets
// (no read), else those a key-only scan per series finds, listConcurrency
// series at a time.
func (db *DB) deleteRows(ctx context.Context, refs []query.SeriesRef, mint, maxt int64) ([][]byte, error) {
	width := db.settings.BucketWidth
	first, last := schema.BucketStart(mint, width), schema.BucketStart(maxt, width)
	per := make([][][]byte, len(refs))
	if (last-first)/width.Milliseconds() < directBuckets {
		var keys [][]byte
		for _, ref := range refs {
			for b := first; b <= last; b += width.Milliseconds() {
				keys = append(keys, schema.DataRowKey(nil, ref.Placement.DataKey(ref.ID, b)))
			}
		}
		return keys, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, ref := range refs {
		g.Go(func() error {
			p := ref.Placement
			start, stop := schema.SeriesRowRange(p.Salt, p.Host, p.Metric, ref.ID, first, last)
			sc := db.st.Scan(gctx, schema.TableData, start, stop, kv.WithFilter(kv.KeyOnlyFilter{}))
			defer sc.Close()
			for sc.Next() {
				per[i] = append(per[i], sc.Row().Key)
			}
			if err := sc.Err(); err != nil {
				return fmt.Errorf("list the rows of %s: %w", ref.Labels, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var keys [][]byte
	for _, k := range per {
		keys = append(keys, k...)
	}
	return keys, nil
}
