package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/value"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Reading a series from a rollup (the plan comes from resolution.go).
//
// A bucket's rollup cell is written by compaction before the bucket's raw
// cells are deleted, and rewritten when late samples are compacted. So a
// bucket that still has raw cells (not compacted yet, compacted only in part,
// or with late samples) may have no rollup cell or a stale one: its windows are
// computed from the data row itself (chunk and raw cells, cellenc.DecodeDataRow)
// with the same code compaction uses (cellenc.AggregateWindows). A key-only scan
// of the series' raw family finds those buckets; the others are read from the
// rollup table, and a bucket found in neither (no data, compacted before the
// resolution was configured, or with a void cell: compacted again by a process
// that does not write this resolution, compact/compact_rows.go) by a point
// read of its data row. Either way the
// windows are those of all the bucket's samples.

// readPlanned reads one series as p says: raw rows, or rollup samples (as one
// cellenc.RowSamples) followed by the raw rows from p.rawFrom on.
//
// A rollup keeps of native histograms only what instant selectors,
// last_over_time and present_over_time need (each window's last histogram,
// cellenc.RollupWindow.LastH). For the other modes, a series whose windows hold
// histograms is read from raw data wherever raw data still exists (its answer
// from the windows would lack the histograms: sum_over_time of histograms, or
// the annotations of max_over_time and min_over_time over them); before the
// raw retention, the windows' floats are all there is. So is a series whose
// sums are not exact when the plan promises sum_over_time raw data's answer
// (needsRaw).
func (r *Reader) readPlanned(ctx context.Context, s *series, mint, maxt int64, p rollupPlan) ([]cellenc.RowSamples, error) {
	switch p.mode {
	case modeRaw:
		return r.readSeries(ctx, s, mint, maxt)
	case modeFunc:
		return r.readFunc(ctx, s, mint, maxt, p.fn)
	}
	hi := min(maxt, p.rawFrom-1)
	rawFrom := p.rawFrom
	var out []cellenc.RowSamples
	if mint <= hi {
		ws, err := r.readWindows(ctx, s, p.rollup, mint, hi, false)
		if err != nil {
			return nil, fmt.Errorf("query: read series %d (%s) from the %s rollup: %w", s.id, s.labels, schema.RollupTable(p.rollup.Resolution), err)
		}
		if needsRaw(p, ws) {
			expired := r.rawExpiry()
			if expired <= mint {
				return r.readSeries(ctx, s, mint, maxt)
			}
			// Raw data from the start of the window that holds the expiry
			// point: reading that window from both would count samples
			// twice. The windows before it are all there is.
			from := cellenc.WindowEnd(expired, p.rollup.Resolution) - p.rollup.Resolution.Milliseconds() + 1
			hi, rawFrom = min(hi, from-1), min(rawFrom, from)
			ws = windowsEndingBy(ws, hi)
		}
		if len(ws) > 0 {
			p.caveat.note(ws, p.mode)
		}
		if fs, hs := windowSamples(ws, p.mode, mint, hi); len(fs)+len(hs) > 0 {
			out = append(out, cellenc.RowSamples{BucketStart: -1, Samples: fs, Histograms: hs})
		}
	}
	if rawFrom <= maxt {
		rows, err := r.readSeries(ctx, s, max(mint, rawFrom), maxt)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// needsRaw reports whether a series whose windows are ws must be read from
// raw data where raw data still exists: its windows hold histograms that mode
// does not serve, or the plan promises raw data's answer for sum_over_time and
// the windows' sums are not exact (cellenc.SumsExact), so that adding them
// could round differently from adding the samples.
func needsRaw(p rollupPlan, ws []cellenc.RollupWindow) bool {
	switch whyNotRaw(ws, p.mode) {
	case "":
		return false
	case whyHistograms:
		return true
	}
	return p.sameAsRaw
}

// Why windows may not give raw data's answer (whyNotRaw).
const (
	whyHistograms = "series holding native histograms, of which a rollup keeps only the last per window"
	whyInexactSum = "series whose sums are not exact in floats (window sums round differently from sample sums)"
)

// whyNotRaw says why the windows ws, read in mode, cannot give raw data's
// answer ("" when they can): they hold histograms mode does not serve, or
// their sums are not exact (cellenc.SumsExact).
func whyNotRaw(ws []cellenc.RollupWindow, mode readMode) string {
	switch {
	case !mode.servesHistograms() && hasHistograms(ws):
		return whyHistograms
	case mode == modeSum && !cellenc.SumsExact(ws):
		return whyInexactSum
	}
	return ""
}

// windowsEndingBy returns the windows of ws (ascending) that end by t.
func windowsEndingBy(ws []cellenc.RollupWindow, t int64) []cellenc.RollupWindow {
	n := len(ws)
	for n > 0 && ws[n-1].End > t {
		n--
	}
	return ws[:n]
}

// rawExpiry is the oldest timestamp raw data may still hold (Options.RawRetention).
func (r *Reader) rawExpiry() int64 {
	if r.opts.RawRetention <= 0 {
		return math.MinInt64
	}
	return r.opts.Now().UnixMilli() - r.opts.RawRetention.Milliseconds()
}

// hasHistograms reports whether some window holds a histogram sample.
func hasHistograms(ws []cellenc.RollupWindow) bool {
	for _, w := range ws {
		if w.Histograms > 0 {
			return true
		}
	}
	return false
}

// windowSamples returns the samples the engine gets for windows ws in mode,
// those in [mint, maxt], ascending, of each kind; window-end samples of a
// window ending after maxt are put at maxt. Histograms are returned for the
// modes that serve them (readMode.servesHistograms): each window's last.
func windowSamples(ws []cellenc.RollupWindow, mode readMode, mint, maxt int64) ([]cellenc.Sample, []cellenc.HistogramSample) {
	out := make([]cellenc.Sample, 0, len(ws))
	var hs []cellenc.HistogramSample
	add := func(t int64, v float64) {
		if t >= mint && t <= maxt {
			out = append(out, cellenc.Sample{T: t, V: v})
		}
	}
	addH := func(w cellenc.RollupWindow) {
		if w.Histograms > 0 && w.LastH.T >= mint && w.LastH.T <= maxt {
			hs = append(hs, w.LastH)
		}
	}
	for _, w := range ws {
		end := min(w.End, maxt)
		switch mode {
		case modeLast:
			// The last sample of each kind and the stale marker after them,
			// each at its own timestamp: at a window end the engine takes
			// the newest, which is raw's newest.
			if w.Count > 0 {
				add(w.LastT, w.LastV)
			}
			addH(w)
			if w.HasStale() {
				add(w.StaleT, math.Float64frombits(value.StaleNaN))
			}
		case modeLastValue:
			if w.Count > 0 {
				add(w.LastT, w.LastV)
			}
			addH(w)
		case modeMax:
			if w.Count > 0 {
				add(end, w.Max)
			}
		case modeMin:
			if w.Count > 0 {
				add(end, w.Min)
			}
		case modeSum:
			if w.Count > 0 {
				add(end, w.Sum)
			}
		}
	}
	return out, hs
}

// readWindows returns the windows of resolution ro of series s that hold a
// timestamp in [mint, maxt] (mint >= 0), ascending by end, each whole (all its
// samples, also those outside [mint, maxt]). With counters, a rollup cell
// written before windows kept their counter fields (HasCounters) is
// replaced by its bucket's data row where that still exists.
func (r *Reader) readWindows(ctx context.Context, s *series, ro schema.Rollup, mint, maxt int64, counters bool) ([]cellenc.RollupWindow, error) {
	width := r.settings.BucketWidth
	res := ro.Resolution
	firstEnd, lastEnd := cellenc.WindowEnd(mint, res), cellenc.WindowEnd(maxt, res)
	firstBucket := schema.BucketStart(firstEnd-res.Milliseconds()+1, width)
	lastBucket := schema.BucketStart(lastEnd, width)

	dirty, err := r.bucketsWithRaw(ctx, s, firstBucket, lastBucket)
	if err != nil {
		return nil, err
	}
	isDirty := make(map[int64]bool, len(dirty))
	for _, b := range dirty {
		isDirty[b] = true
	}
	type bucketWindows struct {
		start int64
		ws    []cellenc.RollupWindow
	}
	var buckets []bucketWindows
	// Cells without counter fields, when asked for them: kept for a bucket
	// whose data row is gone.
	var legacy []bucketWindows

	// Compacted buckets: the rollup table, one row per day, newest first.
	start, stop := schema.SeriesRowRange(s.salt, s.host, s.metric, s.id, schema.RollupRowStart(firstBucket), schema.RollupRowStart(lastBucket))
	sc := r.st.Scan(ctx, schema.RollupTable(res), start, stop, kv.Families(schema.FamilyRollup))
	for sc.Next() {
		row := sc.Row()
		_, day, err := schema.ParseDataRowTail(row.Key)
		if err != nil {
			sc.Close()
			return nil, err
		}
		for _, c := range row.Cells {
			b, err := schema.DecodeRollupQualifier(c.Qualifier, day)
			if err != nil {
				sc.Close()
				return nil, err
			}
			if b < firstBucket || b > lastBucket || isDirty[b] || cellenc.IsVoidRollupValue(c.Value) {
				// A void cell (cellenc.AppendVoidRollupValue) is no cell: the
				// bucket was compacted by a compactor that does not write this
				// resolution, and is read from its data row below.
				continue
			}
			ws, err := cellenc.DecodeRollupWindows(nil, c.Value, b, res)
			if err != nil {
				sc.Close()
				return nil, err
			}
			countRollupCells(ctx, 1)
			if counters && !hasCounters(ws) {
				legacy = append(legacy, bucketWindows{b, ws})
				continue
			}
			buckets = append(buckets, bucketWindows{b, ws})
		}
	}
	err = sc.Err()
	sc.Close()
	if err != nil {
		return nil, err
	}
	// A bucket with neither raw cells nor a rollup cell has no data, or was
	// compacted before this resolution was configured: its data row, if any,
	// is read too (a point read per such bucket; the data table's row bloom
	// filter answers the absent ones).
	rolled := make(map[int64]bool, len(buckets))
	for _, b := range buckets {
		rolled[b.start] = true
	}
	// A legacy cell's bucket is not in buckets: its data row is read.
	for b := firstBucket; b <= lastBucket; b += width.Milliseconds() {
		if !rolled[b] && !isDirty[b] {
			dirty = append(dirty, b)
		}
	}
	slices.Sort(dirty)

	// Those buckets' data rows, aggregated here.
	for len(dirty) > 0 {
		batch := dirty[:min(len(dirty), labelsBatch)]
		dirty = dirty[len(batch):]
		keys := make([][]byte, len(batch))
		for i, b := range batch {
			keys[i] = schema.DataRowKey(nil, schema.DataKey{Salt: s.salt, Host: s.host, Metric: s.metric, SeriesID: s.id, BucketStart: b})
		}
		rows, err := r.st.GetRows(ctx, schema.TableData, keys, kv.Families(schema.FamilyChunk, schema.FamilyRaw))
		if err != nil {
			return nil, err
		}
		for i, row := range rows {
			if len(row.Cells) == 0 {
				if j := slices.IndexFunc(legacy, func(l bucketWindows) bool { return l.start == batch[i] }); j >= 0 {
					buckets = append(buckets, legacy[j])
				}
				continue
			}
			countDataRow(ctx, row)
			rs, err := cellenc.DecodeDataRow(row, width, batch[i], batch[i]+width.Milliseconds()-1)
			if err != nil {
				return nil, err
			}
			buckets = append(buckets, bucketWindows{batch[i], cellenc.AggregateWindows(rs.Samples, rs.Histograms, res)})
		}
	}

	slices.SortFunc(buckets, func(a, b bucketWindows) int { return cmp.Compare(a.start, b.start) })
	var out []cellenc.RollupWindow
	for _, b := range buckets {
		for _, w := range b.ws {
			if w.End < firstEnd || w.End > lastEnd {
				continue
			}
			if n := len(out); n > 0 && out[n-1].End == w.End {
				out[n-1] = out[n-1].Merge(w)
				continue
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// bucketsWithRaw returns the starts of the buckets of s in [first, last] whose
// data rows hold raw cells, ascending: one key-only scan of the raw family.
func (r *Reader) bucketsWithRaw(ctx context.Context, s *series, first, last int64) ([]int64, error) {
	start, stop := schema.SeriesRowRange(s.salt, s.host, s.metric, s.id, first, last)
	sc := r.st.Scan(ctx, schema.TableData, start, stop, kv.Families(schema.FamilyRaw), kv.WithFilter(kv.KeyOnlyFilter{}))
	defer sc.Close()
	var out []int64
	for sc.Next() {
		_, b, err := schema.ParseDataRowTail(sc.Row().Key)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// hasCounters reports whether the windows with float samples of ws keep the
// counter fields (a cell written before them decodes without).
func hasCounters(ws []cellenc.RollupWindow) bool {
	for _, w := range ws {
		if w.Count > 0 && !w.HasCounters {
			return false
		}
	}
	return true
}
