// Package hbase implements kv.Store on Apache HBase (2.x) through gohbase
// (github.com/tsuna/gohbase), the only package of hbtsdb that imports gohbase
// apart from the test tool testing/hbase/hbaseprobe: nothing above kv/ may
// import it, or know that HBase is underneath (cmd/tsdb and kv/backend open it,
// testing/hbasestore opens it for tests).
//
// # Mapping
//
// A logical table "data" is the HBase table "<TablePrefix>data" ("tsdb-data") in
// the default namespace; gohbase can neither create namespaces nor address tables
// in other ones. ListTables reports the tables carrying the prefix, without it.
// With Options.ExactTableNames a logical name is the HBase name itself, for
// tables another program named (OpenTSDB's tsdb and tsdb-uid).
// A kv.FamilySpec becomes a column family with VERSIONS, TTL (in seconds;
// zero is FOREVER), COMPRESSION, DATA_BLOCK_ENCODING and BLOOMFILTER;
// TableSpec.SplitKeys pre-split the table. ShellCommands prints the same schema as
// `hbase shell` create commands. gohbase's NewCreateTable silently drops family
// attributes it has no default for, so EnsureTable sends gohbase's request with
// the families rewritten (createTableCall) and waits for the master's procedure
// itself.
//
// Families are created without HBase's NEW_VERSION_BEHAVIOR attribute. It
// would make a put written after a delete visible whatever its timestamp, as on
// the embedded store, but with it a scan of 100k cells took 590 ms instead of 100 ms before a
// flush and 586 ms instead of 219 ms after one. kv/doc.go (Deletes) says how
// callers avoid depending on the difference.
//
// All the puts of a row in one Apply become one HBase Put whose cells keep their
// own timestamps (rowPut writes the cell block itself: a gohbase Mutate carries a
// single timestamp). Deletes are gohbase Mutates, one per (row, kind, timestamp):
// DeleteColumn is a DeleteColumns of the qualifier up to the timestamp,
// DeleteFamily a family delete and DeleteRow a whole-row delete, both up to the
// timestamp; Tombstones counts the markers of those HBase reported done
// (mutateCall.markers). Apply sends the puts, sorted by row, as one Multi RPC per region
// (regionPuts: one RegionAction of many rows' Puts, their cells in one cell
// block, up to Options.ParallelRegionCalls RPCs at a time) instead of a gohbase
// call per row, whose per-call work was about half of tsdb's CPU under remote
// write (a request's rows are one per sample). Which rows share a region is
// guessed from the region boundaries earlier answers showed; the region gohbase
// locates for a request's first row decides which rows it carries, so a stale
// guess costs a request more, never a wrong one. The deletes, and any put HBase
// answered with an exception, go through SendBatch, at most Options.MaxBatchCalls
// at a time (see groupIntoCalls), which retries what can be retried. Get is an hrpc.Get, GetRows a SendBatch of Gets, Scan an
// hrpc.Scan over [start, stop) whose pieces of a row gohbase joins into whole rows;
// families, time range and versions map to the request's own fields, and filters
// to SingleColumnValueFilter (latest version only), KeyOnlyFilter and
// ColumnRangeFilter, in a MUST_PASS_ALL FilterList when there are several.
// RowLimit and CellLimit are applied by the scanner (the smaller is also sent as
// the number of rows per round trip). Increment is an HBase Increment,
// CheckAndPut an HBase checkAndPut with an EQUAL BinaryComparator.
//
// # What is atomic
//
// HBase applies all the mutations of one row in one call atomically, and each
// call of a batch independently: an Apply that fails may have stored any subset of
// its rows (kv.BatchError names the mutations that failed or were not sent).
// Callers retry the whole batch, which puts with explicit timestamps make safe.
// Increment and CheckAndPut are atomic with every other write to their row. A
// batch with an invalid mutation is rejected before anything is sent.
//
// # Errors
//
// Errors wrap kv's sentinels (see classify): gohbase.TableNotFound and
// TableNotFoundException are kv.ErrTableNotFound; NoSuchColumnFamilyException
// and HBase's other DoNotRetryIOExceptions (a cell not 8 bytes wide for Increment,
// an unknown compression, ...) are kv.ErrInvalidArgument; gohbase's
// retryable, region and server errors, unreachable region servers and an expired
// context are kv.ErrUnavailable; a cancelled context is context.Canceled; any
// call after Close, or interrupted by it, is kv.ErrClosed. Messages are one
// line: a Java exception is cut to its class and message, without the stack.
//
// gohbase retries a region it cannot locate or reach until the call's context
// ends, so a call on a down HBase would otherwise wait for HBase to come back.
// Every Apply, Increment, CheckAndPut, Get, GetRows and Ping whose context has no
// earlier deadline therefore gets Options.CallTimeout (by default the region
// lookup or read timeout, whichever is larger) and then fails with
// kv.ErrUnavailable: a write during an outage is answered 503, which the
// sender retries, instead of hanging.
//
// # Lifecycle
//
// Open checks, under its context's deadline, that ZooKeeper names a master and an
// hbase:meta region server that accept connections, that the master lists tables
// and that hbase:meta can be read; otherwise it fails with kv.ErrUnavailable
// and the ZooKeeper address. It checks ZooKeeper before handing the address to
// gohbase because gohbase retries a missing ZooKeeper or master forever, in
// goroutines no Close stops. Close cancels the operations in flight, waits for
// them, closes gohbase's client, the admin client's master connection (gohbase's
// AdminClient has no Close) and marks the admin and meta regions dead so that
// gohbase stops retrying them.
package hbase
