package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// LastSeries is one series' newest samples, as Last returns them.
type LastSeries struct {
	// Labels are the series' labels, from the series registry.
	Labels labels.Labels
	// Samples are the newest samples of the series, newest first; at most the n
	// Last was asked for, fewer when the series has fewer.
	Samples []schema.Sample
}

// Last returns the newest n samples (n >= 1) of every series of metric on host
// whose labels match every matcher of at least one of matcherSets (every series
// when there is no set), newest first within a series; the series are
// sorted by labels (labels.Compare). host is the series' host as
// schema.HostOf computes it from the schema's host labels; metric is __name__.
//
// It reads the data rows of the host/metric key range, which sort by series ID
// and then newest bucket first (see schema's data row key invariants), and never
// scans history: per series it reads one row to learn the series' labels and then
// at most the rows that still hold the missing samples (each row holds at least
// one sample), with a row limit, and moves to the next series' first row with a
// new scan as soon as it has n samples. A series that does not match costs one
// row. Samples with timestamps in the future are returned like any other: the
// newest stored readings are what the caller asked for.
//
// Each row is decoded by schema.DecodeDataRow, the one data-row decoder of every
// read path: chunk cells (family c) and raw cells (family r) merged, raw winning
// on equal timestamps. Every stored row holds at least one sample, in one family or the
// other: compaction deletes a bucket's raw cells only after its chunk is written.
func (r *Reader) Last(ctx context.Context, host, metric string, n int, matcherSets ...[]*labels.Matcher) ([]LastSeries, error) {
	if n < 1 {
		return nil, fmt.Errorf("query: last %d samples of %s on %q: n must be at least 1: %w", n, metric, host, kv.ErrInvalidArgument)
	}
	salt := schema.Salt(host, r.settings.SaltBuckets)
	pos := schema.HostMetricPrefix(nil, salt, host, metric)
	end := kv.PrefixEnd(pos)
	var out []LastSeries
	for {
		first, ok, err := r.firstRow(ctx, pos, end)
		if err != nil || !ok {
			if err != nil {
				return nil, fmt.Errorf("query: last samples of %s on %q: %w", metric, host, err)
			}
			break
		}
		seriesID, _, err := schema.ParseDataRowTail(first.Key)
		if err != nil {
			return nil, fmt.Errorf("query: last samples of %s on %q: %w", metric, host, err)
		}
		next := schema.SeriesPrefix(nil, salt, host, metric, seriesID)
		next = kv.PrefixEnd(next) // the first key of the next series
		lbls, err := r.registry.Labels(ctx, []uint64{seriesID})
		if err != nil {
			return nil, fmt.Errorf("query: last samples of %s on %q: %w", metric, host, err)
		}
		if lbls[0].IsEmpty() || !matchesAny(lbls[0], matcherSets) {
			pos = next
			continue
		}
		samples, err := r.newestOfRow(first, n, nil)
		if err != nil {
			return nil, fmt.Errorf("query: last samples of %s: %w", lbls[0], err)
		}
		if len(samples) < n {
			// The rest of the series: the rows after its first one, newest first.
			if samples, err = r.newestAfter(ctx, first.Key, next, n, samples); err != nil {
				return nil, fmt.Errorf("query: last samples of %s: %w", lbls[0], err)
			}
		}
		if len(samples) > 0 {
			out = append(out, LastSeries{Labels: lbls[0], Samples: samples})
		}
		pos = next
	}
	slices.SortFunc(out, func(a, b LastSeries) int { return labels.Compare(a.Labels, b.Labels) })
	return out, nil
}

// firstRow reads the first data row in [start, stop) with its sample cells.
func (r *Reader) firstRow(ctx context.Context, start, stop []byte) (kv.Row, bool, error) {
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyChunk, schema.FamilyRaw), kv.RowLimit(1))
	defer sc.Close()
	if !sc.Next() {
		return kv.Row{}, false, sc.Err()
	}
	return sc.Row(), true, nil
}

// newestAfter appends to samples the newest samples of the rows after the row
// key after (exclusive) and before stop, until samples holds n. It asks for at
// most n-len(samples) rows: every stored row holds at least one sample.
func (r *Reader) newestAfter(ctx context.Context, after, stop []byte, n int, samples []schema.Sample) ([]schema.Sample, error) {
	start := append(slices.Clip(after), 0x00) // the smallest key after the row
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyChunk, schema.FamilyRaw),
		kv.RowLimit(n-len(samples)))
	defer sc.Close()
	for len(samples) < n && sc.Next() {
		var err error
		if samples, err = r.newestOfRow(sc.Row(), n, samples); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return samples, nil
}

// newestOfRow appends the samples of one data row to samples, newest first,
// until samples holds n.
func (r *Reader) newestOfRow(row kv.Row, n int, samples []schema.Sample) ([]schema.Sample, error) {
	rs, err := schema.DecodeDataRow(row, r.settings.BucketWidth, 0, kv.MaxTimestamp)
	if err != nil {
		return nil, err
	}
	for i := len(rs.Samples) - 1; i >= 0 && len(samples) < n; i-- {
		samples = append(samples, rs.Samples[i])
	}
	return samples, nil
}

// matchesAny reports whether ls matches every matcher of one of sets, or
// whether there is no set.
func matchesAny(ls labels.Labels, sets [][]*labels.Matcher) bool {
	if len(sets) == 0 {
		return true
	}
	for _, set := range sets {
		if matches(ls, set) {
			return true
		}
	}
	return false
}
