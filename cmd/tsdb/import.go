package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/write"
)

// importOptions are tsdb import's settings, shared by its two sources.
type importOptions struct {
	checkpoint    string
	dryRun        bool
	progress      string
	progressEvery time.Duration
	importer      importer.Options
	apply         kv.ApplyOptions
	flags         *binder

	file   string // tsdb import openmetrics
	format string

	remote     importer.RemoteRead // tsdb import remote-read
	startArg   string
	endArg     string
	frameLimit int64

	opentsdb opentsdbOptions // tsdb import opentsdb
	// summary, when set, adds the source's own lines to the summary.
	summary func(io.Writer)
}

func registerImport(a *app, stderr io.Writer) {
	cmd := a.kp.Command("import", "Import existing data into the store (--storage), through the write path remote write "+
		"takes: OpenMetrics files, any remote-read endpoint (Prometheus, another hbtsdb), or an OpenTSDB's own HBase "+
		"tables.\n\n"+
		"Old samples are stored as late cells, so the compaction worker of tsdb serve or tsdb compact folds them into "+
		"chunks and rollups as it does any late data. An import is resumable: a checkpoint file (--checkpoint) records "+
		"what is stored, and running the same command again after a kill skips it. It is idempotent: importing a "+
		"sample again rewrites the same cell. On the embedded store, tsdb serve must be stopped while importing (it "+
		"holds the store's lock); on HBase, imports and servers share the store.\n\n"+
		"Examples:\n"+
		"  tsdb import openmetrics metrics.om --storage=embedded:./data\n"+
		"  tsdb import remote-read http://prometheus:9090/api/v1/read --match='{job=\"node\"}' \\\n"+
		"      --start=2026-01-01T00:00:00Z --end=now --storage=hbase:zk1,zk2,zk3\n"+
		"  tsdb import opentsdb hbase:zk1,zk2,zk3 --storage=hbase:zk1,zk2,zk3\n"+
		"  tsdb import --from-opentsdb hbase:zk1,zk2,zk3 --storage=hbase:zk1,zk2,zk3   (the same)\n\n"+
		"A summary ends the import on standard output: series, samples_written (samples_read with --dry-run), "+
		"exemplars_written, samples_skipped (before the checkpoint, or older than --retention.raw), duration, "+
		"samples_per_second.")
	o := &importOptions{
		importer: importer.Options{BatchSamples: importer.DefaultBatchSamples, Concurrency: importer.DefaultConcurrency},
		apply:    kv.ApplyOptions{}.WithDefaults(),
		flags:    newBinder(cmd),
	}
	o.flags.flag("checkpoint", "", "The checkpoint file, created when missing and replaced atomically as the import "+
		"goes. Default: FILE.tsdb-import.json next to an OpenMetrics file; tsdb-import-remote-read-<hash>.json in the "+
		"working directory for a remote-read import (the hash names the URL, selectors and range); "+
		"tsdb-import-opentsdb-<hash>.json for an OpenTSDB import (the hash names the HBase, tables and layout). It "+
		"names the import it belongs to: another import refuses it.").
		StringVar(&o.checkpoint)
	o.flags.flag("dry-run", "", "Read and parse everything, count it, write nothing (nor the checkpoint).").BoolVar(&o.dryRun)
	o.flags.int("batch-samples", "importer: Options.BatchSamples", "Most samples one write to the store carries "+
		"(at most the server's default --write.max-samples-per-request, 500000).", &o.importer.BatchSamples)
	o.flags.int("concurrency", "importer: Options.Concurrency", "How many writes (OpenMetrics), time slices "+
		"(remote read) or key ranges (OpenTSDB) are in flight at once; memory grows with --concurrency × --batch-samples.", &o.importer.Concurrency)
	o.flags.flag("progress", "", "How to show progress: bar (a progress bar with rate and ETA on standard error), log "+
		"(a log line every --progress.interval), or auto: bar when standard output is a terminal, else log.").
		Default("auto").EnumVar(&o.progress, "auto", "bar", "log")
	o.progressEvery = 10 * time.Second
	o.flags.duration("progress.interval", "", "How often --progress=log writes a line.", &o.progressEvery)
	o.importer.RetryFor = importer.DefaultRetryFor
	namedDuration(o.flags, "storage.retry-for", "importer: Options.RetryFor", "How long a write that fails because the "+
		"store is unavailable, a remote-read slice whose reading fails (not with a 4xx), or a scan of OpenTSDB's "+
		"table that fails because its HBase is unavailable, is tried again (the wait doubling from 500ms to 30s) "+
		"before the import fails.",
		&o.importer.RetryFor)
	registerApplyFlags(o.flags, &o.apply)

	om := cmd.Command("openmetrics", "Import an OpenMetrics text file whose samples all have timestamps (what "+
		"promtool tsdb create-blocks-from openmetrics takes): counters, gauges, summaries, classic histograms, "+
		"with # HELP/# TYPE/# UNIT as metadata and exemplars. A line that does not parse stops the import with "+
		"FILE:LINE and what is wrong; what came before it is stored and checkpointed.")
	om.Arg("file", "The OpenMetrics file (ending with # EOF).").Required().StringVar(&o.file)
	flag(om, "format", "The file's format: openmetrics (timestamps in seconds, # EOF at the end), or prometheus, "+
		"Prometheus' text exposition format (timestamps in milliseconds).").Default(importer.FormatOpenMetrics).
		EnumVar(&o.format, importer.FormatOpenMetrics, importer.FormatPrometheus)
	a.actions[om.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return runImport(ctx, a.out, stderr, a.common, o, logger, importFile)
	}

	rr := cmd.Command("remote-read", "Import the series a remote-read endpoint returns for --match selectors between "+
		"--start and --end, in time slices of --slice (--concurrency at once), as streamed XOR chunks "+
		"(STREAMED_XOR_CHUNKS; sampled responses are taken from endpoints that only give those). Float and native "+
		"histogram samples are imported.")
	rr.Arg("url", "The remote-read endpoint, e.g. http://prometheus:9090/api/v1/read or "+
		"http://other-tsdb:9201/api/v1/read.").Required().StringVar(&o.remote.URL)
	flag(rr, "match", "A series selector to import, e.g. '{job=\"node\"}' or '{__name__=~\".+\"}' for "+
		"everything; repeat it for more.").Required().StringsVar(&o.remote.Selectors)
	flag(rr, "start", "The first time to import: RFC 3339 (2026-01-02T15:04:05Z) or Unix seconds.").
		Required().StringVar(&o.startArg)
	flag(rr, "end", "The last time to import (inclusive): RFC 3339, Unix seconds, or now.").
		Default("now").StringVar(&o.endArg)
	o.remote.Slice, o.remote.Timeout = importer.DefaultSlice, importer.DefaultTimeout
	namedDuration(o.flagsOn(rr), "slice", "", "The time span of one remote-read query: the unit of parallel work "+
		"and of the checkpoint. Shorter slices bound what the source holds in memory per query.", &o.remote.Slice)
	namedDuration(o.flagsOn(rr), "read-timeout", "", "How long one slice's request and response may take.", &o.remote.Timeout)
	o.frameLimit = 64 << 20 // above Prometheus' own limit of a frame it sends, 50 MB
	bytesFlag(o.flagsOn(rr), "read-frame-limit", "", "The largest frame of a streamed response the import accepts "+
		"(one series' chunks, at most, in one frame): a larger one fails the slice.", &o.frameLimit)
	a.actions[rr.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return runImport(ctx, a.out, stderr, a.common, o, logger, importRemoteRead)
	}
	registerImportOpenTSDB(a, cmd, o, stderr)
}

