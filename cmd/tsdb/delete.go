package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

// deleteOptions are tsdb delete's settings.
type deleteOptions struct {
	matches    []string
	start, end string
	dryRun     bool
	salts      int
	worker     compact.WorkerOptions // LeaseTTL and Compact.Apply (the flags tsdb compact has)
	flags      *binder
}

func registerDelete(a *app) {
	cmd := a.kp.Command("delete", "Delete the samples of the series matching --match with timestamps in [--start, --end].\n\n"+
		"What POST /api/v1/admin/tsdb/delete_series does (tsdb serve --web.enable-admin-api): the samples go from raw\n"+
		"cells and compacted chunks (rewritten without them), rollup cells summarising them are recomputed from what\n"+
		"is left (or voided, so that queries read the data rows), and exemplars in the range go too. Each salt is\n"+
		"rewritten under its compaction lease, as tsdb compact holds it, so a running compaction waits or is waited\n"+
		"for. It prints what it removed; --dry-run only counts. A delete that stopped part way (killed, store error)\n"+
		"is finished by running the same command again.")
	o := &deleteOptions{worker: defaultWorkerOptions(), flags: newBinder(cmd)}
	flag(cmd, "match", "Series selector, e.g. 'up{job=\"node\"}'; repeat it for several (a series matching any is deleted). "+
		"At least one matcher must not match the empty string.").Required().StringsVar(&o.matches)
	flag(cmd, "start", "First timestamp deleted (inclusive): RFC 3339 (2026-12-01T00:00:00Z) or Unix seconds.").Required().StringVar(&o.start)
	flag(cmd, "end", "Last timestamp deleted (inclusive): RFC 3339 or Unix seconds.").Required().StringVar(&o.end)
	flag(cmd, "dry-run", "Count what would be removed; delete nothing.").BoolVar(&o.dryRun)
	namedDuration(o.flags, "compact.lease-ttl", "compact: WorkerOptions.LeaseTTL", "How long the delete's lease on a salt "+
		"lasts unless renewed (the compaction lease, shared with tsdb compact and tsdb serve).", &o.worker.LeaseTTL)
	registerApplyFlags(o.flags, &o.worker.Compact.Apply)
	registerDeleteConcurrency(o.flags, &o.salts)
	a.actions[cmd.FullCommand()] = func(ctx context.Context, logger *slog.Logger) error {
		return runDelete(ctx, a.out, a.common, o, logger)
	}
}

// registerDeleteConcurrency binds --delete.concurrency (tsdb delete and tsdb
// serve's delete_series) into salts.
func registerDeleteConcurrency(b *binder, salts *int) {
	*salts = compact.DefaultDeleteSalts
	b.int("delete.concurrency", "compact: DeleteOptions.Salts", "How many salts a delete rewrites at once, each under "+
		"its compaction lease: on HBase a delete's time is round trips, which salts done at once overlap.", salts)
}

// checkDeleteConcurrency refuses a --delete.concurrency below 1.
func checkDeleteConcurrency(salts int) error {
	if salts < 1 {
		return fmt.Errorf("--delete.concurrency must be at least 1, got %d", salts)
	}
	return nil
}

// parseDeleteTime parses a --start or --end value: Unix seconds (with a
// fraction) or RFC 3339, in ms.
func parseDeleteTime(name, v string) (int64, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return int64(math.Round(f * 1000)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("--%s=%s: not RFC 3339 (2026-12-01T00:00:00Z) nor Unix seconds", name, v)
	}
	return t.UnixMilli(), nil
}

// deleteRequest checks the flags into a request.
func (o *deleteOptions) request() (db.DeleteRequest, error) {
	var req db.DeleteRequest
	var err error
	if req.Mint, err = parseDeleteTime("start", o.start); err != nil {
		return req, err
	}
	if req.Maxt, err = parseDeleteTime("end", o.end); err != nil {
		return req, err
	}
	if req.Maxt < req.Mint {
		return req, fmt.Errorf("--end=%s is before --start=%s", o.end, o.start)
	}
	if req.Mint < 0 {
		req.Mint = 0
	}
	p := parser.NewParser(parser.Options{})
	for _, m := range o.matches {
		ms, err := p.ParseMetricSelector(m)
		if err != nil {
			return req, fmt.Errorf("--match=%s: %w", m, err)
		}
		empty := true
		for _, x := range ms {
			empty = empty && x.Matches("")
		}
		if empty {
			return req, fmt.Errorf("--match=%s: every matcher matches the empty string: it would select series by what they lack", m)
		}
		req.MatcherSets = append(req.MatcherSets, ms)
	}
	return req, nil
}

// runDelete opens the store, deletes (or counts) and prints what it removed.
func runDelete(ctx context.Context, w io.Writer, c *commonFlags, o *deleteOptions, logger *slog.Logger) error {
	req, err := o.request()
	if err != nil {
		return err
	}
	addr, want, err := c.resolve()
	if err != nil {
		return err
	}
	tables, err := c.tableOptions(want)
	if err != nil {
		return err
	}
	if err := o.flags.explain(o.worker.Compact.Apply.Validate("compact: Options.Apply")); err != nil {
		return err
	}
	if err := checkDeleteConcurrency(o.salts); err != nil {
		return err
	}
	st, err := c.openExistingStore(ctx, addr, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	settings, err := provision.Open(ctx, st, want, tables, false, c.provisionOptions(addr, logger)...)
	if err != nil {
		return err
	}
	d, err := db.Open(ctx, db.Options{Store: st, Settings: settings, Logger: logger, Rollups: tables.Rollups,
		RawRetention: tables.RawRetention})
	if err != nil {
		return err
	}
	defer d.Close()
	began := time.Now()
	lastLog := began
	opts := compact.DeleteOptions{Owner: workerOwner(), LeaseTTL: o.worker.LeaseTTL, DryRun: o.dryRun, Salts: o.salts,
		Compact: compact.Options{Apply: o.worker.Compact.Apply, Logger: logger},
		Progress: func(done compact.DeleteStats, rows int) {
			if time.Since(lastLog) >= 10*time.Second {
				lastLog = time.Now()
				logger.Info("delete progress", "rows_done", done.Rows, "rows", rows, "samples", done.Samples,
					"elapsed", time.Since(began).Round(time.Second))
			}
		}}
	stats, err := d.Delete(ctx, req, opts)
	if o.dryRun {
		fmt.Fprintln(w, "dry run: nothing was deleted; a delete would remove:")
	}
	fmt.Fprintf(w, "series: %d\nrows: %d\nsamples: %d\nraw_cells: %d\nchunks_rewritten: %d\nrollup_cells_rewritten: %d\n"+
		"exemplars: %d\nunindexed_series_days: %d\nduration: %s\n", stats.Series, stats.Rows, stats.Samples, stats.RawCells, stats.Chunks,
		stats.RollupCells, stats.Exemplars, stats.Unindexed, time.Since(began).Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("%w (run the same tsdb delete again to finish it)", err)
	}
	return nil
}
