package index

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/index/lru"
	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of PostingsOptions.
const (
	DefaultSeenPostingsSize  = 1 << 20
	DefaultMaxBatch          = 10_000
	DefaultGenerationRefresh = 10 * time.Second
)

// PostingsOptions tune Postings. Zero values take the defaults in brackets.
type PostingsOptions struct {
	// SeenSize bounds the set of (day, series) pairs whose postings this process
	// wrote, in pairs [1<<20]; negative disables it (every Write writes again).
	SeenSize int
	// MaxBatch is the most mutations one Apply carries [10,000].
	MaxBatch int
	// GenerationRefresh is the longest a Write relies on the index generation
	// it last read (see the type doc) [10s]. Every process of a store must
	// use the same value: a delete that removes postings waits twice this
	// long for all of them to have read the new generation. tsdb has no flag
	// for it; tests shorten it.
	GenerationRefresh time.Duration
}

// Validate refuses a negative MaxBatch (zero takes the default; a negative
// SeenSize is valid and disables the set). NewPostings cannot return an error, so
// db.Open calls it; NewPostings treats what Validate refuses as zero.
func (o PostingsOptions) Validate() error {
	return optcheck.NotNegative("index: PostingsOptions.MaxBatch", o.MaxBatch, optcheck.Default(DefaultMaxBatch))
}

