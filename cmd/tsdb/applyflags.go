package main

import "github.com/hbtsdb/hbtsdb/kv"

// registerApplyFlags binds --storage.write-batch-size and
// --storage.write-concurrency into o: the bounds of the writes to the store
// that the writer (one per write request, write.Options.Apply) and the
// compactor (one per compaction batch, compact.Options.Apply) share. *o
// holds their defaults when it is bound (kv.ApplyOptions.WithDefaults), so
// that --help shows them. Validate errors of either package name the flags.
func registerApplyFlags(b *binder, o *kv.ApplyOptions) {
	b.int("storage.write-batch-size", "compact: Options.Apply.MaxBatch", "Most mutations (cells written or deleted) "+
		"one write to the store carries: a write request's samples and exemplars, and a compaction batch's deletes of "+
		"raw cells and pending marks, are cut into writes of at most this many. 0 means the default.", &o.MaxBatch)
	b.int("storage.write-concurrency", "compact: Options.Apply.Concurrency", "How many writes to the store one "+
		"write request (its batches of samples and exemplars, tag index postings, metadata and pending marks) or one "+
		"compaction batch has in flight at once; the first that fails cancels the others. 0 means the default.",
		&o.Concurrency)
	b.flags["write: Options.Apply.MaxBatch"] = "--storage.write-batch-size"
	b.flags["write: Options.Apply.Concurrency"] = "--storage.write-concurrency"
}
