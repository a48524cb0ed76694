package query

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// A Select has two plans.
//
// The index plan (the general one): matchers -> posting lists of the days of
// the range (postings.go) -> series IDs -> labels from the registry -> one
// scan per series, Options.Concurrency at a time, Options.Concurrency ahead of
// the consumer (fetch.go).
//
// The host/metric scan, for the seeds' pattern: when __name__ and the host are
// fixed by equality matchers, every series it can select lies in one key range,
// salt | host | metric. One scan of that range — restricted by the read's time
// range and by a server-side ColumnValueFilter on the promoted t: column of
// every other non-empty equality matcher — returns rows and labels (t: columns
// hold every label but __name__) together: no other index read, no registry
// read, one round trip instead of one per series. It holds the whole result in
// memory before handing it out (it sorts by labels), so it is bounded by
// Options.HostScanMaxSeries.
//
// The host is the value of the first configured host label a series has
// (schema.HostOf), so a matcher host="h" fixes the host, but instance="i"
// does only when every host label before instance is matched as absent
// (host=""); otherwise a series with both labels lives under its host value.
//
// The choice is by estimated cost, in round trips, from the posting lists of
// the host and the metric on the days of the range (two gets per day), whose
// intersection counts the series n in the range:
//
//	index plan = days * (other matchers' reads) + n        (one scan per series)
//	scan plan  = 1 + n * buckets / rowsPerRoundTrip        (one streamed scan,
//	                                                        integer division)
//
// where an other matcher (any but the equalities fixing the metric and the
// host) reads matcherCost+1 times a day: 1 for an equality, 2 for a set regex,
// 3 for a regex with a literal prefix, 4 for any other. The scan is taken when
// 0 < n <= HostScanMaxSeries and it costs no more than the index plan
// (choosePlan); Options.Plan forces either plan, and a negative
// HostScanMaxSeries disables the scan, both without the estimate's reads.

// rowsPerRoundTrip is how many data rows a scan is assumed to stream for the
// cost of one round trip.
const rowsPerRoundTrip = 100

// selection is the outcome of a Select's plan: the series, sorted by labels,
// and the range to read. rows is set when the plan read the samples already
// (the host/metric scan), one entry per series.
type selection struct {
	series     []series
	rows       [][]cellenc.RowSamples
	history    [][]cellenc.RowSamples // with rows: each series' rows before mint, for asHead (Reader.history)
	mint, maxt int64
	onlyLabels bool
}

// plan selects the series of a Select of [mint, maxt] (clamped, mint <= maxt).
func (r *Reader) plan(ctx context.Context, mint, maxt int64, limit int, onlyLabels bool, ms []*labels.Matcher) (selection, error) {
	if hm, ok := r.hostMetric(ms); ok && !onlyLabels {
		p, err := choosePlan(r.opts, func() (costInputs, error) { return r.costInputs(ctx, mint, maxt, hm, ms) })
		if err != nil {
			return selection{}, err
		}
		if p == PlanHostScan {
			return r.hostScan(ctx, mint, maxt, limit, hm, ms)
		}
	}
	ss, err := r.selectSeries(ctx, mint, maxt, limit, ms)
	if err != nil {
		return selection{}, err
	}
	return selection{series: ss, mint: mint, maxt: maxt, onlyLabels: onlyLabels}, nil
}

// hostMetricKey is the host label, host and metric fixed by a Select's matchers.
type hostMetricKey struct {
	hostLabel, host, metric string
}

// hostMetric returns the host and metric the matchers fix, if they do (see the
// plan comment above).
func (r *Reader) hostMetric(ms []*labels.Matcher) (hostMetricKey, bool) {
	eq := func(name string) (string, bool) {
		for _, m := range ms {
			if m.Type == labels.MatchEqual && m.Name == name {
				return m.Value, true
			}
		}
		return "", false
	}
	var k hostMetricKey
	metric, ok := eq(model.MetricNameLabel)
	if !ok || metric == "" {
		return k, false
	}
	for _, name := range r.settings.HostLabels {
		v, ok := eq(name)
		if !ok {
			return k, false // may be present: the host is unknown
		}
		if v != "" {
			return hostMetricKey{hostLabel: name, host: v, metric: metric}, true
		}
	}
	return k, false
}

