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
// It also holds the pure parts of OpenTSDB's other read endpoints that
// promapi serves: /api/query/last (last.go: QueryRpc's LastPointQuery and
// TSUIDQuery's rules, the IncomingDataPoint answer with Java's number
// strings), /api/search/lookup (lookup.go: SearchRpc's and
// TimeSeriesLookup's pairs and their matching, the SearchQuery answer) and
// /api/config/filters (filterconfig.go: OpenTSDB 2.4.1's answer).
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
// Followed from OpenTSDB, and checked against a real OpenTSDB 2.4.1 by
// promapi's TestOpenTSDBCompare:
//   - Integers: a series' samples with integral values are OpenTSDB's longs
//     (see below), so a group whose current values are all integers
//     aggregates in integer arithmetic (runLong: avg truncates, the linear
//     interpolation rounds toward zero, the ep*r3/ep*r7 percentiles use
//     their estimation types) and is written without ".0"; downsampled
//     values and rates are doubles.
//   - Names: a sub-query naming a metric, a filter's tag key or a
//     case-sensitive literal_or value that was never written is 400 "No such
//     name for 'metrics': 'x'", as OpenTSDB's UID look-up (a Source that
//     implements Names says what exists).
//   - JSON: of a sub-query's "filters" and "tags", the one that comes last
//     in the body wins (TSSubQuery's setters replace each other's filters);
//     identical sub-queries are answered once (TSQuery's LinkedHashSet), as
//     in m=; a filter that cannot be built makes the body unreadable ("Unable
//     to parse the given JSON", the cause in "details").
//   - Filters: the types OpenTSDB 2.4.1 loads; its not_key filter is not one
//     of them (commented out in TagVFilter), so not_key is refused with
//     OpenTSDB's message.
//
// Where it differs from OpenTSDB 2.4.1:
//   - hbtsdb keeps every sample as a double, so an integral value (that
//     fits a long) is taken for the integer OpenTSDB would have stored: a
//     float sent as "2.0", which OpenTSDB keeps a float, aggregates as an
//     integer here (avg of 2.0 and 3.0 is 2, not 2.5).
//   - The series of a group are in tag order; OpenTSDB takes them in the
//     order of their UIDs, that is of when their tag values were first
//     written. first, last and diff across several series depend on it (and
//     mult and dev in their last bits).
//   - A malformed tag part of m= (an unknown filter type, "host" without a
//     value, an unclosed "literal_or(") is 400 with OpenTSDB's message, where
//     OpenTSDB answers 500 (its parser's exception escapes unwrapped); a
//     JSON body without "queries" is 400 ("Missing start time" or "Missing
//     queries") where OpenTSDB fails with a NullPointerException (500).
//   - regexp filters are Go's RE2 syntax (no look-around, no
//     back-references), and a bad pattern's message is Go's.
//   - Calendar downsampling ("1dc", timezone, useCalendar), the "scalar"
//     fill policy, expressions, rollup and histogram
//     options, annotations and show_query/show_stats are refused (400) or
//     not written. Absolute dates are UTC, where OpenTSDB takes the TSD's
//     time zone.
//   - Groups are ordered by their group-by tag values (OpenTSDB's order is
//     that of its asynchronous UID look-ups), tags and aggregateTags by
//     name; tsuids are hbtsdb's 8-byte series IDs in hex, not OpenTSDB's UID
//     concatenations. tsuid= and "tsuids" sub-queries (in /api/query and
//     /api/query/last) take those IDs; OpenTSDB's own are refused (400).
package opentsdb
