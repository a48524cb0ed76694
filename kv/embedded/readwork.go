package embedded

import (
	"context"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// addReadWork adds what it cost Pebble to the kv.ReadWork of ctx, if any: the
// point keys its merging iterator positioned (deleted and shadowed ones
// included), those range tombstones covered, and the seeks. Called once per
// iterator, just before it is closed.
func addReadWork(ctx context.Context, it *pebble.Iterator) {
	w := kv.ReadWorkOf(ctx)
	if w == nil {
		return
	}
	s := it.Stats()
	w.Keys.Add(int64(s.InternalStats.PointCount))
	w.KeysDeleted.Add(int64(s.InternalStats.PointsCoveredByRangeTombstones))
	w.Seeks.Add(int64(s.ForwardSeekCount[pebble.InternalIterCall] + s.ReverseSeekCount[pebble.InternalIterCall]))
}