// choosePlan picks the plan of a Select whose matchers fix a host and a metric
// (opts with defaults applied): the forced one, the index when the scan is
// disabled (HostScanMaxSeries < 0), else by cost. estimate is called only to
// choose by cost; it reads the host's and the metric's posting lists.
func choosePlan(opts Options, estimate func() (costInputs, error)) (Plan, error) {
	switch {
	case opts.Plan == PlanIndex:
		return PlanIndex, nil
	case opts.Plan == PlanHostScan:
		return PlanHostScan, nil
	case opts.HostScanMaxSeries < 0:
		return PlanIndex, nil
	}
	in, err := estimate()
	if err != nil {
		return PlanAuto, err
	}
	if in.series == 0 || in.series > int64(opts.HostScanMaxSeries) {
		return PlanIndex, nil
	}
	if index, scan := in.costs(); scan <= index {
		return PlanHostScan, nil
	}
	return PlanIndex, nil
}

// costInputs are what the cost of both plans is estimated from.
type costInputs struct {
	// series is n: how many series the host and metric have on the days of
	// [mint, maxt] (the intersection of their posting lists).
	series     int64
	mint, maxt int64         // the Select's range (inclusive, ms, clamped)
	width      time.Duration // the schema's bucket width
	hostLabel  string        // the host label the matchers fix (hostMetricKey)
	ms         []*labels.Matcher
}

// costs returns the estimated round trips of the index plan and of the scan
// (see the plan comment above): the matchers other than the equalities that fix
// the metric and the host cost matcherCost+1 reads per day each.
func (c costInputs) costs() (index, scan int64) {
	width := c.width.Milliseconds()
	buckets := (schema.BucketStart(c.maxt, c.width)-schema.BucketStart(c.mint, c.width))/width + 1
	days := int64(schema.Day(c.maxt)-schema.Day(c.mint)) + 1
	other := int64(0)
	for _, m := range c.ms {
		if (m.Name == model.MetricNameLabel || m.Name == c.hostLabel) && m.Type == labels.MatchEqual {
			continue
		}
		other += int64(matcherCost(m)) + 1
	}
	return days*other + c.series, 1 + c.series*buckets/rowsPerRoundTrip
}

// costInputs reads the number of series of hm on the days of [mint, maxt].
func (r *Reader) costInputs(ctx context.Context, mint, maxt int64, hm hostMetricKey, ms []*labels.Matcher) (costInputs, error) {
	fixed := []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, hm.metric),
		labels.MustNewMatcher(labels.MatchEqual, hm.hostLabel, hm.host),
	}
	ids, err := r.seriesIDs(ctx, mint, maxt, fixed)
	if err != nil {
		return costInputs{}, err
	}
	return costInputs{series: int64(len(ids)), mint: mint, maxt: maxt, width: r.settings.BucketWidth, hostLabel: hm.hostLabel, ms: ms}, nil
}

