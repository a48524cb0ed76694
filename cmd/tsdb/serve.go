package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/backend"
	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/write"
)

type serveFlags struct {
	listen          *string
	autoCreate      *bool
	shutdownTimeout *time.Duration
	retryMax        *time.Duration
	write           writeFlags
	query           queryFlags
}

// writeFlags are the limits of the write endpoints (/api/v1/write, /api/put): the
// HTTP side (promapi.WriteLimits) and what one request may carry (write.Limits).
type writeFlags struct {
	maxBodyBytes         *units.Base2Bytes
	maxDecompressedBytes *units.Base2Bytes
	maxConcurrent        *int
	maxSeries            *int
	maxSamples           *int
	maxLabels            *int
	maxLabelName         *int
	maxLabelValue        *int
	maxFutureSkew        *time.Duration
}

func registerWriteFlags(cmd flagger) writeFlags {
	d, h := write.DefaultLimits(), promapi.DefaultWriteLimits()
	itoa := strconv.Itoa
	return writeFlags{
		maxBodyBytes: flag(cmd, "write.max-body-bytes", "Largest write request body as sent (snappy- or gzip-compressed); "+
			"larger is answered 413 before it is read.").Default(units.Base2Bytes(h.MaxBodyBytes).String()).Bytes(),
		maxDecompressedBytes: flag(cmd, "write.max-decompressed-bytes", "Largest write request body once decompressed; "+
			"larger is answered 400 before it is decoded.").Default(units.Base2Bytes(h.MaxDecompressedBytes).String()).Bytes(),
		maxConcurrent: flag(cmd, "write.max-concurrent-requests", "Write requests served at once; one more is answered 429 "+
			"with Retry-After before its body is read.").Default(itoa(h.MaxConcurrentRequests)).Int(),
		maxSeries: flag(cmd, "write.max-series-per-request", "Most series in one write request; over it the request is "+
			"rejected whole (400). 0: no limit.").Default(itoa(d.MaxSeriesPerRequest)).Int(),
		maxSamples: flag(cmd, "write.max-samples-per-request", "Most samples in one write request; over it the request is "+
			"rejected whole (400). 0: no limit.").Default(itoa(d.MaxSamplesPerRequest)).Int(),
		maxLabels: flag(cmd, "write.max-labels-per-series", "Most labels (with __name__) of one series; a series over it "+
			"is rejected. 0: no limit.").Default(itoa(d.MaxLabelsPerSeries)).Int(),
		maxLabelName: flag(cmd, "write.max-label-name-length", "Longest label name in bytes; a series over it is rejected. "+
			"0: no limit.").Default(itoa(d.MaxLabelNameLength)).Int(),
		maxLabelValue: flag(cmd, "write.max-label-value-length", "Longest label value in bytes; a series over it is "+
			"rejected. 0: no limit.").Default(itoa(d.MaxLabelValueLength)).Int(),
		maxFutureSkew: durationFlag(flag(cmd, "write.max-future-skew", "Samples further than this ahead of the server's clock "+
			"are rejected. Samples older than --retention.raw are rejected too: they would expire at once."),
			model.Duration(d.MaxFutureSkew).String()),
	}
}

// httpLimits are the limits of promapi's write endpoints.
func (f writeFlags) httpLimits() promapi.WriteLimits {
	return promapi.WriteLimits{
		MaxBodyBytes:          int64(*f.maxBodyBytes),
		MaxDecompressedBytes:  int64(*f.maxDecompressedBytes),
		MaxConcurrentRequests: *f.maxConcurrent,
	}
}

// limits are the limits of the write pipeline; maxAge is the raw retention (0:
// kept forever, so no age limit).
func (f writeFlags) limits(maxAge time.Duration) write.Limits {
	return write.Limits{
		MaxSeriesPerRequest:  *f.maxSeries,
		MaxSamplesPerRequest: *f.maxSamples,
		MaxLabelsPerSeries:   *f.maxLabels,
		MaxLabelNameLength:   *f.maxLabelName,
		MaxLabelValueLength:  *f.maxLabelValue,
		MaxFutureSkew:        *f.maxFutureSkew,
		MaxAge:               maxAge,
	}
}