// flagsOn is a binder for a subcommand that shares o's field names.
func (o *importOptions) flagsOn(on flagger) *binder {
	return &binder{on: on, flags: o.flags.flags}
}

// importSource checks one kind of import's arguments and opens its checkpoint
// (before the store is opened), and returns the import to run.
type importSource func(o *importOptions, logger *slog.Logger) (func(ctx context.Context, opts importer.Options) error, error)

// runImport opens the store (creating its schema if needed), runs the
// import with progress, and prints the summary.
func runImport(ctx context.Context, w, errOut io.Writer, c *commonFlags, o *importOptions, logger *slog.Logger, source importSource) error {
	opts := o.importer
	opts.Logger = logger
	opts.Progress = &importer.Progress{}
	opts.Retryable = func(err error) bool { return errors.Is(err, kv.ErrUnavailable) }
	if err := o.flags.explain(errors.Join(opts.Validate(), o.apply.Validate("write: Options.Apply"))); err != nil {
		return err
	}
	limits := write.DefaultLimits()
	if opts.BatchSamples > limits.MaxSamplesPerRequest {
		return fmt.Errorf("--batch-samples=%d is over %d, the most samples one write may carry", opts.BatchSamples,
			limits.MaxSamplesPerRequest)
	}
	run, err := source(o, logger)
	if err != nil {
		return err
	}
	if !o.dryRun {
		d, err := openImportDB(ctx, c, o, limits, logger)
		if err != nil {
			return err
		}
		defer d.Close()
		opts.Sink = d
	}
	started := time.Now()
	stopProgress := showProgress(w, errOut, o, opts.Progress, logger)
	err = run(ctx, opts)
	stopProgress()
	printImportSummary(w, opts.Progress, time.Since(started), o.dryRun)
	if o.summary != nil {
		o.summary(w)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted (%w): what the checkpoint records is stored; run the same command again to "+
			"resume", err)
	}
	if err != nil && !o.dryRun && !errors.Is(err, importer.ErrBadInput) {
		return fmt.Errorf("%w (what the checkpoint records is stored; run the same command again to resume)", err)
	}
	return err
}

