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

// rowReader turns the cell keys of one row into a kv.Row, applying HBase's
// read rules in the order HBase's ScanQueryMatcher does: family selection, TTL and
// the family's MaxVersions (which define the visible versions), the time range, the
// filters, then the read's MaxVersions.
type rowReader struct {
	t     *table
	o     kv.ReadOptions
	nowMs int64
	// wanted is the sorted list of selected families; nil selects all.
	wanted       []string
	keyOnly      bool
	ranges       []kv.ColumnRangeFilter
	valueFilters []kv.ColumnValueFilter
	// Per-row state of valueFilters: the newest visible in-range value of each
	// filter's column, and whether there was one.
	filterValues  [][]byte
	filterPresent []bool
	// scratch decodes qualifiers that contain 0x00 bytes without allocating.
	scratch [256]byte
	// lastCells is the cell count of the previous row: rows of a scan tend to be
	// alike, so it sizes the next row's slice.
	lastCells int
	// arena holds the qualifiers and values of the rows read so far (copyTo):
	// rows share its allocations, and a row a caller keeps pins at most one
	// arena block besides its own.
	arena []byte
	// seekKey is scratch for the keys readRow skips to.
	seekKey []byte
	// famEsc is scratch for esc(family) of the family readRow is in.
	famEsc []byte
	// rowsBySeek says each row is found by a seek (GetRows), not by the
	// iterator's position after the row before (Scan): readRow then leaves
	// the iterator on the first key of a family after the last one selected
	// instead of stepping over the rest of the row.
	rowsBySeek bool
}

// maxSkipNexts is how many Next calls readRow tries before a SeekGE when it
// skips keys (an older version, a column before the time range, a family not
// read). Most skips pass one to a few keys (one version per column; the few t:
// cells of a data row), and a Next costs far less than a seek, which
// repositions every level of the LSM.
const maxSkipNexts = 8

// skipTo moves it to the first key >= target, with up to maxSkipNexts Next
// calls before it seeks, and reports whether it is valid.
func skipTo(it cellIter, target []byte) bool {
	for range maxSkipNexts {
		if !it.Next() {
			return false
		}
		if bytes.Compare(it.Key(), target) >= 0 {
			return true
		}
	}
	return it.SeekGE(target)
}

// newRowReader resolves read options against a table: every family named by the
// options or a filter must exist (kv.ErrInvalidArgument otherwise).
func newRowReader(t *table, nowMs int64, opts []kv.ReadOption) (*rowReader, error) {
	o, err := kv.NewReadOptions(opts...)
	if err != nil {
		return nil, err
	}
	r := &rowReader{t: t, o: o, nowMs: nowMs}
	for _, name := range o.Families {
		if _, err := t.family(name); err != nil {
			return nil, err
		}
		r.wanted = append(r.wanted, name)
	}
	slices.Sort(r.wanted)
	r.wanted = slices.Compact(r.wanted)
	for _, f := range o.Filters {
		switch f := f.(type) {
		case kv.ColumnValueFilter:
			if _, err := t.family(f.Family); err != nil {
				return nil, err
			}
			r.valueFilters = append(r.valueFilters, f)
		case kv.KeyOnlyFilter:
			r.keyOnly = true
		case kv.ColumnRangeFilter:
			r.ranges = append(r.ranges, f)
		default:
			return nil, fmt.Errorf("%w: unsupported filter %T", kv.ErrInvalidArgument, f)
		}
	}
	r.filterValues = make([][]byte, len(r.valueFilters))
	r.filterPresent = make([]bool, len(r.valueFilters))
	return r, nil
}

// wants reports whether family f is selected, and if not, the next selected family
// after it ("" if none).
func (r *rowReader) wants(f []byte) (ok bool, next string) {
	if r.wanted == nil {
		return true, ""
	}
	i, found := slices.BinarySearch(r.wanted, string(f))
	if found {
		return true, ""
	}
	if i < len(r.wanted) {
		return false, r.wanted[i]
	}
	return false, ""
}