// hostScan runs the host/metric scan plan.
func (r *Reader) hostScan(ctx context.Context, mint, maxt int64, limit int, hm hostMetricKey, ms []*labels.Matcher) (selection, error) {
	salt := schema.Salt(hm.host, r.settings.Salts)
	prefix := schema.HostMetricPrefix(nil, salt, hm.host, hm.metric)
	opts := []kv.ReadOption{kv.Families(schema.FamilyChunk, schema.FamilyRaw, schema.FamilyTags), r.readRange(mint, maxt)}
	for _, m := range ms {
		if m.Type == labels.MatchEqual && m.Value != "" && m.Name != model.MetricNameLabel {
			opts = append(opts, kv.WithFilter(kv.ColumnValueFilter{
				Family: schema.FamilyTags, Qualifier: []byte(m.Name), Op: kv.Equal, Value: []byte(m.Value), FilterIfMissing: true}))
		}
	}
	sc := r.st.Scan(ctx, schema.TableData, prefix, kv.PrefixEnd(prefix), opts...)
	defer sc.Close()
	sel := selection{mint: mint, maxt: maxt}
	var (
		cur     *series
		rows    []cellenc.RowSamples
		samples int
		noTags  []int // series whose rows had no t: cells
	)
	flush := func() {
		if cur != nil && len(rows) > 0 {
			slices.Reverse(rows)
			sel.series = append(sel.series, *cur)
			sel.rows = append(sel.rows, rows)
		}
		cur, rows = nil, nil
	}
	for sc.Next() {
		row := sc.Row()
		id, _, err := schema.ParseDataRowTail(row.Key)
		if err != nil {
			return selection{}, fmt.Errorf("query: scan %s on host %s: %w", hm.metric, hm.host, err)
		}
		if cur == nil || cur.id != id {
			flush()
			cur = &series{id: id, host: hm.host, metric: hm.metric, salt: salt}
		}
		if cur.labels.IsEmpty() {
			cur.labels = tagLabels(row, hm.metric)
		}
		b, err := r.decodeRow(ctx, row, mint, maxt)
		if err != nil {
			return selection{}, fmt.Errorf("query: scan %s on host %s, series %d: %w", hm.metric, hm.host, id, err)
		}
		if b.Len() > 0 {
			rows = append(rows, b)
			samples += b.Len()
			if maxSamples := r.opts.MaxSamples; maxSamples > 0 && samples > maxSamples {
				return selection{}, fmt.Errorf("query: more than %d samples in %s on host %s: %w", maxSamples, hm.metric, hm.host, ErrTooManySamples)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return selection{}, fmt.Errorf("query: scan %s on host %s: %w", hm.metric, hm.host, err)
	}
	flush()
	for i := range sel.series {
		if sel.series[i].labels.IsEmpty() {
			noTags = append(noTags, i)
		}
	}
	if err := r.fillLabels(ctx, sel.series, noTags); err != nil {
		return selection{}, err
	}
	// Filter by every matcher and sort by labels, keeping rows aligned.
	idx := make([]int, 0, len(sel.series))
	for i, s := range sel.series {
		if !s.labels.IsEmpty() && matches(s.labels, ms) {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return labels.Compare(sel.series[a].labels, sel.series[b].labels) })
	if limit > 0 && len(idx) > limit {
		idx = idx[:limit]
	}
	if maxSeries := r.opts.MaxSeries; maxSeries > 0 && len(idx) > maxSeries {
		return selection{}, fmt.Errorf("query: %d series match %s, more than the limit of %d: %w", len(idx), matchersString(ms), maxSeries, ErrTooManySeries)
	}
	out := selection{mint: mint, maxt: maxt, series: make([]series, len(idx)), rows: make([][]cellenc.RowSamples, len(idx))}
	for j, i := range idx {
		out.series[j], out.rows[j] = sel.series[i], sel.rows[i]
	}
	return out, nil
}

// tagLabels returns the labels of a data row from its t: cells and the metric;
// empty when the row has no t: cell.
func tagLabels(row kv.Row, metric string) labels.Labels {
	var b labels.ScratchBuilder
	n := 0
	for _, c := range row.Cells {
		if c.Family == schema.FamilyTags {
			b.Add(string(c.Qualifier), string(c.Value))
			n++
		}
	}
	if n == 0 {
		return labels.EmptyLabels()
	}
	b.Add(model.MetricNameLabel, metric)
	b.Sort()
	return b.Labels()
}

// fillLabels reads from the registry the labels of the series at idx.
func (r *Reader) fillLabels(ctx context.Context, ss []series, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	ids := make([]uint64, len(idx))
	for j, i := range idx {
		ids[j] = ss[i].id
	}
	lsets, err := r.registry.Labels(ctx, ids)
	if err != nil {
		return fmt.Errorf("query: labels of %d series: %w", len(ids), err)
	}
	for j, i := range idx {
		ss[i].labels = lsets[j]
	}
	return nil
}
