package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/write"
)

// Options configure a DB. Store and Settings are required; every other zero value
// takes the default documented on its type.
type Options struct {
	// Store is where data lives. The caller opens it (kv/backend) and creates
	// or checks its schema (provision.Open); Open checks once more that its settings
	// are Settings.
	Store kv.Store
	// CloseStore makes Close close Store too, for callers that hand the store over
	// (tests, Prometheus' promqltest, which closes each storage it makes).
	// Otherwise the store outlives the DB and its opener closes it.
	CloseStore bool
	// Settings are the store's schema settings (provision.Open returns them).
	Settings schema.Settings
	// Write tunes the write pipeline; Write.Limits bound requests (the zero
	// value has no limits: the server passes write.DefaultLimits(), tests loading
	// old data set MaxAge to 0).
	Write write.Options
	// Query tunes the read path: limits per Select (series, samples) and read
	// concurrency; see query.Options.
	Query query.Options
	// Registry and Postings tune the series registry and the tag index (cache
	// sizes, ID block size).
	Registry index.RegistryOptions
	Postings index.PostingsOptions
	// Logger is used by every part that has nothing else configured [slog.Default()].
	Logger *slog.Logger
	// Now is the clock of every part that has nothing else configured [time.Now].
	Now func() time.Time
}

// DB is hbtsdb's storage as Prometheus sees it; see the package doc.
type DB struct {
	st         kv.Store
	closeStore bool
	settings   schema.Settings
	registry   *index.Registry
	postings   *index.Postings
	writer     *write.Writer
	reader     *query.Reader
	logger     *slog.Logger
	now        func() time.Time
	closed     atomic.Bool
}

// Open joins a store and its settings into a DB. It reads the store's schema meta
// row once to check that it was created with opts.Settings (an error wrapping
// schema.ErrMismatch or schema.ErrNotCreated otherwise) and starts nothing in the
// background.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("db: Options.Store is nil: %w", kv.ErrInvalidArgument)
	}
	if _, err := provision.Check(ctx, opts.Store, opts.Settings); err != nil {
		return nil, fmt.Errorf("db: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Registry.Logger == nil {
		opts.Registry.Logger = opts.Logger
	}
	if opts.Registry.Now == nil {
		opts.Registry.Now = opts.Now
	}
	if opts.Write.Logger == nil {
		opts.Write.Logger = opts.Logger
	}
	if opts.Write.Now == nil {
		opts.Write.Now = opts.Now
	}
	db := &DB{
		st:         opts.Store,
		closeStore: opts.CloseStore,
		settings:   opts.Settings,
		registry:   index.NewRegistry(opts.Store, opts.Registry),
		postings:   index.NewPostings(opts.Store, opts.Postings),
		logger:     opts.Logger,
		now:        opts.Now,
	}
	w, err := write.New(opts.Store, opts.Settings, db.registry, db.postings, opts.Write)
	if err != nil {
		return nil, fmt.Errorf("db: %w", err)
	}
	db.writer = w
	db.reader = query.NewReader(opts.Store, opts.Settings, db.registry, db.postings).WithOptions(opts.Query)
	return db, nil
}

// Settings are the store's schema settings.
func (db *DB) Settings() schema.Settings { return db.settings }

// Writer is the write pipeline (for the HTTP write endpoints).
func (db *DB) Writer() *write.Writer { return db.writer }

// Reader is the read path (Prometheus queriers, series of a range, raw
// samples, metadata).
func (db *DB) Reader() *query.Reader { return db.reader }

// Registry is the series registry the DB's writer and reader share.
func (db *DB) Registry() *index.Registry { return db.registry }

// Postings is the tag index the DB's writer and reader share.
func (db *DB) Postings() *index.Postings { return db.postings }

// Write is Writer().Write, refused with kv.ErrClosed after Close.
func (db *DB) Write(ctx context.Context, req *write.Request) (write.Result, error) {
	if db.closed.Load() {
		return write.Result{}, fmt.Errorf("db: write: %w", kv.ErrClosed)
	}
	return db.writer.Write(ctx, req)
}

// Close makes every later Write and Commit fail with kv.ErrClosed and, with
// Options.CloseStore, closes the store. Appends in flight are not waited for: an
// appender commits synchronously in its caller's goroutine. Calling Close again
// returns nil.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	if db.closeStore {
		if err := db.st.Close(); err != nil && !errors.Is(err, kv.ErrClosed) {
			return fmt.Errorf("db: close the store: %w", err)
		}
	}
	return nil
}
