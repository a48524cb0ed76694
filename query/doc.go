// Package query owns the read path: series selection through the tag index and
// the series registry, row reads, chunk decoding and Prometheus' interfaces.
//
// # What exists
//
// Reader implements storage.Queryable (Querier) and storage.ChunkQueryable
// (ChunkQuerier) of Prometheus v0.316.0, which db.DB exposes as its
// storage.Storage; besides, for tools and tests, SeriesInRange, Samples and
// Metadata, and the methods the HTTP API adds (last.go, metadata.go).
//
// A Select of [mint, maxt] (inclusive, ms; narrowed by SelectHints.Start/End):
//
//  1. plans (plan.go): the index plan, or — when __name__ and the host are fixed
//     by equality matchers and it is cheaper by an estimate from posting-list
//     sizes — one scan of the host/metric key range with server-side filters on
//     the promoted t: columns;
//  2. index plan: for every day of the range that has index rows (empty
//     stretches are skipped by one scan, days read Options.Concurrency at a
//     time), matchers become posting-list operations (postings.go): equality
//     reads, set regexes as batched reads, other regexes as scans of the
//     label's value range from their literal prefix, intersected; matchers
//     that match the empty string are differences, so series lacking the label
//     are selected too. The union over days gives series IDs, the registry
//     their labels (cached), sorted by labels;
//  3. reads one key range per series (newest bucket first), Options.Concurrency
//     series at a time and at most that many ahead of the consumer (fetch.go),
//     so memory holds a few series' windows, not the result; raw cells (family
//     r) and stored chunks (family c, schema/chunk.go) are merged, one sample per
//     timestamp (raw wins), ascending, values bit-exact (stale markers included);
//  4. hands out series lazily: samples through chunkenc.Iterator, or for the
//     ChunkQuerier (remote read's streamed XOR chunks) a row's stored chunk as
//     it is, else XOR chunks of at most MaxChunkSamples encoded per bucket.
//
// Series without a sample in the range are left out. With SelectHints.Func
// "series" only labels are read: every series the index holds for the days of the
// range, including one whose samples that day lie outside it. SelectHints.Limit cuts the sorted series;
// Options.MaxSeries and MaxSamples fail a Select with errors wrapping
// ErrLimitExceeded; Options.Timeout bounds it (context.DeadlineExceeded).
// LabelNames and LabelValues read the index (without
// matchers) or the labels of the matching series, with LabelHints.Limit.
//
// Not yet: rollups (SelectHints.Step/Func are not used to pick a resolution),
// sharding hints, native histograms (not stored).
//
// It reads only through kv.Store, schema's codecs and index/. It must never
// import a kv backend (kv/hbase, kv/embedded, gohbase, Pebble) nor
// db, promapi or cmd.
package query
