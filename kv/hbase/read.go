package hbase

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/tsuna/gohbase/filter"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"

	"github.com/hbtsdb/hbtsdb/kv"
)

// queryOptions converts read options to gohbase's Get and Scan options: families,
// time range, versions and the server-side filters.
func queryOptions(o kv.ReadOptions) ([]func(hrpc.Call) error, error) {
	var opts []func(hrpc.Call) error
	if len(o.Families) > 0 {
		fams := make(map[string][]string, len(o.Families))
		for _, f := range o.Families {
			fams[f] = nil // nil: every qualifier of the family
		}
		opts = append(opts, hrpc.Families(fams))
	}
	if o.MinTimestamp != 0 || o.MaxTimestamp != kv.MaxTimestamp+1 {
		opts = append(opts, hrpc.TimeRangeUint64(uint64(o.MinTimestamp), uint64(o.MaxTimestamp)))
	}
	if o.MaxVersions != 1 {
		opts = append(opts, hrpc.MaxVersions(uint32(min(o.MaxVersions, math.MaxInt32))))
	}
	if len(o.Filters) > 0 {
		f, err := toFilter(o.Filters)
		if err != nil {
			return nil, err
		}
		opts = append(opts, hrpc.Filters(f))
	}
	return opts, nil
}

// toFilter converts kv filters to one gohbase filter: a FilterList that must
// pass all of them when there are several. Value filters come first and KeyOnly
// last, so that no filter looks at a value KeyOnly emptied.
func toFilter(fs []kv.Filter) (filter.Filter, error) {
	var first, last []filter.Filter
	for _, f := range fs {
		switch f := f.(type) {
		case kv.ColumnValueFilter:
			first = append(first, columnValueFilter(f))
		case *kv.ColumnValueFilter:
			first = append(first, columnValueFilter(*f))
		case kv.ColumnRangeFilter:
			first = append(first, filter.NewColumnRangeFilter(f.Min, f.Max, f.MinInclusive, f.MaxInclusive))
		case *kv.ColumnRangeFilter:
			first = append(first, filter.NewColumnRangeFilter(f.Min, f.Max, f.MinInclusive, f.MaxInclusive))
		case kv.KeyOnlyFilter, *kv.KeyOnlyFilter:
			last = append(last, filter.NewKeyOnlyFilter(false))
		default:
			return nil, fmt.Errorf("%w: filter %T is not supported", kv.ErrInvalidArgument, f)
		}
	}
	all := append(first, last...)
	if len(all) == 1 {
		return all[0], nil
	}
	return filter.NewList(filter.MustPassAll, all...), nil
}

// columnValueFilter is HBase's SingleColumnValueFilter looking at the newest
// version of the column only, as kv.ColumnValueFilter.Matches defines.
func columnValueFilter(f kv.ColumnValueFilter) filter.Filter {
	op := filter.Equal
	if f.Op == kv.NotEqual {
		op = filter.NotEqual
	}
	cmp := filter.NewBinaryComparator(filter.NewByteArrayComparable(nonNil(f.Value)))
	return filter.NewSingleColumnValueFilter([]byte(f.Family), nonNil(f.Qualifier), op, cmp, f.FilterIfMissing, true)
}