func (o PostingsOptions) withDefaults() PostingsOptions {
	if o.SeenSize == 0 {
		o.SeenSize = DefaultSeenPostingsSize
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.GenerationRefresh <= 0 {
		o.GenerationRefresh = DefaultGenerationRefresh
	}
	return o
}

// Postings writes and reads the per-day tag index (layout in schema/index.go): for
// every day a series has samples, one posting — a qualifier holding its series ID —
// in the row of each of its label pairs, __name__ included.
//
// Invariants: a posting is written with the cell timestamp
// schema.PostingTimestamp(day, generation), no earlier than DayStart(day), so the
// index family's TTL (raw retention + 1 day) removes it only after every sample of
// its day expired; and it is written before (or together with) the samples that
// need it, and remembered as written only after the store acknowledged it, so a
// failed write is retried by the next request that carries the series.
//
// The index generation (schema/indexgen.go) is what lets a delete remove
// postings (Remove) although every process remembers which it wrote: a Write
// uses a generation read at most GenerationRefresh ago, and forgets every
// posting it remembered when the generation changed. A delete raises the
// generation (RaiseGeneration), waits until every process has read it (twice
// GenerationRefresh), then removes the postings written under the older
// generations: a process writing the series-day again writes its postings anew,
// under the new generation, above the delete markers.
type Postings struct {
	st   kv.Store
	opts PostingsOptions
	// seen is replaced, never cleared, when the generation changes: a Write
	// remembers what it wrote in the set it started with, so that postings
	// written under an old generation are not remembered under the new one.
	seen atomic.Pointer[lru.Cache[DaySeries, struct{}]]

	genMu      sync.Mutex
	gen        int64
	genRead    time.Time // when the read of gen started; zero: never read
	genRefresh time.Duration
}

// DaySeries is one series on one index day.
type DaySeries struct {
	Day      uint32
	SeriesID uint64
}

// Entry asks for the postings of one series on one day.
type Entry struct {
	Day      uint32
	SeriesID uint64
	// Labels of the series; labels with an empty value are not indexed.
	Labels labels.Labels
}

// NewPostings returns the tag index on the index table of st.
func NewPostings(st kv.Store, opts PostingsOptions) *Postings {
	opts = opts.withDefaults()
	p := &Postings{st: st, opts: opts, genRefresh: opts.GenerationRefresh}
	p.seen.Store(lru.New[DaySeries, struct{}](opts.SeenSize))
	return p
}

// GenerationRefresh is how long a Write relies on the index generation it read
// (PostingsOptions.GenerationRefresh).
func (p *Postings) GenerationRefresh() time.Duration { return p.genRefresh }

// Generation returns the index generation postings are written under now,
// reading it from the store when it was read more than GenerationRefresh ago;
// when it changed, the postings this process remembers as written are
// forgotten.
func (p *Postings) Generation(ctx context.Context) (int64, error) {
	g, _, err := p.current(ctx)
	return g, err
}

// current returns the generation postings are written under now (see
// Generation) and the set of postings remembered as written under it.
func (p *Postings) current(ctx context.Context) (int64, *lru.Cache[DaySeries, struct{}], error) {
	p.genMu.Lock()
	defer p.genMu.Unlock()
	if !p.genRead.IsZero() && time.Since(p.genRead) < p.genRefresh {
		return p.gen, p.seen.Load(), nil
	}
	started := time.Now()
	row, err := p.st.Get(ctx, schema.TableMeta, []byte(schema.IndexGenerationRow), kv.Families(schema.FamilyMeta))
	if err != nil {
		return 0, nil, fmt.Errorf("index: read the index generation: %w", err)
	}
	var v []byte
	for _, c := range row.Cells {
		if c.Family == schema.FamilyMeta && string(c.Qualifier) == schema.QualifierGeneration {
			v = c.Value
			break
		}
	}
	g, err := schema.DecodeIndexGeneration(v)
	if err != nil {
		return 0, nil, fmt.Errorf("index: read the index generation: %w", err)
	}
	p.adoptLocked(g, started)
	return g, p.seen.Load(), nil
}

// adoptLocked makes g the generation read at started (p.genMu held),
// forgetting the remembered postings when it is not the generation they were
// written under.
func (p *Postings) adoptLocked(g int64, started time.Time) {
	if g != p.gen {
		p.seen.Store(lru.New[DaySeries, struct{}](p.opts.SeenSize))
	}
	p.gen, p.genRead = g, started
}

// RaiseGeneration raises the store's index generation by one and returns the
// generation before: the one whose postings (and older) a delete may remove
// once every process has read the new one, twice GenerationRefresh from now.
// This process writes under the new one at once.
func (p *Postings) RaiseGeneration(ctx context.Context) (int64, error) {
	started := time.Now()
	g, err := p.st.Increment(ctx, schema.TableMeta, []byte(schema.IndexGenerationRow), schema.FamilyMeta,
		[]byte(schema.QualifierGeneration), 1)
	if err != nil {
		return 0, fmt.Errorf("index: raise the index generation: %w", err)
	}
	if g < 1 || g > schema.MaxIndexGeneration {
		return 0, fmt.Errorf("index: the index generation is %d, outside [1, %d]: %w", g, schema.MaxIndexGeneration, schema.ErrMalformed)
	}
	p.genMu.Lock()
	if g > p.gen {
		p.adoptLocked(g, started)
	}
	p.genMu.Unlock()
	return g - 1, nil
}

// Remove deletes the postings of series id with labels lbls on day written
// under generations up to gen (column deletes up to
// schema.PostingTimestamp(day, gen)), one row per label pair. Postings written
// under a later generation stay. It is idempotent.
func (p *Postings) Remove(ctx context.Context, day uint32, id uint64, lbls labels.Labels, gen int64) error {
	var muts []kv.Mutation
	qual := schema.AppendSeriesID(nil, id)
	upTo := schema.PostingTimestamp(day, gen)
	lbls.Range(func(l labels.Label) {
		if l.Name == "" || l.Value == "" {
			return
		}
		row := schema.IndexRowKey(nil, schema.IndexKey{Day: day, Name: l.Name, Value: l.Value})
		muts = append(muts, kv.DeleteColumn(row, schema.FamilyPostings, qual, upTo))
	})
	if err := p.st.Apply(ctx, schema.TableIndex, muts); err != nil {
		return fmt.Errorf("index: remove the %d postings of series %d (%s) on day %d: %w", len(muts), id, lbls, day, err)
	}
	p.seen.Load().Remove(DaySeries{day, id})
	return nil
}

// Write stores the postings of the entries whose (day, series) this process has
// not written yet, and returns how many entries it wrote. It returns only after the
// store acknowledged them; on error none of them counts as written.
func (p *Postings) Write(ctx context.Context, entries []Entry) (int, error) {
	gen, seen, err := p.current(ctx)
	if err != nil {
		return 0, err
	}
	var (
		muts    []kv.Mutation
		written []DaySeries
		inBatch map[DaySeries]struct{}
		buf     []byte
	)
	for _, e := range entries {
		k := DaySeries{e.Day, e.SeriesID}
		if seen.Contains(k) {
			continue
		}
		if inBatch == nil {
			inBatch = make(map[DaySeries]struct{})
		}
		if _, dup := inBatch[k]; dup {
			continue
		}
		inBatch[k] = struct{}{}
		written = append(written, k)
		ts := schema.PostingTimestamp(e.Day, gen)
		e.Labels.Range(func(l labels.Label) {
			if l.Name == "" || l.Value == "" {
				return
			}
			start := len(buf)
			buf = schema.IndexRowKey(buf, schema.IndexKey{Day: e.Day, Name: l.Name, Value: l.Value})
			buf = schema.AppendSeriesID(buf, e.SeriesID)
			row := buf[start : len(buf)-schema.SeriesIDLen : len(buf)-schema.SeriesIDLen]
			muts = append(muts, kv.Put(row, schema.FamilyPostings, buf[len(buf)-schema.SeriesIDLen:], ts, nil))
		})
	}
	for start := 0; start < len(muts); start += p.opts.MaxBatch {
		chunk := muts[start:min(start+p.opts.MaxBatch, len(muts))]
		if err := p.st.Apply(ctx, schema.TableIndex, chunk); err != nil {
			return 0, fmt.Errorf("index: write %d postings of %d series: %w", len(muts), len(written), err)
		}
	}
	for _, k := range written {
		seen.Add(k, struct{}{})
	}
	return len(written), nil
}

// Equal returns the IDs of the series that had the label pair name=value on day,
// ascending.
func (p *Postings) Equal(ctx context.Context, day uint32, name, value string) ([]uint64, error) {
	if name == "" || value == "" {
		return nil, nil // never indexed
	}
	key := schema.IndexRowKey(nil, schema.IndexKey{Day: day, Name: name, Value: value})
	row, err := p.st.Get(ctx, schema.TableIndex, key, kv.Families(schema.FamilyPostings), kv.WithFilter(kv.KeyOnlyFilter{}))
	if err != nil {
		return nil, fmt.Errorf("index: postings of %s=%q on day %d: %w", name, value, day, err)
	}
	return appendIDs(nil, row)
}

// LabelValues returns the values label name had on day, sorted. It reads every
// row of the label, postings included (as keys only): a label with many series per
// value costs more than its number of values.
func (p *Postings) LabelValues(ctx context.Context, day uint32, name string) ([]string, error) {
	var values []string
	err := p.scanLabel(ctx, day, name, func(value string, _ kv.Row) error {
		values = append(values, value)
		return nil
	})
	return values, err
}

// LabelSeries returns the IDs of the series that had label name (with any value)
// on day, ascending and without duplicates. With name __name__ it is every series
// of the day.
func (p *Postings) LabelSeries(ctx context.Context, day uint32, name string) ([]uint64, error) {
	var ids []uint64
	err := p.scanLabel(ctx, day, name, func(_ string, row kv.Row) error {
		var err error
		ids, err = appendIDs(ids, row)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// scanLabel calls fn for every index row of label name on day, in value order.
func (p *Postings) scanLabel(ctx context.Context, day uint32, name string, fn func(value string, row kv.Row) error) error {
	if name == "" {
		return nil
	}
	prefix := schema.IndexLabelPrefix(nil, day, name)
	sc := p.st.Scan(ctx, schema.TableIndex, prefix, kv.PrefixEnd(prefix),
		kv.Families(schema.FamilyPostings), kv.WithFilter(kv.KeyOnlyFilter{}))
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		k, err := schema.ParseIndexRowKey(row.Key)
		if err != nil {
			return fmt.Errorf("index: scan label %s on day %d: %w", name, day, err)
		}
		if err := fn(k.Value, row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("index: scan label %s on day %d: %w", name, day, err)
	}
	return nil
}

// LabelNames returns the names of the labels any series had on day, sorted. It
// reads one row per name (a skip scan), whatever the number of values.
func (p *Postings) LabelNames(ctx context.Context, day uint32) ([]string, error) {
	var names []string
	start := schema.IndexDayPrefix(nil, day)
	stop := kv.PrefixEnd(start)
	for {
		// One cell: only the row key is wanted, and a row may hold a posting
		// per series.
		sc := p.st.Scan(ctx, schema.TableIndex, start, stop, kv.RowLimit(1), kv.CellLimit(1),
			kv.Families(schema.FamilyPostings), kv.WithFilter(kv.KeyOnlyFilter{}))
		if !sc.Next() {
			err := sc.Err()
			sc.Close()
			if err != nil {
				return nil, fmt.Errorf("index: label names of day %d: %w", day, err)
			}
			return names, nil
		}
		row := sc.Row()
		sc.Close()
		k, err := schema.ParseIndexRowKey(row.Key)
		if err != nil {
			return nil, fmt.Errorf("index: label names of day %d: %w", day, err)
		}
		names = append(names, k.Name)
		// The next name's rows start after every row of this one: the label prefix
		// ends with the name's 0x00 terminator, so its PrefixEnd is the same prefix
		// ending in 0x01, and an escaped name never contains 0x00 (schema/escape.go).
		next := kv.PrefixEnd(schema.IndexLabelPrefix(nil, day, k.Name))
		if next == nil || (stop != nil && bytes.Compare(next, stop) >= 0) {
			return names, nil
		}
		start = next
	}
}

// appendIDs appends the series IDs of an index row's postings to ids.
func appendIDs(ids []uint64, row kv.Row) ([]uint64, error) {
	for _, c := range row.Cells {
		if c.Family != schema.FamilyPostings {
			continue
		}
		id, err := schema.DecodeSeriesID(c.Qualifier)
		if err != nil {
			return nil, fmt.Errorf("index: posting in row %q: %w", row.Key, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Has reports whether series id with labels lbls has its posting on day: in
// the row of its first indexed label pair (a posting is written to every row
// of the series at once, and removed from every row at once).
func (p *Postings) Has(ctx context.Context, day uint32, id uint64, lbls labels.Labels) (bool, error) {
	var first labels.Label
	lbls.Range(func(l labels.Label) {
		if first.Name == "" && l.Name != "" && l.Value != "" {
			first = l
		}
	})
	if first.Name == "" {
		return false, nil
	}
	qual := schema.AppendSeriesID(nil, id)
	row, err := p.st.Get(ctx, schema.TableIndex, schema.IndexRowKey(nil, schema.IndexKey{Day: day, Name: first.Name, Value: first.Value}),
		kv.Families(schema.FamilyPostings),
		kv.WithFilter(kv.ColumnRangeFilter{Min: qual, MinInclusive: true, Max: qual, MaxInclusive: true}))
	if err != nil {
		return false, fmt.Errorf("index: posting of series %d on day %d: %w", id, day, err)
	}
	return len(row.Cells) > 0, nil
}
