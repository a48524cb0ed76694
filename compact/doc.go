// Package compact holds the background work on stored data: the compaction
// of sealed buckets into chunks and, from the same read, their rollups
// (compact.go), and the worker that shares that work between processes
// (worker.go, lease.go). Retention needs no work here: every table's TTL (the
// raw retention for data and pending, each resolution's own for its rollup
// table; schema/tables.go) expires old cells on both backends.
//
// # Compaction
//
// Every sample arrives as one raw cell (family r of the data table, ~20 bytes of
// HBase KeyValue framing plus the row key for an 8-byte value). Once a bucket is
// sealed — its end lies Options.Grace in the past — the Compactor rewrites the
// row as one chunk cell and one rollup cell per resolution, and deletes its raw
// cells. What it costs is what it compacts:
//
//   - Finding work: writers mark every row that gets raw cells in the pending
//     table (schema/pending.go), keyed by salt and bucket start, so a pass over
//     a salt scans the marks of its sealed buckets and reads those rows — not
//     the raw cells of the open buckets, nor anything already compacted. A
//     store that got its pending table when it already held data is swept
//     (its salts' raw families read whole, key-only) until a sweep has sealed
//     the bucket of that moment; Options.Sweep (tsdb compact
//     --compact.sweep) sweeps on demand.
//   - Deleting: one family delete per row (kv.DeleteFamily up to the bucket's
//     last millisecond - 1: one DeleteFamily marker on HBase, one range
//     deletion on the embedded store), plus a column delete for each late
//     cell read (rare: samples that arrived after their bucket's on-time
//     window). Never a tombstone per sample for on-time data.
//
// The family delete is exact because of the on-time/late protocol
// (schema/late.go): a writer stores a sample with its own timestamp only while
// its bucket is within schema.OnTimeWindow of its end, and must have stored it
// by schema.OnTimeDeadline, and Options.Grace is at least schema.MinGrace; so
// when a compactor reads a sealed row, every cell below the bucket's last
// millisecond is there to be read, and nothing more will ever arrive below it.
// Later samples are late cells, at the bucket's last millisecond, which the
// family delete leaves alone; each is marked in the pending table after it is
// stored, under a mark of its own, so the next pass finds it.
//
// A pass over a salt reads its marks in batches of Options.BatchRows, oldest
// bucket first, and for each batch (compact_rows.go):
//
//  1. reads the rollup cells it will rewrite (each resolution's cell of each
//     bucket), then the data rows (chunk and raw cells), and merges each row's
//     samples with the one row decoder every reader uses
//     (cellenc.DecodeDataRow: raw wins on equal timestamps);
//  2. check-and-puts, for every resolution of Options.Rollups, one rollup cell
//     per bucket into the resolution's table (schema.RollupTable):
//     cellenc.AggregateWindows of the bucket's samples, floats and native
//     histograms (of which a window keeps the count and the last one), stale
//     markers included, encoded by cellenc.EncodeRollupWindows, in the series'
//     row of the bucket's UTC day, qualifier the bucket's offset in the day,
//     timestamp the bucket's last millisecond (schema/rollup.go), expecting
//     what step 1 read. A bucket narrower than a resolution holds the part of
//     one window that falls into it; readers merge the parts
//     (cellenc.RollupWindow.Merge). Step "rollups written".
//  3. check-and-puts the bucket's samples as one chunk cell
//     (cellenc.BucketCell), expecting the chunk cell step 1 read: floats alone
//     as one XOR or decimal chunk; native histograms and start timestamps in
//     Prometheus' own chunk encodings, several chunks in one cell where the
//     kind changes or Prometheus' appender cuts (counter resets, schema
//     changes; cellenc/chunk.go). The cell is rewritten whole by every pass,
//     so a bucket compacted again with late samples of another kind leaves no
//     chunk of the old layout behind. Step "chunks written".
//  4. deletes the raw cells it read (above) and then the pending marks it
//     read, each mark its own column. Step "raw deleted".
//
// A row any of whose check-and-puts failed — another compactor rewrote a cell
// since this one read it — is left whole, marks included, for the next pass
// (Stats.Conflicts).
//
// Once every batch of a salt is done without error, it records the cutoff as
// the salt's watermark (a meta row, schema/watermark.go): every bucket that
// ends at or before it was compacted and rolled up. Compactor.Watermarks and
// Worker.Watermarks read them (now - grace - watermark is the lag).
//
// Invariants, and why a crash, a concurrent writer or a concurrent compactor
// loses nothing:
//
//   - Rollups and chunk are computed from the one read of the row, so they
//     summarise the same samples. Both are written before any raw cell is
//     deleted, and the marks last: a crash never leaves raw data deleted
//     without its rollup or its chunk, nor a row with raw cells without its
//     mark. After a crash between the steps every sample is still raw (and
//     maybe in the chunk too: readers keep one sample per timestamp, so every
//     sample is readable exactly once); the next pass finds the mark again,
//     reads the same samples, writes the same rollup cells and chunk in place
//     (same qualifier and timestamp, expecting what is there) and deletes the
//     raw cells: every step is idempotent.
//   - Every cell a pass writes is a check-and-put on a value read no later
//     than the samples it is computed from (the rollup cells before the data
//     row, the chunk with it). So a pass never replaces a cell with one made
//     from older samples than the cell's: whatever wrote the cell read its
//     samples before this pass read the cell, hence before this pass read its
//     own. Two compactors on one salt (a lease that ran out while a call was
//     under way) cannot undo each other's work; the lease only keeps them
//     from doing it twice. And a pass deletes only after every check-and-put
//     of the row succeeded, and only what it read.
//   - A rollup cell of a bucket is always the same column at the same
//     timestamp, as its chunk, so a bucket rolled up again (late samples)
//     replaces it in place. A bucket without a sample has no row and so no
//     rollup cell; a bucket left raw (more samples than a chunk holds) still
//     gets its rollup cells, written again by every pass its marks bring.
//   - The watermark cell's timestamp is the watermark, so the store keeps the
//     greatest one ever recorded: a pass with an earlier clock (another
//     worker's) cannot lower it, and recording it again changes nothing. A
//     salt left part way records none.
//   - Rollups are written only from raw cells: a bucket compacted before its
//     resolution was configured is not rolled up (nothing backfills a new
//     resolution from chunks; readers summarise such a bucket from its data
//     row).
//   - A rollup cell is from the same samples as the bucket's chunk, or void.
//     A compactor writes the cells of its own list (Options.Rollups), but the
//     store may have tables of other resolutions: one removed from the list
//     (kept until an operator drops it, and maybe added back later), or one of
//     another process's list (a rolling change of --rollups, a tsdb compact
//     started with the old one). Compacting a bucket again (late samples)
//     without rewriting such a table's cell would leave it summarising fewer
//     samples than the bucket holds once the raw cells are deleted, and a
//     process with that resolution in its list would serve it. So for every
//     rollup table the store has (kv.Store.ListTables, once per salt and pass)
//     and the compactor does not write, it check-and-puts a void cell
//     (cellenc.AppendVoidRollupValue: 0x00 and a random nonce) on the value it
//     read, in the same step as its own cells; readers treat a void cell as no
//     cell and summarise the bucket from its data row. The nonce makes every
//     void write a new value, so a compactor with the resolution, expecting
//     the value it read before that write (void or not), fails its
//     check-and-put and leaves the row. We chose this over two
//     alternatives: workers that refuse to compact while their list differs
//     from the recorded one still race with a list changed under a pass, and
//     leave a resolution removed and added back with stale cells; a
//     generation per resolution would drop every cell written before a
//     re-add, including those of data whose raw samples have expired. The
//     cost: one check-and-put per compacted row and retired table, until the
//     table is dropped (tsdb logs how when a resolution is removed).
//   - A late sample written while its row is being compacted is a late cell
//     that the pass did not read: the family delete spares it (its timestamp
//     is the bucket's last millisecond), so does every column delete unless
//     it re-sends a timestamp the pass already read — then the chunk already
//     holds that timestamp, and on HBase the delete marker hides the re-sent
//     cell until a major compaction. Readers merge it; its own mark, written
//     after it under a fresh nonce, survives the deletion of the marks read
//     and brings the row to the next pass.
//   - The chunk cell of a bucket is always the same column at the same timestamp
//     (cellenc/chunk.go), so a second compaction replaces it in place and nothing
//     ever deletes a chunk column.
//   - A process runs one Compactor per salt at a time; several processes share
//     the salts through leases (the Worker, below), so that work is not done
//     twice.
//
// # Worker and leases
//
// A Worker (worker.go) runs the Compactor in rounds [every 5m], salt after salt,
// and logs a line per round (rows, samples, raw cells deleted, rollup cells
// written, salts, rates) and, when a round runs long, progress lines (rows read
// and rollup cells written so far, rate, and the round's rows and time left
// extrapolated from the salts done). Any
// number of workers — in one process or in many: each tsdb serve, each tsdb
// compact — share the salts of a store through leases (lease.go), one cell
// per job and salt in the meta table (schema/lease.go: "owner expiryMs"). A
// worker compacts a salt only while it holds the salt's lease:
//
//   - Taking: the worker reads the cell. Absent: it check-and-puts expecting it
//     absent. Held by another owner and not expired by this worker's clock: it
//     leaves the salt for this round. Expired, released or its own: it
//     check-and-puts expecting the exact value read. Of workers racing for a
//     salt exactly one wins; a worker whose lease was taken over can never write
//     it again, because it no longer knows the cell's value.
//   - Each write of the cell carries the timestamp max(now, previous cell's + 1):
//     the meta family keeps one version, and a put older than the cell it
//     replaces (the previous writer's clock ran ahead) would be stored unseen.
//   - Keeping: while the salt's Compactor works, a goroutine checks the lease
//     every TTL/16 (lease.keep) and renews it (check-and-put on the value this
//     worker last wrote) once half its TTL is gone, however long one call of
//     the Compactor takes; the Compactor's store also checks it before every
//     call (guardedStore). The lease is lost — for good, failing the salt with
//     ErrLeaseLost and cancelling the Compactor's calls — when a renewal is
//     refused or fails, or when the lease is within TTL/4 of its expiry by this
//     worker's clock. So no two workers compact one salt at once as long as
//     the workers' clocks agree within TTL/4; and should they not, the
//     check-and-puts above keep either from undoing the other's work.
//   - Releasing: when the salt is done (or its work failed, or the worker is
//     stopping), a check-and-put of expiry 0 on the value last written, so that
//     another worker may take it at once. A worker that dies holds its salts
//     until their leases expire.
//   - A salt left part way (lease lost, store error, stop) is safe by the
//     invariants above, and the next round, by whichever worker, finishes it.
//
// # Deleting
//
// Delete (delete.go) removes a range of samples from given data rows with
// the same pieces a pass uses — the rollup cells read first, the rows decoded
// by cellenc.DecodeDataRow, rollup and chunk cells check-and-put on what was
// read (rollupPut of the samples left, voidRollupPut where nothing is left or
// for retired resolutions), then the raw cells' and exemplars' deletes — under
// each salt's compaction lease, so that a delete and a pass never rewrite a
// salt at once. A chunk cell left without samples is written with an empty
// value, never deleted (the invariant above). Every step is idempotent, so a
// delete that stopped is finished by running it again.
//
// compact imports kv, schema, internal/optcheck and Prometheus' chunk
// encoding (through schema);
// it must never import a backend (kv/hbase, kv/embedded) nor a package above it
// (query, db, promapi, cmd).
package compact