// toRow copies HBase's cells into a Row the caller owns, in one allocation for all
// the bytes, so that holding a Row does not pin the (up to MaxResultSize) response
// buffer the cells were decoded from. HBase returns cells in the order kv.Row
// promises: family, qualifier, then timestamp newest first.
func toRow(key []byte, cells []*hrpc.Cell) kv.Row {
	size := len(key)
	for _, c := range cells {
		size += len(c.Qualifier) + len(c.Value)
	}
	buf := make([]byte, 0, size)
	take := func(b []byte) []byte {
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	row := kv.Row{Key: take(key)}
	if len(cells) > 0 {
		row.Cells = make([]kv.Cell, len(cells))
		var family string // shared by the cells of one family
		for i, c := range cells {
			if string(c.Family) != family {
				family = string(c.Family)
			}
			row.Cells[i] = kv.Cell{
				Family:    family,
				Qualifier: take(c.Qualifier),
				Timestamp: int64((*pb.Cell)(c).GetTimestamp()),
				Value:     take(c.Value),
			}
		}
	}
	return row
}

// checkRowKey validates the key of a Get.
func checkRowKey(row []byte) error {
	switch {
	case len(row) == 0:
		return fmt.Errorf("%w: empty row key", kv.ErrInvalidArgument)
	case len(row) > kv.MaxRowKeyLen:
		return fmt.Errorf("%w: row key of %d bytes exceeds %d", kv.ErrInvalidArgument, len(row), kv.MaxRowKeyLen)
	}
	return nil
}

// Get reads one row with an HBase Get.
func (s *Store) Get(ctx context.Context, table string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	ctx, done, err := s.beginCall(ctx)
	if err != nil {
		return kv.Row{}, err
	}
	defer done()
	htable, _, qopts, err := s.prepareRead(table, opts)
	if err == nil {
		err = checkRowKey(row)
	}
	if err != nil {
		return kv.Row{}, fmt.Errorf("hbase: get from %s: %w", table, err)
	}
	get, err := hrpc.NewGet(ctx, htable, row, qopts...)
	if err != nil {
		return kv.Row{}, fmt.Errorf("hbase: get from %s: %w: %v", htable, kv.ErrInvalidArgument, err)
	}
	res, err := s.client.Get(get)
	if err != nil {
		return kv.Row{}, fmt.Errorf("hbase: get from %s: %w", htable, classify(ctx, err))
	}
	return toRow(row, res.Cells), nil
}

// prepareRead resolves a read's table and options.
func (s *Store) prepareRead(table string, opts []kv.ReadOption) ([]byte, kv.ReadOptions, []func(hrpc.Call) error, error) {
	htable, err := s.tableName(table)
	if err != nil {
		return nil, kv.ReadOptions{}, nil, err
	}
	o, err := kv.NewReadOptions(opts...)
	if err != nil {
		return nil, o, nil, err
	}
	qopts, err := queryOptions(o)
	if err != nil {
		return nil, o, nil, err
	}
	return htable, o, qopts, nil
}

// GetRows reads rows with batches of HBase Gets (gohbase SendBatch), at most
// Options.MaxBatchCalls at a time; the result is in request order.
func (s *Store) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	ctx, done, err := s.beginCall(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	htable, _, qopts, err := s.prepareRead(table, opts)
	if err == nil {
		for _, row := range rows {
			if err = checkRowKey(row); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("hbase: get rows from %s: %w", table, err)
	}
	out := make([]kv.Row, 0, len(rows))
	for start := 0; start < len(rows); start += s.opts.MaxBatchCalls {
		chunk := rows[start:min(start+s.opts.MaxBatchCalls, len(rows))]
		batch := make([]hrpc.Call, len(chunk))
		for i, row := range chunk {
			get, err := hrpc.NewGet(ctx, htable, row, qopts...)
			if err != nil {
				return nil, fmt.Errorf("hbase: get rows from %s: %w: %v", htable, kv.ErrInvalidArgument, err)
			}
			batch[i] = get
		}
		res, _ := s.client.SendBatch(ctx, batch)
		for i, r := range res {
			if r.Error != nil {
				return nil, fmt.Errorf("hbase: get rows from %s: row %d: %w", htable, start+i, classify(ctx, r.Error))
			}
			msg, ok := r.Msg.(*pb.GetResponse)
			if !ok {
				return nil, fmt.Errorf("hbase: get rows from %s: row %d: got a %T", htable, start+i, r.Msg)
			}
			out = append(out, toRow(chunk[i], hrpc.ToLocalResult(msg.GetResult()).Cells))
		}
	}
	return out, nil
}

// Scan streams the rows of [start, stop) through a gohbase scanner.
//
// Memory: gohbase fetches at most hrpc.DefaultMaxResultSize (2 MiB) of cells per
// round trip and, with partial results not allowed (the default), joins the pieces
// of a row larger than that before returning it, so a scan holds one response plus
// the current row. RowLimit and CellLimit are applied here; the smaller of them is
// also the number of rows asked for per round trip, so a limited scan does not
// fetch much more than it returns.
func (s *Store) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	sc := &scanner{s: s}
	// Only a check that the store is open: the scan does not hold the store's
	// in-flight count between calls of Next (each Next does), so a scanner the
	// caller forgets to close cannot block Store.Close.
	if err := s.enter(); err != nil {
		sc.fail(err)
		return sc
	}
	s.inflight.Done()
	// The scan's context lives until the scanner is closed, by the caller or by
	// the store's Close.
	sctx, cancel := context.WithCancelCause(ctx)
	stopOnClose := context.AfterFunc(s.closing, func() { cancel(kv.ErrClosed) })
	sc.ctx = sctx
	sc.release = func() {
		stopOnClose()
		cancel(nil)
	}

	htable, o, qopts, err := s.prepareRead(table, opts)
	if err != nil {
		sc.fail(fmt.Errorf("hbase: scan %s: %w", table, err))
		return sc
	}
	sc.table, sc.o = string(htable), o
	if n := limitHint(o); n > 0 {
		qopts = append(qopts, hrpc.NumberOfRows(n))
	}
	if o.CellLimit > 0 && !hasValueFilter(o.Filters) {
		// No row returned needs more than CellLimit cells of one family: the
		// first CellLimit cells of a row are among the first CellLimit of each
		// of its families. So the server need not send the rest of a large row
		// (an index row holds a posting per series) only for the cut below.
		// Not with a value filter: it may need to see a cell past the limit.
		qopts = append(qopts, hrpc.MaxResultsPerColumnFamily(uint32(min(o.CellLimit, math.MaxInt32))))
	}
	if stop != nil && start != nil && string(stop) <= string(start) {
		// An empty range. HBase would read start == stop as a Get of start.
		sc.done = true
		return sc
	}
	scan, err := hrpc.NewScanRange(sctx, htable, start, stop, qopts...)
	if err != nil {
		sc.fail(fmt.Errorf("hbase: scan %s: %w: %v", htable, kv.ErrInvalidArgument, err))
		return sc
	}
	sc.hs = s.client.Scan(scan)
	return sc
}

// hasValueFilter reports whether fs holds a kv.ColumnValueFilter.
func hasValueFilter(fs []kv.Filter) bool {
	for _, f := range fs {
		if _, ok := f.(kv.ColumnValueFilter); ok {
			return true
		}
	}
	return false
}

// limitHint is the number of rows to fetch per round trip for a limited scan: every
// row returned has at least one cell, so neither limit needs more rows than itself.
func limitHint(o kv.ReadOptions) uint32 {
	n := 0
	for _, l := range []int{o.RowLimit, o.CellLimit} {
		if l > 0 && (n == 0 || l < n) {
			n = l
		}
	}
	return uint32(min(n, math.MaxInt32))
}

// scanner is a kv.Scanner over a gohbase hrpc.Scanner.
type scanner struct {
	s       *Store
	table   string
	ctx     context.Context
	release func()
	hs      hrpc.Scanner
	o       kv.ReadOptions

	row         kv.Row
	rows, cells int
	done        bool
	err         error
	closed      bool
}

func (sc *scanner) fail(err error) {
	sc.err = err
	sc.done = true
	sc.Close()
}

// Next fetches the next whole row from gohbase.
func (sc *scanner) Next() bool {
	if sc.done || sc.err != nil {
		return false
	}
	if sc.o.RowLimit > 0 && sc.rows >= sc.o.RowLimit || sc.o.CellLimit > 0 && sc.cells >= sc.o.CellLimit {
		sc.done = true
		sc.Close()
		return false
	}
	if err := sc.s.enter(); err != nil {
		sc.fail(err)
		return false
	}
	res, err := sc.hs.Next()
	sc.s.inflight.Done()
	if errors.Is(err, io.EOF) {
		sc.done = true
		sc.Close()
		return false
	}
	if err != nil {
		sc.fail(fmt.Errorf("hbase: scan %s: %w", sc.table, classify(sc.ctx, err)))
		return false
	}
	if len(res.Cells) == 0 {
		// gohbase returns only rows with cells; guard against an empty one anyway.
		return sc.Next()
	}
	sc.row = toRow(res.Cells[0].Row, res.Cells)
	if sc.o.CellLimit > 0 && sc.cells+len(sc.row.Cells) > sc.o.CellLimit {
		sc.row.Cells = sc.row.Cells[:sc.o.CellLimit-sc.cells]
	}
	sc.rows++
	sc.cells += len(sc.row.Cells)
	return true
}

// Row is the current row.
func (sc *scanner) Row() kv.Row { return sc.row }

// Err is the error that ended the scan, if any.
func (sc *scanner) Err() error { return sc.err }

// Close stops the gohbase scanner (which closes the region scanner on the server)
// and releases the scan's context.
func (sc *scanner) Close() error {
	if sc.closed {
		return nil
	}
	sc.closed = true
	if sc.hs != nil {
		sc.hs.Close()
	}
	if sc.release != nil {
		sc.release()
	}
	return nil
}
