package db

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/kv"
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
// by one key-only scan per series of the buckets of the range.
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
	seen := make(map[uint64]bool)
	var keys [][]byte
	width := db.settings.BucketWidth
	for _, ms := range req.MatcherSets {
		refs, err := db.reader.SeriesRefs(ctx, mint, maxt, ms...)
		if err != nil {
			return out, fmt.Errorf("db: delete: select series: %w", err)
		}
		for _, ref := range refs {
			if seen[ref.ID] {
				continue
			}
			seen[ref.ID] = true
			p := ref.Placement
			start, stop := schema.SeriesRowRange(p.Salt, p.Host, p.Metric, ref.ID,
				schema.BucketStart(mint, width), schema.BucketStart(maxt, width))
			sc := db.st.Scan(ctx, schema.TableData, start, stop, kv.WithFilter(kv.KeyOnlyFilter{}))
			for sc.Next() {
				keys = append(keys, sc.Row().Key)
			}
			err := sc.Err()
			sc.Close()
			if err != nil {
				return out, fmt.Errorf("db: delete: list the rows of %s: %w", ref.Labels, err)
			}
		}
	}
	out, err := compact.Delete(ctx, db.st, db.settings, opts, keys, mint, maxt)
	if err != nil {
		return out, fmt.Errorf("db: delete: %w", err)
	}
	return out, nil
}
