package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Apply validates every mutation, then writes them all in one Pebble batch,
// committed atomically with fsync. If any mutation is invalid nothing is written
// and the error wraps a *kv.BatchError naming each invalid one. Mutations
// apply in order: a delete removes the puts before it in the same batch, and
// not those after it.
//
// Three paths, by what the batch holds (delete.go gives each delete's cost):
//   - puts only: applyPuts, under the shared lock (the ingest path);
//   - a family or row delete below kv.MaxTimestamp: applyExclusive, which reads
//     and writes range deletions under the exclusive lock;
//   - anything else (puts, column deletes, family and row deletes up to
//     kv.MaxTimestamp): one batch under the shared lock.
func (s *Store) Apply(ctx context.Context, tableName string, mutations []kv.Mutation) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded: apply %s: %w", tableName, err)
	}
	if err := s.space.err(); err != nil {
		return fmt.Errorf("embedded: apply %s: %w", tableName, err)
	}
	if s.head != nil {
		rest, err := s.applyHead(tableName, mutations)
		if err != nil {
			return fmt.Errorf("embedded: apply %s: %w", tableName, err)
		}
		if len(rest) == 0 {
			return nil
		}
		mutations = rest
	}
	puts, exclusive := classify(mutations)
	if exclusive {
		pending, err := s.applyExclusive(ctx, tableName, mutations)
		if err == nil {
			err = pending.wait()
		}
		if err != nil {
			return fmt.Errorf("embedded: apply %s: %w", tableName, err)
		}
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.tableLocked(tableName)
	if err == nil {
		err = checkMutations(t, mutations)
	}
	if err != nil {
		return fmt.Errorf("embedded: apply %s: %w", tableName, err)
	}
	if len(mutations) == 0 {
		return nil
	}
	if puts {
		if err := s.applyPuts(ctx, t, mutations); err != nil {
			return fmt.Errorf("embedded: apply %s: %w", tableName, err)
		}
		return nil
	}
	b, tomb, err := s.buildBatch(ctx, t, mutations)
	if err != nil {
		return fmt.Errorf("embedded: apply %s: %w", tableName, err)
	}
	defer b.Close()
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("embedded: apply %s: %w", tableName, err)
	}
	s.tombs.Add(tomb)
	return nil
}

// applyExclusive applies a batch that holds a family or row delete below
// kv.MaxTimestamp (classify). Such a delete writes range deletions that
// cover exactly the cells it read (deleteUpTo), and a range deletion removes any
// key inside it, including one a concurrent Apply would put between the read and
// the commit: so the batch is read, built and applied under the exclusive lock,
// which every other write (Apply's shared, the rest exclusive) excludes. Its
// fsync is awaited after the lock is released (pendingSync), so that writers
// blocked meanwhile wait for the read and the memtable insert only.
func (s *Store) applyExclusive(ctx context.Context, tableName string, mutations []kv.Mutation) (pendingSync, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tableLocked(tableName)
	if err == nil {
		err = checkMutations(t, mutations)
	}
	if err != nil {
		return pendingSync{}, err
	}
	b, tomb, err := s.buildBatch(ctx, t, mutations)
	if err != nil {
		return pendingSync{}, err
	}
	pending, err := s.applyNoSyncWait(b)
	if err == nil {
		s.tombs.Add(tomb)
	}
	return pending, err
}

// checkMutations validates mutations against table t: a *kv.BatchError naming
// every invalid one, or nil.
func checkMutations(t *table, mutations []kv.Mutation) error {
	var failed []kv.MutationError
	for i, m := range mutations {
		err := m.Validate()
		if err == nil && m.Kind != kv.KindDeleteRow {
			_, err = t.family(m.Family)
		}
		if err != nil {
			failed = append(failed, kv.MutationError{Index: i, Err: err})
		}
	}
	if len(failed) > 0 {
		return &kv.BatchError{Failed: failed, Total: len(mutations)}
	}
	return nil
}

