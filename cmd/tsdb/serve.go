package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/backend"
	"github.com/hbtsdb/hbtsdb/kv/kvmetrics"
	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/write"
)

// serveOptions are tsdb serve's settings: its own, and the options structs of the
// packages it wires, into which the flags are bound (binder).
type serveOptions struct {
	listen          string
	autoCreate      bool
	shutdownTimeout time.Duration
	retryMax        time.Duration

	// http holds the write endpoints' limits (--write.max-body-bytes, ...) and the
	// PromQL engine's and read endpoints' options (--query.*, --remote-read.*);
	// Store, Logger and BuildInfo are set at start.
	http promapi.Options
	// writeLimits bound what one write request may carry (--write.max-series-..., ...);
	// MaxAge is --retention.raw, set at start.
	writeLimits write.Limits
	// exemplarSlot and exemplarsPerSlot bound the exemplars stored per series
	// (--exemplars.slot, --exemplars.per-slot; write.Options).
	exemplarSlot     time.Duration
	exemplarsPerSlot int
	// selectLimits bound each selector of a query (--query.max-series,
	// --query.max-fetched-samples).
	selectLimits query.Options
	// compact is the compaction worker's options (--compact.*), run in-process
	// when compactEnabled; Owner and Logger are set at start. Its Compact.Apply
	// (--storage.write-batch-size, --storage.write-concurrency) bounds the
	// writer's writes too (write.Options.Apply).
	compactEnabled bool
	compact        compact.WorkerOptions
	// web is TLS and authentication (--web.config.file, --web.read-only-users).
	web webOptions
	// ingestSummaryEvery is how often a line sums up what was written
	// (--log.ingest-summary-interval); 0: never.
	ingestSummaryEvery time.Duration
	// selfScrapeEvery is how often tsdb writes its own metrics into its store
	// (--self-scrape.interval); 0: never.
	selfScrapeEvery time.Duration
	// storageMetrics measure the store's operations (set at start, served at
	// /metrics).
	storageMetrics *kvmetrics.Metrics
	// pprof serves Go's profiles under /debug/pprof/ (--web.enable-pprof, serve_debug.go).
	pprof bool
	// gogc is the garbage collector's target percentage (--runtime.gogc,
	// serve_runtime.go).
	gogc int
	// adminAPI serves the TSDB admin endpoints (--web.enable-admin-api, serve_admin.go);
	// deleteSalts is --delete.concurrency.
	adminAPI    bool
	deleteSalts int

	flags *binder
}

// Defaults of the per-selector read limits: far above what a dashboard asks for
// (a million series is a whole fleet), low enough that one careless selector such
// as {__name__=~".+"} over a year cannot keep the store busy for minutes. query.Options
// has no limits by default (tests and tools read everything).
const (
	defaultSelectMaxSeries  = 1_000_000
	defaultSelectMaxSamples = 500_000_000
)

// validate checks every options struct the flags were bound into, with the
// structs' own Validate, and names the flags in the error.
func (o *serveOptions) validate() error {
	return o.flags.explain(errors.Join(
		o.http.WriteLimits.Validate(),
		o.http.Query.Validate(),
		o.writeLimits.Validate(),
		o.selectLimits.Validate(),
		o.compact.Validate(),
		write.Options{ExemplarSlot: o.exemplarSlot, ExemplarsPerSlot: o.exemplarsPerSlot}.Validate(),
		checkDeleteConcurrency(o.deleteSalts),
	))
}

