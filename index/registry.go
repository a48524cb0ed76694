package index

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/index/lru"
	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of RegistryOptions.
const (
	DefaultIDBlockSize         = 1000
	DefaultSeriesCacheSize     = 500_000
	DefaultLabelsCacheSize     = 100_000
	DefaultRegisterParallelism = 16
)

// RegistryOptions tune a Registry. Zero values take the defaults in brackets.
type RegistryOptions struct {
	// FormatVersion is the format version of the store (schema.Settings), which
	// decides how a new series gets its ID (see Registry): 1, counter IDs and a
	// check-and-put per series; 2, hash-derived IDs. It must be the version the
	// store was created with, never another: writers of one store must all use
	// the same scheme. 0 [default] reads it from the store's schema meta row
	// once, at the first registration; db.Open sets it from the settings it read.
	FormatVersion int
	// IDBlockSize is how many series IDs one Increment of the counter reserves
	// [1000]. IDs reserved and not used when the process ends are never handed out:
	// IDs are unique, not dense. On a format-2 store the counter serves only the
	// rare series whose hash-derived ID another series holds.
	IDBlockSize int
	// SeriesCacheSize bounds the labels -> series ID cache, in series [500,000];
	// negative disables it.
	SeriesCacheSize int
	// LabelsCacheSize bounds the series ID -> labels cache, in series [100,000];
	// negative disables it.
	LabelsCacheSize int
	// RegisterParallelism is how many check-and-puts of new series run at once
	// [16]: each is one round trip. Format 2 registers without them, except for
	// hash collisions.
	RegisterParallelism int
	// Now is the clock stamping registry cells [time.Now].
	Now func() time.Time
	// Logger [slog.Default()].
	Logger *slog.Logger

	// seriesHash replaces seriesHash, for tests that force hash collisions.
	seriesHash func(forwardRow []byte) uint64
}

// Validate refuses options that mean nothing: a negative IDBlockSize or
// RegisterParallelism (zero takes the default; negative cache sizes are valid and
// disable the cache), a FormatVersion outside 0 to schema.CurrentFormatVersion.
// NewRegistry cannot return an error, so db.Open calls it; NewRegistry treats
// what Validate refuses as zero.
func (o RegistryOptions) Validate() error {
	var errs []error
	if o.FormatVersion < 0 || o.FormatVersion > schema.CurrentFormatVersion {
		errs = append(errs, fmt.Errorf("index: RegistryOptions.FormatVersion must be 1 to %d (0 reads it from the store), got %d: %w",
			schema.CurrentFormatVersion, o.FormatVersion, schema.ErrUnsupportedFormat))
	}
	errs = append(errs,
		optcheck.NotNegative("index: RegistryOptions.IDBlockSize", o.IDBlockSize, optcheck.Default(DefaultIDBlockSize)),
		optcheck.NotNegative("index: RegistryOptions.RegisterParallelism", o.RegisterParallelism, optcheck.Default(DefaultRegisterParallelism)),
	)
	return errors.Join(errs...)
}

