// Package db is hbtsdb's composition root: Open joins a kv.Store (opened and
// schema-checked by the caller, see schema/provision) with the series registry
// and tag index (index/), the write pipeline (write/) and the read path (query/)
// into a *DB, which is what Prometheus' libraries see as a storage.
//
// # Prometheus interfaces
//
// *DB implements storage.Appendable and storage.AppendableV2 (Prometheus
// v0.316.0); its AppenderV2 also implements storage.ExemplarAppenderV2, which
// Prometheus' appending code asserts before it hands over exemplars. Querier and ChunkQuerier come from
// query.Reader (Options.Query sets its limits and concurrency), so *DB is a whole
// storage.Storage (StartTime is math.MinInt64: see its comment). It also has what
// promapi's endpoints need besides (promapi.Store): Write, Last, Metadata,
// ListMetadata and Ping.
//
// The HTTP write endpoints do not go through the appender: promapi decodes remote
// write itself and calls Write with a whole request (promapi/doc.go says why).
// The appender is for Prometheus code that writes through a storage.Storage —
// in this repository, the PromQL acceptance suite (promqltest) that db's tests
// run. An appender buffers one transaction and writes it through
// write.Writer on Commit; Rollback discards it. Append validates each series and
// sample at once (write.Writer.CheckSeries, CheckSample), so that a bad sample
// fails its own Append, as Prometheus' receivers expect.
//
// Errors of Append wrap our own sentinels (write.ErrInvalid with
// write.ErrInvalidLabels, write.ErrTooOld, write.ErrOutOfRange or
// write.ErrInvalidHistogram, the last also wrapping Prometheus'
// histogram.Error) and also the Prometheus sentinel of the same meaning
// (storage.ErrTooOldSample, storage.ErrOutOfBounds), so that Prometheus code
// that branches on its own sentinels tells bad input from a store failure (its
// remote.NewWriteHandler, for one, answers 400 for those and 500 — retried
// forever — for anything else).
//
// What the appenders store:
//
//   - float samples and native histograms (Append with h or fh,
//     Appender.AppendHistogram), validated at Append as the writer validates
//     them (write.Writer.CheckHistogram); a histogram at the timestamp of a
//     float sample of its series in the same transaction fails Commit (the
//     rest is written);
//   - start timestamps: AppenderV2's st, with its sample; the older
//     interface's AppendSTZeroSample and AppendHistogramSTZeroSample (synthetic
//     zero samples) are ignored;
//   - exemplars: inline AOptions.Exemplars, AppendExemplars and AppendExemplar,
//     validated at once (write.Writer.CheckExemplar): an invalid one is
//     reported in a *storage.AppendPartialError (wrapping
//     write.ErrInvalidExemplar and storage.ErrOutOfBounds) and its sample is
//     kept; a stale marker's exemplars are dropped, and exemplars of a series
//     that has no samples stored are dropped on Commit (an exemplar alone does
//     not create a series), as in Prometheus' TSDB.
//
// Metadata (AOptions.Metadata with AOptions.MetricFamilyName or __name__, and
// Appender.UpdateMetadata) is stored on Commit as schema.Metadata.
//
// # Old samples
//
// Samples are stored with their own timestamps as cell timestamps (a late
// sample with its bucket's last millisecond, schema/late.go), so the data
// family's TTL (schema.TableOptions.RawRetention) hides those older than the
// retention at once. Servers set write.Limits.MaxAge to the raw retention so that
// such samples are rejected rather than silently invisible; tests that load data
// near the epoch, as Prometheus' promqltest does, create the tables with
// RawRetention 0 and open the DB with MaxAge 0.
//
// # Ownership
//
// The caller owns the store: Close leaves it open unless Options.CloseStore. A DB
// starts no goroutines and holds only caches.
//
// db may import every package of hbtsdb below promapi and cmd, but no storage
// backend (kv/hbase, kv/embedded, gohbase, Pebble): the caller picks the
// backend.
package db