// buildBatch returns a batch of valid mutations of table t, in their order, and
// the tombstones it adds; the caller commits and closes it. The reads of its
// deletes see the store as it is now, so what they delete is what exists when
// the batch is applied only if the caller keeps out the writes that matter
// meanwhile (delete.go says which).
func (s *Store) buildBatch(ctx context.Context, t *table, mutations []kv.Mutation) (*pebble.Batch, kv.Tombstones, error) {
	var tomb kv.Tombstones
	viaBatch, indexed := batchViews(mutations)
	var b *pebble.Batch
	if indexed {
		b = s.db.NewIndexedBatch()
	} else {
		b = s.db.NewBatch()
	}
	view := deleteView{db: s.db, b: b}
	var (
		key []byte
		err error
	)
	for i, m := range mutations {
		if i%1024 == 0 {
			if err = ctx.Err(); err != nil {
				break
			}
		}
		if key, err = addMutation(b, &view, viaBatch != nil && viaBatch[i], t, m, key[:0], &tomb); err != nil {
			break
		}
	}
	if err = firstErr(err, view.close()); err != nil {
		b.Close()
		return nil, kv.Tombstones{}, err
	}
	return b, tomb, nil
}

// applyPuts writes valid puts of table t in one Pebble batch, with fsync, in
// the order of their keys rather than the caller's.
//
// Why sorted: Pebble inserts a batch into its memtable (a skiplist) key by key,
// and that insert is the largest single cost of ingest (a third of the CPU with
// 32 MiB memtables; tuning.go): remote-write requests carry one sample of each of
// thousands of series in no useful order, and each insert searches the skiplist
// from its top, comparing long keys that share their first dozens of bytes.
// Sorted, consecutive searches walk the same upper nodes, which stay in the CPU
// cache: a batch of 2 000 such keys into a memtable of 200 000 took about a
// quarter less time (sorting included). Pebble's own splice hint does not help:
// it only skips the search for keys adjacent in the memtable.
//
// Sorting changes nothing readers can see: the batch commits atomically, and a
// stable sort keeps two puts of the same key in the caller's order, so the later
// one still gets the higher sequence number and wins.
func (s *Store) applyPuts(ctx context.Context, t *table, mutations []kv.Mutation) error {
	sb := sortBatches.Get().(*sortBatch)
	defer sortBatches.Put(sb)
	sb.reset()
	size := 0
	for i, m := range mutations {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		start := len(sb.keys)
		sb.keys = append(sb.keys, t.prefix...)
		sb.keys = appendEscaped(sb.keys, m.Row)
		sb.keys = appendColumn(sb.keys, m.Family, m.Qualifier)
		sb.keys = appendTimestamp(sb.keys, m.Timestamp)
		sb.order = append(sb.order, sortedPut{start: start, end: len(sb.keys), i: i})
		size += len(sb.keys) - start + len(m.Value) + batchEntryOverhead
	}
	keys := sb.keys
	slices.SortStableFunc(sb.order, func(a, b sortedPut) int {
		return bytes.Compare(keys[a.start:a.end], keys[b.start:b.end])
	})
	b := s.db.NewBatchWithSize(size)
	defer b.Close()
	for _, p := range sb.order {
		if err := b.Set(keys[p.start:p.end], mutations[p.i].Value, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

// batchEntryOverhead bounds what a Pebble batch adds to a set's key and value:
// its kind byte and two uvarint lengths.
const batchEntryOverhead = 1 + 2*binary.MaxVarintLen32

// sortBatch is applyPuts' scratch space: the keys of a batch, end to end, and
// their order. Pooled, so that a steady stream of requests allocates none.
type sortBatch struct {
	keys  []byte
	order []sortedPut
}

// sortedPut is the key keys[start:end] of mutation i.
type sortedPut struct{ start, end, i int }

// maxPooledSortBatch is the most key bytes a pooled sortBatch keeps, so that one
// huge request does not pin its scratch space for the life of the process.
const maxPooledSortBatch = 4 << 20

func (sb *sortBatch) reset() {
	if cap(sb.keys) > maxPooledSortBatch {
		*sb = sortBatch{}
	}
	sb.keys, sb.order = sb.keys[:0], sb.order[:0]
}

var sortBatches = sync.Pool{New: func() any { return new(sortBatch) }}

// addMutation adds one valid mutation to b, building keys in buf, which it returns
// for reuse (Pebble copies keys and values into the batch), and counts the
// tombstones it adds in tomb. A delete that reads (readsToDelete) reads through
// view, the batch itself when viaBatch (batchViews).
func addMutation(b *pebble.Batch, view *deleteView, viaBatch bool, t *table, m kv.Mutation, buf []byte, tomb *kv.Tombstones) ([]byte, error) {
	buf = append(buf, t.prefix...)
	buf = appendEscaped(buf, m.Row)
	switch m.Kind {
	case kv.KindPut:
		buf = appendColumn(buf, m.Family, m.Qualifier)
		buf = appendTimestamp(buf, m.Timestamp)
		return buf, b.Set(buf, m.Value, nil)
	case kv.KindDeleteColumn:
		buf = appendColumn(buf, m.Family, m.Qualifier)
		return buf, deleteVersions(b, view, viaBatch, buf, m.Timestamp, tomb)
	case kv.KindDeleteFamily:
		buf = appendEscaped(buf, []byte(m.Family))
		return buf, deleteUpTo(b, view, viaBatch, buf, m.Timestamp, tomb)
	case kv.KindDeleteRow:
		return buf, deleteUpTo(b, view, viaBatch, buf, m.Timestamp, tomb)
	}
	return buf, fmt.Errorf("%w: unknown mutation kind %d", kv.ErrInvalidArgument, m.Kind)
}

// Increment adds delta to the 8-byte big-endian integer in a cell (absent: 0) and
// writes the sum at the store clock's now (or at the current value's timestamp if
// that is newer, so the sum is always the newest version), with fsync.
func (s *Store) Increment(ctx context.Context, tableName string, row []byte, familyName string, qualifier []byte, delta int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("embedded: increment %s: %w", tableName, err)
	}
	if err := s.space.err(); err != nil {
		return 0, fmt.Errorf("embedded: increment %s: %w", tableName, err)
	}
	sum, pending, err := s.incrementLocked(tableName, row, familyName, qualifier, delta)
	if err == nil {
		err = pending.wait()
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: increment %s: %w", tableName, err)
	}
	return sum, nil
}

func (s *Store) incrementLocked(tableName string, row []byte, familyName string, qualifier []byte, delta int64) (int64, pendingSync, error) {
	now := s.now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	t, f, err := s.checkCell(tableName, kv.Put(row, familyName, qualifier, now, nil))
	if err != nil {
		return 0, pendingSync{}, err
	}
	col := appendColumn(rowPrefix(t.prefix, row), familyName, qualifier)
	cur, curTs, found, err := s.newestVisible(col, f, now)
	if err != nil {
		return 0, pendingSync{}, err
	}
	var sum int64
	if found {
		if len(cur) != 8 {
			return 0, pendingSync{}, fmt.Errorf("%w: cell %s:%q of row %q holds %d bytes, not an 8-byte counter",
				kv.ErrInvalidArgument, familyName, qualifier, row, len(cur))
		}
		sum = int64(binary.BigEndian.Uint64(cur))
		now = max(now, curTs)
	}
	sum += delta
	value := binary.BigEndian.AppendUint64(nil, uint64(sum))
	if s.holds(t, familyName) {
		pending, err := s.putToHead(t, kv.Put(row, familyName, qualifier, now, value))
		return sum, pending, err
	}
	pending, err := s.applyCell(appendTimestamp(col, now), value)
	return sum, pending, err
}

// CheckAndPut writes put if the newest visible value of its cell equals expected
// (nil or empty expected: the cell is absent or empty), atomically, with fsync.
func (s *Store) CheckAndPut(ctx context.Context, tableName string, expected []byte, put kv.Mutation) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("embedded: check and put %s: %w", tableName, err)
	}
	if put.Kind != kv.KindPut {
		return false, fmt.Errorf("embedded: check and put %s: %w: mutation is a %s, not a put", tableName, kv.ErrInvalidArgument, put.Kind)
	}
	if err := s.space.err(); err != nil {
		return false, fmt.Errorf("embedded: check and put %s: %w", tableName, err)
	}
	won, pending, err := s.checkAndPutLocked(tableName, expected, put)
	if err == nil {
		err = pending.wait()
	}
	if err != nil {
		return false, fmt.Errorf("embedded: check and put %s: %w", tableName, err)
	}
	return won, nil
}

