package embedded

import (
	"bytes"
	"context"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// cellIter is what reads need of an iterator over cell keys: a Pebble
// iterator, or one merged with the head's cells (mergeIter). Keys and values
// are valid until the next positioning call.
type cellIter interface {
	First() bool
	SeekGE(key []byte) bool
	Next() bool
	Valid() bool
	Key() []byte
	ValueAndErr() ([]byte, error)
	Error() error
	Close() error
}

var _ cellIter = (*pebble.Iterator)(nil)

// newCellIter returns an iterator over the cell keys in [lower, upper): Pebble's
// alone when the head holds nothing, else Pebble's merged with the head's. The
// Pebble iterator is returned too, for addReadWork.
func (s *Store) newCellIter(ctx context.Context, lower, upper []byte) (cellIter, *pebble.Iterator, error) {
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, nil, err
	}
	if s.head == nil || s.head.empty() {
		return it, it, nil
	}
	return &mergeIter{p: it, h: &headIter{h: s.head, lower: lower, upper: upper}}, it, nil
}

// empty reports whether the head holds no row.
func (h *head) empty() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.rows.Len() == 0
}

// headIter iterates over the head's cell keys in [lower, upper), a row at a
// time: it copies each row's refs when it enters the row (rowSnapshot), so it
// sees every row as it was at that moment and holds the head's lock only
// while it copies; a frozen row's blocks are decoded after the lock is
// released (rowAtOrAfter).
type headIter struct {
	h            *head
	lower, upper []byte

	row   rowSnapshot
	i     int // position in row.refs
	key   []byte
	valid bool
	// past is the target of a seek that found nothing: a later seek to a key
	// at or after it finds nothing either (rows added since are not seen, as a
	// Pebble iterator does not see later writes).
	past []byte
	// err is a frozen block that did not decode: the iterator stops there.
	err error
}

func (it *headIter) First() bool { return it.SeekGE(it.lower) }

func (it *headIter) SeekGE(target []byte) bool {
	if bytes.Compare(target, it.lower) < 0 {
		target = it.lower
	}
	if it.past != nil && bytes.Compare(target, it.past) >= 0 {
		it.valid = false
		return false
	}
	if it.valid && bytes.HasPrefix(target, it.row.prefix) {
		// Within the current row: search its snapshot.
		if it.at(it.searchRow(target[len(it.row.prefix):])) {
			return true
		}
		return it.seekRow(incPrefix(bytes.Clone(it.row.prefix)))
	}
	return it.seekRow(target)
}

// seekRow positions on the first key >= target, entering rows from the head.
func (it *headIter) seekRow(target []byte) bool {
	if it.err != nil {
		return false
	}
	for {
		snap, ok, err := it.h.rowAtOrAfter(target, it.upper)
		if err != nil {
			it.valid, it.err = false, err
			return false
		}
		if !ok {
			it.valid = false
			it.past = bytes.Clone(target)
			return false
		}
		it.row = snap
		i := 0
		if bytes.HasPrefix(target, snap.prefix) {
			i = it.searchRow(target[len(snap.prefix):])
		}
		if i < len(snap.refs) {
			return it.at(i)
		}
		// Every cell of the row is before target: the row after it. Row
		// prefixes are prefix-free, so no other row's keys lie below
		// incPrefix(prefix).
		target = incPrefix(bytes.Clone(snap.prefix))
	}
}

// searchRow is the first index of the current row whose suffix is >= s.
func (it *headIter) searchRow(s []byte) int {
	return sort.Search(len(it.row.refs), func(i int) bool { return bytes.Compare(it.row.suffix(i), s) >= 0 })
}

// at positions on cell i of the current row, which must exist or be one past
// the end (then it reports false without moving to the next row).
func (it *headIter) at(i int) bool {
	if i >= len(it.row.refs) {
		return false
	}
	it.i = i
	it.key = append(append(it.key[:0], it.row.prefix...), it.row.suffix(i)...)
	if it.upper != nil && bytes.Compare(it.key, it.upper) >= 0 {
		it.valid = false
		return false
	}
	it.valid = true
	return true
}

func (it *headIter) Next() bool {
	if !it.valid {
		return false
	}
	if it.at(it.i + 1) {
		return true
	}
	if !it.valid {
		return false // at upper
	}
	return it.seekRow(incPrefix(bytes.Clone(it.row.prefix)))
}

func (it *headIter) Valid() bool                  { return it.valid }
func (it *headIter) Key() []byte                  { return it.key }
func (it *headIter) ValueAndErr() ([]byte, error) { return it.row.value(it.i), nil }
func (it *headIter) Error() error                 { return it.err }
func (it *headIter) Close() error                 { return nil }

// mergeIter merges a Pebble iterator with a head iterator into one ordered
// stream of cell keys. A key in both (a row flushed to Pebble, then replayed
// from a log not yet truncated) is returned once, with the head's value.
type mergeIter struct {
	p *pebble.Iterator
	h *headIter

	pOK, hOK bool
	cur      cellIter // nil when exhausted
	both     bool     // the current key is in both
}

func (m *mergeIter) settle() bool {
	m.both = false
	switch {
	case !m.pOK && !m.hOK:
		m.cur = nil
		return false
	case !m.hOK:
		m.cur = m.p
	case !m.pOK:
		m.cur = m.h
	default:
		switch c := bytes.Compare(m.p.Key(), m.h.Key()); {
		case c < 0:
			m.cur = m.p
		default:
			m.cur, m.both = m.h, c == 0
		}
	}
	return true
}

func (m *mergeIter) First() bool {
	m.pOK, m.hOK = m.p.First(), m.h.First()
	return m.settle()
}

func (m *mergeIter) SeekGE(key []byte) bool {
	m.pOK, m.hOK = m.p.SeekGE(key), m.h.SeekGE(key)
	return m.settle()
}

func (m *mergeIter) Next() bool {
	switch {
	case m.cur == nil:
		return false
	case m.both:
		m.pOK, m.hOK = m.p.Next(), m.h.Next()
	case m.cur == cellIter(m.p):
		m.pOK = m.p.Next()
	default:
		m.hOK = m.h.Next()
	}
	return m.settle()
}

func (m *mergeIter) Valid() bool { return m.cur != nil }
func (m *mergeIter) Key() []byte { return m.cur.Key() }
func (m *mergeIter) ValueAndErr() ([]byte, error) {
	return m.cur.ValueAndErr()
}
func (m *mergeIter) Error() error {
	if err := m.h.Error(); err != nil {
		return err
	}
	return m.p.Error()
}
func (m *mergeIter) Close() error { return m.p.Close() }
