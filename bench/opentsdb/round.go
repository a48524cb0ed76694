package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hbtsdb/hbtsdb/bench/internal/figures"
	"github.com/hbtsdb/hbtsdb/bench/internal/hbaserun"
	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// roundResult is one target's figures in one round.
type roundResult struct {
	points     int // of the measured load
	sent       sent
	warmFailed int           // warm-up datapoints that failed (not measured, but reported)
	cpu        time.Duration // the target's process, first request to last answer
	cpuIdle    time.Duration // ... until it and HBase went idle
	idle       bool          // false when the settle limit ran out first
	peakRSS    int64
	// late is the share of the load tsdb takes as late when its ingest
	// starts (figures.LateShare); NaN for OpenTSDB.
	late float64
	// hbase is what the round cost the HBase; nil when its JVM and files are
	// unknown (-hbase-zk).
	hbase *hbaseCost
}

// hbaseCost is what one target's round cost its HBase.
type hbaseCost struct {
	cpu, cpuIdle time.Duration // the JVM's, over the same intervals as the target's
	walBytes     int64         // WAL written from before the ingest until idle
	// tableBytes is the round's tables after a flush and major compaction;
	// -1 when not measured (-tables=false).
	tableBytes int64
}

// running is a target started for one round.
type running struct {
	base   string // http://127.0.0.1:<port>
	pid    int
	prefix string // of its HBase tables
	// stop stops it and drops its tables; it does not take the run's
	// context, so that it also runs after Ctrl-C.
	stop func() error
}

// tablePrefix names a round's tables of one target: new every round and run.
// Neither target's prefix is a prefix of the other's.
func tablePrefix(runID string, round int, target string) string {
	return fmt.Sprintf("otsdbbench%s-r%d-%s-", runID, round, target)
}

// start starts target for round on the HBase hb.
func start(ctx context.Context, log *slog.Logger, c config, hb *hbaserun.Instance, target string, round int) (*running, error) {
	dir := filepath.Join(c.workDir, fmt.Sprintf("round-%d", round))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create round directory: %w", err)
	}
	prefix := tablePrefix(c.runID, round, target)
	switch target {
	case targetOpenTSDB:
		t, err := startTSD(ctx, log, c.root, filepath.Join(dir, "opentsdb-run"), c.tsdHeap, hb.ZK, prefix)
		if err != nil {
			return nil, err
		}
		return &running{base: t.URL, pid: t.Pid, prefix: prefix, stop: func() error {
			return errors.Join(t.keepLog(filepath.Join(dir, "opentsdb.log")), t.stop())
		}}, nil
	default:
		k := server.TSDBHBase("tsdb (HBase)", targetTSDB, c.tsdbBin, hb.ZK, c.tsdbArgs)
		// Creating the tables takes HBase a while.
		r, err := k.Start(ctx, filepath.Join(dir, "tsdb-data"), prefix, filepath.Join(dir, "tsdb.log"), 3*time.Minute)
		if err != nil {
			return nil, errors.Join(err, hbaserun.DropTables(context.Background(), hb.ZK, prefix))
		}
		return &running{base: r.Base, pid: r.Pid(), prefix: prefix, stop: func() error {
			return errors.Join(r.Stop(), hbaserun.DropTables(context.Background(), hb.ZK, prefix))
		}}, nil
	}
}