// rangeSkip returns where a read whose one ColumnRangeFilter does not hold
// qualifier q, the first of its column in family fam of the row with prefix
// rp, should seek to: the first column of the range (q below it) or past the
// family (q above it), as HBase's ColumnRangeFilter hints. It returns nil when
// q is in the range, or when the read has several range filters or a value
// filter (which reads its column wherever it is): the read then steps cell by
// cell. So a read of a few columns of a wide row (compaction reads one bucket's
// cell of a rollup day row) costs what it reads, not the row's width.
func (r *rowReader) rangeSkip(rp []byte, fam string, q []byte) []byte {
	if len(r.ranges) != 1 || len(r.valueFilters) > 0 {
		return nil
	}
	f := r.ranges[0]
	if f.Min != nil {
		if c := bytes.Compare(q, f.Min); c < 0 || c == 0 && !f.MinInclusive {
			r.seekKey = append(r.seekKey[:0], rp...)
			r.seekKey = appendColumn(r.seekKey, fam, f.Min)
			if c == 0 {
				return incPrefix(r.seekKey) // past every version of Min
			}
			return r.seekKey
		}
	}
	if f.Max != nil {
		if c := bytes.Compare(q, f.Max); c > 0 || c == 0 && !f.MaxInclusive {
			r.seekKey = append(r.seekKey[:0], rp...)
			return incPrefix(appendEscaped(r.seekKey, []byte(fam)))
		}
	}
	return nil
}

// inRanges reports whether every ColumnRangeFilter contains qualifier q.
func (r *rowReader) inRanges(q []byte) bool {
	for _, f := range r.ranges {
		if !f.Contains(q) {
			return false
		}
	}
	return true
}

// readRow reads the cells of the row whose key prefix is rp (which readRow
// does not keep), starting at the iterator's current key, its first, and
// leaving the iterator on the first key after the row (or exhausted; with
// rowsBySeek, perhaps on a key of a family after the selected ones). It
// reports whether the row has cells and passes the filters.
//
// With maxCells > 0 and no value filter (which needs the whole row), it stops
// once the row has maxCells cells, leaving the iterator inside the row: for a
// scan that ends there (CellLimit), so that a row of millions of cells (an
// index row) is not read to return one.
func (r *rowReader) readRow(it cellIter, rp []byte, maxCells int) (kv.Row, bool, error) {
	if len(r.valueFilters) > 0 {
		maxCells = 0
	}
	var row kv.Row
	rowLen := len(rp)
	for i := range r.valueFilters {
		r.filterValues[i], r.filterPresent[i] = nil, false
	}
	if r.lastCells > 0 {
		// Room for a few more cells than the last row had: consecutive rows
		// of a series differ by a sample or two, and a full doubling for
		// one more cell would waste half of the slice.
		row.Cells = make([]kv.Cell, 0, r.lastCells+r.lastCells/8+4)
	}
	var (
		// col is the current column: esc(family)|esc(qualifier), the key
		// after the row prefix up to its timestamp; nil before the first.
		col []byte
		// fam is the current family, whose keys start with r.famEsc after
		// the row prefix.
		fam      *family
		versions int // versions of the column seen so far
		returned int // versions of the column returned so far
	)
	for ok := it.Valid(); ok && bytes.HasPrefix(it.Key(), rp); {
		k := it.Key()
		s := k[rowLen:]
		var (
			p   parsedCell
			err error
			// sameFam: the key is in the family of the key before (an
			// escaped component is prefix-free), so only its qualifier and
			// timestamp are parsed.
			sameFam = fam != nil && bytes.HasPrefix(s, r.famEsc)
		)
		if sameFam {
			p, err = parseColumnSuffix(s, len(r.famEsc), r.scratch[:])
		} else {
			p, err = parseCellSuffix(s, r.scratch[:])
		}
		if err != nil {
			return row, false, fmt.Errorf("%w %x", err, k)
		}
		if col == nil || !bytes.Equal(s[:p.colLen], col) {
			// A new column; perhaps a new family.
			if !sameFam {
				want, next := r.wants(p.family)
				fam = r.t.families[string(p.family)]
				if !want && next == "" && r.rowsBySeek {
					// No selected family after this one, and the caller
					// seeks the next row: the rest of this one is not read.
					fam = nil
					break
				}
				if !want || fam == nil {
					// Skip to the next selected family, or past the row.
					r.seekKey = append(r.seekKey[:0], rp...)
					if next != "" {
						r.seekKey = appendEscaped(r.seekKey, []byte(next))
					} else {
						r.seekKey = incPrefix(r.seekKey)
					}
					ok = skipTo(it, r.seekKey)
					fam, col = nil, nil
					continue
				}
				r.famEsc = appendEscaped(r.famEsc[:0], p.family)
			}
			if target := r.rangeSkip(rp, fam.name, p.qualifier); target != nil {
				// Outside the one column range: seek to its start, or past the
				// family.
				ok = skipTo(it, target)
				col = nil
				continue
			}
			col = append(col[:0], s[:p.colLen]...)
			versions, returned = 0, 0
		}
		versions++
		if versions > fam.versions || p.ts < fam.oldest(r.nowMs) {
			// Hidden, and so is every older version of the column.
			ok = skipTo(it, incPrefix(append(append(r.seekKey[:0], rp...), col...)))
			continue
		}
		if p.ts >= r.o.MaxTimestamp {
			ok = it.Next()
			continue
		}
		if p.ts < r.o.MinTimestamp {
			// Older versions are older still.
			ok = skipTo(it, incPrefix(append(append(r.seekKey[:0], rp...), col...)))
			continue
		}
		var value []byte
		if len(r.valueFilters) > 0 {
			if value, err = it.ValueAndErr(); err != nil {
				return row, false, err
			}
			for i, f := range r.valueFilters {
				if !r.filterPresent[i] && f.Family == fam.name && bytes.Equal(f.Qualifier, p.qualifier) {
					r.filterValues[i], r.filterPresent[i] = bytes.Clone(value), true
				}
			}
		}
		if returned < r.o.MaxVersions && r.inRanges(p.qualifier) {
			returned++
			c := kv.Cell{Family: fam.name, Timestamp: p.ts}
			c.Qualifier, r.arena = copyTo(r.arena, p.qualifier)
			switch {
			case r.keyOnly:
				value = nil
			case value == nil:
				if value, err = it.ValueAndErr(); err != nil {
					return row, false, err
				}
			}
			c.Value, r.arena = copyTo(r.arena, value)
			row.Cells = append(row.Cells, c)
			if maxCells > 0 && len(row.Cells) >= maxCells {
				break
			}
		}
		ok = it.Next()
	}
	if err := it.Error(); err != nil {
		return row, false, err
	}
	r.lastCells = len(row.Cells)
	for i, f := range r.valueFilters {
		if !f.Matches(r.filterValues[i], r.filterPresent[i]) {
			return row, false, nil
		}
	}
	return row, len(row.Cells) > 0, nil
}

