// Package query owns the read path: series selection through the tag index and
// the series registry, row reads, and (to come) chunk decoding, resolution choice
// and Prometheus' storage.Queryable and ChunkQueryable.
//
// What exists now is Reader, a minimal reader for tests and tools: the series of a
// time range that match label matchers (SeriesInRange), the raw samples of one
// series (Samples) and a metric's metadata (Metadata). Gaps, for the query issue:
// only equality matchers use the index (other matchers filter candidates, which
// without an equality matcher are all the series of each day); regex matchers do
// not yet scan value ranges; chunks (family c) and rollups are not read; results
// are slices, not iterators.
//
// It reads only through storage.Store, schema's codecs and index/. It must never
// import a storage backend (storage/hbase, storage/embedded, gohbase, Pebble) nor
// db, promapi or cmd.
package query
