// Package write owns hbtsdb's ingest pipeline: it turns a decoded write request
// (types.go: what a remote-write or /api/put request carries) into cells of the
// data, series, index and meta tables.
//
// # Pipeline
//
// Writer.Write runs, for one request, these four steps (each a method of Writer
// named after it, writer.go):
//
//  1. validate: request-level limits refuse the request whole (ErrInvalid, nothing
//     written); each invalid series, sample or metadata entry becomes a Rejection
//     naming the series and the problem (validate.go), and the valid rest goes on —
//     a partial write, as Prometheus' remote-write 2.0 receiver and Mimir do;
//  2. resolve series IDs through index.Registry (cache, then one GetRows for the
//     misses, then a check-and-put per truly new series);
//  3. build, grouped by data row, the raw-sample cells (family r, qualifier and
//     value from schema's codecs, cell timestamp = sample timestamp), the promoted
//     tag columns (family t, once per row per process) and the day's postings
//     (index.Postings, once per series per day per process);
//  4. store: the data table in Applies of at most Options.MaxBatch mutations, the
//     postings and the metadata, concurrently (the first error cancels the rest);
//     and return only after the store acknowledged every one of them.
//
// # Guarantees
//
//   - Nothing is acknowledged that was not stored: any store error fails the whole
//     request (wrapped, so kv.ErrUnavailable stays detectable with errors.Is)
//     and the caller retries it. Retries are idempotent: every cell's timestamp comes
//     from the request (samples: their own; tags: their bucket's end; postings: their
//     day's start), so a retry rewrites the same cells instead of adding versions.
//   - Values are stored bit-exact: NaN payloads, stale markers
//     (0x7ff0000000000002) and ±Inf included.
//   - Out-of-order and late samples are accepted: a sample only has to lie within
//     Limits.MaxAge and Limits.MaxFutureSkew of the clock (Options.Now), and never
//     before 1970 (HBase cell timestamps are >= 0).
//   - What "once per process" remembers (tags per row, postings per day, metadata
//     per metric) is remembered only after the store acknowledged it, in bounded
//     LRU sets; forgetting costs a rewrite, never a loss.
//
// # Imports
//
// write depends on kv, schema and index, and on Prometheus' labels and
// model types. It must never import a kv backend (kv/hbase,
// kv/embedded, gohbase, Pebble) nor a package above it (query, db, promapi,
// cmd).
package write