func registerServe(a *app) {
	cmd := a.kp.Command("serve", "Run the server:\n"+
		"  POST /api/v1/write   Prometheus remote write (1.0 and 2.0)\n"+
		"  POST /api/put        OpenTSDB put\n"+
		"  POST /api/v1/otlp/v1/metrics   OpenTelemetry OTLP/HTTP metrics (protobuf or JSON, gzip)\n"+
		"  POST /api/v1/read    Prometheus remote read (SAMPLES and STREAMED_XOR_CHUNKS)\n"+
		"  /api/v1/query, query_range, series, labels, label/<name>/values, metadata, query_exemplars,\n"+
		"  format_query, parse_query, status/buildinfo   the Prometheus HTTP API (PromQL), for Grafana\n"+
		"  GET /api/v1/last?host=H&metric=M&n=N[&match[]=S]   the newest N readings of each series of M on H\n"+
		"  /-/healthy, /-/ready health\n\n"+
		"On HBase, tsdb serve waits (not ready, retrying with backoff) until HBase answers; an embedded\n"+
		"directory in use by another process, an unknown --storage or a schema mismatch stop it at once.")
	o := &serveOptions{
		http: promapi.Options{
			WriteLimits: promapi.DefaultWriteLimits(),
			Query:       promapi.DefaultQueryOptions(),
		},
		writeLimits:  write.DefaultLimits(),
		selectLimits: query.Options{MaxSeries: defaultSelectMaxSeries, MaxSamples: defaultSelectMaxSamples},
		flags:        newBinder(cmd),
	}
	flag(cmd, "listen", "Address to listen on.").Default(":9201").StringVar(&o.listen)
	flag(cmd, "schema.auto-create", "Create missing tables and the schema meta row at start; when false, a store "+
		"without them is an error (create them with tsdb schema create).").Default("true").BoolVar(&o.autoCreate)
	o.shutdownTimeout, o.retryMax = 30*time.Second, 30*time.Second
	o.flags.duration("shutdown-timeout", "", "How long SIGINT/SIGTERM waits for in-flight requests before closing the "+
		"store.", &o.shutdownTimeout)
	o.flags.duration("self-scrape.interval", "", "How often tsdb writes its own /metrics into its own store, with "+
		"job=\"hbtsdb\" and instance=<listen address>, as a Prometheus scraping it would (the overview dashboard in "+
		"dashboards/ then works with nothing else running); 0 (the default) turns it off.", &o.selfScrapeEvery)
	o.ingestSummaryEvery = time.Minute
	o.flags.duration("log.ingest-summary-interval", "", "How often an info line sums up what the write endpoints "+
		"took in since the previous line (requests, failed requests, series and samples stored, samples rejected); "+
		"no line while nothing arrives; 0 turns it off.", &o.ingestSummaryEvery)
	o.flags.duration("storage.retry-max-backoff", "", "Longest wait between attempts to reach an unavailable store "+
		"at start.", &o.retryMax)
	o.exemplarSlot, o.exemplarsPerSlot = schema.DefaultExemplarSlot, schema.DefaultExemplarsPerSlot
	o.flags.duration("exemplars.slot", "write: Options.ExemplarSlot", "Exemplars are stored per series and slot of this width "+
		"(counted from each bucket's start): at most --exemplars.per-slot in each, the newest winning.", &o.exemplarSlot)
	o.flags.int("exemplars.per-slot", "write: Options.ExemplarsPerSlot", "How many exemplars of one series one slot keeps "+
		"(at most 256): the bound of the exemplars stored, per series, per --exemplars.slot.", &o.exemplarsPerSlot)
	o.web.register(cmd)
	o.registerWriteFlags()
	o.registerOTLPFlags()
	o.registerExportFlags()
	o.registerOpenTSDBQueryFlags()
	o.registerQueryFlags()
	o.registerCompactionFlags()
	o.registerDebugFlags()
	o.registerRuntimeFlags()
	o.registerAdminFlags()
	a.actions[cmd.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return serve(ctx, a.common, o, logger)
	}
}

// serve runs the server until ctx is done or the HTTP server fails. The store is
// opened in the background (openWithRetry), so that /-/healthy answers and
// /-/ready says why not while HBase is unreachable; serve waits for that
// goroutine before it returns, and closes the DB it opened, even when shutdown
// began while the store was being opened.
func serve(ctx context.Context, c *commonFlags, o *serveOptions, logger *slog.Logger) error {
	addr, settings, err := c.resolve()
	if err != nil {
		return err
	}
	tables, err := c.tableOptions(settings)
	if err != nil {
		return err
	}
	o.writeLimits.MaxAge = *c.rawRetention
	o.compact.Owner, o.compact.Logger = workerOwner(), logger
	o.compact.Compact.Rollups = tables.Rollups
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.selectLimits.Resolution.Validate(tables.Rollups); err != nil {
		return fmt.Errorf("--query.resolution: %w", err)
	}
	if err := o.web.check(logger); err != nil {
		return err
	}
	setGoMemoryLimit(o.http.Query.MaxMemory, logger)
	if _, err := setGCPercent(o.gogc, logger); err != nil {
		return err
	}
	rdb := &readyDB{}
	httpOpts := o.http
	ingest := &promapi.IngestStats{}
	reg := newMetricsRegistry(rdb)
	httpOpts.DB, httpOpts.Logger, httpOpts.BuildInfo, httpOpts.Ingest = rdb.DB, logger, buildInfo(), ingest
	httpOpts.Version = version
	httpOpts.Registerer, httpOpts.Gatherer = reg, reg
	httpOpts.Admin = o.admin(rdb, logger)
	o.storageMetrics = kvmetrics.New(string(addr.Kind), reg)
	o.compact.Registerer = reg
	handler, err := promapi.NewRouter(httpOpts)
	if err != nil {
		return o.flags.explain(err)
	}
	ln, err := listen(o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           o.web.handler(o.withDebug(handler)),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- o.web.serve(ln, srv, logger) }()
	url := serverURL(ln.Addr(), o.web.tls)
	logger.Info("listening", "address", ln.Addr().String(), "storage", addr.String(),
		"remote_write_url", url+"/api/v1/write", "query_page", url+"/", "web_config_file", o.web.configFile)

	openCtx, cancelOpen := context.WithCancel(ctx)
	defer cancelOpen()
	opened := make(chan error, 1)
	// background is the compaction worker (started once the store is open), the
	// ingest summaries and the self-scrape: all stop with openCtx, and the store
	// must outlive them.
	var background sync.WaitGroup
	if o.ingestSummaryEvery > 0 {
		background.Go(func() { logIngestSummaries(openCtx, ingest, o.storageMetrics.HeadStats, o.ingestSummaryEvery, logger) })
	}
	if o.selfScrapeEvery > 0 {
		instance := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
		background.Go(func() { selfScrape(openCtx, reg, rdb, o.selfScrapeEvery, instance, logger) })
		logger.Info("self-scrape on: tsdb writes its own metrics into its store", "interval", o.selfScrapeEvery,
			"job", selfScrapeJob, "instance", instance)
	}
	go func() { opened <- openWithRetry(openCtx, c, o, addr, settings, rdb, &background, logger) }()

	var runErr error
	openDone := false
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "reason", "signal")
	case runErr = <-serveErr:
		runErr = fmt.Errorf("http server: %w", runErr)
	case runErr = <-opened:
		openDone = true
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

	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("in-flight requests did not finish in time", "timeout", o.shutdownTimeout, "err", err)
	}
	if !openDone {
		// The store may be opening right now: wait, so that what it opens is
		// closed below rather than left open behind a stopped server.
		if err := <-opened; err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	background.Wait() // cancelOpen stopped it; the store must outlive it
	if err := rdb.close(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr == nil {
		logger.Info("stopped")
	}
	return runErr
}

// openWithRetry opens the store and checks (or creates) its schema. While the store
// is unavailable it retries with exponential backoff, keeping the server not ready;
// any other error (a locked directory, a schema mismatch) ends the server. It
// returns nil when ctx ends first. Once the store is open it starts the
// compaction worker (unless --compact.enabled=false), which runs until ctx is
// done; compaction.Wait waits for it.
func openWithRetry(ctx context.Context, c *commonFlags, o *serveOptions, addr backend.Address, want schema.Settings,
	rdb *readyDB, compaction *sync.WaitGroup, logger *slog.Logger) error {
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		d, st, settings, err := openDB(ctx, c, o, addr, want, logger)
		if err == nil {
			if !rdb.set(d) {
				return d.Close() // shutting down: nobody will serve from it
			}
			logger.Info("store ready", "storage", addr.String(), "bucket_width", settings.BucketWidth,
				"salt_buckets", settings.Salts, "format_version", settings.FormatVersion)
			if o.compactEnabled {
				return startCompaction(ctx, st, settings, o.compact, compaction, logger)
			}
			return nil
		}
		if ctx.Err() != nil {
			return nil // shutting down
		}
		if !errors.Is(err, kv.ErrUnavailable) {
			return err
		}
		rdb.wait(fmt.Errorf("waiting for the store %s (attempt %d): %w", addr, attempt, err))
		logger.Warn("store unavailable, retrying", "storage", addr.String(), "attempt", attempt, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, o.retryMax)
	}
}

