// Package kv is the narrow, HBase-shaped wide-column interface (a key-value store
// of rows, families, qualifiers and timestamped cells) that every layer of hbtsdb
// above it talks to. It is named kv, not storage, so that it never shares a name
// with Prometheus' storage package, which query/, db/ and promapi/ also import.
//
// Two implementations exist and must behave the same: kv/embedded (Pebble, for a
// laptop) and kv/hbase (Apache HBase through gohbase). kv/kvtest holds the one
// conformance suite both pass.
//
// # Data model
//
// A Store holds tables. A table holds rows sorted by key in byte-lexicographic order;
// a row holds cells addressed by (family, qualifier, timestamp). Families are declared
// when the table is created (see TableSpec); qualifiers are free-form bytes. Within a
// row, cells are ordered by family, then qualifier (both byte-lexicographic), then
// timestamp, newest first — the order HBase returns them in.
//
// Timestamps are milliseconds since the Unix epoch, in [0, MaxTimestamp]. Writing the
// same (row, family, qualifier, timestamp) twice keeps the last write, which is what
// makes hbtsdb's writes idempotent. A family keeps at most MaxVersions versions of a
// column and hides cells older than its TTL (cell timestamp + TTL < now) on every read;
// both rules are applied the same way on both backends.
//
// # What is and is not atomic
//
// Apply writes a batch of mutations. The embedded store commits a batch atomically;
// HBase applies each row's mutations atomically but not the batch as a whole. Callers
// therefore treat any error from Apply as "nothing of this batch is known to be
// stored" and retry the whole batch, which is safe because puts with explicit
// timestamps are idempotent. Increment and CheckAndPut are atomic with respect to all
// other writes to the same row.
//
// # Deletes
//
// A delete up to timestamp T removes every version <= T of what it covers (a
// column, a family or a row) and leaves newer versions alone. On HBase a delete is
// a tombstone: until the next major compaction it also hides versions <= T written
// after it, while the embedded store removes what exists and later puts are
// visible. So callers never write at a timestamp <= T into something they deleted
// up to T: compaction deletes a row's raw family with one DeleteFamily up to a
// bound below which no writer puts any more (see compact/doc.go). HBase's
// NEW_VERSION_BEHAVIOR would make the backends agree, but it made scans several
// times slower (see kv/hbase).
//
// A delete costs what it leaves behind until the store's compactions drop it:
// point tombstones, each covering one column or cell version, and range
// tombstones, each covering many cells. Each MutationKind states its cost, and a
// store that implements TombstoneCounter counts both kinds. Deleting many cells of
// a row is cheap only as one DeleteFamily or DeleteRow (one range tombstone on
// either backend when no newer cell lies among them), never as one DeleteColumn
// per cell.
//
// # Errors
//
// Implementations wrap the sentinel errors of this package (ErrTableNotFound,
// ErrUnavailable, ErrClosed, ErrInvalidArgument) so callers branch with errors.Is;
// a cancelled or expired context yields an error that wraps ctx.Err().
//
// This package imports neither gohbase nor Pebble, and nothing above kv/ may
// import them either.
package kv
