// Package otsdbimport moves an OpenTSDB 2.4 installation's history into
// hbtsdb (tsdb import opentsdb): it reads OpenTSDB's own HBase tables — the
// data table (`tsdb`) and the UID table (`tsdb-uid`) — through a kv.Store,
// decodes them with otsdbformat, maps each series to labels as /api/put does
// (wire.PutLabels: the metric as __name__, each tag a label), and writes the
// points through importer's write path (importer.Options.WriteBatch, a Sink
// that is the db.DB remote write and /api/put go through).
//
// It owns the import loop: loading the UIDs, cutting the data table into key
// ranges, reading them in parallel, batching, and the checkpoint. It knows
// neither HBase (only kv.Store, opened by the caller with
// hbase.Options.ExactTableNames so that OpenTSDB's table names are used as
// they are) nor hbtsdb's layout (schema, cellenc): it must never import
// kv/hbase, schema, cellenc, db or query.
//
// # Work
//
// The UID table's names (family `name`, every kind) are read into memory
// first: about a hundred bytes a UID, never per data point. The data table
// is cut into key ranges: one set per salt bucket (one when not salted), each
// bucket cut at metric UIDs into Options.KeyRanges ranges in all, so that
// metrics of a bucket are read by several workers; every key of the table
// is in one range, so rows of a metric the UID table does not name (or of
// the global annotations) are read and counted, not missed.
// Options.Import.Concurrency workers take ranges one at a time, scan them
// (family t) and write batches of Options.Import.BatchSamples points;
// memory is about Concurrency batches, plus one row each (an OpenTSDB row
// is one hour of one series) and the labels of the series a worker saw
// lately.
//
// # Resuming and idempotence
//
// The Checkpoint records key spans of the data table whose points are all
// stored: after every batch the Sink acknowledged, the span from its range's
// start to the first row not wholly in the batches written. A run with the
// checkpoint skips those spans and reads the rest, whatever ranges it cuts
// the table into (new metrics may have been added meanwhile). What was
// written after the last checkpoint is written again after a kill, onto the
// same cells: an hbtsdb cell is addressed by series, bucket and
// millisecond, and its value is the point's.
//
// # What is not imported
//
// Annotations, histograms and other non-point columns, columns that do not
// decode (corrupt), points another column of the row holds at the same time
// (the newest column's is kept, as OpenTSDB's fix_duplicates does), and rows
// whose key does not parse, whose metric or tag UIDs the UID table does not
// name, or that hold the global annotations: each is counted in Stats, and
// the first of each kind is logged with its row key.
package otsdbimport
