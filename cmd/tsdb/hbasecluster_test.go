//go:build cluster

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// TestHBaseCluster runs tsdb on a real HBase cluster of its own: ZooKeeper, a master
// and three region servers, each its own JVM (testing/hbase/hbase.sh's cluster
// mode), and puts it through the events of a cluster's life under load (clusterLoad:
// four writers, remote write and /api/put, and a reader checking PromQL and remote
// read answers):
//
//   - region-operations: data, index and series regions split, regions moved between
//     servers, two adjacent regions merged, the balancer run;
//   - regionserver-killed: kill -9 of the region server holding the most data
//     regions, its regions reassigned and its WAL replayed by HBase, then the server
//     restarted;
//   - master-killed: kill -9 of the master, then restarted;
//   - three-processes: three tsdb processes on one store, written and read in turn,
//     then restarted with their compaction workers.
//
// Each checks: no 4xx and no 5xx but 503 (the writers resend those until they are
// acknowledged, as Prometheus does); no wrong answer from the reader (an answer is
// an error or exactly the acknowledged samples it asked for); every acknowledged
// sample read back exactly once, bit for bit.
func TestHBaseCluster(t *testing.T) {
	hbasetest.ZooKeeper(t) // skips (or fails under TSDB_TEST_REQUIRE_HBASE=1) without a test HBase
	c := startPrivateCluster(t, 3)
	t.Run("region-operations", func(t *testing.T) { testRegionOperations(t, c) })
	t.Run("regionserver-killed", func(t *testing.T) { testRegionServerKilled(t, c) })
	t.Run("master-killed", func(t *testing.T) { testMasterKilled(t, c) })
	t.Run("three-processes", func(t *testing.T) { testThreeProcesses(t, c) })
}

// clusterProgress is how many samples the tests wait to be acknowledged between
// steps: a few batches of each writer.
const clusterProgress = 4 * clusterWriters * 200

// startPrivateCluster starts an HBase cluster of the test's own with n region
// servers; a cleanup stops it.
func startPrivateCluster(t *testing.T, n int) *privateHBase {
	t.Helper()
	return startPrivateHBaseWith(t, "HBASE_REGIONSERVERS="+strconv.Itoa(n), "HBASE_RS_HEAP=768m")
}

// serveOnCluster starts tsdb on the cluster with the table prefix; region calls
// time out after 5s, so a write to a region that is not served is refused (503)
// rather than held.
func serveOnCluster(t *testing.T, c *privateHBase, prefix string, extra ...string) *server {
	t.Helper()
	s := startServe(t, append([]string{"--storage=hbase:" + c.zk, "--hbase.table-prefix=" + prefix, "--schema.salts=4",
		"--hbase.rpc-timeout=5s"}, extra...)...)
	s.waitFor(t, "/-/ready", 200)
	return s
}

// clusterBase is the timestamp of the load's first sample: four hours ago, so
// that its buckets are sealed for compaction (1h buckets, 1h grace).
func clusterBase() int64 {
	return time.Now().Add(-4 * time.Hour).Truncate(time.Second).UnixMilli()
}

// heal restarts a JVM a failed subtest killed and left down, so that the next
// subtest gets the whole cluster.
func (c *privateHBase) heal(t *testing.T, role string, restarted bool) {
	if restarted {
		return
	}
	if out, err := c.command("restart", role); err != nil {
		t.Errorf("restart %s after the test: %v\n%s", role, err, out)
		return
	}
	if out, err := c.command("regionops", c.zk, "wait-servers", "3"); err != nil {
		t.Errorf("wait for the cluster after restarting %s: %v\n%s", role, err, out)
	}
}

// region is a line of `hbase.sh regionops <zk> regions <table>`.
type region struct {
	encoded, start, end, server string
	rows                        int
}

func (c *privateHBase) regions(t *testing.T, table string) []region {
	t.Helper()
	var out []region
	for _, line := range strings.Split(strings.TrimSpace(c.run(t, "regionops", c.zk, "regions", table)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("regions of %s: unexpected line %q", table, line)
		}
		rows, _ := strconv.Atoi(f[4])
		out = append(out, region{encoded: f[0], start: f[1], end: f[2], server: f[3], rows: rows})
	}
	return out
}

