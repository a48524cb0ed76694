// Package index owns the two lookup structures that let queries find series
// without scanning data:
//
//   - the series registry (Registry): canonical label set <-> 8-byte series ID, in
//     the series table, with bounded LRU caches. On a store of format 2 a new
//     series' ID is derived from a hash of its labels, so that processes agree on
//     it without a round trip per series (below); on a store of format 1 IDs come
//     from an atomic counter in blocks, and a check-and-put on the forward row
//     decides, once and for every process, which ID a new series gets;
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
// # Hash-derived series IDs (format 2): why every process agrees
//
// A new series' candidate ID is h(L) = XXH64(forward row key of L) | 1<<63. The
// registry reads the candidates' reverse rows in one GetRows, writes the absent
// ones in one Apply, then the forward rows in a second Apply; a series whose
// candidate's reverse row holds other labels (a collision) takes the counter
// path of format 1. The argument, for label sets L, M and any processes:
//
//  1. Same label set, concurrent writers: h is a pure function of the canonical
//     bytes, so every writer of L writes the same reverse row h(L) -> L and the
//     same forward row L -> h(L). Plain puts of identical values are idempotent;
//     no writer can see another ID for L. This is the race format 1 settles with
//     a check-and-put per series.
//  2. Forward implies reverse: a forward row is written only after the Apply of
//     its reverse row returned (or after its reverse row was read holding L), so
//     an ID in a forward, posting or data row always has its labels. A crash in
//     between leaves a reverse row holding L and no forward row: the next
//     registration of L reads that reverse row, sees L, and writes the forward row
//     (Stats.Resumed).
//  3. Collision with a registered series: if M was registered before L's check,
//     M's reverse row h(M) = h(L) is durable, and nothing deletes or expires rows
//     of the series table (no TTL on its families, schema/tables.go; the
//     embedded sweeper only removes what TTLs and versions expire, and
//     compaction, retention and compact/ never touch the series table). So
//     every process that registers L from then on reads it, and all of them take
//     the counter path: a check-and-put on L's forward row decides L's ID exactly
//     as on format 1, and no writer of L ever plain-puts h(L) (which would
//     overwrite a counter ID). Two new series of one batch with the same candidate:
//     the first is registered with it, the others take the counter path after the
//     first's reverse row is durable, so the same holds for them.
//  4. Counter IDs are below 1<<63 (the counter is a signed 64-bit Increment),
//     hash-derived IDs at or above it; neither is ever 0.
//  5. The one case not covered: M and L with h(M) = h(L), registered at once by
//     two writers whose reverse-row reads both precede the other's reverse-row
//     write. Then both may write their rows, and the later reverse row names the
//     ID of both series: their samples would be returned under one label set. A
//     pair of distinct label sets has the same 63-bit candidate with probability
//     2^-63, and must also overlap in time: at a sustained rate of n new series
//     per second with registrations taking w seconds, the expected number of such
//     events over T seconds is about n*n*w*T / 2^63. For n = 100 000/s (all year,
//     3*10^12 series, far beyond any store), w = 0.1 s and one year, that is
//     3.4*10^-3; at 1 000 new series/s, 3.4*10^-7 per year. Reading the reverse
//     rows back before writing the forward rows would not close this window (a
//     writer reading back before the other's write still proceeds), only
//     narrow it, at one more round trip per new batch: not worth it.
//
// Formats never mix within a store: a store keeps the format it was created
// with (schema.CompareSettings), a format-1 binary refuses a format-2 store, and
// this binary uses the store's format (RegistryOptions.FormatVersion, read from
// the meta row when not given). A counter writer and a hash writer of the same
// new series could otherwise disagree (the counter writer's check-and-put wins,
// then the hash writer's plain put overwrites it).
//
// This package must never import a kv backend (kv/hbase,
// kv/embedded, gohbase, Pebble) or a package above it (write, query, db,
// promapi, cmd).
package index