// openImportDB opens the store --storage names and its schema (created when
// missing, as tsdb serve does), as a DB whose writer has the server's limits.
func openImportDB(ctx context.Context, c *commonFlags, o *importOptions, limits write.Limits, logger *slog.Logger) (*db.DB, error) {
	addr, want, err := c.resolve()
	if err != nil {
		return nil, err
	}
	tables, err := c.tableOptions(want)
	if err != nil {
		return nil, err
	}
	limits.MaxAge = tables.RawRetention
	st, err := c.openStore(ctx, addr, logger)
	if errors.Is(err, embedded.ErrLocked) {
		return nil, fmt.Errorf("%w: another process (a running tsdb serve?) holds the embedded store %s; stop it, run "+
			"tsdb import, then start it again (on HBase, imports run beside the servers)", err, addr.Dir)
	}
	if err != nil {
		return nil, err
	}
	settings, err := provision.Open(ctx, st, want, tables, true, c.provisionOptions(addr, logger)...)
	if err != nil {
		st.Close()
		return nil, err
	}
	d, err := db.Open(ctx, db.Options{Store: st, CloseStore: true, Settings: settings, Logger: logger,
		Rollups: tables.Rollups, RawRetention: tables.RawRetention,
		Write: write.Options{Limits: limits, Logger: logger, Apply: o.apply}})
	if err != nil {
		st.Close()
		return nil, o.flags.explain(err)
	}
	logger.Info("store open", "storage", addr.String())
	return d, nil
}

// importFile is tsdb import openmetrics.
func importFile(o *importOptions, logger *slog.Logger) (func(context.Context, importer.Options) error, error) {
	if err := rejectFromOpenTSDB(o, "openmetrics"); err != nil {
		return nil, err
	}
	job, err := importer.FileJob(o.file, o.format)
	if err != nil {
		return nil, err
	}
	path := o.checkpoint
	if path == "" {
		path = o.file + ".tsdb-import.json"
	}
	cp, err := importer.OpenCheckpoint(path, job)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, opts importer.Options) error {
		if !o.dryRun {
			opts.Checkpoint = cp
		}
		logger.Info("importing", "file", o.file, "checkpoint", path, "dry_run", o.dryRun)
		return importer.ImportFile(ctx, o.file, o.format, opts)
	}, nil
}

// importRemoteRead is tsdb import remote-read.
func importRemoteRead(o *importOptions, logger *slog.Logger) (func(context.Context, importer.Options) error, error) {
	if err := rejectFromOpenTSDB(o, "remote-read"); err != nil {
		return nil, err
	}
	now := time.Now()
	var errs []error
	start, err := parseImportTime(o.startArg, now)
	if err != nil {
		errs = append(errs, fmt.Errorf("--start: %w", err))
	}
	end, err := parseImportTime(o.endArg, now)
	if err != nil {
		errs = append(errs, fmt.Errorf("--end: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := o.remote
	r.Start, r.End = start, end
	if o.frameLimit <= 0 {
		return nil, fmt.Errorf("--read-frame-limit must be positive, got %d", o.frameLimit)
	}
	r.ChunkedReadLimit = uint64(o.frameLimit)
	if err := r.Check(); err != nil {
		return nil, err
	}
	path := o.checkpoint
	if path == "" {
		h := fnv.New32a()
		_, _ = h.Write([]byte(r.Job()))
		path = fmt.Sprintf("tsdb-import-remote-read-%08x.json", h.Sum32())
	}
	cp, err := importer.OpenCheckpoint(path, r.Job())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, opts importer.Options) error {
		if !o.dryRun {
			opts.Checkpoint = cp
		}
		logger.Info("importing", "url", r.URL, "match", r.Selectors, "start", time.UnixMilli(start).UTC(),
			"end", time.UnixMilli(end).UTC(), "slice", r.Slice, "checkpoint", path, "dry_run", o.dryRun)
		return importer.ImportRemoteRead(ctx, r, opts)
	}, nil
}

// parseImportTime parses RFC 3339, Unix seconds (with a fraction) or "now"
// into milliseconds since the epoch.
func parseImportTime(s string, now time.Time) (int64, error) {
	if s == "now" {
		return now.UnixMilli(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return int64(math.Round(f * 1000)), nil
	}
	return 0, fmt.Errorf("%q is not a time: give RFC 3339 (2026-01-02T15:04:05Z), Unix seconds, or now", s)
}

// printImportSummary writes what the import did, one "key: value" a line.
func printImportSummary(w io.Writer, p *importer.Progress, took time.Duration, dryRun bool) {
	samples := p.Samples.Load()
	rate := 0.0
	if took > 0 {
		rate = float64(samples) / took.Seconds()
	}
	verb := "samples_written"
	if dryRun {
		verb = "samples_read"
	}
	fmt.Fprintf(w, "series: %d\n%s: %d\nexemplars_written: %d\nsamples_skipped: %d\nduration: %s\nsamples_per_second: %.0f\n",
		p.Series(), verb, samples, p.Exemplars.Load(), p.Skipped.Load(), took.Round(time.Millisecond), rate)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
