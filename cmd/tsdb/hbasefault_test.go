package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// TestHBaseOutage proves that tsdb rides out an HBase outage: under steady
// /api/put load, an HBase instance of the test's own is shut down (gracefully:
// hbase.sh halt, the master's cluster shutdown, which keeps its data), left down
// for hbaseOutage, and started again on the same ports (hbase.sh start resumes it).
//
// While HBase is down, tsdb must answer every write with a 5xx (Prometheus
// retries those) and never with a 4xx (Prometheus drops those) nor a 2xx for a
// request sent and answered while HBase was down (it cannot have been stored);
// /-/ready must turn 503, /api/v1/status/buildinfo must keep answering 200, and
// the process must not exit. Once HBase is back, /-/ready must return to 200 and
// writes to 2xx by themselves, and every datapoint tsdb acknowledged, before,
// during or after the outage, must read back bit for bit, exactly once.
//
// The test never stops the shared test HBase (other packages use it at the same
// time): it starts its own with testing/hbase/hbase.sh in a run directory of its
// own, and runs only where the shared one is configured (make test), because it
// needs the same Java and Maven cache.
func TestHBaseOutage(t *testing.T) {
	hbasetest.ZooKeeper(t) // skips (or fails under TSDB_TEST_REQUIRE_HBASE=1) without a test HBase
	h := startPrivateHBase(t)
	prefix := hbasetest.UniquePrefix("fault")
	// A region call (and so a write, see hbase.Options.CallTimeout) that HBase
	// does not answer fails after 5s rather than the default 30s, well within
	// the outage.
	s := startServe(t, "--storage=hbase:"+h.zk, "--hbase.table-prefix="+prefix, "--schema.salts=4",
		"--hbase.rpc-timeout=5s")
	s.waitFor(t, "/-/ready", 200)

	const (
		writers = 4
		batch   = 10
		// Acknowledged batches to wait for before the outage and after recovery.
		progress = 20
		metric   = "hbase_outage_test"
	)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	load := &outageLoad{base: time.Now().Add(-time.Minute).UnixMilli(), metric: metric, batch: batch}
	load.acked = make([]map[int64]bool, writers)
	load.next = make([]int64, writers)
	for w := range writers {
		load.acked[w] = map[int64]bool{}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load.write(ctx, s.addr, w)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		load.watch(ctx, s)
	}()

	// Before: the load is acknowledged.
	load.waitAcked(t, s, progress, "before the outage")

	// Outage: shut HBase down and keep it down.
	load.setPhase(phaseHalting)
	h.run(t, "halt")
	load.setPhase(phaseDown)
	downAt := time.Now()
	s.waitFor(t, "/-/ready", 503)
	load.waitDownAnswers(t, s)
	if rest := hbaseOutage - time.Since(downAt); rest > 0 {
		time.Sleep(rest) // the outage itself, not an assertion
	}

	// Recovery: the same HBase (same ports, same data) again.
	load.setPhase(phaseRestarting)
	h.run(t, "start")
	load.setPhase(phaseAfter)
	s.waitFor(t, "/-/ready", 200)
	load.waitAcked(t, s, load.ackedBatches()+progress, "after HBase came back")
	cancel()
	wg.Wait()

	load.report(t)
	load.checkReadBack(t, s)
	if err := s.stop(t); err != nil {
		t.Errorf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

// hbaseOutage is how long the test keeps its HBase down, from the moment halt
// returned (the JVM exited) until start is run.
const hbaseOutage = 20 * time.Second

// privateHBase is an HBase instance of one test, run by testing/hbase/hbase.sh
// in its own run directory.
type privateHBase struct {
	runDir string
	zk     string
	env    []string // for hbase.sh, such as HBASE_REGIONSERVERS=3
}

// startPrivateHBase starts an HBase of the test's own; a cleanup stops it and
// removes its data, whether the test passed or not.
func startPrivateHBase(t *testing.T) *privateHBase {
	t.Helper()
	return startPrivateHBaseWith(t)
}

// startPrivateHBaseWith is startPrivateHBase with environment for hbase.sh.
func startPrivateHBaseWith(t *testing.T, env ...string) *privateHBase {
	t.Helper()
	h := &privateHBase{runDir: filepath.Join(t.TempDir(), "hbase"), env: env}
	t.Cleanup(func() {
		if t.Failed() {
			// stop removes the run directory: keep the end of HBase's logs (one per
			// JVM in cluster mode) in the test's.
			logs, _ := filepath.Glob(filepath.Join(h.runDir, "logs", "*.log"))
			for _, name := range logs {
				if log, err := os.ReadFile(name); err == nil && len(log) > 0 {
					t.Logf("the test's HBase log %s ends with:\n%s", filepath.Base(name), log[max(0, len(log)-8000):])
				}
			}
		}
		if out, err := h.command("stop"); err != nil {
			t.Errorf("stop the test's HBase in %s: %v\n%s", h.runDir, err, out)
		}
	})
	h.zk = strings.TrimSpace(h.run(t, "start"))
	return h
}

// command runs hbase.sh with the instance's run directory and returns its
// stdout, and its stderr too when it fails.
func (h *privateHBase) command(args ...string) (string, error) {
	cmd := exec.Command("../../testing/hbase/hbase.sh", args...)
	// A start waits for progress-less HBase for up to HBASE_START_TIMEOUT: on a
	// machine loaded by the rest of make test, longer than the default 240s.
	cmd.Env = append(append(cmd.Environ(), "HBTSDB_HBASE_RUN="+h.runDir, "HBASE_START_TIMEOUT=600"), h.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("hbase.sh %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}

// run is command that fails the test on an error. hbase.sh bounds its own waits
// (HBASE_START_TIMEOUT, HBASE_HALT_TIMEOUT).
func (h *privateHBase) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.command(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// outagePhase is where the test is relative to the outage. A request is
// counted in the phase it was answered in.
type outagePhase int32

const (
	phaseBefore     outagePhase = iota
	phaseHalting                // hbase.sh halt runs: HBase shuts down
	phaseDown                   // the HBase JVM has exited
	phaseRestarting             // hbase.sh start runs: HBase comes back
	phaseAfter                  // HBase answers again
	phases
)

func (p outagePhase) String() string {
	return [...]string{"before", "halting", "down", "restarting", "after"}[p]
}

// outageLoad is the write load and what the test saw of tsdb's answers.
type outageLoad struct {
	base   int64 // timestamp of sequence number 0, in ms
	metric string
	batch  int64
	phase  atomic.Int32

	mu        sync.Mutex
	acked     []map[int64]bool // writer -> acknowledged sequence numbers
	next      []int64          // writer -> next sequence number
	batches   int              // acknowledged batches
	writes    [phases]map[int]int
	readys    [phases]map[int]int
	failures  []string      // answers the test must fail on, at most a few
	down503   int           // writes sent and answered while HBase was down, 5xx
	readyDown time.Time     // when the watcher first saw /-/ready 503
	readyUp   time.Duration // from readyDown to its first 200 once HBase was restarting
}

func (l *outageLoad) setPhase(p outagePhase) { l.phase.Store(int32(p)) }

func (l *outageLoad) currentPhase() outagePhase { return outagePhase(l.phase.Load()) }

func (l *outageLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

func (l *outageLoad) body(w int, first int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range l.batch {
		if i > 0 {
			b.WriteByte(',')
		}
		seq := first + i
		fmt.Fprintf(&b, `{"metric":%q,"timestamp":%d,"value":%d,"tags":{"writer":"w%d"}}`, l.metric, l.base+seq, seq, w)
	}
	b.WriteByte(']')
	return b.String()
}

// write posts batches for writer w until ctx is done, each with new sequence
// numbers (an unacknowledged batch is not resent: its datapoints may or may not
// be stored, and the read back accepts both). After an error answer it waits a
// little, as a remote-write sender backs off.
func (l *outageLoad) write(ctx context.Context, addr string, w int) {
	for ctx.Err() == nil {
		l.mu.Lock()
		first := l.next[w]
		l.next[w] += l.batch
		l.mu.Unlock()
		sent := l.currentPhase()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/put", strings.NewReader(l.body(w, first)))
		if err != nil {
			l.fail("writer %d: %v", w, err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				l.fail("writer %d: POST /api/put in phase %s: %v", w, sent, err)
			}
			return
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered := l.currentPhase()
		code := resp.StatusCode
		l.mu.Lock()
		if l.writes[answered] == nil {
			l.writes[answered] = map[int]int{}
		}
		l.writes[answered][code]++
		switch {
		case code/100 == 2:
			for i := range l.batch {
				l.acked[w][first+i] = true
			}
			l.batches++
		case sent == phaseDown && answered == phaseDown && code/100 == 5:
			l.down503++
		}
		l.mu.Unlock()
		switch {
		case code/100 == 2 && sent == phaseDown && answered == phaseDown:
			l.fail("writer %d: a write sent and answered while HBase was down was acknowledged (%d)", w, code)
		case code/100 == 4:
			l.fail("writer %d: /api/put answered %d in phase %s (a sender drops 4xx data): %s", w, code, answered, msg)
		case code/100 != 2 && code/100 != 5:
			l.fail("writer %d: /api/put answered %d in phase %s: %s", w, code, answered, msg)
		}
		if code/100 != 2 {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// watch polls /-/ready and /api/v1/status/buildinfo until ctx is done: ready
// may only be 200 or 503, buildinfo must stay 200 whatever HBase does.
func (l *outageLoad) watch(ctx context.Context, s *server) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		phase := l.currentPhase()
		code, body := s.get("/-/ready")
		now := time.Now()
		l.mu.Lock()
		if l.readys[phase] == nil {
			l.readys[phase] = map[int]int{}
		}
		l.readys[phase][code]++
		switch {
		case code == 503 && l.readyDown.IsZero():
			l.readyDown = now
		case code == 200 && !l.readyDown.IsZero() && phase >= phaseRestarting && l.readyUp == 0:
			l.readyUp = now.Sub(l.readyDown)
		}
		l.mu.Unlock()
		if code != 200 && code != 503 {
			l.fail("/-/ready answered %d in phase %s: %s", code, phase, body)
		}
		if code, body := s.get("/api/v1/status/buildinfo"); code != 200 {
			l.fail("/api/v1/status/buildinfo answered %d in phase %s: %s", code, phase, body)
		}
	}
}

func (l *outageLoad) ackedBatches() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.batches
}

// waitAcked waits until n batches in all were acknowledged. It fails at once
// when tsdb exits or an answer was wrong, and when no batch was acknowledged
// for waitStall.
func (l *outageLoad) waitAcked(t *testing.T, s *server, n int, when string) {
	t.Helper()
	l.waitProgress(t, s, when+": acknowledged batches", func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.batches
	}, n)
}

// waitDownAnswers waits until a few writes sent while HBase was down were
// answered 5xx: tsdb answers, rather than holding writes until HBase is back.
func (l *outageLoad) waitDownAnswers(t *testing.T, s *server) {
	t.Helper()
	l.waitProgress(t, s, "while HBase is down: writes answered 5xx", func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.down503
	}, 3)
}

// waitProgress waits until count() reaches n, failing when the server exits,
// when an answer was wrong, or when count() did not grow for waitStall.
func (l *outageLoad) waitProgress(t *testing.T, s *server, what string, count func() int, n int) {
	t.Helper()
	last, lastChange := -1, time.Now()
	for {
		l.mu.Lock()
		failures := l.failures
		l.mu.Unlock()
		if len(failures) > 0 {
			t.Fatalf("%s:\n%s\nserver log:\n%s", what, strings.Join(failures, "\n"), s.log())
		}
		c := count()
		if c >= n {
			return
		}
		if c != last {
			last, lastChange = c, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("%s: %d of %d, and none for %s; answers so far: %s\nserver log:\n%s", what, c, n, waitStall, l.summary(), s.log())
		}
		select {
		case err := <-s.done:
			t.Fatalf("%s: tsdb exited (%v); log:\n%s", what, err, s.log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// summary lists the status codes of writes and of /-/ready by phase.
func (l *outageLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for p := range phases {
		fmt.Fprintf(&b, "\n  %-10s writes %v, /-/ready %v", p, l.writes[p], l.readys[p])
	}
	return b.String()
}

// report fails on any wrong answer seen, and logs what the test saw.
func (l *outageLoad) report(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	failures, readyUp := l.failures, l.readyUp
	l.mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	// The test waited for /-/ready to answer 503 and then 200 (server.waitFor);
	// readyUp is what the watcher saw of it.
	t.Logf("answers by phase (status: count):%s\n/-/ready was not 200 for %s", l.summary(), readyUp.Round(100*time.Millisecond))
}

// checkReadBack reads the metric back once the store answers, and checks that
// every acknowledged datapoint is there once, and that every datapoint there is
// one that was sent.
func (l *outageLoad) checkReadBack(t *testing.T, s *server) {
	t.Helper()
	writers := len(l.acked)
	stored := storedDatapoints(t, s, l.metric, l.base, writers)
	acked, extra := 0, 0
	for w := range writers {
		for seq := range l.acked[w] {
			acked++
			if n := stored[w][seq]; n != 1 {
				t.Errorf("writer %d: acknowledged datapoint %d stored %d times", w, seq, n)
			}
		}
		for seq, n := range stored[w] {
			if !l.acked[w][seq] {
				extra++ // sent, not acknowledged, stored anyway: allowed
			}
			if n != 1 {
				t.Errorf("writer %d: datapoint %d stored %d times", w, seq, n)
			}
		}
	}
	t.Logf("%d datapoints acknowledged, all read back once; %d more stored though not acknowledged", acked, extra)
}
