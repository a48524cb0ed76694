// Package index owns the two lookup structures that let queries find series
// without scanning data:
//
//   - the series registry (Registry): canonical label set <-> 8-byte series ID, in
//     the series table, with bounded LRU caches; IDs come from an atomic counter in
//     blocks, and a check-and-put on the forward row decides, once and for every
//     process, which ID a new series gets;
//   - the per-day tag index (Postings): for every day and label pair (__name__
//     included), the IDs of the series that had it, in the index table, written
//     once per series per day per process and expiring by TTL with the data.
//
// Both read and write their tables only through kv.Store and the codecs of
// schema/, which define every byte of their rows (schema/series.go,
// schema/index.go). index/lru holds the bounded cache both use.
//
// The write path (write/) calls Registry.Resolve and Postings.Write for every
// request; the read path (query/) calls Registry.Lookup, Registry.Labels and the
// read methods of Postings.
//
// This package must never import a kv backend (kv/hbase,
// kv/embedded, gohbase, Pebble) or a package above it (write, query, db,
// promapi, cmd).
package index
