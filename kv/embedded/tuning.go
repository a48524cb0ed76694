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

// tunePebble sets the options of o that decide Pebble's write amplification.
func tunePebble(o *pebble.Options) {
	o.MemTableSize = memTableSize
	o.MemTableStopWritesThreshold = memTableStopWritesThreshold
	o.L0CompactionThreshold = l0CompactionThreshold
	o.L0StopWritesThreshold = l0StopWritesThreshold
	o.CompactionConcurrencyRange = func() (lower, upper int) { return 1, maxCompactions }
}
