package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// config is everything a run needs, from the flags.
type config struct {
	load      load
	rounds    int
	queryRuns int
	settle    time.Duration
	out       string
	workDir   string
	keep      bool
	tsdbBin   string
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
	fs.IntVar(&c.load.hosts, "hosts", 100, "hosts (the host label)")
	fs.IntVar(&c.load.seriesPerHost, "series", 100, "series per host (one per metric name)")
	fs.IntVar(&c.load.samples, "samples", 240, "samples per series")
	fs.DurationVar(&c.load.interval, "interval", 15*time.Second, "time between a series' samples (the scrape interval)")
	fs.IntVar(&c.load.senders, "senders", 4, "concurrent senders, each owning the series that hash to it")
	fs.IntVar(&c.load.requestSize, "request-size", 2000, "samples per remote-write request")
	fs.IntVar(&c.rounds, "rounds", 3, "interleaved rounds (each server once per round, on a fresh data directory)")
	fs.IntVar(&c.queryRuns, "query-runs", 20, "timed runs per query (after one warm-up run); the median is reported")
	fs.DurationVar(&c.settle, "settle", 20*time.Second, "longest wait for a server to go idle after the ingest")
	fs.StringVar(&c.out, "out", "", "also write the Markdown table to this file")
	fs.StringVar(&c.workDir, "workdir", "", "where the binaries and data directories go (default: a new temporary directory)")
	fs.StringVar(&c.tsdbBin, "tsdb-bin", "", "run this tsdb binary instead of building ./cmd/tsdb from the working tree "+
		"(e.g. one built from a clean checkout of a commit)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (data directories and server logs) at the end")
	quick := fs.Bool("quick", false, "a smoke run: 10 hosts × 10 series × 40 samples, 500-sample requests, 1 round, 3 query runs "+
		"(flags given explicitly win)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		// The smoke sizes, for the flags not given explicitly.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, value := range map[string]string{"hosts": "10", "series": "10", "samples": "40",
			"request-size": "500", "rounds": "1", "query-runs": "3", "settle": "5s"} {
			if !set[name] {
				if err := fs.Set(name, value); err != nil {
					return c, fmt.Errorf("-quick: set -%s: %w", name, err)
				}
			}
		}
	}
	if err := c.load.validate(); err != nil {
		return c, err
	}
	if c.rounds < 1 || c.queryRuns < 1 {
		return c, fmt.Errorf("-rounds and -query-runs must be at least 1")
	}
	return c, nil
}

func run(args []string, stdout io.Writer, log *slog.Logger) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	if c.workDir == "" {
		if c.workDir, err = os.MkdirTemp("", "hbtsdb-bench-compare-"); err != nil {
			return fmt.Errorf("create work directory: %w", err)
		}
		if !c.keep {
			defer os.RemoveAll(c.workDir)
		}
	}
	log.Info("work directory", "dir", c.workDir, "kept", c.keep)

	kinds, err := locateServers(ctx, log, root, c.workDir, c.tsdbBin)
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

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the hbtsdb module: run from the repository (go run ./bench/compare)")
	}
	return filepath.Dir(gomod), nil
}

// locateServers builds tsdb from the working tree into workDir (unless tsdbBin names
// a binary to use) and finds (building
// when not cached) the Prometheus and VictoriaMetrics binaries.
func locateServers(ctx context.Context, log *slog.Logger, root, workDir, tsdbBin string) ([]*serverKind, error) {
	if tsdbBin == "" {
		tsdbBin = filepath.Join(workDir, "tsdb")
		log.Info("building tsdb from the working tree (release build, no -race)", "out", tsdbBin)
		build := exec.CommandContext(ctx, "go", "build", "-o", tsdbBin, "./cmd/tsdb")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/tsdb: %w", err)
		}
	} else if _, err := os.Stat(tsdbBin); err != nil {
		return nil, fmt.Errorf("-tsdb-bin: %w", err)
	}
	log.Info("locating Prometheus (testing/prometheus/prometheus.sh; builds it once, 10-17 minutes cold)")
	promBin, err := script(ctx, root, "testing/prometheus/prometheus.sh", "build")
	if err != nil {
		return nil, err
	}
	promVersion, err := script(ctx, root, "testing/prometheus/prometheus.sh", "version")
	if err != nil {
		return nil, err
	}
	log.Info("locating VictoriaMetrics (bench/victoriametrics.sh; builds it once, a few minutes cold)")
	vmBin, err := script(ctx, root, "bench/victoriametrics.sh", "build")
	if err != nil {
		return nil, err
	}
	vmVersion, err := script(ctx, root, "bench/victoriametrics.sh", "version")
	if err != nil {
		return nil, err
	}
	log.Info("servers", "tsdb", tsdbBin, "prometheus", promBin, "victoriametrics", vmBin)
	return serverKinds(tsdbBin, promBin, promVersion, vmBin, vmVersion), nil
}