func (s *Store) checkAndPutLocked(tableName string, expected []byte, put kv.Mutation) (bool, pendingSync, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, f, err := s.checkCell(tableName, put)
	if err != nil {
		return false, pendingSync{}, err
	}
	col := appendColumn(rowPrefix(t.prefix, put.Row), put.Family, put.Qualifier)
	cur, _, found, err := s.newestVisible(col, f, s.now().UnixMilli())
	if err != nil {
		return false, pendingSync{}, err
	}
	if len(expected) == 0 {
		if found && len(cur) > 0 {
			return false, pendingSync{}, nil
		}
	} else if !found || !bytes.Equal(cur, expected) {
		return false, pendingSync{}, nil
	}
	if s.holds(t, put.Family) {
		pending, err := s.putToHead(t, put)
		return err == nil, pending, err
	}
	pending, err := s.applyCell(appendTimestamp(col, put.Timestamp), put.Value)
	return err == nil, pending, err
}

// pendingSync is a write made under the exclusive s.mu (a read-modify-write:
// Increment, CheckAndPut; or a batch of range deletions built from a read,
// applyExclusive) that is applied, and so visible to the next one, but whose
// fsync is still under way.
//
// These writes hold the exclusive s.mu only while they read and apply; they
// wait for the fsync after releasing it, so that Pebble's commit pipeline groups
// the fsyncs of concurrent callers into one: registering a burst of new series
// costs one fsync per group rather than one per series, in a row, and writers
// blocked by a delete batch wait for its read, not for its fsync. A write seen
// before its fsync is safe: the directory lock makes this the only process, and
// anything built on such a value is written after it in the same WAL with Sync,
// so it cannot outlive it in a crash.
type pendingSync struct {
	b    *pebble.Batch
	done func() // tells Close that the batch is released
	// head, for a put the head took instead (putToHead), waits for its log
	// record's fsync.
	head func() error
}

