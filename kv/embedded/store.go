package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/hbtsdb/hbtsdb/kv"
)

// formatVersion names the key layout of the package doc. A store written with
// another layout is refused rather than misread.
const formatVersion = "1"

// Defaults of Options.
const (
	DefaultSweepInterval = time.Minute
	DefaultCacheSize     = 64 << 20
)

// ErrLocked is returned (wrapped) by Open when the store directory is already open,
// by another process or by another Open in this one.
var ErrLocked = errors.New("embedded store is locked")

// Options tunes an embedded store. The zero value gives the defaults in brackets.
type Options struct {
	// SweepInterval is how often the background sweeper deletes the cells that reads
	// hide: versions past their family's TTL or beyond its MaxVersions [1m].
	// A negative interval disables the sweeper (reads still hide those cells).
	SweepInterval time.Duration
	// CacheSize is the size of Pebble's block cache, in bytes [64 MiB]; the
	// memtables come on top of it (memTableReservation).
	CacheSize int64
	// Logger receives the sweeper's logs and Pebble's [slog.Default()].
	Logger *slog.Logger
	// Clock is the store's "now": it decides TTL expiry and the timestamp of the
	// cells Increment writes [time.Now]. Tests inject a fake one.
	Clock func() time.Time
	// MinFreeBytes is the free space kept on the store's file system: under it,
	// writes and Ping fail with kv.ErrUnavailable until space is freed
	// (space.go) [256 MiB]; negative disables the check.
	MinFreeBytes int64
	// SpaceCheckInterval is how often free space is read [1s].
	SpaceCheckInterval time.Duration

	// Head keeps the cells of some families in memory behind a log of its own
	// instead of in Pebble (head.go) [none].
	Head HeadOptions

	// tunePebble, in tests, changes Pebble's options after tuning.go set them.
	tunePebble func(*pebble.Options)
}

func (o Options) withDefaults() Options {
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	if o.SpaceCheckInterval <= 0 {
		o.SpaceCheckInterval = DefaultSpaceCheckInterval
	}
	return o
}

// Store is a kv.Store on a Pebble database in one local directory.
// All methods are safe for concurrent use.
type Store struct {
	dir  string
	db   *pebble.DB
	lock *pebble.Lock
	log  *slog.Logger
	now  func() time.Time

	// mu orders writes: Apply and reads hold it shared; Increment, CheckAndPut, table
	// admin, each sweeper chunk and Close hold it exclusively. It guards closed,
	// tables and nextTableID.
	mu          sync.RWMutex
	closed      bool
	tables      map[string]*table
	nextTableID uint64

	// tombs counts the tombstones of committed batches (Tombstones).
	tombs kv.TombstoneTotals

	// syncing counts the read-modify-write batches applied under mu whose fsync
	// their caller still awaits (pendingSync); Close waits for them before it
	// closes Pebble.
	syncing sync.WaitGroup

	// scanners are the open Scanners, which Close ends (they hold Pebble iterators
	// that must be released before Pebble closes).
	scMu     sync.Mutex
	scanners map[*scanner]struct{}

	stopSweep context.CancelFunc
	sweepDone chan struct{}

	// space refuses writes while the disk is nearly full (space.go); nil when
	// Options.MinFreeBytes is negative. closedFlag mirrors closed for Ping,
	// which must answer while a write holds mu.
	space      *spaceMonitor
	spaceDone  chan struct{}
	closedFlag atomic.Bool

	// The head (head.go, headstore.go): nil when the store has none.
	head             *head
	hlog             *headLog
	headOpts         HeadOptions
	headReplayed     int64
	headFlushedRows  atomic.Int64
	headFlushedCells atomic.Int64
	stopHead         context.CancelFunc
	headDone         chan struct{}
	headWake         chan struct{}
}

var _ kv.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dir and starts its sweeper. A
// directory already open elsewhere yields an error wrapping ErrLocked. ctx bounds
// the opening only, not the store's life.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", abs, err)
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	// Pebble reserves every memtable's size in the block cache: without room for
	// them, 32 MiB memtables (tuning.go) left a 64 MiB cache no space for blocks,
	// and every read went to the files (0 % hit rate, docs/query-latency.md).
	cache := pebble.NewCache(opts.CacheSize + memTableReservation)
	defer cache.Unref()
	popts := &pebble.Options{
		FS:                 privateFS{vfs.Default},
		Cache:              cache,
		Lock:               lock,
		Logger:             pebbleLogger{opts.Logger.With("component", "pebble", "dir", abs)},
		FormatMajorVersion: pebble.FormatNewest,
	}
	tunePebble(popts)
	if opts.tunePebble != nil {
		opts.tunePebble(popts)
	}
	db, err := pebble.Open(abs, popts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", abs, err)
	}
	s := &Store{
		dir:      abs,
		db:       db,
		lock:     lock,
		log:      opts.Logger,
		now:      opts.Clock,
		tables:   make(map[string]*table),
		scanners: make(map[*scanner]struct{}),
	}
	if err := s.load(); err != nil {
		db.Close()
		lock.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", abs, err)
	}
	if err := s.openHead(opts.Head); err != nil {
		db.Close()
		lock.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", abs, err)
	}
	sweepCtx, stop := context.WithCancel(context.Background())
	s.stopSweep = stop
	s.sweepDone = make(chan struct{})
	go s.sweepLoop(sweepCtx, opts.SweepInterval)
	if opts.MinFreeBytes > 0 {
		s.space = &spaceMonitor{dir: abs, min: opts.MinFreeBytes, free: freeBytes}
		s.space.check()
		s.spaceDone = make(chan struct{})
		go s.space.run(sweepCtx, opts.SpaceCheckInterval, s.spaceDone)
	}
	return s, nil
}

