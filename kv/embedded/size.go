package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Compact and DiskUsage are for benchmarks and tools that measure what a store
// occupies on disk (bytes per sample, before and after a layout change). They are not
// part of kv.Store: HBase's counterparts (flush, major compaction, HFile sizes) are
// admin operations outside gohbase, and a serving store needs neither, since Pebble
// compacts in the background.

// Compact flushes the memtable and compacts the whole key space (Pebble's manual
// compaction, down to the bottom level that holds files), so that overwritten and
// deleted cells and dropped tables are gone from disk and what remains is the live
// cells in bottom-level sstables: the embedded counterpart of an HBase flush and major
// compaction. It takes as long as rewriting the store does; ctx can end it early.
//
// It holds the store's shared lock, as Apply does: Close, table admin, Increment,
// CheckAndPut and the sweeper wait until it is done (and, while one of them waits, so
// do new reads and writes).
func (s *Store) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded: compact %s: %w", s.dir, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("embedded: compact %s: %w", s.dir, kv.ErrClosed)
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("embedded: compact %s: flush: %w", s.dir, err)
	}
	// Every key starts with a namespace byte, nsMeta (0x00) to nsData (0x02); Pebble
	// takes the bounds as inclusive.
	if err := s.db.Compact(ctx, []byte{nsMeta}, []byte{nsData + 1}, true); err != nil {
		return fmt.Errorf("embedded: compact %s: %w", s.dir, err)
	}
	return nil
}

// Usage is what a store occupies on disk, in bytes.
type Usage struct {
	// Files is the apparent size of every file in the store directory: sstables, the
	// WAL (Pebble keeps a flushed segment to recycle), the manifest, options and lock
	// files.
	Files int64
	// SSTables is the size of the live sstables: the cells Pebble has flushed.
	SSTables int64
	// Tables is each table's part of SSTables, by table name: Pebble's estimate over
	// the table's key range (EstimateDiskUsage: whole sstables inside the range, and
	// the data blocks of sstables that straddle it and a neighbour). The catalog and
	// the store's metadata, a few hundred bytes, are in no table.
	Tables map[string]int64
}

// DiskUsage reports what the store occupies on disk. Cells still in the memtable are
// in Files (through the WAL) but not in SSTables or Tables, and overwritten or
// deleted cells count until a compaction drops them: call Compact first for the size
// of the live data.
func (s *Store) DiskUsage(ctx context.Context) (Usage, error) {
	u := Usage{Tables: make(map[string]int64)}
	if err := ctx.Err(); err != nil {
		return u, fmt.Errorf("embedded: disk usage %s: %w", s.dir, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return u, fmt.Errorf("embedded: disk usage %s: %w", s.dir, kv.ErrClosed)
	}
	for name, t := range s.tables {
		n, err := s.db.EstimateDiskUsage(t.prefix, t.end())
		if err != nil {
			return u, fmt.Errorf("embedded: disk usage %s: table %s: %w", s.dir, name, err)
		}
		u.Tables[name] = int64(n)
	}
	u.SSTables = s.db.Metrics().Total().TablesSize
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed by Pebble since the directory was listed
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		u.Files += info.Size()
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("embedded: disk usage %s: %w", s.dir, err)
	}
	return u, nil
}
