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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/figures"
	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// config is everything a run needs, from the flags.
type config struct {
	load      rwload.Load
	rounds    int
	queryRuns int
	settle    time.Duration
	out       string
	workDir   string
	keep      bool
	tsdbBin   string
	// tsdbBaseBin is -tsdb-base-bin: a second tsdb binary (e.g. built from an older
	// commit) run as the "base" servers next to tsdb, for before/after figures
	// measured in the same rounds.
	tsdbBaseBin string
	tsdbArgs    []string // -tsdb-args: more flags for every tsdb serve
	// hbase is the HBase of the tsdb (HBase) servers (-hbase, -hbase-run,
	// -hbase-zk); DefaultRunDir is set by run.
	hbase   hbaserun.Flags
	servers []string // the servers' short names, in round order

	root  string // the module root (set by run)
	runID string // names this run's HBase tables (set by run)
}

// serverOrder is every server's short name, in the order a round runs them.
var serverOrder = []string{"tsdb", "tsdb-base", "tsdb-hbase", "tsdb-hbase-base", "prometheus", "victoriametrics"}

// selectServers returns the servers a run compares: those of list (comma-separated
// short names) or, when list is empty, tsdb, Prometheus and VictoriaMetrics (not with
// noVM: a histogram load or remote write 2.0), plus
// tsdb (HBase) when there is an HBase and the base servers when there is a base
// binary. Either way, in serverOrder.
func selectServers(list string, hbase, base, noVM bool) ([]string, error) {
	want := map[string]bool{}
	if list == "" {
		want["tsdb"], want["prometheus"], want["victoriametrics"] = true, true, !noVM
		want["tsdb-hbase"] = hbase
		want["tsdb-base"], want["tsdb-hbase-base"] = base, base && hbase
	} else {
		for _, name := range strings.Split(list, ",") {
			name = strings.TrimSpace(name)
			switch {
			case !slices.Contains(serverOrder, name):
				return nil, fmt.Errorf("-servers: unknown server %q (want some of %s)", name, strings.Join(serverOrder, ", "))
			case strings.HasPrefix(name, "tsdb-hbase") && !hbase:
				return nil, fmt.Errorf("-servers: %s needs an HBase: -hbase, -hbase-run or -hbase-zk", name)
			case strings.HasSuffix(name, "-base") && !base:
				return nil, fmt.Errorf("-servers: %s needs -tsdb-base-bin", name)
			case name == "victoriametrics" && noVM:
				return nil, fmt.Errorf("-servers: victoriametrics is not run with -load %s (it stores no native histograms) or -proto 2", rwload.KindHistograms)
			}
			want[name] = true
		}
	}
	var names []string
	for _, name := range serverOrder {
		if want[name] {
			names = append(names, name)
		}
	}
	return names, nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Args[1:], os.Stdout, log); err != nil {
		log.Error("bench compare failed", "err", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.load.Hosts, "hosts", 100, "hosts (the host label)")
	fs.IntVar(&c.load.SeriesPerHost, "series", 100, "series per host (one per metric name)")
	fs.IntVar(&c.load.Samples, "samples", 240, "samples per series")
	fs.DurationVar(&c.load.Interval, "interval", 15*time.Second, "time between a series' samples (the scrape interval)")
	fs.IntVar(&c.load.Senders, "senders", 4, "concurrent senders, each owning the series that hash to it")
	fs.IntVar(&c.load.RequestSize, "request-size", 2000, "samples per remote-write request")
	fs.IntVar(&c.rounds, "rounds", 3, "interleaved rounds (each server once per round, on a fresh data directory)")
	fs.IntVar(&c.queryRuns, "query-runs", 20, "timed runs per query (after one warm-up run); the median is reported")
	fs.DurationVar(&c.settle, "settle", 20*time.Second, "longest wait for a server to go idle after the ingest")
	fs.StringVar(&c.out, "out", "", "also write the Markdown table to this file")
	fs.StringVar(&c.workDir, "workdir", "", "where the binaries and data directories go (default: a new temporary directory)")
	fs.StringVar(&c.tsdbBin, "tsdb-bin", "", "run this tsdb binary instead of building ./cmd/tsdb from the working tree "+
		"(e.g. one built from a clean checkout of a commit)")
	fs.StringVar(&c.tsdbBaseBin, "tsdb-base-bin", "", "also run this tsdb binary, as \"tsdb (embedded) base\" (and \"tsdb (HBase) base\" "+
		"with an HBase), in the same rounds: before/after figures under the same neighbours")
	tsdbArgs := fs.String("tsdb-args", "", "more flags for every `tsdb serve`, space-separated (e.g. --web.enable-pprof)")
	c.hbase.Register(fs)
	servers := fs.String("servers", "", "comma-separated servers to run, of "+strings.Join(serverOrder, ", ")+
		" (default: tsdb, prometheus, victoriametrics, and tsdb-hbase with an HBase, the -base ones with -tsdb-base-bin)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (data directories and server logs) at the end")
	loadKind := fs.String("load", rwload.KindFloats, "the load: "+rwload.KindFloats+" (counters and gauges) or "+rwload.KindHistograms+
		" (every series a native histogram of -buckets buckets; -hosts defaults to 10, so 1 000 series; "+
		"VictoriaMetrics, which does not store native histograms, is left out)")
	proto := fs.Int("proto", 1, "the remote-write protocol: 1 (prometheus.WriteRequest) or 2 (io.prometheus.write.v2.Request)")
	fs.IntVar(&c.load.Buckets, "buckets", 30, "with -load "+rwload.KindHistograms+": populated buckets per histogram sample")
	quick := fs.Bool("quick", false, "a smoke run: 10 hosts × 10 series × 40 samples, 500-sample requests, 1 round, 3 query runs "+
		"(flags given explicitly win)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch *loadKind {
	case rwload.KindFloats:
	case rwload.KindHistograms:
		c.load.Histograms = true
		if !set["hosts"] && !*quick {
			c.load.Hosts = 10
		}
	default:
		return c, fmt.Errorf("-load: %q, want %s or %s", *loadKind, rwload.KindFloats, rwload.KindHistograms)
	}
	switch *proto {
	case 1:
	case 2:
		c.load.V2 = true
	default:
		return c, fmt.Errorf("-proto: %d, want 1 or 2", *proto)
	}
	if *quick {
		// The smoke sizes, for the flags not given explicitly.
		for name, value := range map[string]string{"hosts": "10", "series": "10", "samples": "40",
			"request-size": "500", "rounds": "1", "query-runs": "3", "settle": "5s"} {
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
	if err := c.hbase.Validate(); err != nil {
		return c, err
	}
	c.tsdbArgs = strings.Fields(*tsdbArgs)
	var err error
	hasHBase := c.hbase.Any()
	if c.servers, err = selectServers(*servers, hasHBase, c.tsdbBaseBin != "", c.load.Histograms || c.load.V2); err != nil {
		return c, err
	}
	if len(c.servers) == 0 {
		return c, fmt.Errorf("-servers: no server to run")
	}
	if c.rounds < 1 || c.queryRuns < 1 {
		return c, fmt.Errorf("-rounds and -query-runs must be at least 1")
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
	c.root, c.runID = root, strconv.FormatInt(time.Now().Unix(), 36)
	var removeWorkDir func()
	if c.workDir, removeWorkDir, err = server.WorkDir(c.workDir, "hbtsdb-bench-compare-", c.keep); err != nil {
		return err
	}
	defer removeWorkDir()
	log.Info("work directory", "dir", c.workDir, "kept", c.keep)

	c.hbase.DefaultRunDir = filepath.Join(c.workDir, "hbase")
	hb, err := hbaserun.Open(ctx, log, root, c.hbase)
	if err != nil {
		return err
	}
	defer func() {
		if serr := hb.Stop(root); serr != nil && err == nil {
			err = serr
		}
	}()
	kinds, err := locateServers(ctx, log, root, c, hb)
	if err != nil {
		return err
	}
	t0 := time.Now()
	results, err := runRounds(ctx, log, c, kinds)
	if err != nil {
		return err
	}
	log.Info("rounds done", "rounds", c.rounds, "took", time.Since(t0).Round(time.Second))

	table := renderTable(c, kinds, results, time.Now())
	fmt.Fprint(stdout, table)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(table), 0o644); err != nil {
			return fmt.Errorf("write -out: %w", err)
		}
		log.Info("table written", "file", c.out)
	}
	return nil
}

// locateServers builds tsdb from the working tree into the work directory (unless
// -tsdb-bin names a binary to use) and finds (building when not cached) the
// Prometheus and VictoriaMetrics binaries, of the servers the run compares.
func locateServers(ctx context.Context, log *slog.Logger, root string, c config, hb *hbaserun.Instance) ([]*serverKind, error) {
	b := binaries{tsdb: c.tsdbBin, tsdbBase: c.tsdbBaseBin, tsdbArgs: c.tsdbArgs, hbase: hb}
	if b.tsdb == "" {
		b.tsdb = filepath.Join(c.workDir, "tsdb")
		if err := server.BuildTSDB(ctx, log, root, b.tsdb); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(b.tsdb); err != nil {
		return nil, fmt.Errorf("-tsdb-bin: %w", err)
	}
	if b.tsdbBase != "" {
		if _, err := os.Stat(b.tsdbBase); err != nil {
			return nil, fmt.Errorf("-tsdb-base-bin: %w", err)
		}
	}
	var err error
	if slices.Contains(c.servers, "prometheus") {
		log.Info("locating Prometheus (testing/prometheus/prometheus.sh; builds it once, 10-17 minutes cold)")
		if b.prom, err = server.Script(ctx, root, "testing/prometheus/prometheus.sh", "build"); err != nil {
			return nil, err
		}
		if b.promVersion, err = server.Script(ctx, root, "testing/prometheus/prometheus.sh", "version"); err != nil {
			return nil, err
		}
	}
	if slices.Contains(c.servers, "victoriametrics") {
		if b.victoria, b.victoriaVersion, err = server.LocateVictoriaMetrics(ctx, log, root); err != nil {
			return nil, err
		}
	}
	kinds := serverKinds(b, c.servers)
	for _, k := range kinds {
		log.Info("server", "name", k.Name, "bin", k.Bin)
	}
	return kinds, nil
}

// roundResult is one server's figures in one round.
type roundResult struct {
	ingest  ingestResult
	peakRSS int64
	// diskStopped is the apparent size of the data directory after a graceful stop.
	diskStopped int64
	queries     []queryResult
	// hbase is what a tsdb (HBase) server's round cost its HBase, when measured
	// (-hbase, -hbase-run); nil otherwise.
	hbase *hbaseRound
	// late is the share of the load's samples that tsdb takes as late when the
	// ingest starts (figures.LateShare).
	late float64
}

// runRounds runs every server once per round, in order, each on a fresh directory, and
// returns results[server][round].
func runRounds(ctx context.Context, log *slog.Logger, c config, kinds []*serverKind) ([][]roundResult, error) {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: c.load.Senders + 1,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()
	qs := queries(c.load)
	results := make([][]roundResult, len(kinds))
	for round := 1; round <= c.rounds; round++ {
		log.Info("encoding the load", "round", round, "samples", c.load.TotalSamples(),
			"requests_of", c.load.RequestSize, "senders", c.load.Senders)
		el, err := c.load.Encode(time.Now())
		if err != nil {
			return nil, err
		}
		for i, k := range kinds {
			log.Info("round", "round", round, "of", c.rounds, "server", k.Short)
			res, err := runOne(ctx, log, c, client, k, round, el, qs)
			if err != nil {
				return nil, fmt.Errorf("round %d: %w", round, err)
			}
			results[i] = append(results[i], res)
		}
		checkSeriesCounts(log, round, kinds, results, qs)
	}
	return results, nil
}

// runOne starts k on a fresh directory, ingests, measures and queries it, and stops it.
func runOne(ctx context.Context, log *slog.Logger, c config, client *http.Client, k *serverKind, round int, el *rwload.EncodedLoad, qs []benchQuery) (res roundResult, err error) {
	base := filepath.Join(c.workDir, fmt.Sprintf("round-%d", round), k.Short)
	dir := filepath.Join(base, "data")
	var (
		tablePrefix string
		jvmPid      int
		wal0        map[string]int64
	)
	startTimeout := time.Minute
	if k.hbase != nil {
		// New tables every round (and every run, on an HBase that outlives it).
		tablePrefix = fmt.Sprintf("bench%s-r%d-%s-", c.runID, round, k.Short)
		if !k.hbase.Started && !c.keep {
			// An HBase that outlives the run (-hbase-run, -hbase-zk) keeps no
			// tables of it; this runs after the server has stopped.
			defer func() {
				if derr := hbaserun.DropTables(ctx, k.hbase.ZK, tablePrefix); derr != nil && err == nil {
					err = fmt.Errorf("%s: %w", k.Short, derr)
				}
			}()
		}
		startTimeout = 3 * time.Minute // creating the tables takes HBase a while
		if k.hbase.Measured() {
			if jvmPid, err = k.hbase.JVMPid(); err != nil {
				return res, err
			}
		}
	}
	r, err := k.Start(ctx, dir, tablePrefix, filepath.Join(base, "server.log"), startTimeout)
	if err != nil {
		return res, err
	}
	stopped := false
	defer func() {
		if !stopped {
			if serr := r.Stop(); serr != nil && err == nil {
				err = serr
			}
		}
		if !c.keep {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = fmt.Errorf("%s: remove data directory: %w", k.Short, rerr)
			}
		}
	}()
	log.Info("started", "server", k.Short, "pid", r.Pid(), "url", r.Base, "dir", dir)

	total := c.load.TotalSamples()
	if jvmPid != 0 {
		if wal0, err = hbaserun.WALFiles(k.hbase.RootDir()); err != nil {
			return res, err
		}
	}
	cpu0, err := proc.CPUTime(r.Pid())
	if err != nil {
		return res, err
	}
	res.late = figures.LateShare(el.Start, el.End, c.load.Interval, time.Now())
	in, err := ingest(ctx, log, client, r, el, total, jvmPid)
	if err != nil {
		return res, err
	}
	if in.samples != total {
		return res, fmt.Errorf("%s: sent %d samples, want %d", k.Short, in.samples, total)
	}
	if err := r.FlushData(ctx); err != nil {
		return res, err
	}
	flushed := time.Now()
	idle, settled, err := proc.Settle(ctx, r.Pid(), c.settle)
	if err != nil {
		return res, err
	}
	// cpu0 was read just before ingest read its own start: the difference is the
	// server's idle CPU for a few microseconds.
	in.cpuIdle, in.settled = idle-cpu0, settled
	if jvmPid != 0 {
		// tsdb is idle; then HBase (memstore flushes, compactions the ingest caused).
		h := &hbaseRound{jvmCPU: in.jvmCPU}
		jvmIdle, jvmSettled, err := proc.Settle(ctx, jvmPid, c.settle)
		if err != nil {
			return res, err
		}
		// The JVM's CPU at the start of the ingest: ingest read it just before cpu0.
		h.jvmCPUIdle, h.jvmSettled = jvmIdle-in.jvmCPU0, jvmSettled
		wal1, err := hbaserun.WALFiles(k.hbase.RootDir())
		if err != nil {
			return res, err
		}
		h.walBytes = hbaserun.WALGrowth(wal0, wal1)
		res.hbase = h
	}
	if wait := k.FlushDelay - time.Since(flushed); wait > 0 {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
	if in.diskByte, err = proc.DirBytes(dir); err != nil {
		return res, fmt.Errorf("%s: %w", k.Short, err)
	}
	log.Info("ingested", "server", k.Short, "samples", in.samples, "took", in.wall.Round(time.Millisecond),
		"samples_per_s", int(float64(in.samples)/in.wall.Seconds()),
		"cpu_s_per_M", fmt.Sprintf("%.2f", figures.PerMillion(in.cpu, int64(in.samples))),
		"cpu_s_per_M_until_idle", fmt.Sprintf("%.2f", figures.PerMillion(in.cpuIdle, int64(in.samples))), "went_idle", settled,
		"disk_MiB", fmt.Sprintf("%.1f", float64(in.diskByte)/(1<<20)))
	res.ingest = in

	for _, q := range qs {
		qr, err := runQuery(ctx, client, r.Base, q, el.Start, el.End, c.queryRuns)
		if err != nil {
			return res, fmt.Errorf("%s: %w", k.Short, err)
		}
		if qr.series == 0 || qr.samples == 0 {
			log.Warn("WARNING: query returned no data", "server", k.Short, "query", q.expr, "step", q.step)
		}
		log.Info("query", "server", k.Short, "query", q.expr, "step", q.step, "series", qr.series,
			"samples", qr.samples, "median_ms", fmt.Sprintf("%.2f", ms(qr.median)))
		res.queries = append(res.queries, qr)
	}
	if res.peakRSS, err = proc.PeakRSS(r.Pid()); err != nil {
		return res, err
	}
	// Stopped gracefully, each server writes out what it buffers (VictoriaMetrics its
	// in-memory parts, flushed every 5 s otherwise): the disk it keeps the data in.
	stopped = true
	if err := r.Stop(); err != nil {
		return res, err
	}
	if res.diskStopped, err = proc.DirBytes(dir); err != nil {
		return res, fmt.Errorf("%s: %w", k.Short, err)
	}
	log.Info("stopped", "server", k.Short, "peak_rss_MiB", res.peakRSS>>20,
		"disk_after_stop_MiB", fmt.Sprintf("%.1f", float64(res.diskStopped)/(1<<20)))
	if res.hbase != nil {
		// What the round's tables keep on disk: flushed from the memstores and
		// compacted into one HFile per store, as they settle in the long run.
		tables, err := hbaserun.TablesWithPrefix(k.hbase.RootDir(), tablePrefix)
		if err != nil {
			return res, err
		}
		if err := k.hbase.Compact(ctx, c.root, tables); err != nil {
			return res, fmt.Errorf("%s: %w", k.Short, err)
		}
		if res.hbase.tableBytes, err = hbaserun.TableBytes(k.hbase.RootDir(), tables); err != nil {
			return res, fmt.Errorf("%s: %w", k.Short, err)
		}
		res.hbase.tables = len(tables)
		h := res.hbase
		log.Info("hbase", "server", k.Short, "jvm_cpu_s_per_M", fmt.Sprintf("%.2f", figures.PerMillion(h.jvmCPU, int64(in.samples))),
			"jvm_cpu_s_per_M_until_idle", fmt.Sprintf("%.2f", figures.PerMillion(h.jvmCPUIdle, int64(in.samples))), "jvm_went_idle", h.jvmSettled,
			"wal_bytes_per_sample", fmt.Sprintf("%.1f", float64(h.walBytes)/float64(in.samples)),
			"tables", len(tables), "table_bytes_per_sample", fmt.Sprintf("%.1f", float64(h.tableBytes)/float64(in.samples)))
	}
	return res, nil
}

// checkSeriesCounts warns when the servers answered a query of this round with
// different numbers of series.
func checkSeriesCounts(log *slog.Logger, round int, kinds []*serverKind, results [][]roundResult, qs []benchQuery) {
	for qi, q := range qs {
		var counts []string
		differ := false
		for i, k := range kinds {
			n := results[i][round-1].queries[qi].series
			counts = append(counts, fmt.Sprintf("%s=%d", k.Short, n))
			if n != results[0][round-1].queries[qi].series {
				differ = true
			}
		}
		if differ {
			log.Warn("WARNING: WARNING: the servers answered with different numbers of series",
				"round", round, "query", q.expr, "step", q.step, "series", strings.Join(counts, " "))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
