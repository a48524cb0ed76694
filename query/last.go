package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// LastSeries is one series' newest samples, as Last returns them.
type LastSeries struct {
	// Labels are the series' labels, from the series registry.
	Labels labels.Labels
	// Samples are the newest float samples of the series and Histograms its
	// newest native histogram samples, each newest first: together the n
	// newest samples Last was asked for (fewer when the series has fewer), of
	// either kind.
	Samples    []cellenc.Sample
	Histograms []cellenc.HistogramSample
}

// len is the number of samples of both kinds.
func (s *LastSeries) len() int { return len(s.Samples) + len(s.Histograms) }

// Last returns the newest n samples (n >= 1; float samples and native
// histograms alike, each kind in its own list of LastSeries, with their start
// timestamps and counter-reset hints as stored) of every series of metric on host
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
// Each row is decoded by cellenc.DecodeDataRow, the one data-row decoder of every
// read path: chunk cells (family c) and raw cells (family r) merged, raw winning
// on equal timestamps. Every stored row holds at least one sample, in one family or the
// other: compaction deletes a bucket's raw cells only after its chunk is written.
func (r *Reader) Last(ctx context.Context, host, metric string, n int, matcherSets ...[]*labels.Matcher) ([]LastSeries, error) {
	if n < 1 {
		return nil, fmt.Errorf("query: last %d samples of %s on %q: n must be at least 1: %w", n, metric, host, kv.ErrInvalidArgument)
	}
	salt := schema.Salt(host, r.settings.Salts)
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
		ls := LastSeries{Labels: lbls[0]}
		if err := r.newestOfRow(first, n, &ls); err != nil {
			return nil, fmt.Errorf("query: last samples of %s: %w", lbls[0], err)
		}
		if ls.len() < n {
			// The rest of the series: the rows after its first one, newest first.
			if err := r.newestAfter(ctx, first.Key, next, n, &ls); err != nil {
				return nil, fmt.Errorf("query: last samples of %s: %w", lbls[0], err)
			}
		}
		if ls.len() > 0 {
			out = append(out, ls)
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

// newestAfter appends to ls the newest samples of the rows after the row key
// after (exclusive) and before stop, until ls holds n. It asks for at most
// n-ls.len() rows: every stored row holds at least one sample.
func (r *Reader) newestAfter(ctx context.Context, after, stop []byte, n int, ls *LastSeries) error {
	start := append(slices.Clip(after), 0x00) // the smallest key after the row
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyChunk, schema.FamilyRaw),
		kv.RowLimit(n-ls.len()))
	defer sc.Close()
	for ls.len() < n && sc.Next() {
		if err := r.newestOfRow(sc.Row(), n, ls); err != nil {
			return err
		}
	}
	return sc.Err()
}

// newestOfRow appends the samples of one data row to ls, newest first, float
// and histogram samples merged by time, until ls holds n.
func (r *Reader) newestOfRow(row kv.Row, n int, ls *LastSeries) error {
	rs, err := cellenc.DecodeDataRow(row, r.settings.BucketWidth, 0, kv.MaxTimestamp)
	if err != nil {
		return err
	}
	i, j := len(rs.Samples)-1, len(rs.Histograms)-1
	for ls.len() < n && (i >= 0 || j >= 0) {
		if i >= 0 && (j < 0 || rs.Samples[i].T > rs.Histograms[j].T) {
			ls.Samples = append(ls.Samples, rs.Samples[i])
			i--
			continue
		}
		ls.Histograms = append(ls.Histograms, rs.Histograms[j])
		j--
	}
	return nil
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
