package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Defaults of HeadOptions.
const (
	DefaultHeadMaxBytes       = 512 << 20
	DefaultHeadSegmentSize    = 64 << 20
	DefaultHeadCheckInterval  = time.Second
	defaultHeadLogBytesFactor = 4
)

// headDir is the head log's directory inside the store directory.
const headDir = "head"

// HeadOptions configures the head (head.go): which families' cells are kept in
// memory behind the head log instead of in Pebble, and its bounds. The zero
// value has no head.
type HeadOptions struct {
	// Holds reports whether the puts of (table, family) go to the head; nil
	// keeps every cell in Pebble. A store opened without it after running with
	// one writes what its head log holds into Pebble at Open, and removes the
	// log.
	Holds func(table, family string) bool
	// MaxBytes bounds the head's memory [512 MiB]: above it, the rows logged
	// longest ago are written to Pebble (as the same cells) until it holds 3/4
	// of it.
	MaxBytes int64
	// MaxLogBytes bounds the head log on disk [4 × MaxBytes]: above it, the
	// rows that keep its oldest segment are written to Pebble, and the segment
	// deleted.
	MaxLogBytes int64
	// SegmentSize is the size of a head log segment [64 MiB].
	SegmentSize int64
	// CheckInterval is how often the bounds are checked, rows frozen and the
	// log truncated behind rows that left the head [1s].
	CheckInterval time.Duration
	// FreezeCells is how many live cells a row holds before a maintenance
	// pass re-encodes them as one compressed block (headfreeze.go) and later
	// puts start a new live tail [128]; < 0 never freezes by count. Larger
	// costs less CPU (each freeze re-encodes the row's last block) and more
	// memory (live cells take about 40 bytes, frozen 1-3; see
	// docs/performance.md).
	FreezeCells int
	// FreezeAfter is how long a row goes without a put before a maintenance
	// pass freezes its live cells, fewer than FreezeCells too (but not fewer
	// than 4 into a block of their own, which would take more): between
	// FreezeAfter and twice that [1m]; < 0 never freezes idle rows.
	FreezeAfter time.Duration

	// freezeEachApply freezes every row after each Apply (tests: the
	// conformance suite over frozen rows).
	freezeEachApply bool
}

func (o HeadOptions) withDefaults() HeadOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultHeadMaxBytes
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = defaultHeadLogBytesFactor * o.MaxBytes
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultHeadSegmentSize
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultHeadCheckInterval
	}
	if o.FreezeCells == 0 {
		o.FreezeCells = DefaultHeadFreezeCells
	}
	if o.FreezeAfter == 0 {
		o.FreezeAfter = DefaultHeadFreezeAfter
	}
	return o
}

// freezePolicy is the policy the options ask for.
func (o HeadOptions) freezePolicy() freezePolicy {
	return freezePolicy{cells: max(o.FreezeCells, 0), after: max(o.FreezeAfter, 0), eachApply: o.freezeEachApply}
}

// HeadStats reports the head; ok is false when the store has none.
var _ kv.HeadReporter = (*Store)(nil)

func (s *Store) HeadStats() (st kv.HeadStats, ok bool) {
	if s.head == nil {
		return kv.HeadStats{}, false
	}
	hs := s.head.stats()
	st = kv.HeadStats{Rows: hs.Rows, Cells: hs.Cells, Bytes: hs.Bytes,
		FlushedRows: s.headFlushedRows.Load(), FlushedCells: s.headFlushedCells.Load(),
		ReplayedRecords: s.headReplayed}
	st.LogBytes, st.LogSegments = s.hlog.Size(), int64(s.hlog.Segments())
	return st, true
}

// holds reports whether puts to family of table t go to the head.
func (s *Store) holds(t *table, family string) bool {
	return s.head != nil && s.headOpts.Holds != nil && s.headOpts.Holds(t.name, family)
}

