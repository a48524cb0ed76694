// Package embedded is the kv.Store implementation on a local Pebble LSM
// (github.com/cockroachdb/pebble/v2): what `tsdb serve` uses on a laptop, with no
// HBase at all (`--storage embedded:./data`). It owns the on-disk layout of a store
// directory, the directory lock, the table catalog, HBase's read semantics (versions,
// TTL, time ranges, filters) re-implemented over sorted keys, and the background
// sweeper that removes what those semantics hide.
//
// Only kv/backend (which opens a --storage address) and test code
// (schema/schematest, tests) import this package; no non-test code above kv/
// (write, query, index, compact, promapi, db) imports it or Pebble. It must
// never import gohbase.
//
// # Key layout
//
// One Pebble key space holds everything, split by the first byte:
//
//	0x00 | name                                   store metadata ("format", "next-table-id")
//	0x01 | tableName                              catalog: JSON {id, spec} of one table
//	0x02 | tableID(8) | esc(row) | esc(family) | esc(qualifier) | ^timestamp(8)
//	                                              one cell; the Pebble value is the cell value
//
// tableID is a big-endian uint64 assigned when the table is created and never reused,
// so a dropped and re-created table can never see the old table's cells even before
// their range deletion is compacted away. ^timestamp is the bitwise complement of the
// cell timestamp (milliseconds, big-endian), so a column's newest version sorts first.
//
// esc(b) writes b with every 0x00 byte replaced by 0x00 0xFF, followed by the
// terminator 0x00 0x01. Invariants this gives, and that the code relies on:
//
//   - Order: for any byte strings a < b (byte-lexicographic, a may be a prefix of b),
//     esc(a)+x < esc(b)+y for all suffixes x, y. So rows iterate in the byte order of
//     their keys, including keys that contain 0x00 or 0xFF and keys that are prefixes
//     of others; within a row, cells come ordered by family, qualifier, then timestamp
//     newest first — exactly the order kv.Row promises.
//   - Prefix freedom: no esc(a) is a proper prefix of an esc(b), so the keys of one row
//     are exactly the keys with prefix 0x02|tableID|esc(row) (a "row prefix"), and the
//     keys of one column those with prefix rowPrefix|esc(family)|esc(qualifier).
//   - Scan bounds: rows with start <= row < stop are the keys in
//     [0x02|id|esc(start), 0x02|id|esc(stop)); an empty start or stop maps to the
//     table's first key or to the first key after the table.
//
// Writing the same (row, family, qualifier, timestamp) twice writes the same key, so
// the last write wins, as on HBase.
//
// # Semantics
//
// Reads follow kv/doc.go and the HBase book. Versions of a column are visited
// newest first: a version is visible when it is one of the family's newest
// MaxVersions versions and not expired (timestamp + TTL < now hides it, with now from
// Options.Clock); a read then keeps the visible versions inside its TimeRange and
// returns the newest ReadOptions.MaxVersions of those. The family cap is applied
// before the time range (HBase after a flush or compaction, and HBase's
// NEW_VERSION_BEHAVIOR), so the sweeper that physically removes hidden versions never
// changes what a read returns.
//
// Deletes are physical: they remove the versions that exist when they are applied,
// so a later put with an older timestamp is visible, as kv/doc.go requires. Each
// costs what kv.MutationKind states (delete.go): a column delete reads the
// column and writes one point deletion per version it removes; a family or row
// delete up to kv.MaxTimestamp writes one range deletion without reading; below
// it, it reads the family or row and writes one range deletion per run of
// consecutive removed cells, each ending right after the run's last key, so
// that it covers no cell it must keep. Tombstones counts what they wrote.
//
// Apply commits one Pebble batch, atomically, with fsync (pebble.Sync); a batch of
// puts goes in in key order (write.go). Pebble's memtable and compaction options
// are set for the write pattern of remote write in tuning.go.
// Increment, CheckAndPut and a batch with a family or row delete below
// kv.MaxTimestamp read and write under the store's exclusive lock, which Apply
// otherwise holds shared (a batch of puts always), so they are atomic with
// respect to every write: no put lands inside a range deletion between the read
// that delimited it and its commit. They wait for their fsync after releasing
// the lock.
//
// # The head
//
// With Options.Head, the cells of the families HeadOptions.Holds names (tsdb:
// raw samples and pending marks, which compaction deletes an hour or two after
// they arrive) are kept in memory behind a log of their own instead of in
// Pebble: head.go says why and what holds, headlog.go the log's format,
// headstore.go how Apply, reads, bounds and Close use it. Reads merge the head
// into the same key stream (headiter.go), so everything above is unchanged.
// Rows no longer appended to are frozen into compressed blocks
// (headfreeze.go, headblock.go's format), thawed again by a put among their
// cells or a delete of them.
//
// # Background work
//
// A sweeper goroutine walks every table each Options.SweepInterval and deletes the
// versions that reads hide (expired, or beyond the family's MaxVersions), a bounded
// chunk at a time under the exclusive lock so writers are never stalled for long.
// Close stops it and waits for it before closing Pebble.
//
// Pebble's Close waits for the flush and the compactions under way (nothing in
// Pebble cancels them) and for its table statistics job, which tuning.go turns
// off: on a store full of range deletions that job alone kept a store from
// exiting for minutes.
package embedded
