// Package query owns the read path: series selection through the tag index and
// the series registry, row reads, chunk and rollup decoding, resolution choice,
// the PromQL engine and Prometheus' interfaces.
//
// # What exists
//
// Reader implements storage.Queryable (Querier) and storage.ChunkQueryable
// (ChunkQuerier) of Prometheus v0.316.0, which db.DB exposes as its
// storage.Storage; besides, for tools and tests, SeriesInRange, Samples and
// Metadata (reader.go), and the methods the HTTP API adds: Last (last.go) and
// ListMetadata (metadata.go), and storage.ExemplarQueryable (exemplars.go:
// series selected as below, then one scan of each one's exemplar rows).
// Options (options.go) tune it; Options.Validate
// checks options that come from a user, which Reader.WithOptions does not.
// Engine (rollupfunc.go) is Prometheus' PromQL engine behind a parser that
// takes rewritten expressions: it replaces rate, increase, delta, irate,
// idelta, changes, resets and count_over_time over whole rollup windows by a
// vector selector with a per-query matcher, whose Select returns the
// function's value per evaluation time computed from the windows
// (rangefunc.go). ReadStats (readstats.go) counts the raw, chunk and rollup
// cells a query's Selects read.
//
// A Select is first planned by resolution (resolution.go, rollup.go): from a
// rollup when the query's evaluation times (WithPromQL, set by the HTTP layer)
// and its function make the answer raw data's, or for the part of its range
// older than the raw retention; otherwise from raw data, as follows.
//
// A Select of [mint, maxt] (inclusive, ms; narrowed by SelectHints.Start/End):
//
//  1. plans (plan.go): the index plan, or — when __name__ and the host are fixed
//     by equality matchers, the host and metric have 1 to
//     Options.HostScanMaxSeries series on the days of the range, and it is no
//     dearer by an estimate in round trips (choosePlan) — one scan of the
//     host/metric key range with server-side filters on the promoted t:
//     columns; Options.Plan forces either;
//  2. index plan: for every day of the range that has index rows (empty
//     stretches are skipped by one scan, days read Options.Concurrency at a
//     time, the first error cancelling the others), matchers become
//     posting-list operations (postings.go): equality reads, set regexes as
//     batched reads, other regexes as scans of the label's value range from
//     their literal prefix, intersected; matchers that match the empty string
//     are differences, so series lacking the label are selected too. The union
//     over days gives series IDs (more than Options.MaxSeries fail here, unless
//     a SelectHints.Limit no larger cuts them), the registry their labels
//     (cached), sorted by labels;
//  3. reads the series' rows, Options.Concurrency reads at a time and at most
//     that many ahead of the consumer (fetch.go), so memory holds a few reads'
//     windows, not the result: over at most 48 buckets, a batch of series per
//     read, whose rows (series × bucket, keys known without a read) come in one
//     kv.Store.GetRows — one Pebble iterator, one HBase multi-get — within 512
//     rows a batch; over more, or from a rollup, one series per read, by one
//     scan of its key range (newest bucket first). Raw cells (family
//     r) and any chunk cells (family c, cellenc/chunk.go) are merged, one sample
//     per timestamp (raw wins), ascending, values bit-exact (stale markers
//     included), of either kind: float samples and native histograms (integer
//     and float, cellenc.HistogramSample), with their start timestamps. A row
//     of floats without start timestamps stays 16 bytes a sample (samples.go);
//     histograms and start timestamps go beside it. Closing the querier or
//     cancelling the Select's context stops the reads in flight;
//  4. hands out series lazily through chunkenc.Iterator (iterator.go): a
//     float-only series over its samples as they are; a series with
//     histograms or start timestamps over its samples merged, the histograms
//     as Prometheus' head hands them out — through its chunks and back
//     (chunkencode.go asHead), so that counter-reset hints are the head's,
//     reading the series back to the start of mint's 2h head chunk range when
//     that decides a hint (Reader.history). The ChunkQuerier (remote read's
//     STREAMED_XOR_CHUNKS) hands out a row's stored chunks as they are
//     (cellenc.RowSamples.Chunks), else chunks encoded per bucket: XOR chunks
//     of at most MaxChunkSamples for floats, and for rows with histograms or
//     start timestamps Prometheus' encodings cut as its head cuts them
//     (histogram, float histogram, and the ST forms XOR2 and histogram ST for
//     the kinds that carry start timestamps).
//
// Series without a sample in the range are left out. With SelectHints.Func
// "series" only labels are read: every series the index holds for the days of
// the range, including one whose samples that day lie outside it.
// SelectHints.Limit cuts the sorted series; Options.MaxSeries and MaxSamples
// fail a Select with errors wrapping ErrLimitExceeded (one over the limit, not
// at it); Options.Timeout bounds it (context.DeadlineExceeded). LabelNames and
// LabelValues read the index (without matchers) or the labels of the matching
// series, with LabelHints.Limit.
//
// # Not used
//
// Sharding hints. Remote read's SAMPLES answer carries no start timestamps
// (prompb.Sample and prompb.Histogram have none); its streamed chunks do.
//
// It reads only through kv.Store, schema (keys), cellenc (cell values) and index/. It must never
// import a kv backend (kv/hbase, kv/embedded, gohbase, Pebble) nor write, db,
// promapi or cmd.
package query
