package embedded

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Deletes, and what each leaves behind in Pebble (kv.MutationKind states the same
// for both backends):
//
//   - a column delete up to T reads the column's versions <= T and writes one
//     point deletion per version (deleteVersions);
//   - a family or row delete up to kv.MaxTimestamp writes one range deletion
//     over the family's or row's prefix, without reading;
//   - a family or row delete up to T < kv.MaxTimestamp reads the cells under the
//     prefix and writes one range deletion per maximal run of consecutive cells
//     <= T, a point deletion for a run of one (deleteUpTo).
//
// A delete reads what the mutations before it in its batch left (deleteView).
//
// Range deletions are Pebble's most expensive kind: every read and compaction
// that meets one must fragment it against what it covers (a new iterator
// fragments all those of the memtable again after each batch that adds one), so
// there is never one per cell. Point deletions are plain Deletes, not
// DeleteSized: the size a DeleteSized records only feeds Pebble's table
// statistics (pointDeletionsBytesEstimate in its table_stats.go), which
// tuning.go turns off.

// classify reports whether mutations are all puts (an empty batch is), and
// whether applying them writes range deletions computed from a read (a family
// or row delete below kv.MaxTimestamp), which must then be read, built and
// applied under the store's exclusive lock (applyExclusive).
func classify(mutations []kv.Mutation) (puts, exclusive bool) {
	puts = true
	for _, m := range mutations {
		switch m.Kind {
		case kv.KindPut:
		case kv.KindDeleteFamily, kv.KindDeleteRow:
			puts = false
			exclusive = exclusive || m.Timestamp < kv.MaxTimestamp
		default:
			puts = false
		}
	}
	return puts, exclusive
}

// readsToDelete reports whether m reads what it deletes, so that its batch must
// be indexed: every column delete, and family and row deletes below
// kv.MaxTimestamp.
func readsToDelete(m kv.Mutation) bool {
	switch m.Kind {
	case kv.KindDeleteColumn:
		return true
	case kv.KindDeleteFamily, kv.KindDeleteRow:
		return m.Timestamp < kv.MaxTimestamp
	}
	return false
}

// deleteVersions deletes the versions of the column with key prefix col whose
// timestamp is <= upTo, one point deletion each, reading them through view (see
// deleteView; viaBatch: through b, an indexed batch, so that puts earlier in it
// are seen). It needs no exclusive lock: a point deletion removes only the key
// it names, and every key of a version <= upTo is doomed whenever it is
// written, so a concurrent put can at most survive (if it commits after the
// read), never be removed by mistake.
func deleteVersions(b *pebble.Batch, view *deleteView, viaBatch bool, col []byte, upTo int64, tomb *kv.Tombstones) error {
	// Versions are ordered newest first, so those with ts <= upTo are the tail of
	// the column: [col|^upTo, end of col).
	lower := appendTimestamp(bytes.Clone(col), upTo)
	var doomed [][]byte
	if err := view.each(viaBatch, lower, prefixEnd(col), func(k []byte) {
		doomed = append(doomed, bytes.Clone(k))
	}); err != nil {
		return err
	}
	for _, k := range doomed {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
		tomb.Point++
	}
	return nil
}

// deleteUpTo deletes the cells under prefix (a family's or a row's) with a
// timestamp <= upTo: all of them with one range deletion when upTo is
// kv.MaxTimestamp; else it reads them through view (viaBatch: through b, an
// indexed batch, so that puts and deletes earlier in it count) and deletes each
// maximal run of consecutive doomed keys with one range deletion [first,
// last+0x00), or a point deletion for a run of one key.
//
// Invariant: a range [first, last+0x00) covers exactly the keys first <= k <=
// last (last+0x00 is the smallest key after last), and every key there that
// existed at the read is doomed (the run is maximal). It stays so until the
// batch is applied only because the caller holds the store's exclusive lock
// from the read to the apply (applyExclusive): no other write can put a key
// into the range meanwhile. Mutations after this one in the same batch get
// higher sequence numbers, so a later put inside the range survives it.
func deleteUpTo(b *pebble.Batch, view *deleteView, viaBatch bool, prefix []byte, upTo int64, tomb *kv.Tombstones) error {
	end := prefixEnd(prefix)
	if upTo >= kv.MaxTimestamp {
		tomb.Range++
		return b.DeleteRange(prefix, end, nil)
	}
	// runs holds the runs end to end: first key, then last key, of each; the
	// keys are written once the read is done, as a batch must not change under
	// an iterator over it.
	var (
		runs  [][]byte
		first []byte // of the current run, nil between runs
		last  []byte
	)
	endRun := func() {
		if first != nil {
			runs = append(runs, first, bytes.Clone(last))
			first = nil
		}
	}
	if err := view.each(viaBatch, prefix, end, func(k []byte) {
		if int64(^binary.BigEndian.Uint64(k[len(k)-tsLen:])) > upTo {
			endRun()
			return
		}
		if first == nil {
			first = bytes.Clone(k)
		}
		last = append(last[:0], k...)
	}); err != nil {
		return err
	}
	endRun()
	for i := 0; i < len(runs); i += 2 {
		first, last := runs[i], runs[i+1]
		if bytes.Equal(first, last) {
			if err := b.Delete(first, nil); err != nil {
				return err
			}
			tomb.Point++
			continue
		}
		if err := b.DeleteRange(first, append(last, 0x00), nil); err != nil {
			return err
		}
		tomb.Range++
	}
	return nil
}

// deleteView reads, for the deletes of one batch, the keys they remove: through
// one iterator over the database, repositioned for each delete, or, for a delete
// of a row an earlier mutation of the batch touched, through the batch itself
// (indexed), so that those mutations count. For any other row the batch holds
// nothing (every key and range a mutation writes lies under its row's prefix),
// so the database is the batch's view. Pebble builds a batch iterator by
// fragmenting every range deletion of the batch so far, so one per delete of a
// 500-row batch cost more than all the reads.
//
// The database iterator sees the store as of the first read: what the batch
// meets when it is applied as long as no write lands meanwhile that a delete
// must see (delete.go: none may under a range deletion, hence applyExclusive).
type deleteView struct {
	db *pebble.DB
	b  *pebble.Batch
	it *pebble.Iterator // over db, made by the first read
}

// each calls fn with every key in [lower, upper), in order, read through b if
// viaBatch, else through the database. fn must not keep k.
func (v *deleteView) each(viaBatch bool, lower, upper []byte, fn func(k []byte)) error {
	if viaBatch {
		it, err := v.b.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			fn(it.Key())
		}
		return firstErr(it.Error(), it.Close())
	}
	if v.it == nil {
		it, err := v.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		v.it = it
	} else {
		v.it.SetBounds(lower, upper)
	}
	for ok := v.it.First(); ok; ok = v.it.Next() {
		fn(v.it.Key())
	}
	return v.it.Error()
}

