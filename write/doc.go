// Package write owns hbtsdb's ingest pipeline: it turns a decoded write request
// (types.go: what a remote-write or /api/put request carries) into cells of the
// data, series, index, exemplars, pending and meta tables.
//
// # Pipeline
//
// Writer.Write (WriteAt with the clock's now) runs, for one request, these four
// steps (each a method of Writer named after it, writer.go):
//
//  1. validate: request-level limits refuse the request whole (ErrInvalid, nothing
//     written); each invalid series, sample or metadata entry becomes a Rejection
//     naming the series and the problem (validate.go), and the valid rest goes on —
//     a partial write, as Prometheus' remote-write 2.0 receiver and Mimir do;
//  2. resolve series IDs through index.Registry.Resolve (cache, then one GetRows
//     of the misses' forward rows, then the truly new series registered: on a
//     store of format 2 under IDs derived from a hash of their labels, with
//     plain puts; on format 1, or on a hash collision, under counter IDs with a
//     check-and-put per series; see index/doc.go); a series that carries
//     nothing but exemplars is looked up (Registry.Lookup), never registered
//     (an exemplar alone does not create a series, as in Prometheus' TSDB);
//  3. build, grouped by data row, the raw-sample cells (family r, qualifier and
//     value from cellenc's codecs): float samples (8 bytes, 16 with a start
//     timestamp) and native histogram samples (cellenc.AppendHistogramSampleValue)
//     in the same cells, so a series may change kind sample by sample. A row is
//     on time or late by the clock as the cells are built (schema.IsOnTime): an
//     on-time cell's timestamp is its sample's, a late cell's the bucket's last
//     millisecond (schema.LateCellTimestamp). Beside them: the promoted tag
//     columns (family t, once per row per process), the rows' pending marks
//     (schema/pending.go: an on-time mark once per row per process, a late mark
//     under one fresh nonce per request for each row it writes late cells into),
//     the day's postings (index.Postings, once per series per day per process)
//     and the exemplar table's cells (exemplars.go);
//  4. store: the data and exemplar tables in Applies of at most
//     Options.Apply.MaxBatch mutations, the postings, the metadata and the
//     on-time marks, Options.Apply.Concurrency at a time (kv.Writes: the first
//     error cancels the rest), under a deadline when there are on-time cells
//     (schema.OnTimeDeadline: past it the request fails with
//     kv.ErrUnavailable and its retry writes late cells); then the late marks,
//     after the cells they mark; and return only after the store acknowledged
//     every one of them.
//
// # Guarantees
//
//   - Nothing is acknowledged that was not stored: any store error fails the whole
//     request (wrapped, so kv.ErrUnavailable stays detectable with errors.Is)
//     and the caller retries it. Retries are idempotent: every cell's timestamp comes
//     from the request (on-time samples: their own; late samples, tags and
//     pending marks: their bucket's last millisecond; postings: their day's
//     start), so a retry rewrites the same cells instead of adding versions (a
//     retry of late samples adds one late mark under its own nonce, which costs
//     compaction a column delete and nothing else).
//   - Values are stored bit-exact: NaN payloads, stale markers
//     (0x7ff0000000000002) and ±Inf included, in floats and in every field of
//     a histogram. A histogram is stored as Prometheus' receiver would append
//     it: schemas 9..52 reduced to 8, and one over Limits.MaxHistogramBuckets
//     reduced until it fits (validate.go).
//   - Invalid exemplars never fail their series: they are left out and listed
//     in Result.RejectedExemplars, as Prometheus' receiver drops them.
//   - Out-of-order and late samples are accepted: a sample only has to lie within
//     Limits.MaxAge and Limits.MaxFutureSkew of the clock (Options.Now), and never
//     before 1970 (HBase cell timestamps are >= 0).
//   - What "once per process" remembers (tags per row, postings per day, metadata
//     per metric) is remembered only after the store acknowledged it, in bounded
//     LRU sets; forgetting costs a rewrite, never a loss.
//
// # Imports
//
// write depends on kv, schema, index, index/lru and internal/optcheck, and on
// Prometheus' labels and model types. It must never import a kv backend
// (kv/hbase, kv/embedded, gohbase, Pebble) nor a package above it (query, db,
// promapi, cmd).
package write
