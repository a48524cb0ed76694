package query

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Reader reads series and raw samples back. It is safe for concurrent use.
type Reader struct {
	st       kv.Store
	settings schema.Settings
	registry *index.Registry
	postings *index.Postings
	opts     Options
}

// NewReader returns a reader of st, whose schema was created with settings.
// registry and postings are shared with the write path; nil makes ones with
// default options.
func NewReader(st kv.Store, settings schema.Settings, registry *index.Registry, postings *index.Postings) *Reader {
	if registry == nil {
		registry = index.NewRegistry(st, index.RegistryOptions{})
	}
	if postings == nil {
		postings = index.NewPostings(st, index.PostingsOptions{})
	}
	return &Reader{st: st, settings: settings, registry: registry, postings: postings, opts: Options{}.withDefaults()}
}

// WithOptions returns a reader like r (same store, registry and tag index)
// whose queries follow opts. It does not validate opts (it cannot fail):
// options that come from a user must pass Options.Validate first; out of range
// values that reach it act as their zero value.
func (r *Reader) WithOptions(opts Options) *Reader {
	c := *r
	c.opts = opts.withDefaults()
	return &c
}

// SeriesInRange returns the label sets of the series that had samples on a day
// (UTC) overlapping [mint, maxt] and that match every matcher, sorted
// (labels.Compare). mint and maxt are inclusive bounds in milliseconds; the index
// is per day, so a series may have its samples of that day outside [mint, maxt]
// and then Samples returns none for it. Matchers are answered from the index
// (postings.go).
func (r *Reader) SeriesInRange(ctx context.Context, mint, maxt int64, matchers ...*labels.Matcher) ([]labels.Labels, error) {
	ss, err := r.selectSeries(ctx, mint, maxt, 0, matchers)
	if err != nil {
		return nil, err
	}
	out := make([]labels.Labels, len(ss))
	for i, s := range ss {
		out[i] = s.labels
	}
	return out, nil
}

// intersect returns the IDs in both ascending lists, reusing a.
func intersect(a, b []uint64) []uint64 {
	out := a[:0]
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// matches reports whether ls matches every matcher; an absent label has the
// empty value, as in Prometheus.
func matches(ls labels.Labels, matchers []*labels.Matcher) bool {
	for _, m := range matchers {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// Samples returns the float samples of the series with labels lbls whose
// timestamps lie in [mint, maxt] (inclusive, milliseconds), sorted by time,
// values bit-exact, with their start timestamps; native histogram samples are
// left out (Querier hands them out). A series the registry does not know has none. Labels with an empty
// value are ignored, as on the write path.
//
// It scans the series' data rows newest bucket first (schema.SeriesRowRange) and
// decodes each with decodeRow, the one data-row decoder of every read path: chunk
// cells (family c) and raw cells (family r) merged, raw winning on equal
// timestamps.
func (r *Reader) Samples(ctx context.Context, lbls labels.Labels, mint, maxt int64) ([]cellenc.Sample, error) {
	maxt = min(maxt, kv.MaxTimestamp)
	if maxt < 0 || maxt < mint {
		return nil, nil
	}
	mint = max(mint, 0)
	lbls = lbls.WithoutEmpty()
	ids := make([]uint64, 1)
	if err := r.registry.Lookup(ctx, []labels.Labels{lbls}, ids); err != nil {
		return nil, fmt.Errorf("query: samples of %s: %w", lbls, err)
	}
	if ids[0] == 0 {
		return nil, nil
	}
	s := r.newSeries(ids[0], lbls)
	rows, err := r.readSeries(ctx, &s, mint, maxt)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, b := range rows {
		n += len(b.Samples)
	}
	out := make([]cellenc.Sample, 0, n)
	for _, b := range rows {
		out = append(out, b.Samples...)
	}
	return out, nil
}

// SeriesLabels returns the label sets of series IDs, from the registry's
// reverse rows (one GetRows for those not cached); an ID that names no series
// has an empty label set.
func (r *Reader) SeriesLabels(ctx context.Context, ids []uint64) ([]labels.Labels, error) {
	return r.registry.Labels(ctx, ids)
}

// Metadata returns the metric metadata stored for metric, and whether there is any.
func (r *Reader) Metadata(ctx context.Context, metric string) (schema.Metadata, bool, error) {
	row, err := r.st.Get(ctx, schema.TableMeta, schema.MetadataRow(nil, metric), kv.Families(schema.FamilyMeta))
	if err != nil {
		return schema.Metadata{}, false, fmt.Errorf("query: metadata of %s: %w", metric, err)
	}
	if len(row.Cells) == 0 {
		return schema.Metadata{}, false, nil
	}
	return schema.DecodeMetadata(metric, row.Cells), true, nil
}