// runOne starts target on new tables, warms it up, sends the load and
// measures it and the HBase until both are idle, measures the tables, and
// stops it.
func runOne(ctx context.Context, log *slog.Logger, c config, s *sender, hb *hbaserun.Instance, target string, round int, enc, warm *Encoded) (res roundResult, err error) {
	r, err := start(ctx, log, c, hb, target, round)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.stop()) }()
	log.Info("started", "target", target, "pid", r.pid, "url", r.base, "tables", r.prefix+"*")

	if warm != nil {
		log.Info("warming up", "target", target, "points", warm.Load.Total())
		w, err := s.send(ctx, target+" (warm-up)", r.base, warm)
		if err != nil {
			return res, err
		}
		res.warmFailed = w.failed
		if w.failed > 0 {
			log.Warn("WARNING: warm-up points failed", "target", target, "failed", w.failed, "reasons", w.topReasons(3))
		}
	}

	pids := []int{r.pid}
	var wal0 map[string]int64
	if hb.Measured() {
		jvm, err := hb.JVMPid()
		if err != nil {
			return res, err
		}
		pids = append(pids, jvm)
		if wal0, err = hbaserun.WALFiles(hb.RootDir()); err != nil {
			return res, err
		}
	}
	res.points, res.late = enc.Load.Total(), math.NaN()
	if target == targetTSDB {
		res.late = figures.LateShare(enc.Start, enc.End, enc.Load.Interval, time.Now())
	}
	profiled := make(chan error, 1)
	if target == targetTSDB && c.profile != "" && round == 1 {
		go func() { profiled <- cpuProfile(ctx, r.base, c.profileFor, c.profile) }()
	} else {
		profiled <- nil
	}
	cpu0, err := cpuTimes(pids)
	if err != nil {
		return res, err
	}
	res.sent, err = s.send(ctx, target, r.base, enc)
	if err != nil {
		return res, err
	}
	cpu1, err := cpuTimes(pids)
	if err != nil {
		return res, err
	}
	cpuIdle, idle, err := proc.SettleAll(ctx, pids, c.idle, c.settle)
	if err != nil {
		return res, err
	}
	res.cpu, res.cpuIdle, res.idle = cpu1[0]-cpu0[0], cpuIdle[0]-cpu0[0], idle
	if res.peakRSS, err = proc.PeakRSS(r.pid); err != nil {
		return res, err
	}
	if hb.Measured() {
		h := &hbaseCost{cpu: cpu1[1] - cpu0[1], cpuIdle: cpuIdle[1] - cpu0[1], tableBytes: -1}
		wal1, err := hbaserun.WALFiles(hb.RootDir())
		if err != nil {
			return res, err
		}
		h.walBytes = hbaserun.WALGrowth(wal0, wal1)
		res.hbase = h
	}
	sec := res.sent.wall.Seconds()
	log.Info("ingested", "target", target, "points", res.points, "stored", res.sent.stored, "failed", res.sent.failed,
		"took", res.sent.wall.Round(time.Millisecond), "points_per_s", int(float64(res.sent.stored)/sec),
		"cpu_s_per_M", fmt.Sprintf("%.2f", figures.PerMillion(res.cpu, int64(res.points))),
		"cpu_s_per_M_until_idle", fmt.Sprintf("%.2f", figures.PerMillion(res.cpuIdle, int64(res.points))), "went_idle", idle)
	if res.sent.failed > 0 {
		log.Warn("WARNING: points failed", "target", target, "failed", res.sent.failed, "reasons", res.sent.topReasons(3))
	}
	if err := <-profiled; err != nil {
		return res, err
	}
	if res.hbase != nil && c.tables {
		// What the round's tables keep: flushed from the memstores and
		// compacted into one HFile per store, as they settle in the long run.
		tables, err := hbaserun.TablesWithPrefix(hb.RootDir(), r.prefix)
		if err != nil {
			return res, err
		}
		if err := hb.Compact(ctx, c.root, tables); err != nil {
			return res, err
		}
		if res.hbase.tableBytes, err = hbaserun.TableBytes(hb.RootDir(), tables); err != nil {
			return res, err
		}
		log.Info("hbase", "target", target, "jvm_cpu_s_per_M", fmt.Sprintf("%.2f", figures.PerMillion(res.hbase.cpu, int64(res.points))),
			"wal_bytes_per_point", fmt.Sprintf("%.1f", float64(res.hbase.walBytes)/float64(res.points)),
			"tables", len(tables), "table_bytes_per_point", fmt.Sprintf("%.1f", float64(res.hbase.tableBytes)/float64(res.points)))
	}
	return res, nil
}

// cpuTimes reads the CPU time of every process of pids.
func cpuTimes(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = proc.CPUTime(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cpuProfile writes tsdb serve's CPU profile (/debug/pprof/profile, served
// with --web.enable-pprof) over the next d to path.
func cpuProfile(ctx context.Context, base string, d time.Duration, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, max(int(d.Seconds()), 1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("profile: %s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("profile: write %s: %w", path, err)
	}
	return nil
}