// openHead replays the head log, if there is one or the options ask for a
// head, and starts the goroutine that keeps the head's bounds. It runs in
// Open, after the catalog is loaded.
func (s *Store) openHead(opts HeadOptions) error {
	dir := filepath.Join(s.dir, headDir)
	if opts.Holds == nil {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	s.headOpts = opts.withDefaults()
	h := newHead(s.headOpts.freezePolicy())
	byID := make(map[uint64]*table, len(s.tables))
	for _, t := range s.tables {
		byID[t.id] = t
	}
	var replayed int64
	log, err := openHeadLog(dir, headLogOptions{SegmentSize: s.headOpts.SegmentSize, Logger: s.log}, func(seg uint64, rec []byte) error {
		id, muts, err := decodeHeadOps(rec)
		if err != nil {
			return fmt.Errorf("segment %d: %w", seg, err)
		}
		replayed++
		if t := byID[id]; t != nil { // else: the table was dropped
			h.applyLocked(t, muts, seg)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("head log %s: %w (move the directory away to start without what it holds)", dir, err)
	}
	s.head, s.hlog, s.headReplayed = h, log, replayed
	if replayed > 0 {
		st := h.stats()
		s.log.Debug("embedded: head replayed", "dir", dir, "records", replayed, "rows", st.Rows, "cells", st.Cells, "bytes", st.Bytes)
	}
	if opts.Holds == nil {
		// No head wanted any more: what the log holds goes to Pebble.
		err := s.flushHead(func(h *head) []*headRow { return h.rowsBySegLocked() })
		if err == nil {
			err = log.Close()
		}
		if err == nil {
			err = os.RemoveAll(dir)
		}
		s.head, s.hlog = nil, nil
		if err != nil {
			return fmt.Errorf("write the head log %s into the store: %w", dir, err)
		}
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stopHead = stop
	s.headDone = make(chan struct{})
	s.headWake = make(chan struct{}, 1)
	go s.headLoop(ctx)
	return nil
}

// applyLocked applies valid mutations of table t to the head, as logged in
// segment seg: puts are held, deletes remove what the head holds of them.
func (h *head) applyLocked(t *table, mutations []kv.Mutation, seg uint64) {
	var (
		prefix, lastRow []byte
		suffix          []byte
	)
	for _, m := range mutations {
		if prefix == nil || !bytes.Equal(m.Row, lastRow) {
			// putLocked copies the prefix of a row it creates.
			prefix, lastRow = appendEscaped(append(prefix[:0], t.prefix...), m.Row), m.Row
		}
		switch m.Kind {
		case kv.KindPut:
			suffix = appendTimestamp(appendColumn(suffix[:0], m.Family, m.Qualifier), m.Timestamp)
			h.putLocked(prefix, suffix, m.Value, seg)
		case kv.KindDeleteColumn:
			h.deleteLocked(prefix, appendColumn(suffix[:0], m.Family, m.Qualifier), m.Timestamp)
		case kv.KindDeleteFamily:
			h.deleteLocked(prefix, appendEscaped(suffix[:0], []byte(m.Family)), m.Timestamp)
		case kv.KindDeleteRow:
			h.deleteLocked(prefix, nil, m.Timestamp)
		}
	}
}

// hasRowLocked reports whether the head holds cells of the row.
func (h *head) hasRowLocked(prefix []byte) bool { return h.byPrefix[string(prefix)] != nil }

// logAndApplyToHead logs and applies the part of a batch of valid mutations
// of table t that concerns the head: the puts it holds (holds(i) reports
// whether mutations[i] is one) and every delete of a row it holds or that a
// put before it in the batch added. Log and memory take them in the same
// order, under h.mu; wait returns once the record is durable.
func (s *Store) logAndApplyToHead(t *table, mutations []kv.Mutation, holds func(i int) bool) (wait func() error, err error) {
	h := s.head
	if !slices.ContainsFunc(mutations, func(m kv.Mutation) bool { return m.Kind != kv.KindPut }) {
		// Puts only (the ingest path): the record does not depend on what the
		// head holds, so it is built and framed before the lock, which then
		// covers only the hand-over to the log and the memory insert.
		ops := mutations
		if !all(len(mutations), holds) {
			ops = nil
			for i, m := range mutations {
				if holds(i) {
					ops = append(ops, m)
				}
			}
		}
		if len(ops) == 0 {
			return noWait, nil
		}
		framed, err := frameHeadRecord(compressedHeadRecord(t.id, ops))
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		return s.handOver(t, ops, framed)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var (
		ops    []kv.Mutation
		putTo  map[string]bool // rows this batch put into the head
		prefix []byte
	)
	for i, m := range mutations {
		switch {
		case m.Kind == kv.KindPut:
			if !holds(i) {
				continue
			}
			if putTo == nil {
				putTo = make(map[string]bool)
			}
			putTo[string(m.Row)] = true
		case putTo[string(m.Row)]:
		default:
			prefix = appendEscaped(append(prefix[:0], t.prefix...), m.Row)
			if !h.hasRowLocked(prefix) {
				continue
			}
		}
		ops = append(ops, m)
	}
	if len(ops) == 0 {
		return noWait, nil
	}
	framed, err := frameHeadRecord(encodeHeadOps(nil, t.id, ops))
	if err != nil {
		return nil, err
	}
	return s.handOver(t, ops, framed)
}

// handOver hands the framed record of ops to the log and applies ops to the
// head's memory, in that order; h.mu must be held exclusively.
func (s *Store) handOver(t *table, ops []kv.Mutation, framed []byte) (wait func() error, err error) {
	seg, wait, err := s.hlog.appendFramed(framed)
	if err != nil {
		return nil, err
	}
	s.head.applyLocked(t, ops, seg)
	if s.headOpts.freezeEachApply {
		if err := s.head.freezeAllLocked(); err != nil {
			return nil, err
		}
	}
	if s.head.bytes > s.headOpts.MaxBytes {
		s.wakeHead()
	}
	return wait, nil
}

func noWait() error { return nil }

// all reports whether holds(i) for every i < n.
func all(n int, holds func(i int) bool) bool {
	for i := range n {
		if !holds(i) {
			return false
		}
	}
	return true
}

// applyHead applies the head's part of an Apply (applyToHead) and returns the
// rest, for Pebble: every mutation but the puts the head took, less the
// deletes of rows Pebble holds nothing of (so that data that lived only in the
// head leaves no tombstone in Pebble). Invalid mutations fail the whole batch
// before anything is written.
func (s *Store) applyHead(tableName string, mutations []kv.Mutation) ([]kv.Mutation, error) {
	s.mu.RLock()
	t, err := s.tableLocked(tableName)
	if err == nil {
		err = checkMutations(t, mutations)
	}
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	holds := make([]bool, len(mutations))
	anyHeld := false
	for i, m := range mutations {
		if m.Kind == kv.KindPut && s.holds(t, m.Family) {
			holds[i], anyHeld = true, true
		}
	}
	hasDeletes := false
	for _, m := range mutations {
		if m.Kind != kv.KindPut {
			hasDeletes = true
			break
		}
	}
	if !anyHeld && !hasDeletes {
		s.mu.RUnlock()
		return mutations, nil
	}
	wait, err := s.logAndApplyToHead(t, mutations, func(i int) bool { return holds[i] })
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := wait(); err != nil {
		return nil, err
	}
	rest := make([]kv.Mutation, 0, len(mutations))
	putRows := make(map[string]bool)
	var probe *pebble.Iterator
	defer func() {
		if probe != nil {
			probe.Close()
		}
	}()
	for i, m := range mutations {
		switch {
		case holds[i]:
			continue
		case m.Kind == kv.KindPut:
			putRows[string(m.Row)] = true
		case !putRows[string(m.Row)]:
			// A delete of a row no earlier put of the batch wrote to Pebble:
			// needed only if Pebble holds something under it.
			if probe == nil {
				if probe, err = s.db.NewIter(nil); err != nil {
					return nil, err
				}
			}
			p := rowPrefix(t.prefix, m.Row)
			switch m.Kind {
			case kv.KindDeleteColumn:
				p = appendColumn(p, m.Family, m.Qualifier)
			case kv.KindDeleteFamily:
				p = appendEscaped(p, []byte(m.Family))
			}
			if !probe.SeekGE(p) || !bytes.HasPrefix(probe.Key(), p) {
				if err := probe.Error(); err != nil {
					return nil, err
				}
				continue
			}
		}
		rest = append(rest, m)
	}
	return rest, nil
}

func (s *Store) wakeHead() {
	select {
	case s.headWake <- struct{}{}:
	default:
	}
}

// headLoop keeps the head within its bounds and truncates its log, every
// CheckInterval or when a write finds the head over MaxBytes, until ctx ends.
func (s *Store) headLoop(ctx context.Context) {
	defer close(s.headDone)
	tick := time.NewTicker(s.headOpts.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.headWake:
		}
		if err := s.maintainHead(); err != nil && ctx.Err() == nil && !errors.Is(err, kv.ErrClosed) {
			s.log.Warn("embedded: head maintenance failed", "dir", s.dir, "err", err)
		}
	}
}

// maintainHead freezes rows (headfreeze.go), writes rows to Pebble while the
// head is over MaxBytes or its log over MaxLogBytes, then deletes the log
// segments no row needs.
func (s *Store) maintainHead() error {
	o := s.headOpts
	if _, err := s.head.freezePass(time.Now()); err != nil {
		return err
	}
	if s.head.stats().Bytes > o.MaxBytes {
		target := o.MaxBytes / 4 * 3
		err := s.flushHead(func(h *head) []*headRow {
			var pick []*headRow
			over := h.bytes - target
			for _, r := range h.rowsBySegLocked() {
				if over <= 0 {
					break
				}
				pick = append(pick, r)
				over -= r.size()
			}
			return pick
		})
		if err != nil {
			return err
		}
	}
	for s.hlog.Size() > o.MaxLogBytes && s.hlog.Segments() > 1 {
		oldest := s.oldestHeadSeg()
		if oldest == 0 {
			break
		}
		if oldest >= s.hlog.Segment() {
			// Every row is in the current segment: start the next one, so that
			// this one can go once they leave.
			if _, err := s.hlog.Roll(); err != nil {
				return err
			}
			break
		}
		err := s.flushHead(func(h *head) []*headRow {
			var pick []*headRow
			for _, r := range h.rowsBySegLocked() {
				if r.seg > oldest {
					break
				}
				pick = append(pick, r)
			}
			return pick
		})
		if err != nil {
			return err
		}
		if _, err := s.truncateHeadLog(); err != nil {
			return err
		}
	}
	_, err := s.truncateHeadLog()
	return err
}

// oldestHeadSeg is the oldest log segment a row of the head needs, 0 if none.
func (s *Store) oldestHeadSeg() uint64 {
	s.head.mu.RLock()
	defer s.head.mu.RUnlock()
	return s.head.minSegLocked()
}

// truncateHeadLog deletes the segments no row of the head needs. The segment
// appends go to stays; an empty head needs none before it.
func (s *Store) truncateHeadLog() (int64, error) {
	s.head.mu.RLock()
	keep := s.head.minSegLocked()
	s.head.mu.RUnlock()
	if keep == 0 {
		keep = s.hlog.Segment()
	}
	return s.hlog.TruncateBefore(keep)
}

// flushHead writes the rows pick chooses into Pebble as the same cells, with
// fsync, and removes them from the head. It holds the store's lock shared (no
// delete that reads Pebble, no DropTable, no Close meanwhile) and the head's
// exclusively, so nothing changes the rows between the write and the removal.
func (s *Store) flushHead(pick func(h *head) []*headRow) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed && s.headDone != nil {
		return kv.ErrClosed
	}
	h := s.head
	h.mu.Lock()
	defer h.mu.Unlock()
	rows := pick(h)
	if len(rows) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	var (
		key   []byte
		cells int64
	)
	for _, r := range rows {
		snap := snapshotLocked(r)
		if err := snap.decode(); err != nil {
			return fmt.Errorf("flush %d head rows: %w", len(rows), err)
		}
		for i := range snap.refs {
			key = append(append(key[:0], r.prefix...), snap.suffix(i)...)
			if err := b.Set(key, snap.value(i), nil); err != nil {
				return err
			}
		}
		cells += int64(len(snap.refs))
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("flush %d head rows: %w", len(rows), err)
	}
	for _, r := range rows {
		h.removeLocked(r)
		h.bytes -= r.size()
		h.cells -= int64(r.cellCount())
	}
	s.headFlushedRows.Add(int64(len(rows)))
	s.headFlushedCells.Add(cells)
	return nil
}

// closeHead stops the head's goroutine and closes its log (what the head
// holds stays in the log, replayed at the next Open).
func (s *Store) closeHead() error {
	if s.head == nil {
		return nil
	}
	s.stopHead()
	<-s.headDone
	return s.hlog.Close()
}

// frameHeadRecord frames rec for the log (appendHeadRecord), refusing one
// over the log's limit.
func frameHeadRecord(rec []byte) ([]byte, error) {
	if len(rec) > maxHeadRecord {
		return nil, fmt.Errorf("embedded: head log: append: %w: record of %d bytes (at most %d)",
			kv.ErrInvalidArgument, len(rec), maxHeadRecord)
	}
	return appendHeadRecord(make([]byte, 0, headRecordHeader+len(rec)), rec), nil
}

// appendFramed hands a framed record to the log's writer without waiting for
// its fsync, which wait awaits. The head calls it under h.mu, so that the log
// takes records in the order the head applies them; seg is a lower bound of
// the segment the record lands in (segments only grow), which is all that
// truncation needs.
func (l *headLog) appendFramed(framed []byte) (seg uint64, wait func() error, err error) {
	req := &headLogReq{data: framed, done: make(chan struct{})}
	seg = l.Segment()
	if err := l.enqueue(context.Background(), req); err != nil {
		return 0, nil, err
	}
	return seg, func() error {
		<-req.done
		return req.err
	}, nil
}