// openDB opens the store, checks (or creates) its schema, records the resolution
// list (--rollups; provision.Open creates the tables of resolutions added) and
// joins it into the DB the endpoints write and read through, with the --write.*
// and the per-selector --query.* limits, reading rollups by --rollups and
// --retention.raw. The DB owns the store (returned too, for the compaction
// worker): closing it closes the store.
func openDB(ctx context.Context, c *commonFlags, o *serveOptions, addr backend.Address, want schema.Settings,
	logger *slog.Logger) (*db.DB, kv.Store, schema.Settings, error) {
	tables, err := c.tableOptions(want)
	if err != nil {
		return nil, nil, schema.Settings{}, err
	}
	st, err := c.openStore(ctx, addr, logger)
	if err != nil {
		return nil, nil, schema.Settings{}, err
	}
	if o.storageMetrics != nil {
		st = o.storageMetrics.Wrap(st)
	}
	settings, err := provision.Open(ctx, st, want, tables, o.autoCreate, c.provisionOptions(addr, logger)...)
	if err != nil {
		st.Close()
		return nil, nil, schema.Settings{}, err
	}
	d, err := db.Open(ctx, db.Options{Store: st, CloseStore: true, Settings: settings, Logger: logger,
		Rollups: tables.Rollups, RawRetention: tables.RawRetention,
		Write: write.Options{Limits: o.writeLimits, Logger: logger, ExemplarSlot: o.exemplarSlot, ExemplarsPerSlot: o.exemplarsPerSlot,
			Apply: o.compact.Compact.Apply},
		Query: o.selectLimits})
	if err != nil {
		st.Close()
		return nil, nil, schema.Settings{}, err
	}
	return d, st, settings, nil
}

// listen opens the server's socket, with errors that say what to change: an
// address that is not host:port, or a port another process holds.
func listen(address string) (net.Listener, error) {
	if _, port, err := net.SplitHostPort(address); err != nil {
		hint := "give host:port or :port, e.g. --listen=:9201 or --listen=127.0.0.1:9201"
		if _, numErr := strconv.ParseUint(address, 10, 16); numErr == nil {
			hint = fmt.Sprintf("did you mean --listen=:%s?", address)
		}
		return nil, fmt.Errorf("--listen=%s is not an address to listen on (%v); %s", address, err, hint)
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return nil, fmt.Errorf("--listen=%s: %q is not a port: give a number from 0 to 65535", address, port)
	}
	ln, err := net.Listen("tcp", address)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen on %s: %w: another process (another tsdb?) listens there; stop it or choose another --listen", address, err)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}
	return ln, nil
}