// check refuses limits that cannot work.
func (f writeFlags) check() error {
	switch {
	case *f.maxBodyBytes <= 0:
		return fmt.Errorf("--write.max-body-bytes must be positive, got %s", f.maxBodyBytes)
	case *f.maxDecompressedBytes <= 0:
		return fmt.Errorf("--write.max-decompressed-bytes must be positive, got %s", f.maxDecompressedBytes)
	case *f.maxConcurrent <= 0:
		return fmt.Errorf("--write.max-concurrent-requests must be positive, got %d", *f.maxConcurrent)
	case *f.maxSeries < 0 || *f.maxSamples < 0 || *f.maxLabels < 0 || *f.maxLabelName < 0 || *f.maxLabelValue < 0:
		return errors.New("--write.max-* limits must not be negative (0 means no limit)")
	case *f.maxFutureSkew < 0:
		return fmt.Errorf("--write.max-future-skew must not be negative, got %s", *f.maxFutureSkew)
	}
	return nil
}

func registerServe(a *app) {
	cmd := a.kp.Command("serve", "Run the server:\n"+
		"  POST /api/v1/write   Prometheus remote write (1.0 and 2.0)\n"+
		"  POST /api/put        OpenTSDB put\n"+
		"  POST /api/v1/read    Prometheus remote read (SAMPLES and STREAMED_XOR_CHUNKS)\n"+
		"  /api/v1/query, query_range, series, labels, label/<name>/values, metadata, query_exemplars,\n"+
		"  format_query, parse_query, status/buildinfo   the Prometheus HTTP API (PromQL), for Grafana\n"+
		"  GET /api/v1/last?host=H&metric=M&n=N[&match[]=S]   the newest N readings of each series of M on H\n"+
		"  /-/healthy, /-/ready health\n\n"+
		"On HBase, tsdb serve waits (not ready, retrying with backoff) until HBase answers; an embedded\n"+
		"directory in use by another process, an unknown --storage or a schema mismatch stop it at once.")
	f := &serveFlags{
		listen:          flag(cmd, "listen", "Address to listen on.").Default(":9201").String(),
		autoCreate:      flag(cmd, "schema.auto-create", "Create missing tables and the schema meta row at start; when false, a store without them is an error (create them with tsdb schema create).").Default("true").Bool(),
		shutdownTimeout: durationFlag(flag(cmd, "shutdown-timeout", "How long SIGINT/SIGTERM waits for in-flight requests before closing the store."), "30s"),
		retryMax:        durationFlag(flag(cmd, "kv.retry-max-backoff", "Longest wait between attempts to reach an unavailable store at start."), "30s"),
		write:           registerWriteFlags(cmd),
		query:           registerQueryFlags(cmd),
	}
	a.actions[cmd.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return serve(ctx, a.common, f, logger)
	}
}

// storeState is what the server knows about its store: nil until it is open and its
// schema checked, with the reason it is not ready meanwhile.
type storeState struct {
	mu       sync.Mutex
	store    kv.Store
	db       *db.DB
	settings schema.Settings
	waiting  error
}

func (s *storeState) set(st kv.Store, d *db.DB, settings schema.Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store, s.db, s.settings, s.waiting = st, d, settings, nil
}

func (s *storeState) wait(reason error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = reason
}

func (s *storeState) get() (kv.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		if s.waiting != nil {
			return nil, s.waiting
		}
		return nil, errors.New("opening the store")
	}
	return s.store, nil
}

// Write is the write endpoints' Writer: the DB once the store is open, and until
// then an error wrapping kv.ErrUnavailable (503, so that senders retry).
func (s *storeState) Write(ctx context.Context, req *write.Request) (write.Result, error) {
	s.mu.Lock()
	d, waiting := s.db, s.waiting
	s.mu.Unlock()
	if d == nil {
		if waiting == nil {
			waiting = errors.New("opening the store")
		}
		return write.Result{}, fmt.Errorf("%w: %v", kv.ErrUnavailable, waiting)
	}
	return d.Write(ctx, req)
}

// ready is the /-/ready check: the store is open and answers now.
func (s *storeState) ready(ctx context.Context) error {
	st, err := s.get()
	if err != nil {
		return err
	}
	if err := st.Ping(ctx); err != nil {
		return fmt.Errorf("store does not answer: %w", err)
	}
	return nil
}