func (o RegistryOptions) withDefaults() RegistryOptions {
	if o.FormatVersion < 0 || o.FormatVersion > schema.CurrentFormatVersion {
		o.FormatVersion = 0
	}
	if o.seriesHash == nil {
		o.seriesHash = seriesHash
	}
	if o.IDBlockSize <= 0 {
		o.IDBlockSize = DefaultIDBlockSize
	}
	if o.SeriesCacheSize == 0 {
		o.SeriesCacheSize = DefaultSeriesCacheSize
	}
	if o.LabelsCacheSize == 0 {
		o.LabelsCacheSize = DefaultLabelsCacheSize
	}
	if o.RegisterParallelism <= 0 {
		o.RegisterParallelism = DefaultRegisterParallelism
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Registry maps label sets to series IDs and back, in the series table (layout in
// schema/series.go), with bounded LRU caches in front of it. It is safe for
// concurrent use, and several processes may share one registry table.
//
// How a new series gets its ID (Resolve) depends on the store's format version
// (RegistryOptions.FormatVersion). First, always, the forward rows (canonical
// labels) of every label set the cache lacks are read in one GetRows; a series
// whose forward row exists has that ID. The others are new:
//
// Format 2, hash-derived IDs (the argument is in the package doc):
//
//  1. Each new series' candidate ID is seriesHash(forward row key) | 1<<63:
//     every process computes the same candidate for the same label set.
//  2. The reverse rows of the candidates are read in one GetRows.
//  3. Absent: the series' reverse row ID -> labels is written (one Apply for the
//     batch), then its forward row labels -> ID (a second Apply). Holding the
//     same labels: an earlier attempt stopped between the two; only the forward
//     row is written. Holding other labels (a hash collision with an existing
//     series, or a candidate another series of the batch has): the series takes
//     the format-1 path below, after the batch's reverse rows are durable.
//
// Format 1, counter IDs (and format 2's collisions):
//
//  1. The process takes an ID from its reserved block (one Increment of the
//     counter row reserves IDBlockSize of them; counter IDs are below 1<<63).
//  2. It writes the reverse row ID -> labels.
//  3. It check-and-puts the forward row labels -> ID, expecting it absent. The
//     winner's ID is the series' ID forever; a loser (another process registered
//     the same series in between) reads the winner's ID from the forward row.
//
// Invariants: a forward row, once written, never changes its ID (format 1:
// check-and-put against absent; format 2: every writer of it writes the same
// ID), and nothing deletes forward or reverse rows, so every process agrees on
// one ID per label set. A reverse row is durable before its forward row, so an
// ID visible in a forward row (and hence in any posting or data row) always has
// its labels. A format-1 loser's reverse row names an ID nothing refers to; it
// is garbage that costs one small row.
type Registry struct {
	st     kv.Store
	opts   RegistryOptions
	series *lru.Cache[uint64, cachedSeries] // labels hash -> labels and ID
	labels *lru.Cache[uint64, labels.Labels]

	idMu         sync.Mutex
	nextID, last uint64 // IDs nextID..last are reserved and unused; none when nextID > last

	format atomic.Int32 // the store's format version; 0 until known

	stats registryCounters
}

// cachedSeries is a labels -> ID cache entry, keyed by the labels' hash; the labels
// are kept to tell hash collisions apart.
type cachedSeries struct {
	lbls labels.Labels
	id   uint64
}

type registryCounters struct {
	cacheHits, storeHits, registered, raced, idBlocks, collisions, resumed atomic.Int64
}

// RegistryStats count what a Registry did since it was made.
type RegistryStats struct {
	// CacheHits are label sets resolved from the cache, StoreHits those read from
	// the forward rows.
	CacheHits, StoreHits int64
	// Registered are series this registry wrote the forward row of; Raced those it
	// tried to register but another writer won (its ID was taken).
	Registered, Raced int64
	// IDBlocks is the number of Increments of the ID counter.
	IDBlocks int64
	// Collisions (format 2) are new series whose hash-derived ID another label
	// set held, registered with a counter ID instead; Resumed those whose reverse
	// row an earlier, interrupted registration (or a concurrent one) had written.
	Collisions, Resumed int64
}

// NewRegistry returns a registry on the series table of st. The schema must exist.
func NewRegistry(st kv.Store, opts RegistryOptions) *Registry {
	opts = opts.withDefaults()
	r := &Registry{
		st:     st,
		opts:   opts,
		series: lru.New[uint64, cachedSeries](opts.SeriesCacheSize),
		labels: lru.New[uint64, labels.Labels](opts.LabelsCacheSize),
		nextID: 1,
	}
	r.format.Store(int32(opts.FormatVersion))
	return r
}

// Stats returns the registry's counters.
func (r *Registry) Stats() RegistryStats {
	return RegistryStats{
		CacheHits:  r.stats.cacheHits.Load(),
		StoreHits:  r.stats.storeHits.Load(),
		Registered: r.stats.registered.Load(),
		Raced:      r.stats.raced.Load(),
		IDBlocks:   r.stats.idBlocks.Load(),
		Collisions: r.stats.collisions.Load(),
		Resumed:    r.stats.resumed.Load(),
	}
}

// Resolve sets ids[i] to the series ID of lbls[i], registering the label sets the
// registry does not know yet. Every label set must be canonical: sorted by name,
// no name twice, no empty name or value (write/ validates them); otherwise Resolve
// fails wrapping schema.ErrMalformed. ids must be as long as lbls.
//
// Cache hits cost no round trip; the misses of the whole batch are read with one
// GetRows. On a format-2 store the series that are truly new cost one GetRows of
// their reverse rows and two Applies for the whole batch. On a format-1 store
// (and for format 2's hash collisions) they cost an ID reservation (one
// Increment per IDBlockSize series), one Apply of their reverse rows and one
// check-and-put each (RegisterParallelism at a time; the first error cancels the
// others). The first registration of a Registry whose FormatVersion is 0 reads
// the store's schema meta row first. On error some ids may be set; the mappings
// made before the error are durable and cached.
func (r *Registry) Resolve(ctx context.Context, lbls []labels.Labels, ids []uint64) error {
	return r.resolve(ctx, lbls, ids, true)
}

// Lookup is Resolve without registering: ids[i] is 0 when lbls[i] is not a known
// series (or not a canonical label set).
func (r *Registry) Lookup(ctx context.Context, lbls []labels.Labels, ids []uint64) error {
	return r.resolve(ctx, lbls, ids, false)
}

// miss is a label set of a Resolve batch that the cache did not have.
type miss struct {
	lbls labels.Labels
	hash uint64
	at   []int // positions in the batch
	key  []byte
	id   uint64
}

func (r *Registry) resolve(ctx context.Context, lbls []labels.Labels, ids []uint64, register bool) error {
	if len(ids) != len(lbls) {
		return fmt.Errorf("index: resolve: %d label sets but %d ids: %w", len(lbls), len(ids), kv.ErrInvalidArgument)
	}
	var (
		misses []*miss
		byHash map[uint64][]*miss
		hits   int64
	)
	for i, ls := range lbls {
		h := ls.Hash()
		if c, ok := r.series.Get(h); ok && labels.Equal(c.lbls, ls) {
			ids[i] = c.id
			hits++
			continue
		}
		ids[i] = 0
		if byHash == nil {
			byHash = make(map[uint64][]*miss)
		}
		found := false
		for _, m := range byHash[h] {
			if labels.Equal(m.lbls, ls) {
				m.at = append(m.at, i)
				found = true
				break
			}
		}
		if !found {
			m := &miss{lbls: ls, hash: h, at: []int{i}}
			byHash[h] = append(byHash[h], m)
			misses = append(misses, m)
		}
	}
	r.stats.cacheHits.Add(hits)
	if len(misses) == 0 {
		return nil
	}

	// Read the forward rows of every miss in one round trip.
	keys := make([][]byte, 0, len(misses))
	valid := misses[:0:0]
	for _, m := range misses {
		key, err := forwardRow(m.lbls)
		if err == nil && len(key) > kv.MaxRowKeyLen {
			err = fmt.Errorf("its forward row key of %d bytes exceeds %d: %w", len(key), kv.MaxRowKeyLen, kv.ErrInvalidArgument)
		}
		if err != nil {
			if !register {
				continue // no such series can have been registered
			}
			return fmt.Errorf("index: resolve series %.1000s: %w", m.lbls, err)
		}
		m.key = key
		valid = append(valid, m)
	}
	misses = valid
	// In key order: the embedded store's seeks then move forward through its
	// files, each data block read once for neighbouring keys (a batch of new
	// series read in request order cost twice the CPU).
	slices.SortFunc(misses, func(a, b *miss) int { return bytes.Compare(a.key, b.key) })
	for _, m := range misses {
		keys = append(keys, m.key)
	}
	rows, err := r.st.GetRows(ctx, schema.TableSeries, keys, kv.Families(schema.FamilySeriesID))
	if err != nil {
		return fmt.Errorf("index: read %d forward series rows: %w", len(keys), err)
	}
	var fresh []*miss
	var found int64
	for i, row := range rows {
		m := misses[i]
		id, ok, err := forwardID(row)
		if err != nil {
			return fmt.Errorf("index: forward row of series %s: %w", m.lbls, err)
		}
		if ok {
			m.id = id
			r.remember(m, ids)
			found++
			continue
		}
		fresh = append(fresh, m)
	}
	r.stats.storeHits.Add(found)
	if len(fresh) == 0 || !register {
		return nil
	}
	format, err := r.formatVersion(ctx)
	if err != nil {
		return err
	}
	if format >= 2 {
		return r.registerHashed(ctx, fresh, ids)
	}
	return r.register(ctx, fresh, ids)
}

// formatVersion is the store's format version: RegistryOptions.FormatVersion, or
// read from the schema meta row once.
func (r *Registry) formatVersion(ctx context.Context) (int, error) {
	if v := r.format.Load(); v != 0 {
		return int(v), nil
	}
	row, err := r.st.Get(ctx, schema.TableMeta, []byte(schema.MetaSchemaRow), kv.Families(schema.FamilyMeta))
	if err != nil {
		return 0, fmt.Errorf("index: read the store's format version: %w", err)
	}
	if len(row.Cells) == 0 {
		return 0, fmt.Errorf("index: read the store's format version: no schema meta row: %w", schema.ErrNotCreated)
	}
	s, err := schema.DecodeSettings(row.Cells)
	if err != nil {
		return 0, fmt.Errorf("index: read the store's format version: %w", err)
	}
	r.format.Store(int32(s.FormatVersion))
	return s.FormatVersion, nil
}

// remember caches a resolved miss and fills its positions of ids.
func (r *Registry) remember(m *miss, ids []uint64) {
	for _, i := range m.at {
		ids[i] = m.id
	}
	r.series.Add(m.hash, cachedSeries{lbls: m.lbls, id: m.id})
}

// hashIDBit is set in every hash-derived series ID and in no counter ID (the
// counter is a signed 64-bit integer): the two kinds never meet, and a
// hash-derived ID is never 0.
const hashIDBit = 1 << 63

// seriesHash is the hash of a forward row key that format 2 derives series IDs
// from: XXH64 with seed 0. It is part of the format: changing it would give
// existing label sets other IDs in processes that register them concurrently.
func seriesHash(forwardRow []byte) uint64 { return xxhash.Sum64(forwardRow) }

// registerHashed gives hash-derived IDs to series that have no forward row
// (format 2; the steps of the Registry doc). Series whose candidate ID is taken
// go to register once the batch's reverse rows are durable.
func (r *Registry) registerHashed(ctx context.Context, fresh []*miss, ids []uint64) error {
	var hashed, taken []*miss
	candidates := make(map[uint64]bool, len(fresh))
	keys := make([][]byte, 0, len(fresh))
	for _, m := range fresh {
		id := r.opts.seriesHash(m.key) | hashIDBit
		if candidates[id] {
			// Another new series of the batch has this candidate; it is
			// registered with it first, so that every process sees its reverse
			// row before this series' check-and-put (see the package doc).
			taken = append(taken, m)
			continue
		}
		candidates[id] = true
		m.id = id
		hashed = append(hashed, m)
	}
	// In ID order, for the reason resolve reads forward rows in key order.
	slices.SortFunc(hashed, func(a, b *miss) int { return cmp.Compare(a.id, b.id) })
	for _, m := range hashed {
		keys = append(keys, schema.SeriesReverseRow(nil, m.id))
	}
	rows, err := r.st.GetRows(ctx, schema.TableSeries, keys, kv.Families(schema.FamilySeriesLabels))
	if err != nil {
		return fmt.Errorf("index: read the reverse rows of %d new series: %w", len(keys), err)
	}
	now := r.opts.Now().UnixMilli()
	reverse := make([]kv.Mutation, 0, len(hashed))
	forward := make([]kv.Mutation, 0, len(hashed))
	var resumed int64
	ok := hashed[:0]
	for i, row := range rows {
		m := hashed[i]
		// m.key is 0x01 | canonical labels; the reverse row's value is the labels.
		switch held, found := reverseLabels(row); {
		case !found:
			reverse = append(reverse, kv.Put(keys[i], schema.FamilySeriesLabels, []byte(schema.QualifierSeriesLabels), now, m.key[1:]))
		case bytes.Equal(held, m.key[1:]):
			resumed++
		default:
			r.stats.collisions.Add(1)
			r.opts.Logger.Warn("series ID hash collision: the series gets a counter ID", "series", m.lbls.String(), "hash_id", m.id)
			m.id = 0
			taken = append(taken, m)
			continue
		}
		forward = append(forward, kv.Put(m.key, schema.FamilySeriesID, []byte(schema.QualifierSeriesID), now, schema.AppendSeriesID(nil, m.id)))
		ok = append(ok, m)
	}
	hashed = ok
	if len(reverse) > 0 {
		if err := r.st.Apply(ctx, schema.TableSeries, reverse); err != nil {
			return fmt.Errorf("index: write the labels of %d new series: %w", len(reverse), err)
		}
	}
	if len(forward) > 0 {
		if err := r.st.Apply(ctx, schema.TableSeries, forward); err != nil {
			return fmt.Errorf("index: register %d new series: %w", len(forward), err)
		}
	}
	r.stats.registered.Add(int64(len(hashed)))
	r.stats.resumed.Add(resumed)
	for _, m := range hashed {
		r.remember(m, ids)
	}
	if len(taken) == 0 {
		return nil
	}
	return r.register(ctx, taken, ids)
}

// reverseLabels returns the canonical labels a reverse row holds; found is false
// if it holds none.
func reverseLabels(row kv.Row) (lbls []byte, found bool) {
	for _, c := range row.Cells {
		if c.Family == schema.FamilySeriesLabels && string(c.Qualifier) == schema.QualifierSeriesLabels {
			return c.Value, true
		}
	}
	return nil, false
}

// register gives counter IDs to series that have no forward row (format 1, and
// format 2's collisions; steps 1 to 3 of the Registry doc).
func (r *Registry) register(ctx context.Context, fresh []*miss, ids []uint64) error {
	newIDs, err := r.reserve(ctx, len(fresh))
	if err != nil {
		return err
	}
	now := r.opts.Now().UnixMilli()
	reverse := make([]kv.Mutation, len(fresh))
	for i, m := range fresh {
		m.id = newIDs[i]
		// m.key is 0x01 | canonical labels; the reverse row's value is the labels.
		reverse[i] = kv.Put(schema.SeriesReverseRow(nil, m.id), schema.FamilySeriesLabels,
			[]byte(schema.QualifierSeriesLabels), now, m.key[1:])
	}
	if err := r.st.Apply(ctx, schema.TableSeries, reverse); err != nil {
		return fmt.Errorf("index: write the labels of %d new series: %w", len(fresh), err)
	}

	// Check-and-put the forward rows, RegisterParallelism at a time; the first
	// error cancels the others.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.RegisterParallelism)
	for _, m := range fresh {
		g.Go(func() error { return r.claim(gctx, m, now) })
	}
	err = g.Wait()
	for _, m := range fresh {
		if m.id != 0 {
			r.remember(m, ids)
		}
	}
	return err
}

// claim check-and-puts m's forward row with m.id; if another writer won, it sets
// m.id to the winner's ID. On error m.id is 0; when ctx is done already, it does
// not try.
func (r *Registry) claim(ctx context.Context, m *miss, now int64) error {
	if err := ctx.Err(); err != nil {
		m.id = 0
		return fmt.Errorf("index: register series %s: %w", m.lbls, err)
	}
	put := kv.Put(m.key, schema.FamilySeriesID, []byte(schema.QualifierSeriesID), now, schema.AppendSeriesID(nil, m.id))
	won, err := r.st.CheckAndPut(ctx, schema.TableSeries, nil, put)
	if err != nil {
		m.id = 0
		return fmt.Errorf("index: register series %s: %w", m.lbls, err)
	}
	if won {
		r.stats.registered.Add(1)
		return nil
	}
	r.stats.raced.Add(1)
	row, err := r.st.Get(ctx, schema.TableSeries, m.key, kv.Families(schema.FamilySeriesID))
	if err != nil {
		m.id = 0
		return fmt.Errorf("index: read the winner's ID of series %s: %w", m.lbls, err)
	}
	id, ok, err := forwardID(row)
	if err == nil && !ok {
		err = fmt.Errorf("the forward row is absent after a lost check-and-put: %w", schema.ErrMalformed)
	}
	if err != nil {
		m.id = 0
		return fmt.Errorf("index: read the winner's ID of series %s: %w", m.lbls, err)
	}
	r.opts.Logger.Debug("series registered concurrently by another writer", "series", m.lbls.String(), "id", id, "unused_id", m.id)
	m.id = id
	return nil
}

// reserve returns n unused series IDs, incrementing the counter row when the
// reserved block runs out: by IDBlockSize, or by what is missing if that is more.
func (r *Registry) reserve(ctx context.Context, n int) ([]uint64, error) {
	r.idMu.Lock()
	defer r.idMu.Unlock()
	out := make([]uint64, 0, n)
	for len(out) < n {
		if r.nextID > r.last {
			delta := max(r.opts.IDBlockSize, n-len(out))
			last, err := r.st.Increment(ctx, schema.TableSeries, []byte(schema.SeriesCounterRow), schema.FamilySeriesID,
				[]byte(schema.QualifierNextID), int64(delta))
			if err != nil {
				return nil, fmt.Errorf("index: reserve %d series IDs: %w", delta, err)
			}
			if last < int64(delta) {
				return nil, fmt.Errorf("index: the series ID counter is at %d after adding %d: %w", last, delta, schema.ErrMalformed)
			}
			r.stats.idBlocks.Add(1)
			r.nextID, r.last = uint64(last)-uint64(delta)+1, uint64(last)
		}
		out = append(out, r.nextID)
		r.nextID++
	}
	return out, nil
}

// Labels returns the label sets of series IDs, from the cache or with one GetRows
// for the misses. An ID without a reverse row (never one from a posting or a data
// row, see Registry) yields an empty label set.
func (r *Registry) Labels(ctx context.Context, ids []uint64) ([]labels.Labels, error) {
	out := make([]labels.Labels, len(ids))
	var (
		missAt []int
		keys   [][]byte
	)
	for i, id := range ids {
		if ls, ok := r.labels.Get(id); ok {
			out[i] = ls
			continue
		}
		missAt = append(missAt, i)
		keys = append(keys, schema.SeriesReverseRow(nil, id))
	}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := r.st.GetRows(ctx, schema.TableSeries, keys, kv.Families(schema.FamilySeriesLabels))
	if err != nil {
		return nil, fmt.Errorf("index: read the labels of %d series: %w", len(keys), err)
	}
	var b labels.ScratchBuilder
	for j, row := range rows {
		i := missAt[j]
		for _, c := range row.Cells {
			if c.Family != schema.FamilySeriesLabels || string(c.Qualifier) != schema.QualifierSeriesLabels {
				continue
			}
			lbls, err := schema.DecodeLabels(c.Value)
			if err != nil {
				return nil, fmt.Errorf("index: labels of series %d: %w", ids[i], err)
			}
			b.Reset()
			for _, l := range lbls {
				b.Add(l.Name, l.Value)
			}
			out[i] = b.Labels()
			r.labels.Add(ids[i], out[i])
			break
		}
	}
	return out, nil
}

// forwardRow is the forward registry row key of a canonical label set.
func forwardRow(ls labels.Labels) ([]byte, error) {
	buf := make([]schema.Label, 0, ls.Len())
	ls.Range(func(l labels.Label) { buf = append(buf, schema.Label{Name: l.Name, Value: l.Value}) })
	n := 1
	for _, l := range buf {
		n += schema.EscapedLen(l.Name) + schema.EscapedLen(l.Value)
	}
	return schema.SeriesForwardRow(make([]byte, 0, n), buf)
}

// forwardID decodes the series ID of a forward row; ok is false if the row has none.
func forwardID(row kv.Row) (id uint64, ok bool, err error) {
	for _, c := range row.Cells {
		if c.Family == schema.FamilySeriesID && string(c.Qualifier) == schema.QualifierSeriesID {
			id, err := schema.DecodeSeriesID(c.Value)
			return id, err == nil, err
		}
	}
	return 0, false, nil
}
