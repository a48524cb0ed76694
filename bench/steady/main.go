package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// config is everything a run needs, from the flags.
type config struct {
	run      runConfig
	backends []string // embedded, hbase: in this order
	vm       bool     // VictoriaMetrics beside tsdb
	out      string
	workDir  string
	keep     bool
	tsdbBin  string
	tsdbArgs []string
	hbase    hbaserun.Flags
}

// backendOrder is every backend a run can measure, in the order it runs them.
var backendOrder = []string{"embedded", "hbase"}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Args[1:], os.Stdout, log); err != nil {
		log.Error("bench steady failed", "err", err)
		os.Exit(1)
	}
}

// defaultRunConfig is the bench's run: an hour of node-exporter-like load on
// one-minute buckets (sixty "hours" in an hour), reported by tenths.
func defaultRunConfig() runConfig {
	return runConfig{
		load:     rwload.Load{Hosts: 100, SeriesPerHost: 50, Samples: 2, Interval: time.Second, Senders: 4, RequestSize: 2000},
		duration: time.Hour, bucketWidth: time.Minute, grace: 15 * time.Second, compactEvery: 10 * time.Second,
		queryRange: 30 * time.Minute, queryStep: 30 * time.Second, queryEvery: 10 * time.Second,
		scrapeEvery: 5 * time.Second, profileEvery: 30 * time.Second, parts: 10,
		drain: 10 * time.Minute, settle: 2 * time.Minute, stopLimit: 10 * time.Minute,
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("steady", flag.ContinueOnError)
	c := config{run: defaultRunConfig()}
	r := &c.run
	fs.DurationVar(&r.duration, "duration", r.duration, "how long the load runs on each backend")
	fs.IntVar(&r.load.Hosts, "hosts", r.load.Hosts, "hosts (the host label)")
	fs.IntVar(&r.load.SeriesPerHost, "series", r.load.SeriesPerHost, "series per host (one per metric name; c and g are series 0 and 1)")
	fs.DurationVar(&r.load.Interval, "interval", r.load.Interval, "scrape interval: every series gets a sample at the current time this often")
	fs.IntVar(&r.load.Senders, "senders", r.load.Senders, "concurrent senders, each owning the series that hash to it")
	fs.IntVar(&r.load.RequestSize, "request-size", r.load.RequestSize, "most samples per remote-write request")
	fs.DurationVar(&r.grace, "grace", r.grace, "tsdb serve --compact.grace")
	fs.DurationVar(&r.compactEvery, "compact-interval", r.compactEvery, "tsdb serve --compact.interval")
	fs.DurationVar(&r.queryRange, "query-range", r.queryRange, "each query covers this much, ending now")
	fs.DurationVar(&r.queryStep, "query-step", r.queryStep, "the queries' step")
	fs.DurationVar(&r.queryEvery, "query-every", r.queryEvery, "a round of the three queries starts this often")
	fs.DurationVar(&r.scrapeEvery, "scrape-every", r.scrapeEvery, "how often tsdb's /metrics and the processes' CPU are read")
	fs.DurationVar(&r.profileEvery, "profile-every", r.profileEvery, "length of each of tsdb's back-to-back CPU profiles; 0 takes none")
	fs.IntVar(&r.parts, "parts", r.parts, "the report's parts of the run (10: tenths)")
	fs.DurationVar(&r.drain, "drain", r.drain, "longest wait after the load for compaction to compact the last bucket")
	fs.DurationVar(&r.settle, "settle", r.settle, "longest wait for each process to go idle after that")
	fs.DurationVar(&r.stopLimit, "stop-limit", r.stopLimit, "longest wait for tsdb to exit after SIGTERM (then it is killed)")
	backends := fs.String("backends", "", "comma-separated backends, of "+strings.Join(backendOrder, ", ")+
		" (default: embedded, and hbase with an HBase)")
	fs.BoolVar(&c.vm, "vm", true, "run VictoriaMetrics beside tsdb under the same load (bench/victoriametrics.sh builds it once)")
	fs.StringVar(&c.out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&c.workDir, "workdir", "", "where the binary, data directories and logs go (default: a new temporary directory)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (and an outliving HBase's tables) at the end")
	fs.StringVar(&c.tsdbBin, "tsdb-bin", "", "run this tsdb binary instead of building ./cmd/tsdb from the working tree "+
		"(e.g. one built from an older commit: a before/after)")
	tsdbArgs := fs.String("tsdb-args", "", "more flags for tsdb serve, space-separated")
	c.hbase.Register(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.tsdbArgs = strings.Fields(*tsdbArgs)
	if err := c.hbase.Validate(); err != nil {
		return c, err
	}
	if err := r.load.Validate(); err != nil {
		return c, err
	}
	switch {
	case r.duration <= 0:
		return c, fmt.Errorf("-duration must be positive, got %s", r.duration)
	case r.parts < 1:
		return c, fmt.Errorf("-parts must be at least 1, got %d", r.parts)
	case r.queryEvery <= 0 || r.scrapeEvery <= 0 || r.queryStep <= 0 || r.queryRange <= 0:
		return c, errors.New("-query-every, -scrape-every, -query-step and -query-range must be positive")
	case r.profileEvery < 0 || r.profileEvery > 0 && r.profileEvery < time.Second:
		return c, fmt.Errorf("-profile-every must be 0 or at least 1s, got %s", r.profileEvery)
	}
	if *backends == "" {
		c.backends = []string{"embedded"}
		if c.hbase.Any() {
			c.backends = append(c.backends, "hbase")
		}
	} else {
		for _, name := range strings.Split(*backends, ",") {
			name = strings.TrimSpace(name)
			switch {
			case !slices.Contains(backendOrder, name):
				return c, fmt.Errorf("-backends: unknown backend %q (want some of %s)", name, strings.Join(backendOrder, ", "))
			case name == "hbase" && !c.hbase.Any():
				return c, errors.New("-backends: hbase needs an HBase: -hbase, -hbase-run or -hbase-zk")
			}
		}
		for _, name := range backendOrder {
			if strings.Contains(","+strings.ReplaceAll(*backends, " ", "")+",", ","+name+",") {
				c.backends = append(c.backends, name)
			}
		}
	}
	return c, nil
}

func run(args []string, stdout io.Writer, log *slog.Logger) (err error) {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := server.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	var removeWorkDir func()
	if c.workDir, removeWorkDir, err = server.WorkDir(c.workDir, "hbtsdb-bench-steady-", c.keep); err != nil {
		return err
	}
	defer removeWorkDir()
	log.Info("work directory", "dir", c.workDir, "kept", c.keep)
	c.hbase.DefaultRunDir = filepath.Join(c.workDir, "hbase")
	var hb *hbaserun.Instance
	if slices.Contains(c.backends, "hbase") {
		if hb, err = hbaserun.Open(ctx, log, root, c.hbase); err != nil {
			return err
		}
		defer func() {
			if serr := hb.Stop(root); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	bin := c.tsdbBin
	if bin == "" {
		bin = filepath.Join(c.workDir, "tsdb")
		if err := server.BuildTSDB(ctx, log, root, bin); err != nil {
			return err
		}
	} else if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("-tsdb-bin: %w", err)
	}
	var vm *server.Kind
	if c.vm {
		vmBin, vmVersion, err := server.LocateVictoriaMetrics(ctx, log, root)
		if err != nil {
			return err
		}
		k := server.VictoriaMetrics(vmBin, vmVersion)
		vm = &k
	}
	runID := strconv.FormatInt(time.Now().Unix(), 36)
	var report strings.Builder
	fmt.Fprintf(&report, "## Steady state (bench/steady), %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	for _, name := range c.backends {
		spec := backendSpec{name: name, vm: vm, dir: filepath.Join(c.workDir, name)}
		args := append(c.run.tsdbArgs(), c.tsdbArgs...)
		if name == "hbase" {
			spec.hbase, spec.tablePrefix = hb, fmt.Sprintf("steady%s-", runID)
			spec.kind = server.TSDBHBase("tsdb (HBase)", "tsdb-hbase", bin, hb.ZK, args)
		} else {
			spec.kind = server.TSDBEmbedded("tsdb (embedded)", "tsdb", bin, args)
		}
		log.Info("steady run", "backend", name, "duration", c.run.duration, "series", c.run.load.Series(),
			"interval", c.run.load.Interval, "victoriametrics", vm != nil)
		res, err := runBackend(ctx, log, c.run, spec)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if hb != nil && name == "hbase" && !hb.Started && !c.keep {
			if err := hbaserun.DropTables(ctx, hb.ZK, spec.tablePrefix); err != nil {
				return err
			}
		}
		section := renderRun(res)
		fmt.Fprint(stdout, section+"\n")
		report.WriteString(section + "\n")
	}
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(report.String()), 0o644); err != nil {
			return fmt.Errorf("write -out: %w", err)
		}
		log.Info("report written", "file", c.out)
	}
	return nil
}
