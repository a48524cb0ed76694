package embedded

import (
	"github.com/cockroachdb/pebble/v2"
)

// Pebble options for hbtsdb's write pattern, measured with
// BenchmarkIngestRemoteWrite (docs/performance.md, "Embedded ingest").
//
// The pattern: a remote-write request carries one sample of each of thousands of
// series, and a sample is one key (keys.go) ordered by series, then bucket, then
// time. So every memtable holds a few steps of every series, every flushed file
// spans the whole key range, and each compaction out of L0 rewrites everything
// below it that is still at the top of the tree. Pebble's defaults (4 MiB
// memtables, compaction out of L0 at 4 sublevels, one compaction at a time) made
// that rewrite 60-70 % of ingest CPU, growing with the store. The values below
// let L0 absorb several large flushes before each rewrite.
const (
	// memTableSize is the size of one memtable [Pebble: 4 MiB]. 32 MiB holds about
	// 250 000 samples, so a flush is 8× rarer; and Pebble treats a batch over half
	// a memtable as its own flushed file, which made 10 000-sample requests
	// (~3 MiB in a memtable) each a file of their own. 64 MiB measured no better
	// and costs memory.
	memTableSize = 32 << 20
	// memTableStopWritesThreshold memtables may queue for flushing before writes
	// stop [Pebble: 2]: room for a burst while one flushes, at most 128 MiB.
	memTableStopWritesThreshold = 4
	// l0CompactionThreshold is the number of L0 sublevels (here: flushes) that
	// starts a compaction out of L0 [Pebble: 4]. Each such compaction rewrites
	// all of Lbase, so its cost is paid once per this many flushes: 16 halved
	// the bytes compacted per sample against 8 over a 9.6 M-sample load. Reads
	// merge up to this many more files; a scan seeks once in each.
	l0CompactionThreshold = 16
	// l0StopWritesThreshold sublevels stop writes [Pebble: 12]; it must leave
	// room above l0CompactionThreshold for flushes that arrive while a
	// compaction runs, or writers stall (and answer 503) under a burst.
	l0StopWritesThreshold = 48
	// maxCompactions is the most compactions Pebble runs at once under debt
	// [Pebble: 1]: with one, a compaction out of L0 waits for a slow one below
	// it and L0 grows towards the stop threshold. Normally one runs, so
	// ingest keeps a core to itself on a 2-core machine.
	maxCompactions = 2
)

// memTableReservation is what the memtables may reserve in the block cache at
// once: the mutable one and those queued for flushing.
const memTableReservation = memTableSize * (memTableStopWritesThreshold + 1)

// disableTableStats turns off Pebble's table statistics [Pebble: on], so that
// Close never waits for them (a store full of range deletions did not exit
// within 3 minutes of SIGTERM, with 75 % of its CPU in Pebble's
// loadTableRangeDelStats).
//
// What Pebble v2.1.7 does with them: after every flush and compaction (and, at
// Open, for every file of the store) one background job loads the statistics of
// the new files; for each range deletion it estimates the bytes it covers in
// every lower level (estimateReclaimedSizeBeneath), which is where that CPU
// went. The job runs with context.Background() over its whole pending list
// (table_stats.go, collectTableStats and loadNewFileStats) and checks nothing
// between files, and DB.Close waits for it (db.go: "for
// d.mu.tableStats.loading { d.mu.tableStats.cond.Wait() }"), so Close waits
// for as long as the job has work. Nothing cancels it; the only switch is this
// option.
//
// What the statistics buy, and so what turning them off costs: compaction
// picking that favours files whose tombstones cover much data (tombstone
// compensation; tableTombstoneCompensation is 0 without statistics), delete-only
// compactions that drop whole files under a range deletion (a dropped table's
// space comes back with ordinary compactions instead), and tombstone-density
// compactions. hbtsdb's range deletions each cover one row's raw cells, which the
// compactions of ingest (every L0 file spans the key space, see above) rewrite
// soon anyway.
const disableTableStats = true

// tunePebble sets the options of o that decide Pebble's write amplification and
// what its Close waits for.
func tunePebble(o *pebble.Options) {
	o.MemTableSize = memTableSize
	o.MemTableStopWritesThreshold = memTableStopWritesThreshold
	o.L0CompactionThreshold = l0CompactionThreshold
	o.L0StopWritesThreshold = l0StopWritesThreshold
	o.CompactionConcurrencyRange = func() (lower, upper int) { return 1, maxCompactions }
	o.DisableTableStats = disableTableStats
}
