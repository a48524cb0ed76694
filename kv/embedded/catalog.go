package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hbtsdb/hbtsdb/kv"
)

// catalogRecord is the persisted form of a table: the value of 0x01|name.
type catalogRecord struct {
	ID   uint64       `json:"id"`
	Spec kv.TableSpec `json:"spec"`
}

// table is a table of the catalog, in memory. It is immutable once built.
type table struct {
	name     string
	id       uint64
	prefix   []byte // tablePrefix(id)
	spec     kv.TableSpec
	families map[string]*family
}

// family holds what reads and the sweeper need of a FamilySpec.
type family struct {
	name     string
	versions int   // MaxVersions with its default applied
	ttlMs    int64 // TTL in milliseconds, 0 for none
}

// oldest returns the smallest timestamp not expired at nowMs: a cell is hidden when
// ts + TTL < now (HBase: ts < now - TTL), i.e. when ts < oldest.
func (f *family) oldest(nowMs int64) int64 {
	if f.ttlMs == 0 {
		return math.MinInt64
	}
	return nowMs - f.ttlMs
}

func newTable(rec catalogRecord) *table {
	t := &table{
		name:     rec.Spec.Name,
		id:       rec.ID,
		prefix:   tablePrefix(rec.ID),
		spec:     rec.Spec,
		families: make(map[string]*family, len(rec.Spec.Families)),
	}
	for _, f := range rec.Spec.Families {
		t.families[f.Name] = &family{name: f.Name, versions: f.Versions(), ttlMs: f.TTL.Milliseconds()}
	}
	return t
}

// end is the first key after the table's cells.
func (t *table) end() []byte { return tablePrefix(t.id + 1) }

// family returns the named family or an ErrInvalidArgument error, HBase's
// NoSuchColumnFamilyException.
func (t *table) family(name string) (*family, error) {
	if f, ok := t.families[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w: table %s has no family %q", kv.ErrInvalidArgument, t.name, name)
}

// tableLocked returns the named table; s.mu must be held (shared is enough).
func (s *Store) tableLocked(name string) (*table, error) {
	if s.closed {
		return nil, kv.ErrClosed
	}
	t, ok := s.tables[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", kv.ErrTableNotFound, name)
	}
	return t, nil
}

// EnsureTable creates the table if it does not exist and reports whether it did.
// An existing table is left as it is. Compression, block encoding, bloom filter and
// split keys are HBase settings that the embedded store records but does not use.
func (s *Store) EnsureTable(ctx context.Context, spec kv.TableSpec) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("embedded: ensure table %s: %w", spec.Name, err)
	}
	if err := spec.Validate(); err != nil {
		return false, fmt.Errorf("embedded: ensure table %s: %w", spec.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, fmt.Errorf("embedded: ensure table %s: %w", spec.Name, kv.ErrClosed)
	}
	if _, ok := s.tables[spec.Name]; ok {
		return false, nil
	}
	v, err := json.Marshal(catalogRecord{ID: s.nextTableID, Spec: spec})
	if err != nil {
		return false, fmt.Errorf("embedded: ensure table %s: %w", spec.Name, err)
	}
	// Keep the JSON round trip of the spec, a deep copy the caller cannot change
	// (decoded into a fresh record: decoding into spec would reuse its slices).
	var rec catalogRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return false, fmt.Errorf("embedded: ensure table %s: %w", spec.Name, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(catalogKey(spec.Name), v, nil)
	b.Set(metaKey("next-table-id"), []byte(strconv.FormatUint(rec.ID+1, 10)), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return false, fmt.Errorf("embedded: ensure table %s: %w", spec.Name, err)
	}
	s.nextTableID = rec.ID + 1
	s.tables[spec.Name] = newTable(rec)
	return true, nil
}

// DropTable deletes a table and all its cells (one range deletion over its key
// space, reclaimed by Pebble's compactions).
func (s *Store) DropTable(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded: drop table %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tableLocked(name)
	if err != nil {
		return fmt.Errorf("embedded: drop table %s: %w", name, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(catalogKey(name), nil)
	b.DeleteRange(t.prefix, t.end(), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("embedded: drop table %s: %w", name, err)
	}
	s.tombs.Add(kv.Tombstones{Point: 1, Range: 1})
	if s.head != nil {
		s.head.mu.Lock()
		s.head.dropRowsLocked(t.prefix)
		s.head.mu.Unlock()
	}
	delete(s.tables, name)
	return nil
}

// ListTables returns the names of the tables, sorted.
func (s *Store) ListTables(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: list tables: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("embedded: list tables: %w", kv.ErrClosed)
	}
	names := make([]string, 0, len(s.tables))
	for name := range s.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}
