package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/storage"
	"github.com/hbtsdb/hbtsdb/storage/backend"
)

type serveFlags struct {
	listen          *string
	autoCreate      *bool
	shutdownTimeout *time.Duration
	retryMax        *time.Duration
}

func registerServe(a *app) {
	cmd := a.kp.Command("serve", "Run the server: Prometheus remote write on /api/v1/write, health on /-/healthy and /-/ready.\n\n"+
		"On HBase, tsdb serve waits (not ready, retrying with backoff) until HBase answers; an embedded\n"+
		"directory in use by another process, an unknown --storage or a schema mismatch stop it at once.")
	f := &serveFlags{
		listen:          flag(cmd, "listen", "Address to listen on.").Default(":9201").String(),
		autoCreate:      flag(cmd, "schema.auto-create", "Create missing tables and the schema meta row at start; when false, a store without them is an error (create them with tsdb schema create).").Default("true").Bool(),
		shutdownTimeout: durationFlag(flag(cmd, "shutdown-timeout", "How long SIGINT/SIGTERM waits for in-flight requests before closing the store."), "30s"),
		retryMax:        durationFlag(flag(cmd, "storage.retry-max-backoff", "Longest wait between attempts to reach an unavailable store at start."), "30s"),
	}
	a.actions[cmd.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return serve(ctx, a.common, f, logger)
	}
}

// storeState is what the server knows about its store: nil until it is open and its
// schema checked, with the reason it is not ready meanwhile.
type storeState struct {
	mu       sync.Mutex
	store    storage.Store
	settings schema.Settings
	waiting  error
}

func (s *storeState) set(st storage.Store, settings schema.Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store, s.settings, s.waiting = st, settings, nil
}

func (s *storeState) wait(reason error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = reason
}

func (s *storeState) get() (storage.Store, error) {
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
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another tsdb running? choose another --listen)", *f.listen, err)
	}
	state := &storeState{}
	srv := &http.Server{
		Handler:           promapi.NewRouter(promapi.Options{Ready: state.ready, Logger: logger}),
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
		st, settings, err := openAndCheck(ctx, c, f, addr, want, logger)
		if err == nil {
			state.set(st, settings)
			logger.Info("store ready", "storage", addr.String(), "bucket_width", settings.BucketWidth,
				"salt_buckets", settings.SaltBuckets, "format_version", settings.FormatVersion)
			return nil
		}
		if ctx.Err() != nil {
			return nil // shutting down
		}
		if !errors.Is(err, storage.ErrUnavailable) {
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

func openAndCheck(ctx context.Context, c *commonFlags, f *serveFlags, addr backend.Address, want schema.Settings,
	logger *slog.Logger) (storage.Store, schema.Settings, error) {
	st, err := c.openStore(ctx, addr, logger)
	if err != nil {
		return nil, schema.Settings{}, err
	}
	settings, err := schema.Open(ctx, st, want, c.tableOptions(want), *f.autoCreate)
	if err != nil {
		st.Close()
		return nil, schema.Settings{}, err
	}
	return st, settings, nil
}
