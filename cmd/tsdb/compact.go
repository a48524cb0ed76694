package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

// compactOptions are tsdb compact's settings; the worker's are bound
// straight into compact.WorkerOptions.
type compactOptions struct {
	once   bool
	worker compact.WorkerOptions
	flags  *binder
}

func registerCompact(a *app) {
	cmd := a.kp.Command("compact", "Compact sealed buckets into chunks and write their rollups (--rollups).\n\n"+
		"A bucket is sealed --compact.grace after its end; its raw samples are rewritten as one compressed chunk,\n"+
		"and summarised into the rollup table of every resolution of --rollups.\n"+
		"Without --once, a round runs every --compact.interval until SIGINT/SIGTERM. Any number of tsdb\n"+
		"compact and tsdb serve processes may compact one store at once: they share its salts through\n"+
		"leases in the meta table (--compact.lease-ttl). Also as tsdb downsample, its name before this version.").Alias("downsample")
	o := &compactOptions{worker: defaultWorkerOptions(), flags: newBinder(cmd)}
	flag(cmd, "once", "Run one round over every salt, print what it did and exit.").BoolVar(&o.once)
	o.flags.flag("compact.sweep", "compact: Options.Sweep", "Also find sealed raw cells by reading each salt's raw family whole, "+
		"not only through the pending table: for raw cells written by a tsdb older than the pending table while it was being "+
		"upgraded (each salt is swept once by itself after the upgrade). A round then costs in proportion to every raw cell stored.").
		BoolVar(&o.worker.Compact.Sweep)
	registerCompactFlags(o.flags, &o.worker)
	registerApplyFlags(o.flags, &o.worker.Compact.Apply)
	a.actions[cmd.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return runCompact(ctx, a.out, a.common, o, logger)
	}
}

// defaultWorkerOptions are the worker options the flags start from: the
// package's defaults written out, so that --help shows them.
func defaultWorkerOptions() compact.WorkerOptions {
	return compact.WorkerOptions{
		Interval: compact.DefaultInterval,
		LeaseTTL: compact.DefaultLeaseTTL,
		Compact:  compact.Options{Grace: compact.DefaultGrace, Apply: kv.ApplyOptions{}.WithDefaults()},
	}
}

// registerCompactFlags binds the --compact.* flags that tsdb compact and tsdb
// serve share into o.
func registerCompactFlags(b *binder, o *compact.WorkerOptions) {
	namedDuration(b, "compact.grace", "compact: Options.Grace", "How long after its end a bucket is sealed and "+
		"compacted into a chunk. Later samples stay raw, readable, until the next round folds them in.", &o.Compact.Grace)
	namedDuration(b, "compact.interval", "compact: WorkerOptions.Interval", "Time from the start of one compaction "+
		"round to the start of the next.", &o.Interval)
	namedDuration(b, "compact.lease-ttl", "compact: WorkerOptions.LeaseTTL", "How long a worker's lease on a salt "+
		"lasts unless renewed: a worker that dies keeps its salts this long. The clocks of the hosts must agree "+
		"within a quarter of it.", &o.LeaseTTL)
}

// namedDuration is binder.duration, except that a value that does not parse is
// an error naming the flag, which kingpin's is not.
func namedDuration(b *binder, name, field, help string, v *time.Duration) {
	c := b.flag(name, field, help).Default(model.Duration(*v).String())
	c.SetValue(namedValue{Value: (*durationValue)(v), name: name})
}

// namedValue is a flag value whose parse errors name the flag.
type namedValue struct {
	kingpin.Value
	name string
}

func (n namedValue) Set(s string) error {
	if err := n.Value.Set(s); err != nil {
		return fmt.Errorf("--%s: %w", n.name, err)
	}
	return nil
}

// workerOwner names this process in its leases: host name, process ID and a
// random part, so that no two processes share a name, even on one host.
func workerOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	host = strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, host)
	if len(host) > 100 {
		host = host[:100]
	}
	var random [4]byte
	_, _ = rand.Read(random[:]) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), random)
}

// runCompact runs one round (--once) and prints what it did, or runs rounds
// until ctx is done.
func runCompact(ctx context.Context, w io.Writer, c *commonFlags, o *compactOptions, logger *slog.Logger) error {
	addr, want, err := c.resolve()
	if err != nil {
		return err
	}
	tables, err := c.tableOptions(want)
	if err != nil {
		return err
	}
	opts := o.worker
	opts.Owner, opts.Logger = workerOwner(), logger
	opts.Compact.Rollups = tables.Rollups
	if err := o.flags.explain(opts.Validate()); err != nil {
		return err
	}
	st, err := c.openStore(ctx, addr, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	// The schema must exist (tsdb schema create or tsdb serve make it); the
	// resolution list is recorded as tsdb serve records it, but the tables of
	// resolutions added must exist already.
	settings, err := provision.Open(ctx, st, want, tables, false, c.provisionOptions(addr, logger)...)
	if err != nil {
		return err
	}
	worker, err := compact.NewWorker(st, settings, opts)
	if err != nil {
		return o.flags.explain(err)
	}
	if o.once {
		rs, err := worker.RunOnce(ctx)
		fmt.Fprintf(w, "buckets_compacted: %d\nsamples: %d\nraw_cells_deleted: %d\nrollup_cells_written: %d\nbuckets_left_raw: %d\n"+
			"buckets_left_to_next_round: %d\nrows_read: %d\ncells_read: %d\nsalts_done: %d\nsalts_busy: %d\nsalts_failed: %d\nduration: %s\n",
			rs.Rows, rs.Samples, rs.RawCells, rs.RollupCells, rs.Skipped, rs.Conflicts, rs.RowsRead, rs.CellsRead,
			rs.Salts, rs.Busy, rs.Failed, rs.Duration)
		return err
	}
	logger.Info("compaction worker started", "storage", addr.String(), "owner", opts.Owner,
		"interval", opts.Interval, "grace", opts.Compact.Grace, "lease_ttl", opts.LeaseTTL, "rollups", schema.FormatRollups(opts.Compact.Rollups))
	worker.Run(ctx)
	logger.Info("stopped")
	return nil
}

// startCompaction starts the compaction worker of tsdb serve on st, which stays
// open until the worker stopped: it runs until ctx is done, and wg.Wait waits
// for it.
func startCompaction(ctx context.Context, st kv.Store, settings schema.Settings, opts compact.WorkerOptions,
	wg *sync.WaitGroup, logger *slog.Logger) error {
	worker, err := compact.NewWorker(st, settings, opts)
	if err != nil {
		return fmt.Errorf("compaction worker: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		worker.Run(ctx)
	}()
	logger.Info("compaction worker started", "owner", opts.Owner, "interval", opts.Interval,
		"grace", opts.Compact.Grace, "lease_ttl", opts.LeaseTTL, "rollups", schema.FormatRollups(opts.Compact.Rollups))
	return nil
}

// registerCompactionFlags binds tsdb serve's --compact.* flags: the worker's,
// and --compact.enabled.
func (o *serveOptions) registerCompactionFlags() {
	o.compact = defaultWorkerOptions()
	o.flags.flag("compact.enabled", "", "Run the compaction worker (what tsdb compact runs) in this process once "+
		"the store is open.").Default("true").BoolVar(&o.compactEnabled)
	registerCompactFlags(o.flags, &o.compact)
	registerApplyFlags(o.flags, &o.compact.Compact.Apply)
}
