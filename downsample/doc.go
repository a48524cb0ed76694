// Package downsample holds the background work on stored data: the compaction
// of sealed buckets into chunks and, from the same read, their rollups
// (compact.go), and the worker that shares that work between processes
// (worker.go, lease.go). The retention sweeps of the design are not built yet.
//
// # Compaction
//
// Every sample arrives as one raw cell (family r of the data table, ~20 bytes of
// HBase KeyValue framing plus the row key for an 8-byte value). Once a bucket is
// sealed — its end lies Options.Grace in the past — the Compactor rewrites the
// row: it reads the row's chunk and raw cells, merges them with the one row
// decoder every reader uses (schema.DecodeDataRow: raw wins on equal
// timestamps), and, per batch of rows (Options.BatchRows), in this order:
//
//  1. writes, for every resolution of Options.Rollups, one rollup cell per
//     bucket into the resolution's table (schema.RollupTable; one Apply per
//     table per batch): schema.AggregateWindows of the bucket's samples,
//     floats and native histograms (of which a window keeps the count and the
//     last one), stale markers included, encoded by
//     schema.EncodeRollupWindows, in the series' row of the bucket's UTC day,
//     qualifier the bucket's offset in the day,
//     timestamp the bucket's last millisecond (schema/rollup.go). A bucket
//     narrower than a resolution holds the part of one window that falls into
//     it; readers merge the parts (schema.RollupWindow.Merge). Step "rollups
//     written".
//  2. writes the bucket's samples as one chunk cell (schema.BucketCell):
//     floats alone as one XOR or decimal chunk; native histograms and start
//     timestamps in Prometheus' own chunk encodings, several chunks in one
//     cell where the kind changes or Prometheus' appender cuts (counter
//     resets, schema changes; schema/chunk.go). The cell is rewritten whole
//     by every pass, so a bucket compacted again with late samples of
//     another kind leaves no chunk of the old layout behind. Step "chunks
//     written".
//  3. deletes exactly the raw columns it read, each up to its own cell
//     timestamp. Step "raw deleted".
//
// Once every batch of a salt is done without error, it records the cutoff as
// the salt's watermark (a meta row, schema/watermark.go): every bucket that
// ends at or before it was compacted and rolled up. Compactor.Watermarks and
// Worker.Watermarks read them (now - grace - watermark is the lag).
//
// Invariants, and why a crash or a concurrent writer loses nothing:
//
//   - Rollups and chunk are computed from the one read of the row, so they
//     summarise the same samples. Both are written before any raw cell is
//     deleted: a crash never leaves raw data deleted without its rollup or
//     its chunk. After a crash between the steps every sample is still raw
//     (and maybe in the chunk too: readers keep one sample per timestamp, so
//     every sample is readable exactly once); the next pass finds the raw
//     cells again, reads the same samples, writes the same rollup cells and
//     chunk in place (same qualifier and timestamp) and deletes the raw cells:
//     every step is idempotent, and the last pass over a row wrote its rollups
//     and its chunk from the same samples.
//   - A rollup cell of a bucket is always the same column at the same
//     timestamp, as its chunk, so a bucket rolled up again (late samples)
//     replaces it in place. A bucket without a sample has no row and so no
//     rollup cell; a bucket left raw (more samples than a chunk holds) still
//     gets its rollup cells, written again by every pass, as its raw cells
//     stay.
//   - The watermark cell's timestamp is the watermark, so the store keeps the
//     greatest one ever recorded: a pass with an earlier clock (another
//     worker's) cannot lower it, and recording it again changes nothing. A
//     salt left part way records none.
//   - Rollups are written only from raw cells: a bucket compacted before its
//     resolution was configured is not rolled up (there is no backfill yet).
//   - A late sample written while a row is being compacted has its own column
//     (its offset in the bucket), which the compaction did not read and so does
//     not delete: it stays raw, readers merge it, and the next pass folds it
//     into the chunk and the rollup cells. A sample re-sent with the timestamp
//     of a compacted one addresses a column deleted up to that timestamp; on
//     HBase the delete marker hides it until a major compaction, and the chunk
//     and the rollup cells already hold that timestamp.
//   - The chunk cell of a bucket is always the same column at the same timestamp
//     (schema/chunk.go), so a second compaction replaces it in place and nothing
//     ever deletes a chunk column.
//   - Work is found by scanning family r for cells older than the sealed cutoff:
//     only rows that still hold raw cells of sealed buckets are read, so a store
//     whose old buckets are compacted costs a pass little (HBase reads only the
//     r family's files, which compaction empties).
//   - Two compactors must not rewrite the same row at once: one could replace
//     the other's chunk with one that lacks a late sample the other then
//     deletes. A process runs one Compactor per salt at a time; several
//     processes share the salts through leases (the Worker, below).
//
// # Worker and leases
//
// A Worker (worker.go) runs the Compactor in rounds [every 5m], salt after salt,
// and logs a line per round (rows, samples, raw cells deleted, rollup cells
// written, salts, rates) and, when a round runs long, progress lines (rows read
// and rollup cells written so far, rate, and the round's rows and time left
// extrapolated from the salts done). Any
// number of workers — in one process or in many: each tsdb serve, each tsdb
// downsample — share the salts of a store through leases (lease.go), one cell
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
//   - Keeping: the salt's Compactor works through a store wrapper that checks the
//     lease before every call (so before every step of every batch). The check
//     renews the lease (check-and-put on the value this worker last wrote) once
//     half its TTL is gone, and fails with ErrLeaseLost — for good — when the
//     renewal is refused or fails, or when the lease is within TTL/4 of its
//     expiry by this worker's clock. Each call runs with a deadline at that
//     point. So no call of a holder runs once another worker may take the salt
//     over, as long as the workers' clocks agree within TTL/4 (an HBase write
//     already sent when its deadline passes may still land; the TTL/4 margin is
//     the allowance for it).
//   - Releasing: when the salt is done (or its work failed, or the worker is
//     stopping), a check-and-put of expiry 0 on the value last written, so that
//     another worker may take it at once. A worker that dies holds its salts
//     until their leases expire.
//   - A salt left part way (lease lost, store error, stop) is safe by the
//     invariants above, and the next round, by whichever worker, finishes it.
//
// downsample imports kv, schema and Prometheus' chunk encoding (through schema);
// it must never import a backend (kv/hbase, kv/embedded) nor a package above it
// (query, db, promapi, cmd).
package downsample
