package index

import (
	"context"
	"fmt"
	"slices"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// AnyOf returns the IDs of the series that had label name with any of
// values on day, ascending and without duplicates. It reads the values' rows in
// one batched get (kv.Store.GetRows), not one round trip per value. Empty
// values are never indexed and select nothing.
func (p *Postings) AnyOf(ctx context.Context, day uint32, name string, values []string) ([]uint64, error) {
	if name == "" {
		return nil, nil
	}
	values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
	switch len(values) {
	case 0:
		return nil, nil
	case 1:
		return p.Equal(ctx, day, name, values[0])
	}
	keys := make([][]byte, len(values))
	for i, v := range values {
		keys[i] = schema.IndexRowKey(nil, schema.IndexKey{Day: day, Name: name, Value: v})
	}
	rows, err := p.st.GetRows(ctx, schema.TableIndex, keys, kv.Families(schema.FamilyPostings), kv.WithFilter(kv.KeyOnlyFilter{}))
	if err != nil {
		return nil, fmt.Errorf("index: postings of %d values of %s on day %d: %w", len(keys), name, day, err)
	}
	var ids []uint64
	for _, row := range rows {
		if ids, err = appendIDs(ids, row); err != nil {
			return nil, err
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Matching returns the IDs of the series that had label name on day with
// a value that begins with prefix and for which match returns true, ascending
// and without duplicates. It scans the label's value range from prefix (one scan,
// keys only); the empty prefix scans every value of the label.
func (p *Postings) Matching(ctx context.Context, day uint32, name, prefix string, match func(value string) bool) ([]uint64, error) {
	if name == "" {
		return nil, nil
	}
	start := schema.IndexValuePrefix(nil, day, name, prefix)
	sc := p.st.Scan(ctx, schema.TableIndex, start, kv.PrefixEnd(start),
		kv.Families(schema.FamilyPostings), kv.WithFilter(kv.KeyOnlyFilter{}))
	defer sc.Close()
	var ids []uint64
	for sc.Next() {
		row := sc.Row()
		k, err := schema.ParseIndexRowKey(row.Key)
		if err != nil {
			return nil, fmt.Errorf("index: scan values of %s on day %d: %w", name, day, err)
		}
		if !match(k.Value) {
			continue
		}
		if ids, err = appendIDs(ids, row); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("index: scan values of %s on day %d: %w", name, day, err)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// NextDay returns the first day in [day, last] that has index rows, and false
// when there is none. Empty stretches of days cost one short scan in total, so a
// caller walking a long range with NextDay reads only the days that exist.
func (p *Postings) NextDay(ctx context.Context, day, last uint32) (uint32, bool, error) {
	start := schema.IndexDayPrefix(nil, day)
	stop := kv.PrefixEnd(schema.IndexDayPrefix(nil, last))
	// One cell: only the first row's key is wanted, and that row (the day's
	// first label value) may hold a posting per series of the day.
	sc := p.st.Scan(ctx, schema.TableIndex, start, stop, kv.RowLimit(1), kv.CellLimit(1), kv.WithFilter(kv.KeyOnlyFilter{}))
	defer sc.Close()
	if !sc.Next() {
		if err := sc.Err(); err != nil {
			return 0, false, fmt.Errorf("index: find the next index day from %d: %w", day, err)
		}
		return 0, false, nil
	}
	k, err := schema.ParseIndexRowKey(sc.Row().Key)
	if err != nil {
		return 0, false, fmt.Errorf("index: %w", err)
	}
	return k.Day, true, nil
}