// putToHead applies a valid put of a family the head holds, under s.mu held
// exclusively: the head's log and memory take it at once, its fsync is
// awaited by pendingSync.wait.
func (s *Store) putToHead(t *table, put kv.Mutation) (pendingSync, error) {
	wait, err := s.logAndApplyToHead(t, []kv.Mutation{put}, func(int) bool { return true })
	if err != nil {
		return pendingSync{}, err
	}
	s.syncing.Add(1)
	return pendingSync{head: wait, done: s.syncing.Done}, nil
}

// applyCell applies key=value and starts its fsync; s.mu must be held.
func (s *Store) applyCell(key, value []byte) (pendingSync, error) {
	b := s.db.NewBatch()
	if err := b.Set(key, value, nil); err != nil {
		b.Close()
		return pendingSync{}, err
	}
	return s.applyNoSyncWait(b)
}

// applyNoSyncWait applies b, which it takes over (closing it on failure), and
// starts its fsync; s.mu must be held exclusively.
func (s *Store) applyNoSyncWait(b *pebble.Batch) (pendingSync, error) {
	if err := s.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		b.Close()
		return pendingSync{}, err
	}
	s.syncing.Add(1)
	return pendingSync{b: b, done: s.syncing.Done}, nil
}

// wait waits for the fsync, if there is one, and releases the batch.
func (p pendingSync) wait() error {
	if p.head != nil {
		defer p.done()
		return p.head()
	}
	if p.b == nil {
		return nil
	}
	defer p.done()
	defer p.b.Close()
	return p.b.SyncWait()
}

// checkCell validates a put-shaped mutation against the catalog; s.mu must be held.
func (s *Store) checkCell(tableName string, m kv.Mutation) (*table, *family, error) {
	t, err := s.tableLocked(tableName)
	if err != nil {
		return nil, nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	f, err := t.family(m.Family)
	if err != nil {
		return nil, nil, err
	}
	return t, f, nil
}

// newestVisible reads the newest version of the column with key prefix col that is
// not expired at nowMs. The newest version is always within MaxVersions, and if it
// is expired every older one is too. The value is a copy.
func (s *Store) newestVisible(col []byte, f *family, nowMs int64) (value []byte, ts int64, found bool, err error) {
	it, _, err := s.newCellIter(context.Background(), col, prefixEnd(col))
	if err != nil {
		return nil, 0, false, err
	}
	if it.First() {
		k := it.Key()
		ts = int64(^binary.BigEndian.Uint64(k[len(k)-tsLen:]))
		if ts >= f.oldest(nowMs) {
			var v []byte
			v, err = it.ValueAndErr()
			value, found = bytes.Clone(v), err == nil
		}
	}
	return value, ts, found, firstErr(err, it.Error(), it.Close())
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
