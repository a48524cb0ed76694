// Package opentsdb answers OpenTSDB 2.x's /api/query over hbtsdb's raw
// samples with OpenTSDB 2.4.1's semantics, followed from its code
// (src/core/AggregationIterator.java, Aggregators.java, Downsampler.java,
// FillingDownsampler.java, RateSpan.java, TsdbQuery.java, SpanGroup.java,
// src/query/filter/*.java, src/tsd/QueryRpc.java, HttpJsonSerializer.java,
// src/utils/DateTime.java): parsing (ParseForm for GET's m= syntax,
// ParseJSON for POST's TSQuery), the pipeline (Run: filters, group-by,
// downsampling with fill policies, rate, aggregation with interpolation) and
// the JSON answer (WriteJSON, WriteError). It is pure: series come from a
// Source, so that the HTTP handler (promapi/otsdbquery.go) and a test that
// compares with a real OpenTSDB drive it the same way. It imports nothing of
// hbtsdb.
//
// The pipeline, per sub-query: the series of the metric in the scanned
// range — the query's range widened to OpenTSDB's hour rows (and to whole
// downsampling intervals), so that points just outside the range take part as
// they do in OpenTSDB — that have every filter's tag key and pass every
// filter; grouped by the values of the group-by filters' keys; each series
// downsampled (epoch-aligned intervals reported at their start), then turned
// into per-second rates; the group aggregated; the result cut to
// [start, end], both inclusive.
//
// How this differs from PromQL, on purpose (it is OpenTSDB's):
//   - Aggregation across series interpolates linearly (sum, avg, min, max,
//     dev, percentiles) at every timestamp any series of the group has; a
//     series takes part only between its first and last point, never
//     extrapolated and never looked back at for 5 minutes as PromQL's
//     lookback does. zimsum/count take 0, mimmin/mimmax ±Double.MAX_VALUE.
//   - Downsampling intervals are [t, t+interval) reported at t, where PromQL
//     ranges are (t-range, t] reported at t.
//   - rate is between consecutive points (after downsampling), per second,
//     with counter resets wrapped through counterMax; there is no
//     extrapolation to range edges as in PromQL's rate. The first rate of a
//     series is its value over its timestamp (RateSpan starts from (0, 0)),
//     which OpenTSDB's aggregation does not emit but does use.
//   - Series are selected by equality of the metric and tag filters that do
//     not need the tag index (they are applied to each series of the metric).
//
// Where it differs from OpenTSDB 2.4.1:
//   - Every value is a double: OpenTSDB keeps integers as longs and then
//     aggregates them in integer arithmetic (avg truncates, LERP rounds
//     toward zero) and writes them without ".0"; here the double path is
//     taken for all (and ep*r3/ep*r7 equal p*, as they do for doubles there).
//   - Calendar downsampling ("1dc", timezone, useCalendar), the "scalar"
//     fill policy, tsuid sub-queries, expressions, rollup and histogram
//     options, annotations and show_query/show_stats are refused (400) or
//     not written.
//   - A metric or tag value that was never written gives no series (an
//     empty answer), where OpenTSDB answers 400 "No such name for 'metrics'"
//     from its UID table.
//   - Groups are ordered by their group-by tag values (OpenTSDB orders them
//     by tag value UIDs), tags and aggregateTags by name; tsuids are hbtsdb's
//     8-byte series IDs in hex, not OpenTSDB's UID concatenations.
package opentsdb