// script runs one of the repository's build scripts, its progress on stderr, and
// returns the last line it printed on stdout.
func script(ctx context.Context, root, path string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, path), args...)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// roundResult is one server's figures in one round.
type roundResult struct {
	ingest  ingestResult
	peakRSS int64
	// diskStopped is the apparent size of the data directory after a graceful stop.
	diskStopped int64
	queries     []queryResult
}

// runRounds runs every server once per round, in order, each on a fresh directory, and
// returns results[server][round].
func runRounds(ctx context.Context, log *slog.Logger, c config, kinds []*serverKind) ([][]roundResult, error) {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: c.load.senders + 1,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()
	qs := queries(c.load)
	results := make([][]roundResult, len(kinds))
	for round := 1; round <= c.rounds; round++ {
		log.Info("encoding the load", "round", round, "samples", c.load.totalSamples(),
			"requests_of", c.load.requestSize, "senders", c.load.senders)
		el, err := c.load.encode(time.Now())
		if err != nil {
			return nil, err
		}
		for i, k := range kinds {
			log.Info("round", "round", round, "of", c.rounds, "server", k.short)
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
func runOne(ctx context.Context, log *slog.Logger, c config, client *http.Client, k *serverKind, round int, el *encodedLoad, qs []benchQuery) (res roundResult, err error) {
	base := filepath.Join(c.workDir, fmt.Sprintf("round-%d", round), k.short)
	dir := filepath.Join(base, "data")
	r, err := k.start(ctx, dir, filepath.Join(base, "server.log"), time.Minute)
	if err != nil {
		return res, err
	}
	stopped := false
	defer func() {
		if !stopped {
			if serr := r.stop(); serr != nil && err == nil {
				err = serr
			}
		}
		if !c.keep {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = fmt.Errorf("%s: remove data directory: %w", k.short, rerr)
			}
		}
	}()
	log.Info("started", "server", k.short, "pid", r.pid(), "url", r.base, "dir", dir)

	total := c.load.totalSamples()
	cpu0, err := cpuTime(r.pid())
	if err != nil {
		return res, err
	}
	in, err := ingest(ctx, log, client, r, el, total)
	if err != nil {
		return res, err
	}
	if in.samples != total {
		return res, fmt.Errorf("%s: sent %d samples, want %d", k.short, in.samples, total)
	}
	if err := r.flushData(ctx); err != nil {
		return res, err
	}
	flushed := time.Now()
	idle, settled, err := settle(ctx, r.pid(), c.settle)
	if err != nil {
		return res, err
	}
	// cpu0 was read just before ingest read its own start: the difference is the
	// server's idle CPU for a few microseconds.
	in.cpuIdle, in.settled = idle-cpu0, settled
	if wait := k.flushDelay - time.Since(flushed); wait > 0 {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
	if in.diskByte, err = dirBytes(dir); err != nil {
		return res, fmt.Errorf("%s: %w", k.short, err)
	}
	log.Info("ingested", "server", k.short, "samples", in.samples, "took", in.wall.Round(time.Millisecond),
		"samples_per_s", int(float64(in.samples)/in.wall.Seconds()),
		"cpu_s_per_M", fmt.Sprintf("%.2f", perMillion(in.cpu, in.samples)),
		"cpu_s_per_M_until_idle", fmt.Sprintf("%.2f", perMillion(in.cpuIdle, in.samples)), "went_idle", settled,
		"disk_MiB", fmt.Sprintf("%.1f", float64(in.diskByte)/(1<<20)))
	res.ingest = in

	for _, q := range qs {
		qr, err := runQuery(ctx, client, r.base, q, el.start, el.end, c.queryRuns)
		if err != nil {
			return res, fmt.Errorf("%s: %w", k.short, err)
		}
		if qr.series == 0 || qr.samples == 0 {
			log.Warn("WARNING: query returned no data", "server", k.short, "query", q.expr, "step", q.step)
		}
		log.Info("query", "server", k.short, "query", q.expr, "step", q.step, "series", qr.series,
			"samples", qr.samples, "median_ms", fmt.Sprintf("%.2f", ms(qr.median)))
		res.queries = append(res.queries, qr)
	}
	if res.peakRSS, err = peakRSS(r.pid()); err != nil {
		return res, err
	}
	// Stopped gracefully, each server writes out what it buffers (VictoriaMetrics its
	// in-memory parts, flushed every 5 s otherwise): the disk it keeps the data in.
	stopped = true
	if err := r.stop(); err != nil {
		return res, err
	}
	if res.diskStopped, err = dirBytes(dir); err != nil {
		return res, fmt.Errorf("%s: %w", k.short, err)
	}
	log.Info("stopped", "server", k.short, "peak_rss_MiB", res.peakRSS>>20,
		"disk_after_stop_MiB", fmt.Sprintf("%.1f", float64(res.diskStopped)/(1<<20)))
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
			counts = append(counts, fmt.Sprintf("%s=%d", k.short, n))
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

func perMillion(d time.Duration, samples int) float64 {
	return d.Seconds() / (float64(samples) / 1e6)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