// lockDir takes Pebble's directory lock (the LOCK file) before Open, so that the
// error a second opener gets can say what to do.
func lockDir(dir string) (*pebble.Lock, error) {
	file := filepath.Join(dir, "LOCK")
	lock, err := pebble.LockDirectory(dir, privateFS{vfs.Default})
	var pathErr *os.PathError
	switch {
	case err == nil:
		return lock, nil
	case errors.As(err, &pathErr):
		// Creating the lock file failed (permissions, read-only disk): not a lock held.
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
		// fcntl(F_SETLK) refuses a lock another process holds with EAGAIN or EACCES.
		return nil, &lockedError{dir: dir, file: file, cause: err}
	case strings.Contains(err.Error(), "held by current process"):
		// Pebble tracks the locks of this process itself (fcntl locks are per process).
		return nil, &lockedError{dir: dir, file: file, cause: err, sameProcess: true}
	}
	return nil, fmt.Errorf("embedded: open %s: lock %s: %w", dir, file, err)
}

// lockedError is Open's error for a directory that is already open. It wraps
// ErrLocked and the lock's own error.
type lockedError struct {
	dir, file   string
	cause       error
	sameProcess bool
}

func (e *lockedError) Error() string {
	if e.sameProcess {
		return fmt.Sprintf("embedded store %s is already open in this process (lock file %s): close it first or use another --storage directory", e.dir, e.file)
	}
	return fmt.Sprintf("embedded store %s is in use by another process (lock file %s): stop it or use another --storage directory", e.dir, e.file)
}

func (e *lockedError) Unwrap() []error { return []error{ErrLocked, e.cause} }

// load reads the format marker and the catalog.
func (s *Store) load() error {
	format, err := s.getMeta("format")
	if err != nil {
		return err
	}
	switch {
	case format == nil:
		if err := s.db.Set(metaKey("format"), []byte(formatVersion), pebble.Sync); err != nil {
			return err
		}
	case string(format) != formatVersion:
		return fmt.Errorf("data format %q, this build reads %q", format, formatVersion)
	}
	s.nextTableID = 1
	if v, err := s.getMeta("next-table-id"); err != nil {
		return err
	} else if v != nil {
		if _, err := fmt.Sscan(string(v), &s.nextTableID); err != nil {
			return fmt.Errorf("next-table-id %q: %w", v, err)
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsCatalog}, UpperBound: []byte{nsCatalog + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		var rec catalogRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("catalog entry %q: %w", it.Key()[1:], err)
		}
		s.tables[rec.Spec.Name] = newTable(rec)
	}
	return it.Error()
}

func (s *Store) getMeta(name string) ([]byte, error) {
	v, closer, err := s.db.Get(metaKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// Exclusive reports true: one process at a time opens a store directory
// (Pebble's lock file), so no other process caches anything of it
// (kv.Exclusive).
func (s *Store) Exclusive() bool { return true }

// Dir is the absolute path of the store directory.
func (s *Store) Dir() string { return s.dir }

// Ping reports nil unless the store is closed, ctx is done, or the disk is
// under its free-space reserve (space.go).
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded: ping: %w", err)
	}
	// Without mu: a write stuck in Pebble holds it.
	if s.closedFlag.Load() {
		return fmt.Errorf("embedded: ping: %w", kv.ErrClosed)
	}
	return s.space.err()
}

// Close stops the sweeper and waits for it, ends open scanners (their Err wraps
// kv.ErrClosed), and closes Pebble. Every call after Close, a second Close
// included, fails with an error wrapping kv.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("embedded: close %s: %w", s.dir, kv.ErrClosed)
	}
	// From here on every method sees closed; calls that hold mu have returned.
	s.closed = true
	s.closedFlag.Store(true)
	s.mu.Unlock()

	s.stopSweep()
	<-s.sweepDone
	herr := s.closeHead()
	if s.spaceDone != nil {
		<-s.spaceDone
	}
	s.syncing.Wait()

	s.scMu.Lock()
	open := s.scanners
	s.scanners = nil
	s.scMu.Unlock()
	for sc := range open {
		sc.abort(fmt.Errorf("embedded: scan %s: %w", sc.table, kv.ErrClosed))
	}

	err := s.db.Close()
	if err == nil {
		err = herr
	}
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("embedded: close %s: %w", s.dir, err)
	}
	return nil
}

// pebbleLogger sends Pebble's logs to slog: its chatty informational lines at
// Debug, errors at Error.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}

// Fatalf is Pebble reporting an unrecoverable state; it must not return.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg)
	panic("embedded: pebble: " + msg)
}