// parseColumnSuffix is parseCellSuffix for a suffix whose first famLen bytes
// are an escaped family already known (readRow's current one): it parses the
// qualifier and timestamp and leaves parsedCell.family nil. It accepts what
// parseCellSuffix accepts: the rest is exactly esc(qualifier)|^ts.
func parseColumnSuffix(b []byte, famLen int, scratch []byte) (parsedCell, error) {
	var p parsedCell
	colLen := len(b) - tsLen
	if colLen < famLen+2 {
		return p, errCorruptKey
	}
	qual, ok := unescapeWhole(b[famLen:colLen], scratch[:0])
	if !ok {
		return p, errCorruptKey
	}
	p.qualifier = qual
	p.ts = int64(^binary.BigEndian.Uint64(b[colLen:]))
	p.colLen = colLen
	return p, nil
}

// unescapeWhole decodes b, which must be exactly one escaped component
// (content, then the terminator 0x00 0x01), as readEscaped does: a sub-slice
// of b when the content has no 0x00, else written to scratch (or a new slice
// when scratch is too small). Raw sample
// qualifiers (4-byte big-endian offsets, schema/raw.go) nearly always hold a
// 0x00, so this loop, not readEscaped's search for each escape, is what a
// read of raw cells runs per cell.
func unescapeWhole(b, scratch []byte) ([]byte, bool) {
	n := len(b) - 2
	if n < 0 || b[n] != escByte || b[n+1] != escEnd {
		return nil, false
	}
	body := b[:n]
	i := bytes.IndexByte(body, escByte)
	if i < 0 {
		return body, true
	}
	out := scratch[:0]
	if cap(out) < n {
		out = make([]byte, 0, n)
	}
	out = out[:n] // the content is at most as long as its escaped form
	j := copy(out, body[:i])
	for ; i < n; i++ {
		c := body[i]
		if c == escByte {
			if i+1 >= n || body[i+1] != escZero {
				return nil, false
			}
			i++
		}
		out[j] = c
		j++
	}
	return out[:j], true
}