func serve(ctx context.Context, c *commonFlags, f *serveFlags, logger *slog.Logger) error {
	addr, settings, err := c.resolve()
	if err != nil {
		return err
	}
	if err := f.write.check(); err != nil {
		return err
	}
	if err := f.query.check(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another tsdb running? choose another --listen)", *f.listen, err)
	}
	state := &storeState{}
	srv := &http.Server{
		Handler: promapi.NewRouter(promapi.Options{Ready: state.ready, Logger: logger,
			Writer: state, WriteLimits: f.write.httpLimits(),
			Queryable: state, Reader: state, ReadReady: state.readReady,
			Query: f.query.options(), BuildInfo: buildInfo()}),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.Info("listening", "address", ln.Addr().String(), "storage", addr.String())

	openCtx, cancelOpen := context.WithCancel(ctx)
	defer cancelOpen()
	opened := make(chan error, 1)
	go func() { opened <- openWithRetry(openCtx, c, f, addr, settings, state, logger) }()

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "reason", "signal")
	case runErr = <-serveErr:
		runErr = fmt.Errorf("http server: %w", runErr)
	case runErr = <-opened:
		if runErr == nil {
			select {
			case <-ctx.Done():
				logger.Info("shutting down", "reason", "signal")
			case runErr = <-serveErr:
				runErr = fmt.Errorf("http server: %w", runErr)
			}
		}
	}
	cancelOpen()

	shutdownCtx, cancel := context.WithTimeout(context.Background(), *f.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("in-flight requests did not finish in time", "timeout", *f.shutdownTimeout, "err", err)
	}
	if st, err := state.get(); err == nil {
		state.mu.Lock()
		d := state.db
		state.mu.Unlock()
		if err := d.Close(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("close the database: %w", err))
		}
		if err := st.Close(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("close store: %w", err))
		}
	}
	if runErr == nil {
		logger.Info("stopped")
	}
	return runErr
}

// openWithRetry opens the store and checks (or creates) its schema. While the store
// is unavailable it retries with exponential backoff, keeping the server not ready;
// any other error (a locked directory, a schema mismatch) ends the server.
func openWithRetry(ctx context.Context, c *commonFlags, f *serveFlags, addr backend.Address, want schema.Settings,
	state *storeState, logger *slog.Logger) error {
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		st, d, settings, err := openAndCheck(ctx, c, f, addr, want, logger)
		if err == nil {
			state.set(st, d, settings)
			logger.Info("store ready", "storage", addr.String(), "bucket_width", settings.BucketWidth,
				"salt_buckets", settings.SaltBuckets, "format_version", settings.FormatVersion)
			return nil
		}
		if ctx.Err() != nil {
			return nil // shutting down
		}
		if !errors.Is(err, kv.ErrUnavailable) {
			return err
		}
		state.wait(fmt.Errorf("waiting for the store %s (attempt %d): %w", addr, attempt, err))
		logger.Warn("store unavailable, retrying", "storage", addr.String(), "attempt", attempt, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, *f.retryMax)
	}
}

// openAndCheck opens the store, checks (or creates) its schema and joins it into
// the DB the endpoints write and read through, with the --write.* and the
// per-selector --query.* limits.
func openAndCheck(ctx context.Context, c *commonFlags, f *serveFlags, addr backend.Address, want schema.Settings,
	logger *slog.Logger) (kv.Store, *db.DB, schema.Settings, error) {
	st, err := c.openStore(ctx, addr, logger)
	if err != nil {
		return nil, nil, schema.Settings{}, err
	}
	settings, err := provision.Open(ctx, st, want, c.tableOptions(want), *f.autoCreate)
	if err != nil {
		st.Close()
		return nil, nil, schema.Settings{}, err
	}
	d, err := db.Open(ctx, db.Options{Store: st, Settings: settings, Logger: logger,
		Write: write.Options{Limits: f.write.limits(*c.rawRetention), Logger: logger},
		Query: f.query.readLimits()})
	if err != nil {
		st.Close()
		return nil, nil, schema.Settings{}, err
	}
	return st, d, settings, nil
}