func (v *deleteView) close() error {
	if v.it == nil {
		return nil
	}
	return v.it.Close()
}

// batchViews reports which mutations are deletes that must read through their
// batch (deleteView): those that read (readsToDelete) a row an earlier
// mutation of the batch wrote; and whether there is any, in which case the
// batch must be indexed. viaBatch is nil when there is none.
func batchViews(mutations []kv.Mutation) (viaBatch []bool, indexed bool) {
	if !slices.ContainsFunc(mutations, readsToDelete) {
		return nil, false
	}
	seen := make(map[string]struct{}, len(mutations))
	for i, m := range mutations {
		if _, ok := seen[string(m.Row)]; ok && readsToDelete(m) {
			if viaBatch == nil {
				viaBatch = make([]bool, len(mutations))
			}
			viaBatch[i] = true
		}
		seen[string(m.Row)] = struct{}{}
	}
	return viaBatch, viaBatch != nil
}

var _ kv.TombstoneCounter = (*Store)(nil)

// Tombstones counts every tombstone the store wrote into Pebble since it was
// opened: those of Apply's deletes (see the kinds above), the sweeper's point
// deletions of hidden versions, and DropTable's range deletion of the table and
// point deletion of its catalog entry. It still answers after Close.
func (s *Store) Tombstones() kv.Tombstones {
	return s.tombs.Load()
}