// incPrefix turns prefix p, in place, into the smallest key after every key
// with that prefix (kv.PrefixEnd without a copy). The prefixes readRow passes
// end with an escape terminator (0x00 0x01), so there is always a byte to
// increment.
func incPrefix(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xFF {
			p[i]++
			return p[:i+1]
		}
	}
	panic("embedded: incPrefix of an all-0xFF prefix")
}

// copyTo copies b to the end of arena and returns the copy, capped so that appending
// to it cannot overwrite the next copy, and the grown arena. Copying a row's
// qualifiers and values into a few shared allocations instead of two per cell
// keeps scans cheap; the arena only grows, so earlier copies stay valid. An empty b
// yields an empty, non-nil copy.
func copyTo(arena, b []byte) (cp, grown []byte) {
	if arena == nil || cap(arena)-len(arena) < len(b) {
		arena = make([]byte, 0, max(4096, 2*len(b)))
	}
	start := len(arena)
	arena = append(arena, b...)
	return arena[start:len(arena):len(arena)], arena
}

// Get reads one row; a missing row is a Row with its Key and no cells. Scan limits
// (RowLimit, CellLimit) do not apply.
func (s *Store) Get(ctx context.Context, tableName string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	rows, err := s.getRows(ctx, "get", tableName, [][]byte{row}, opts)
	if err != nil {
		return kv.Row{}, err
	}
	return rows[0], nil
}

// GetRows reads several rows through one Pebble iterator: one Row per requested key,
// in request order, each with its Key set.
func (s *Store) GetRows(ctx context.Context, tableName string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	return s.getRows(ctx, "get rows", tableName, rows, opts)
}

func (s *Store) getRows(ctx context.Context, op, tableName string, keys [][]byte, opts []kv.ReadOption) ([]kv.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
	}
	for _, k := range keys {
		if len(k) == 0 || len(k) > kv.MaxRowKeyLen {
			return nil, fmt.Errorf("embedded: %s %s: %w: row key of %d bytes (must be 1 to %d)",
				op, tableName, kv.ErrInvalidArgument, len(k), kv.MaxRowKeyLen)
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.tableLocked(tableName)
	if err != nil {
		return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
	}
	r, err := newRowReader(t, s.now().UnixMilli(), opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
	}
	r.rowsBySeek = true // every row below is sought
	it, pit, err := s.newCellIter(ctx, t.prefix, t.end())
	if err != nil {
		return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
	}
	defer func() {
		addReadWork(ctx, pit)
		it.Close()
	}()
	out := make([]kv.Row, len(keys))
	// Rows are read in key order, whatever the request's: each seek then moves
	// forward from the last, which Pebble does with Next calls where it can
	// (its try-seek-using-next), rather than a fresh descent of every level.
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	if !slices.IsSortedFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) }) {
		slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	}
	var rp []byte
	for n, i := range order {
		k := keys[i]
		if n%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
			}
		}
		out[i].Key = bytes.Clone(k)
		rp = appendEscaped(append(rp[:0], t.prefix...), k)
		if !it.SeekGE(rp) || !bytes.HasPrefix(it.Key(), rp) {
			if err := it.Error(); err != nil {
				return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
			}
			continue
		}
		row, ok, err := r.readRow(it, rp, 0)
		if err != nil {
			return nil, fmt.Errorf("embedded: %s %s: %w", op, tableName, err)
		}
		if ok {
			out[i].Cells = row.Cells
		}
	}
	return out, nil
}

