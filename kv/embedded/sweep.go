package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// sweepChunkKeys bounds the keys one sweeper step examines while it holds the
// store's exclusive lock (it finishes the column it is in), so that writers wait
// for at most about a millisecond.
const sweepChunkKeys = 4096

// sweepStats counts what one sweep removed.
type sweepStats struct {
	expired  int // cells past their family's TTL
	versions int // versions beyond their family's MaxVersions
}

// sweepLoop sweeps every interval until ctx is cancelled; a negative interval
// disables it. It closes s.sweepDone when it returns.
func (s *Store) sweepLoop(ctx context.Context, interval time.Duration) {
	defer close(s.sweepDone)
	if interval < 0 {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := s.sweep(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, kv.ErrClosed) {
			s.log.Warn("embedded: sweep failed", "dir", s.dir, "err", err)
		}
	}
}

// sweep deletes, in every table, the cells that reads hide: expired ones and
// versions beyond their family's MaxVersions. It uses one "now" for the whole sweep
// and works a chunk at a time (see sweepChunk).
func (s *Store) sweep(ctx context.Context) (sweepStats, error) {
	var st sweepStats
	began := time.Now()
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return st, kv.ErrClosed
	}
	tables := make([]*table, 0, len(s.tables))
	for _, t := range s.tables {
		tables = append(tables, t)
	}
	s.mu.RUnlock()
	nowMs := s.now().UnixMilli()
	for _, t := range tables {
		for cursor := t.prefix; cursor != nil; {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			var err error
			if cursor, err = s.sweepChunk(t, cursor, nowMs, &st); err != nil {
				return st, fmt.Errorf("table %s: %w", t.name, err)
			}
		}
	}
	if st.expired+st.versions > 0 {
		s.log.Debug("embedded: sweep removed cells", "dir", s.dir,
			"expired", st.expired, "versions", st.versions, "took", time.Since(began))
	}
	return st, nil
}

// sweepChunk examines the whole columns of t starting at key cursor until it has
// seen sweepChunkKeys keys, deletes the hidden versions among them, and returns
// where the next chunk starts (nil at the end of the table). It holds the exclusive
// lock, so no write interleaves between what it reads and what it deletes: a put
// that re-creates a deleted version is never swept by mistake.
func (s *Store) sweepChunk(t *table, cursor []byte, nowMs int64, st *sweepStats) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, kv.ErrClosed
	}
	if s.tables[t.name] != t {
		return nil, nil // dropped meanwhile
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: cursor, UpperBound: t.end()})
	if err != nil {
		return nil, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	var (
		col      []byte
		fam      *family
		versions int
		seen     int
		next     []byte
		stats    sweepStats
		scratch  [256]byte
	)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		rowLen, err := rowPrefixLen(k)
		if err != nil {
			return nil, firstErr(fmt.Errorf("%w %x", err, k), it.Close())
		}
		p, err := parseCellSuffix(k[rowLen:], scratch[:])
		if err != nil {
			return nil, firstErr(fmt.Errorf("%w %x", err, k), it.Close())
		}
		if c := k[:rowLen+p.colLen]; !bytes.Equal(c, col) {
			if seen >= sweepChunkKeys {
				next = bytes.Clone(c)
				break
			}
			col = append(col[:0], c...)
			fam = t.families[string(p.family)]
			versions = 0
		}
		seen++
		versions++
		switch {
		case fam == nil:
			// Apply never writes a family the table lacks; leave what it did not write.
		case versions > fam.versions:
			stats.versions++
			b.Delete(k, nil)
		case p.ts < fam.oldest(nowMs):
			stats.expired++
			b.Delete(k, nil)
		}
	}
	if err := firstErr(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	if !b.Empty() {
		// Not synced: losing a sweep in a crash only means doing it again.
		if err := b.Commit(pebble.NoSync); err != nil {
			return nil, err
		}
		s.tombs.Add(kv.Tombstones{Point: int64(stats.expired + stats.versions)})
	}
	st.expired += stats.expired
	st.versions += stats.versions
	return next, nil
}
