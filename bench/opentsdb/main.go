package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// Target names, as -targets takes them and the progress lines print them.
const (
	targetOpenTSDB = "opentsdb"
	targetTSDB     = "tsdb"
)

// config is everything a run needs, from the flags.
type config struct {
	load Load
	// warmup is the points per series of the warm-up load (metrics warmup.*),
	// sent to each target before its clock starts; 0 for none.
	warmup   int
	rounds   int
	targets  []string // of targetOpenTSDB, targetTSDB, in the order of odd rounds
	sync     bool     // ?sync for OpenTSDB
	idle     time.Duration
	settle   time.Duration
	timeout  time.Duration // per request
	progress time.Duration
	tables   bool // flush, major-compact and measure each round's tables
	tsdHeap  string
	tsdbBin  string
	tsdbArgs []string
	// profile is -tsdb-profile: where to write a CPU profile of tsdb serve over
	// the first round's ingest, profileFor long; "" for none.
	profile    string
	profileFor time.Duration
	hbase      hbaserun.Flags
	out        string
	workDir    string
	keep       bool

	root  string // the module root (set by run)
	runID string // names this run's HBase tables (set by run)
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Args[1:], os.Stdout, log); err != nil {
		if err == flag.ErrHelp {
			return
		}
		log.Error("bench opentsdb failed", "err", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("opentsdb", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: go run ./bench/opentsdb [flags]\n\n"+
			"Sends the same /api/put load to a real OpenTSDB and to tsdb serve on the same HBase, in alternating\n"+
			"rounds, and prints points/s and CPU-seconds per million points of each (bench/opentsdb/doc.go).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	c := config{load: Load{Prefix: "bench."}}
	fs.IntVar(&c.load.Hosts, "hosts", 100, "hosts (the host tag; one collector each)")
	fs.IntVar(&c.load.Metrics, "metrics", 100, "metric names per host (even ones integer counters, odd ones float gauges)")
	fs.IntVar(&c.load.Points, "points", 240, "points per series")
	fs.DurationVar(&c.load.Interval, "interval", time.Second, "time between a series' points; the span ends when the round starts "+
		"(whole seconds go out in seconds, as the collectors send them, anything else in milliseconds)")
	fs.IntVar(&c.load.Senders, "senders", 32, "concurrent senders, each owning the hosts h with h mod senders == its number, one request in flight each")
	fs.IntVar(&c.load.Batch, "batch", 500, "datapoints per request (a JSON array), as scollector batches them")
	fs.BoolVar(&c.load.Gzip, "gzip", false, "gzip every request body (Content-Encoding: gzip), as scollector does; tcollector does not")
	fs.IntVar(&c.warmup, "warmup", 5, "points per series sent to each target before its clock starts, on other metric names (warmup.*): "+
		"the JVM's JIT and both clients' region lookups warm up, the measured series stay new; 0 for none")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; each runs every target once on new tables, the order alternating (OpenTSDB first in odd rounds)")
	targets := fs.String("targets", targetOpenTSDB+","+targetTSDB, "comma-separated targets to run: "+targetOpenTSDB+", "+targetTSDB)
	fs.BoolVar(&c.sync, "sync", true, "ask OpenTSDB to answer only once HBase stored each request (?sync): without it OpenTSDB "+
		"acknowledges points it has only queued, and fails none that HBase refuses")
	fs.DurationVar(&c.idle, "idle", 11*time.Second, "after the ingest, a target and its HBase are idle once each used under 5 % of a core "+
		"over this long (longer than OpenTSDB's 10 s compaction flush interval)")
	fs.DurationVar(&c.settle, "settle", time.Minute, "longest wait for the target and HBase to go idle after the ingest")
	fs.DurationVar(&c.timeout, "request-timeout", 2*time.Minute, "longest wait for one request's answer (a request that times out fails its points)")
	fs.DurationVar(&c.progress, "progress", 5*time.Second, "how often a progress line (points answered, points/s) goes to stderr")
	fs.BoolVar(&c.tables, "tables", true, "flush and major-compact each round's tables after the measures and report their bytes per point "+
		"(with an HBase whose files are known: not with -hbase-zk)")
	fs.StringVar(&c.tsdHeap, "tsd-heap", "1g", "the OpenTSDB JVM's heap (-Xmx, OPENTSDB_HEAP)")
	fs.StringVar(&c.tsdbBin, "tsdb-bin", "", "run this tsdb binary instead of building ./cmd/tsdb from the working tree")
	tsdbArgs := fs.String("tsdb-args", "", "more flags for every tsdb serve, space-separated (e.g. --log.level=debug)")
	fs.StringVar(&c.profile, "tsdb-profile", "", "write a CPU profile of tsdb serve (--web.enable-pprof) over the first round's ingest to this file")
	fs.DurationVar(&c.profileFor, "tsdb-profile-for", 30*time.Second, "how long the -tsdb-profile profile runs from the start of the ingest")
	fs.StringVar(&c.hbase.RunDir, "hbase-run", "", "use the HBase that testing/hbase/hbase.sh already runs in this HBTSDB_HBASE_RUN directory "+
		"(its JVM's CPU, WAL and tables are measured); default: start one in <workdir>/hbase and stop it at the end")
	fs.StringVar(&c.hbase.ZK, "hbase-zk", "", "use the running HBase at this ZooKeeper host:port instead (no HBase JVM, WAL or table figures)")
	fs.StringVar(&c.out, "out", "", "also write the Markdown table to this file")
	fs.StringVar(&c.workDir, "workdir", "", "where the binary, logs and the started HBase go (default: a new temporary directory)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (logs) at the end")
	quick := fs.Bool("quick", false, "a smoke run: 10 hosts × 10 metrics × 40 points, 100-point requests, 4 senders, 1 round, "+
		"1 warm-up point, 2 s idle window, 20 s settle (flags given explicitly win)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, value := range map[string]string{"hosts": "10", "metrics": "10", "points": "40", "batch": "100",
			"senders": "4", "rounds": "1", "warmup": "1", "idle": "2s", "settle": "20s"} {
			if !set[name] {
				if err := fs.Set(name, value); err != nil {
					return c, fmt.Errorf("-quick: set -%s: %w", name, err)
				}
			}
		}
	}
	if err := c.load.Validate(); err != nil {
		return c, err
	}
	if c.hbase.ZK != "" && c.hbase.RunDir != "" {
		return c, fmt.Errorf("-hbase-zk and -hbase-run name two HBases: give one")
	}
	c.hbase.Start = c.hbase.ZK == "" && c.hbase.RunDir == ""
	for _, t := range strings.Split(*targets, ",") {
		t = strings.TrimSpace(t)
		if t != targetOpenTSDB && t != targetTSDB {
			return c, fmt.Errorf("-targets: unknown target %q (want %s, %s)", t, targetOpenTSDB, targetTSDB)
		}
		if !slices.Contains(c.targets, t) {
			c.targets = append(c.targets, t)
		}
	}
	slices.Sort(c.targets) // opentsdb, tsdb
	c.tsdbArgs = strings.Fields(*tsdbArgs)
	if c.profile != "" {
		c.tsdbArgs = append(c.tsdbArgs, "--web.enable-pprof")
	}
	switch {
	case c.rounds < 1:
		return c, fmt.Errorf("-rounds must be at least 1, got %d", c.rounds)
	case c.warmup < 0:
		return c, fmt.Errorf("-warmup must not be negative, got %d", c.warmup)
	case c.idle <= 0 || c.settle < c.idle || c.timeout <= 0 || c.progress <= 0:
		return c, fmt.Errorf("-idle, -request-timeout and -progress must be positive and -settle at least -idle")
	}
	return c, nil
}

// warmupLoad is the warm-up: the load's shape with warmup points per series
// on metrics warmup.*.
func (c config) warmupLoad() Load {
	w := c.load
	w.Points, w.Prefix = c.warmup, "warmup."
	return w
}

func run(args []string, stdout io.Writer, log *slog.Logger) (err error) {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if c.root, err = server.ModuleRoot(ctx); err != nil {
		return err
	}
	c.runID = strconv.FormatInt(time.Now().Unix(), 36)
	var removeWorkDir func()
	if c.workDir, removeWorkDir, err = server.WorkDir(c.workDir, "hbtsdb-bench-opentsdb-", c.keep); err != nil {
		return err
	}
	defer removeWorkDir()
	log.Info("work directory", "dir", c.workDir, "kept", c.keep)
	machine := machineNow()

	if slices.Contains(c.targets, targetTSDB) {
		if c.tsdbBin == "" {
			c.tsdbBin = filepath.Join(c.workDir, "tsdb")
			if err := server.BuildTSDB(ctx, log, c.root, c.tsdbBin); err != nil {
				return err
			}
		} else if _, err := os.Stat(c.tsdbBin); err != nil {
			return fmt.Errorf("-tsdb-bin: %w", err)
		}
	}
	c.hbase.DefaultRunDir = filepath.Join(c.workDir, "hbase")
	hb, err := hbaserun.Open(ctx, log, c.root, c.hbase)
	if err != nil {
		return err
	}
	defer func() {
		if serr := hb.Stop(c.root); serr != nil && err == nil {
			err = serr
		}
	}()
	log.Info("HBase", "zk", hb.ZK, "run_dir", hb.RunDir, "started", hb.Started)

	client := &http.Client{Timeout: c.timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: c.load.Senders + 1,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()
	s := &sender{client: client, log: log, query: putQuery(c.sync), progress: c.progress}

	t0 := time.Now()
	results := map[string][]roundResult{}
	for round := 1; round <= c.rounds; round++ {
		log.Info("encoding the load", "round", round, "points", c.load.Total(), "batch", c.load.Batch, "senders", c.load.Senders)
		enc, err := c.load.Encode(time.Now())
		if err != nil {
			return err
		}
		var warm *Encoded
		if c.warmup > 0 {
			// The warm-up's points lie in the measured span (from its start), so
			// that neither store gets older rows to compact or mark late.
			if warm, err = c.warmupLoad().Encode(enc.Start.Add(time.Duration(c.warmup-1) * c.load.Interval)); err != nil {
				return err
			}
		}
		for _, t := range roundOrder(c.targets, round) {
			log.Info("round", "round", round, "of", c.rounds, "target", t)
			res, err := runOne(ctx, log, c, s, hb, t, round, enc, warm)
			if err != nil {
				return fmt.Errorf("round %d: %s: %w", round, t, err)
			}
			results[t] = append(results[t], res)
		}
	}
	log.Info("rounds done", "rounds", c.rounds, "took", time.Since(t0).Round(time.Second))

	table := renderTable(c, hb, results, machine, machineNow())
	fmt.Fprint(stdout, table)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(table), 0o644); err != nil {
			return fmt.Errorf("write -out: %w", err)
		}
		log.Info("table written", "file", c.out)
	}
	return nil
}

// roundOrder is the order of the targets in a round: as given in odd rounds,
// reversed in even ones, so that neither always runs on the HBase the other
// has just loaded.
func roundOrder(targets []string, round int) []string {
	order := slices.Clone(targets)
	if round%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// machine is what the table says of the machine: its cores and load.
type machine struct {
	cores   int
	loadavg string // the 1, 5 and 15 minute load averages
}

func machineNow() machine {
	m := machine{cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.loadavg = strings.Join(f[:3], " ")
		}
	}
	return m
}