// Scan streams rows with start <= key < stop, one row in memory at a time. An empty
// start or stop is open, as on HBase.
func (s *Store) Scan(ctx context.Context, tableName string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	sc := &scanner{table: tableName, ctx: ctx}
	if err := ctx.Err(); err != nil {
		sc.err = fmt.Errorf("embedded: scan %s: %w", tableName, err)
		return sc
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.tableLocked(tableName)
	if err != nil {
		sc.err = fmt.Errorf("embedded: scan %s: %w", tableName, err)
		return sc
	}
	if sc.reader, err = newRowReader(t, s.now().UnixMilli(), opts); err != nil {
		sc.err = fmt.Errorf("embedded: scan %s: %w", tableName, err)
		return sc
	}
	lower, upper := t.prefix, t.end()
	if len(start) > 0 {
		lower = rowPrefix(t.prefix, start)
	}
	if len(stop) > 0 {
		upper = rowPrefix(t.prefix, stop)
	}
	if bytes.Compare(lower, upper) >= 0 {
		sc.done = true
		return sc
	}
	if sc.it, sc.pit, err = s.newCellIter(ctx, lower, upper); err != nil {
		sc.err = fmt.Errorf("embedded: scan %s: %w", tableName, err)
		return sc
	}
	sc.it.First()
	sc.store = s
	s.scMu.Lock()
	s.scanners[sc] = struct{}{}
	s.scMu.Unlock()
	return sc
}

// scanner is the kv.Scanner of Scan. Its mutex lets Store.Close end it from
// another goroutine.
type scanner struct {
	table  string
	ctx    context.Context
	store  *Store // set while registered in store.scanners
	reader *rowReader

	mu    sync.Mutex
	it    cellIter         // nil once released
	pit   *pebble.Iterator // Pebble's part of it, for addReadWork
	row   kv.Row
	rows  int // rows returned
	cells int // cells returned
	done  bool
	err   error
}

func (sc *scanner) Next() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.done || sc.err != nil || sc.it == nil {
		sc.row = kv.Row{}
		return false
	}
	o := sc.reader.o
	for {
		if err := sc.ctx.Err(); err != nil {
			sc.finish(fmt.Errorf("embedded: scan %s: %w", sc.table, err))
			return false
		}
		if !sc.it.Valid() {
			if err := sc.it.Error(); err != nil {
				sc.finish(fmt.Errorf("embedded: scan %s: %w", sc.table, err))
			} else {
				sc.finish(nil)
			}
			return false
		}
		rowLen, err := rowPrefixLen(sc.it.Key())
		if err != nil {
			sc.finish(fmt.Errorf("embedded: scan %s: %w %x", sc.table, err, sc.it.Key()))
			return false
		}
		maxCells := 0
		if o.CellLimit > 0 {
			maxCells = o.CellLimit - sc.cells
		}
		rp := bytes.Clone(sc.it.Key()[:rowLen])
		row, ok, err := sc.reader.readRow(sc.it, rp, maxCells)
		if err != nil {
			sc.finish(fmt.Errorf("embedded: scan %s: %w", sc.table, err))
			return false
		}
		if !ok {
			continue
		}
		// The row key: a sub-slice of rp (which nothing else keeps) when it
		// has no 0x00, else a copy; never nil.
		rowKey, _, err := readEscaped(rp[tablePfx:], nil)
		if err != nil {
			sc.finish(fmt.Errorf("embedded: scan %s: %w %x", sc.table, err, rp))
			return false
		}
		row.Key = rowKey[:len(rowKey):len(rowKey)]
		sc.rows++
		if o.CellLimit > 0 && sc.cells+len(row.Cells) >= o.CellLimit {
			row.Cells = row.Cells[:o.CellLimit-sc.cells]
			sc.done = true
		}
		sc.cells += len(row.Cells)
		if o.RowLimit > 0 && sc.rows >= o.RowLimit {
			sc.done = true
		}
		sc.row = row
		if sc.done {
			sc.finish(nil)
		}
		return true
	}
}

// finish ends the scan, recording err (already wrapped) if it is the first, and
// releasing the iterator. sc.mu must be held.
func (sc *scanner) finish(err error) {
	sc.done = true
	if sc.err == nil {
		sc.err = err
	}
	if sc.it != nil {
		addReadWork(sc.ctx, sc.pit)
		if cerr := sc.it.Close(); cerr != nil && sc.err == nil {
			sc.err = fmt.Errorf("embedded: scan %s: %w", sc.table, cerr)
		}
		sc.it, sc.pit = nil, nil
	}
	if sc.store != nil {
		sc.store.scMu.Lock()
		delete(sc.store.scanners, sc) // a no-op once Close took the registry (nil map)
		sc.store.scMu.Unlock()
		sc.store = nil
	}
}

// abort is Store.Close ending a scan that is still open.
func (sc *scanner) abort(err error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.it != nil {
		sc.finish(err)
	}
}

func (sc *scanner) Row() kv.Row {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.row
}

func (sc *scanner) Err() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.err
}

func (sc *scanner) Close() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.finish(nil)
	return nil
}
