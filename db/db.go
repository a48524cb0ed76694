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
	"github.com/prometheus/prometheus/model/labels"
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
	// Rollups are the store's resolutions of downsampled data (TableOptions.Rollups)
	// and RawRetention the TTL of its raw data: the read path serves queries
	// from rollups where that gives raw's answer, and data older than
	// RawRetention from rollups (query.Options).
	Rollups      []schema.Rollup
	RawRetention time.Duration
	// Logger is used by every part that has nothing else configured [slog.Default()].
	Logger *slog.Logger
	// Now is the clock of every part that has nothing else configured [time.Now].
	Now func() time.Time
}

// DB is hbtsdb's storage as Prometheus sees it; see the package doc.
type DB struct {
	st         kv.Store
	closeStore bool
	writer     *write.Writer
	reader     *query.Reader
	registry   *index.Registry
	postings   *index.Postings
	now        func() time.Time
	// settings and rollups are the store's, for Delete (delete.go).
	settings schema.Settings
	rollups  []schema.Rollup
	logger   *slog.Logger
	closed   atomic.Bool
}

// Open joins a store and its settings into a DB. It reads the store's schema meta
// row once to check that it was created with opts.Settings (an error wrapping
// schema.ErrMismatch or schema.ErrNotCreated otherwise) and starts nothing in the
// background.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("db: Options.Store is nil: %w", kv.ErrInvalidArgument)
	}
	// write.New validates opts.Write; the reader, registry and postings have
	// constructors that cannot fail, so their options are validated here.
	if err := errors.Join(opts.Query.Validate(), opts.Registry.Validate(), opts.Postings.Validate()); err != nil {
		return nil, fmt.Errorf("db: %w", err)
	}
	stored, err := provision.Check(ctx, opts.Store, opts.Settings)
	if err != nil {
		return nil, fmt.Errorf("db: %w", err)
	}
	// The store's format, not this process's, decides how series get IDs.
	opts.Registry.FormatVersion = stored.FormatVersion
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
	if opts.Query.Now == nil {
		opts.Query.Now = opts.Now
	}
	if opts.Query.Rollups == nil {
		opts.Query.Rollups = opts.Rollups
	}
	if opts.Query.RawRetention == 0 {
		opts.Query.RawRetention = opts.RawRetention
	}
	if err := opts.Query.Resolution.Validate(opts.Query.Rollups); err != nil {
		return nil, fmt.Errorf("db: query resolution: %w", err)
	}
	// The writer and the reader share one series registry and one tag index, so
	// that a series the writer registered is in the reader's caches.
	registry := index.NewRegistry(opts.Store, opts.Registry)
	postings := index.NewPostings(opts.Store, opts.Postings)
	w, err := write.New(opts.Store, opts.Settings, registry, postings, opts.Write)
	if err != nil {
		return nil, fmt.Errorf("db: %w", err)
	}
	return &DB{
		st:         opts.Store,
		closeStore: opts.CloseStore,
		writer:     w,
		registry:   registry,
		postings:   postings,
		reader:     query.NewReader(opts.Store, opts.Settings, registry, postings).WithOptions(opts.Query),
		now:        opts.Now,
		settings:   opts.Settings,
		rollups:    opts.Rollups,
		logger:     opts.Logger,
	}, nil
}

// Reader is the read path (Prometheus queriers, series of a range, raw
// samples, metadata).
func (db *DB) Reader() *query.Reader { return db.reader }

// QueryReader is Reader for query.Engine (query.ReaderSource), which serves
// range functions from rollups through it.
func (db *DB) QueryReader() (*query.Reader, error) { return db.reader, nil }

// Write stores req through the write pipeline (write.Writer.Write); it is
// refused with kv.ErrClosed after Close.
func (db *DB) Write(ctx context.Context, req *write.Request) (write.Result, error) {
	if db.closed.Load() {
		return write.Result{}, fmt.Errorf("db: write: %w", kv.ErrClosed)
	}
	return db.writer.Write(ctx, req)
}

// Ping reports whether the store answers now (kv.Store.Ping); it fails with
// kv.ErrClosed after Close.
func (db *DB) Ping(ctx context.Context) error {
	if db.closed.Load() {
		return fmt.Errorf("db: ping: %w", kv.ErrClosed)
	}
	return db.st.Ping(ctx)
}

// Last returns the newest n samples of each series of metric on host that
// matches any of matcherSets; see query.Reader.Last.
func (db *DB) Last(ctx context.Context, host, metric string, n int, matcherSets ...[]*labels.Matcher) ([]query.LastSeries, error) {
	return db.reader.Last(ctx, host, metric, n, matcherSets...)
}

// Metadata returns the metadata stored for one metric family; see
// query.Reader.Metadata.
func (db *DB) Metadata(ctx context.Context, metric string) (schema.Metadata, bool, error) {
	return db.reader.Metadata(ctx, metric)
}

// ListMetadata returns the metadata of every metric family, sorted by name, at
// most limit of them when limit > 0; see query.Reader.ListMetadata.
func (db *DB) ListMetadata(ctx context.Context, limit int) ([]schema.Metadata, error) {
	return db.reader.ListMetadata(ctx, limit)
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