// busiest is the region with the most rows.
func busiest(rs []region) region {
	best := rs[0]
	for _, r := range rs[1:] {
		if r.rows > best.rows {
			best = r
		}
	}
	return best
}

// regionOp runs a region operation in its own phase of the load and logs it.
func (c *privateHBase) regionOp(t *testing.T, l *clusterLoad, phase string, args ...string) {
	t.Helper()
	l.setPhase(phase)
	start := time.Now()
	c.run(t, append([]string{"regionops", c.zk}, args...)...)
	t.Logf("%s (%s) took %s", phase, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
}

func testRegionOperations(t *testing.T, c *privateHBase) {
	prefix := hbasetest.UniquePrefix("rops")
	s := serveOnCluster(t, c, prefix)
	l := newClusterLoad("cluster_regionops", clusterBase(), s)
	stop := l.run()
	defer stop()
	l.waitAcked(t, clusterProgress, "before the region operations")

	data, index, series := prefix+"data", prefix+"index", prefix+"series"
	before := map[string]bool{}
	for _, r := range c.regions(t, data) {
		before[r.encoded] = true
	}
	for _, table := range []string{data, index, series} {
		c.regionOp(t, l, "split "+table, "split", table)
		l.waitAcked(t, clusterProgress, "after splitting "+table)
	}
	for _, table := range []string{data, index} {
		r := busiest(c.regions(t, table))
		c.regionOp(t, l, "move "+table, "move", r.encoded)
		l.waitAcked(t, clusterProgress, "after moving a region of "+table)
	}
	// Merge two adjacent regions that were not split (a daughter keeps references
	// to its parent's files until it is compacted, and HBase refuses to merge it).
	rs := c.regions(t, data)
	merged := false
	for i := 0; i+1 < len(rs) && !merged; i++ {
		a, b := rs[i], rs[i+1]
		if before[a.encoded] && before[b.encoded] && a.end == b.start {
			c.regionOp(t, l, "merge "+data, "merge", a.encoded, b.encoded)
			merged = true
		}
	}
	if !merged {
		t.Fatalf("no two adjacent unsplit regions of %s to merge: %v", data, rs)
	}
	l.waitAcked(t, clusterProgress, "after merging two regions of "+data)
	if got := len(c.regions(t, data)); got != len(before) {
		t.Errorf("%s has %d regions after one split and one merge, want %d", data, got, len(before))
	}
	c.regionOp(t, l, "balance", "balance")
	l.waitAcked(t, clusterProgress, "after the balancer ran")
	l.setPhase("after")
	l.waitAcked(t, clusterProgress, "after the region operations")
	stop()
	l.report(t)
	l.checkReadBack(t)
	// Refusals outside the operations are logged (report), not failed on: a
	// region call that the loaded machine keeps past --hbase.rpc-timeout (5s here)
	// is a 503 too, and the writers resend it like any other.
	t.Logf("writes refused (503, resent): %d before the region operations, %d after them", l.refused("before", "write"), l.refused("after", "write"))
}

func testRegionServerKilled(t *testing.T, c *privateHBase) {
	prefix := hbasetest.UniquePrefix("rskill")
	s := serveOnCluster(t, c, prefix)
	l := newClusterLoad("cluster_rskill", clusterBase(), s)
	ready := watchReady(s)
	stop := l.run()
	defer stop()
	l.waitAcked(t, clusterProgress, "before the kill")

	// The victim: the region server with the most regions of the data table.
	ports := regionServerPorts(t, c.runDir)
	held := map[string]int{}
	for _, r := range c.regions(t, prefix+"data") {
		for role, port := range ports {
			if strings.HasPrefix(r.server, "localhost,"+port+",") {
				held[role]++
			}
		}
	}
	victim := ""
	for role, n := range held {
		if victim == "" || n > held[victim] || (n == held[victim] && role < victim) {
			victim = role
		}
	}
	t.Logf("data regions per region server: %v; killing %s", held, victim)

	l.setPhase("region server killed")
	killed := time.Now()
	c.run(t, "kill", victim)
	restarted := false
	t.Cleanup(func() { c.heal(t, victim, restarted) })
	c.run(t, "regionops", c.zk, "wait-servers", "2")
	reassigned := time.Since(killed)
	l.setPhase("regions reassigned")
	l.waitAcked(t, clusterProgress, "after the regions were reassigned")
	recovered := l.lastRefusal().Sub(killed)
	c.run(t, "restart", victim)
	restarted = true
	c.run(t, "regionops", c.zk, "wait-servers", "3")
	l.setPhase("after")
	l.waitAcked(t, clusterProgress, "after the region server came back")
	stop()
	readyLog := ready()
	l.report(t)
	l.checkReadBack(t)
	t.Logf("kill -9 of %s: regions reassigned after %s; last write refused %s after the kill; /-/ready: %s",
		victim, reassigned.Round(100*time.Millisecond), max(recovered, 0).Round(100*time.Millisecond), readyLog)
}

func testMasterKilled(t *testing.T, c *privateHBase) {
	prefix := hbasetest.UniquePrefix("mkill")
	s := serveOnCluster(t, c, prefix)
	l := newClusterLoad("cluster_mkill", clusterBase(), s)
	ready := watchReady(s)
	stop := l.run()
	defer stop()
	l.waitAcked(t, clusterProgress, "before the kill")
	l.setPhase("master killed")
	c.run(t, "kill", "master")
	restarted := false
	t.Cleanup(func() { c.heal(t, "master", restarted) })
	// Reads and writes need the region servers and hbase:meta, not the master:
	// the load goes on while it is down.
	l.waitAcked(t, clusterProgress, "while the master is down")
	c.run(t, "restart", "master")
	restarted = true
	c.run(t, "regionops", c.zk, "wait-servers", "3")
	l.setPhase("after")
	l.waitAcked(t, clusterProgress, "after the master came back")
	stop()
	readyLog := ready()
	l.report(t)
	l.checkReadBack(t)
	// Reads and writes need no master; a refusal here is a region call the loaded
	// machine kept past --hbase.rpc-timeout (a quiet run had none), logged.
	t.Logf("writes refused (503, resent) while only the master was down: %d; /-/ready: %s", l.refused("master killed", "write"), readyLog)
}

func testThreeProcesses(t *testing.T, c *privateHBase) {
	// A release build (no race detector), so that the CPU per sample is tsdb's.
	bin := filepath.Join(t.TempDir(), "tsdb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	serve := func(prefix string, extra ...string) *server {
		return startServeBinary(t, bin, nil, append([]string{"--storage=hbase:" + c.zk, "--hbase.table-prefix=" + prefix,
			"--schema.salts=4", "--hbase.rpc-timeout=5s"}, extra...)...)
	}
	ready := func(procs ...*server) {
		for _, p := range procs {
			p.waitFor(t, "/-/ready", 200)
		}
	}

	// The same load through one process first, for comparison.
	one := serve(hbasetest.UniquePrefix("one"), "--no-compact.enabled")
	ready(one)
	lone := newClusterLoad("cluster_one", clusterBase(), one)
	lone.batch, lone.perSeries = clusterMeasureBatch, clusterMeasureRun
	measureIngest(t, c, lone, "one process")
	if err := one.stop(t); err != nil {
		t.Errorf("serve exited with %v after SIGTERM", err)
	}

	// Ingest: three processes, written in turn (every batch to the next one, so
	// every series is written through all three and created by whichever process
	// gets its first batch), compaction off.
	prefix := hbasetest.UniquePrefix("three")
	procs := []*server{serve(prefix, "--no-compact.enabled"), serve(prefix, "--no-compact.enabled"), serve(prefix, "--no-compact.enabled")}
	ready(procs...)
	l := newClusterLoad("cluster_three", clusterBase(), procs...)
	l.batch, l.perSeries = clusterMeasureBatch, clusterMeasureRun
	measureIngest(t, c, l, "three processes")
	l.checkReadBack(t)
	for _, p := range procs {
		if err := p.stop(t); err != nil {
			t.Errorf("serve exited with %v after SIGTERM", err)
		}
	}

	// Compaction: three processes again, each with its worker, whose first round
	// starts at once; they start together, so that their first rounds race for
	// the leases. A lease gives a salt to one worker at a time, so every row is
	// compacted exactly once: the rows compacted add up to the rows written (a
	// round that failed leaves its rows to a later round, every 15s), and stay
	// there when every worker has run another round.
	procs = []*server{serve(prefix, "--compact.interval=15s"), serve(prefix, "--compact.interval=15s"), serve(prefix, "--compact.interval=15s")}
	ready(procs...)
	l.targets = procs
	wantRows, total := l.dataRows(time.Hour), l.totalAcked()
	compacted := func() (rows, samples float64, rounds []float64) {
		for _, p := range procs {
			rows += metricValue(t, p, "hbtsdb_compaction_rows_total")
			samples += metricValue(t, p, "hbtsdb_compaction_samples_total")
			rounds = append(rounds, metricValue(t, p, "hbtsdb_compaction_rounds_total"))
		}
		return rows, samples, rounds
	}
	last, lastChange := "", time.Now()
	for {
		rows, samples, rounds := compacted()
		if int64(rows) >= wantRows {
			break
		}
		if now := fmt.Sprint(rows, samples, rounds); now != last {
			last, lastChange = now, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("the three workers compacted %v of %d rows, and nothing moved for %s (rounds %v)", rows, wantRows, waitStall, rounds)
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, _, rounds := compacted()
	for i, p := range procs {
		waitMetric(t, p, "hbtsdb_compaction_rounds_total", rounds[i]+1)
	}
	rows, samples, _ := compacted()
	for _, p := range procs {
		t.Logf("tsdb at %s compacted %v rows, %v samples in %v rounds", p.addr, metricValue(t, p, "hbtsdb_compaction_rows_total"),
			metricValue(t, p, "hbtsdb_compaction_samples_total"), metricValue(t, p, "hbtsdb_compaction_rounds_total"))
	}
	if int64(samples) != total || int64(rows) != wantRows {
		t.Errorf("the three workers compacted %v rows and %v samples in all, want each of the %d rows (%d samples) once", rows, samples, wantRows, total)
		for _, p := range procs {
			var lines []string
			for _, line := range strings.Split(p.log(), "\n") {
				if strings.Contains(line, "compact") || strings.Contains(line, "lease") {
					lines = append(lines, line)
				}
			}
			t.Logf("tsdb at %s, its compaction's log:\n%s", p.addr, strings.Join(lines, "\n"))
		}
	}
	l.checkReadBack(t)
	// PromQL through each process (the reader's check, each process in turn).
	for range procs {
		for w := range clusterWriters {
			l.checkQuery(w, l.ackedOf(w))
		}
	}
	l.report(t)

	// The same series through each process, each once.
	q := "/api/v1/series?" + "match[]=" + l.metric
	var first string
	for i, p := range procs {
		body := p.waitFor(t, q, 200)
		var resp struct {
			Data []map[string]string `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, lbls := range resp.Data {
			key := fmt.Sprint(lbls)
			if seen[key] {
				t.Errorf("tsdb at %s lists series %v twice", p.addr, lbls)
			}
			seen[key] = true
		}
		if want := l.seriesCount(); len(seen) != want {
			t.Errorf("tsdb at %s lists %d series, want %d", p.addr, len(seen), want)
		}
		sorted := sortedKeys(seen)
		if i == 0 {
			first = sorted
		} else if sorted != first {
			t.Errorf("tsdb at %s lists other series than tsdb at %s", p.addr, procs[0].addr)
		}
	}
}

// clusterMeasureBatch is the batch of the measured loads: 2 000 samples, a
// Prometheus remote-write shard's default max_samples_per_send.
const clusterMeasureBatch = 2000

// clusterMeasureRun is the samples per series of the measured loads: a new series
// every 400 samples.
const clusterMeasureRun = 400

// clusterMeasureSamples is how many samples a measured load sends.
const clusterMeasureSamples = 400_000

// measureIngest runs the load, with its reader, until clusterMeasureSamples are
// acknowledged, checks its answers and logs samples/s and the CPU-seconds per
// million samples of the tsdb processes and of all the cluster's JVMs. Numbers are
// logged, not asserted.
func measureIngest(t *testing.T, c *privateHBase, l *clusterLoad, what string) {
	t.Helper()
	tsdbs, jvms := serverPIDs(l.targets), c.jvmPIDs(t)
	tsdb0, jvm0 := cpuSeconds(t, tsdbs), cpuSeconds(t, jvms)
	start := time.Now()
	stop := l.run()
	l.waitAcked(t, clusterMeasureSamples, what)
	stop()
	elapsed := time.Since(start)
	total := float64(l.totalAcked())
	tsdbCPU, jvmCPU := cpuSeconds(t, tsdbs)-tsdb0, cpuSeconds(t, jvms)-jvm0
	t.Logf("%s on %d region servers: %.0f samples in %s, %.0f samples/s; CPU-s per million samples: tsdb %.2f, the JVMs %.2f "+
		"(%d writers, %d samples a request, a new series every %d samples)",
		what, len(jvms)-2, total, elapsed.Round(time.Millisecond), total/elapsed.Seconds(), tsdbCPU/total*1e6, jvmCPU/total*1e6,
		clusterWriters, l.batch, l.perSeries)
	l.report(t)
}

// dataRows is the number of data rows the load's acknowledged samples occupy:
// one per series and bucket.
func (l *clusterLoad) dataRows(bucket time.Duration) int64 {
	rows := map[string]bool{}
	for w := range clusterWriters {
		for seq := int64(0); seq < l.ackedOf(w); seq++ {
			rows[fmt.Sprintf("%d/%s/%d", w, l.seriesOf(seq), (l.base+seq*l.step)/bucket.Milliseconds())] = true
		}
	}
	return int64(len(rows))
}

// seriesCount is the number of series the acknowledged samples are in.
func (l *clusterLoad) seriesCount() int {
	n := 0
	for w := range clusterWriters {
		n += int((l.ackedOf(w) + l.perSeries - 1) / l.perSeries)
	}
	return n
}

func (l *clusterLoad) lastRefusal() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastBad
}

// watchReady polls /-/ready every 100ms until the returned function is called,
// which says how often it answered what, and the longest stretch it was not 200.
func watchReady(s *server) func() string {
	done := make(chan struct{})
	result := make(chan string, 1)
	go func() {
		codes := map[int]int{}
		var notReadySince time.Time
		var longest time.Duration
		for {
			select {
			case <-done:
				result <- fmt.Sprintf("answers %v, longest not 200: %s", codes, longest.Round(100*time.Millisecond))
				return
			case <-time.After(100 * time.Millisecond):
			}
			code, _ := s.get("/-/ready")
			codes[code]++
			switch {
			case code != 200 && notReadySince.IsZero():
				notReadySince = time.Now()
			case code == 200 && !notReadySince.IsZero():
				longest = max(longest, time.Since(notReadySince))
				notReadySince = time.Time{}
			}
		}
	}()
	return func() string {
		close(done)
		return <-result
	}
}

// jvmPIDs are the pids of the cluster's JVMs (its pid.* files).
func (c *privateHBase) jvmPIDs(t *testing.T) []int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(c.runDir, "pid.*"))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("no JVM pid files in %s", c.runDir)
	}
	return pids
}

func serverPIDs(procs []*server) []int {
	var pids []int
	for _, p := range procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// cpuSeconds sums utime+stime of the processes, from /proc/<pid>/stat.
func cpuSeconds(t *testing.T, pids []int) float64 {
	t.Helper()
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("CPU time of pid %d: %v", pid, err)
		}
		// Fields after the command name in parentheses: state is field 3, utime 14, stime 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return float64(ticks) / 100 // USER_HZ
}

var metricLine = regexp.MustCompile(`^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$`)

// metricValue sums a metric's samples (all label sets) on the server's /metrics.
func metricValue(t *testing.T, s *server, name string) float64 {
	t.Helper()
	code, body := s.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics of %s: %d", s.addr, code)
	}
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m != nil && m[1] == name {
			v, _ := strconv.ParseFloat(m[3], 64)
			sum += v
		}
	}
	return sum
}

// waitMetric waits until the server's metric reaches at least n, failing when the
// server exits or the metric and the server's log stay the same for waitStall.
func waitMetric(t *testing.T, s *server, name string, n float64) {
	t.Helper()
	last, lastLog, lastChange := -1.0, "", time.Now()
	for {
		v := metricValue(t, s, name)
		if v >= n {
			return
		}
		if log := s.log(); v != last || len(log) != len(lastLog) {
			last, lastLog, lastChange = v, log, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("%s of tsdb at %s is %v, want %v, and nothing moved for %s; log:\n%s", name, s.addr, v, n, waitStall, log)
		}
		select {
		case err := <-s.done:
			t.Fatalf("tsdb at %s exited (%v) waiting for %s; log:\n%s", s.addr, err, name, s.log())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func sortedKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}
