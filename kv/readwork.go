package kv

import (
	"context"
	"runtime/pprof"
	"sync/atomic"
)

// JobLabel is the pprof label (runtime/pprof.Do) under which hbtsdb runs the
// work of one job: the write endpoints run under JobIngest, the read endpoints
// under JobQuery, the compaction worker under JobCompaction. CPU profiles carry
// it, and kv/kvmetrics counts what each job's reads cost by it (JobOf).
const JobLabel = "hbtsdb_job"

// Values of JobLabel.
const (
	JobIngest     = "ingest"
	JobQuery      = "query"
	JobCompaction = "compaction"
	// JobOther is what JobOf answers for a context without the label.
	JobOther = "other"
)

// JobOf returns the JobLabel of ctx (pprof.Label), JobOther when it has none.
func JobOf(ctx context.Context) string {
	if job, ok := pprof.Label(ctx, JobLabel); ok && job != "" {
		return job
	}
	return JobOther
}

// ReadWork counts what reads cost a store beneath what they returned, as far
// as the backend can tell: the keys its LSM iterated over, those it skipped
// included (older versions, point tombstones and the cells they delete, cells
// covered by range tombstones, cells outside the read's time range or
// families). A read whose context carries a ReadWork (WithReadWork) adds to it
// when it ends (a scan: when it finishes or is closed). The embedded store
// counts Pebble's iterator statistics; HBase tells its client nothing of the
// kind, so a read on HBase adds nothing. Safe for concurrent use.
type ReadWork struct {
	// Keys is how many internal keys the reads iterated over (Pebble: point
	// keys positioned at the top of its merging iterator, whatever became of
	// them).
	Keys atomic.Int64
	// KeysDeleted is the part of Keys that range tombstones covered.
	KeysDeleted atomic.Int64
	// Seeks is how many times the reads repositioned their iterators.
	Seeks atomic.Int64
}

type readWorkKey struct{}

// WithReadWork returns ctx carrying w: the reads made with it add their work to w.
func WithReadWork(ctx context.Context, w *ReadWork) context.Context {
	return context.WithValue(ctx, readWorkKey{}, w)
}

// ReadWorkOf returns the ReadWork ctx carries, nil when it has none.
func ReadWorkOf(ctx context.Context) *ReadWork {
	w, _ := ctx.Value(readWorkKey{}).(*ReadWork)
	return w
}
