//go:build soak

package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// The soak test (make soak) runs tsdb serve under a remote-write load with churn
// for TSDB_TEST_SOAK_DURATION and checks that the process does not leak: heap,
// goroutines and open files level off once it is warm. It is built only with
// -tags soak (make soak; make vet vets it), so that make test, where no test may
// skip, does not have it.
const (
	// envSoakDuration is how long the load runs per backend (e.g. 10m); the
	// test fails without it.
	envSoakDuration = "TSDB_TEST_SOAK_DURATION"
	// envSoakOut is the directory the samples (soak-<backend>.csv) and their plot
	// (soak-<backend>.svg) are written to; unset, the test's temporary directory.
	envSoakOut = "TSDB_TEST_SOAK_OUT"
	// envSoakSeries is the number of active series (default 300,000).
	envSoakSeries = "TSDB_TEST_SOAK_SERIES"
)

// soakConfig is the shape of the load.
type soakConfig struct {
	duration time.Duration
	// series is the number of series written in each round; seriesPerPod of
	// them share a pod label, and churn replaces whole pods, as a rollout does.
	series, seriesPerPod int
	// senders are the concurrent remote-write clients; each owns every
	// senders-th pod, so that a series' samples arrive in order.
	senders int
	// batch is the series (one sample each) of one request: Prometheus'
	// queue_config max_samples_per_send default.
	batch int
	// interval is the shortest time between two rounds of one sender, as a
	// scrape interval; a slower server just makes rounds longer.
	interval time.Duration
	// churnEvery and churnFraction: every churnEvery, churnFraction of the pods
	// are replaced by new ones (new pod label values, so new series).
	churnEvery    time.Duration
	churnFraction float64
	// queryEvery is the pause between two rounds of the light query load.
	queryEvery time.Duration
	// sampleEvery is how often the server process is measured.
	sampleEvery time.Duration
}

func soakConfigFromEnv(t *testing.T) soakConfig {
	t.Helper()
	v := os.Getenv(envSoakDuration)
	if v == "" {
		t.Fatalf("soak test: set %s (e.g. 10m) to run it; make soak does", envSoakDuration)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		// Under a minute there are too few samples for a warm-up and a last third.
		t.Fatalf("%s=%q: want a duration of at least 1m", envSoakDuration, v)
	}
	cfg := soakConfig{
		duration: d, series: 300_000, seriesPerPod: 100, senders: 4, batch: 2000,
		interval: 10 * time.Second, churnEvery: time.Minute, churnFraction: 0.1,
		queryEvery: 5 * time.Second, sampleEvery: 10 * time.Second,
	}
	if v := os.Getenv(envSoakSeries); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < cfg.seriesPerPod*cfg.senders {
			t.Fatalf("%s=%q: want a number of at least %d", envSoakSeries, v, cfg.seriesPerPod*cfg.senders)
		}
		cfg.series = n
	}
	return cfg
}

// TestSoak runs the soak on the embedded store and, with TSDB_TEST_HBASE_ZK, on
// HBase. The server is the test binary itself (startServe), so the process
// measured is built like tsdb, without -race unless the test was.
func TestSoak(t *testing.T) {
	cfg := soakConfigFromEnv(t)
	out := os.Getenv(envSoakOut)
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatalf("soak: output directory: %v", err)
	}
	t.Run("embedded", func(t *testing.T) {
		runSoak(t, cfg, out, "embedded", "--storage=embedded:"+t.TempDir())
	})
	t.Run("hbase", func(t *testing.T) {
		zk := hbasetest.ZooKeeper(t)
		prefix := hbasetest.UniquePrefix("soak")
		t.Cleanup(func() { hbasestore.DropPrefix(t, zk, prefix) })
		runSoak(t, cfg, out, "hbase", "--storage=hbase:"+zk, "--hbase.table-prefix="+prefix)
	})
}

// soakSample is one measurement of the server process and of the load so far.
type soakSample struct {
	elapsed    time.Duration
	heapInuse  uint64 // bytes, after a GC (runtime.MemStats.HeapInuse)
	goroutines int
	openFiles  int    // entries of /proc/<pid>/fd
	rss        uint64 // bytes, /proc/<pid>/status VmRSS
	load       soakCounts
}

// Bounds of "flat": the median of the last third of the samples against the
// maximum of the warm-up (soakWarmUp: the first round creates every series,
// caches fill). The median, because the last third has peaks that are work, not
// leaks: every minute's churn creates 30,000 series at once, and a compaction
// holds files and buffers while it runs; a leak raises every sample, so the
// median too. A goroutine or a file leaked per request (thousands of requests
// per run) crosses the slack many times over, as does a heap that grows by half
// over the warm-up's peak. The series caches are bounded (index: 500,000
// series), so the heap rises while they fill and then levels off; the plot
// shows where.
const (
	soakGoroutineSlack = 25  // goroutines over the warm-up's max, or 10% of it if more
	soakOpenFilesSlack = 20  // open files over the warm-up's max, or 25% of it if more
	soakHeapFactor     = 1.5 // heap in use at most this times the warm-up's max
	soakMinWarmSamples = 2   // samples a third must hold for the comparison to mean anything
)

func runSoak(t *testing.T, cfg soakConfig, out, backend string, storage ...string) {
	s := startServe(t, append(storage, "--web.enable-pprof")...)
	s.waitFor(t, "/-/ready", 200)
	pid := s.cmd.Process.Pid
	l := newSoakLoad(cfg, "http://"+s.addr)
	t.Logf("soak %s: %d series (%d pods), %d senders of %d series per request, %.0f%% of pods replaced every %s, for %s",
		backend, cfg.series, l.pods, cfg.senders, cfg.batch, cfg.churnFraction*100, cfg.churnEvery, cfg.duration)

	var wg sync.WaitGroup
	for i := range cfg.senders {
		wg.Go(func() { l.send(i) })
	}
	wg.Go(l.churn)
	wg.Go(l.query)

	start := time.Now()
	var samples []soakSample
	lastProgress, lastAcked := time.Now(), int64(-1)
	for {
		select {
		case err := <-s.done:
			l.shutdown()
			t.Fatalf("soak %s: the server exited (%v); log:\n%s", backend, err, s.log())
		case <-time.After(cfg.sampleEvery):
		}
		smp, err := sampleServer(s.addr, pid)
		if err != nil {
			l.shutdown()
			t.Fatalf("soak %s: %v", backend, err)
		}
		smp.elapsed, smp.load = time.Since(start), l.counts()
		samples = append(samples, smp)
		t.Logf("soak %s: %s heap %.1f MiB, %d goroutines, %d files, RSS %.1f MiB; %d samples in %d requests (%d retried), %d series",
			backend, smp.elapsed.Round(time.Second), mib(smp.heapInuse), smp.goroutines, smp.openFiles, mib(smp.rss),
			smp.load.samples, smp.load.requests, smp.load.retried, smp.load.series)
		// The run's length is the load's, not a bound on the server; the only
		// failure in time is a server that stops acknowledging for waitStall.
		if smp.load.requests != lastAcked {
			lastAcked, lastProgress = smp.load.requests, time.Now()
		} else if time.Since(lastProgress) > waitStall {
			l.shutdown()
			t.Fatalf("soak %s: no write acknowledged for %s; server log:\n%s", backend, waitStall, s.log())
		}
		if smp.elapsed >= cfg.duration {
			break
		}
	}
	l.shutdown()
	wg.Wait()
	hwm, err := procStatusBytes(pid, "VmHWM")
	if err != nil {
		t.Fatalf("soak %s: %v", backend, err)
	}
	final := l.counts()
	if err := s.stop(t); err != nil {
		t.Errorf("soak %s: serve exited with %v after SIGTERM; log:\n%s", backend, err, s.log())
	}

	csvPath, svgPath := filepath.Join(out, "soak-"+backend+".csv"), filepath.Join(out, "soak-"+backend+".svg")
	csvText := soakCSV(samples)
	if err := os.WriteFile(csvPath, []byte(csvText), 0o644); err != nil {
		t.Fatalf("soak %s: write samples: %v", backend, err)
	}
	title := fmt.Sprintf("tsdb serve on %s: %d series, %.0f%% pods replaced per %s, %s", backend, cfg.series,
		cfg.churnFraction*100, cfg.churnEvery, cfg.duration)
	if err := os.WriteFile(svgPath, []byte(soakSVG(title, samples, soakWarmUp(samples, cfg.series))), 0o644); err != nil {
		t.Fatalf("soak %s: write plot: %v", backend, err)
	}
	elapsed := samples[len(samples)-1].elapsed
	t.Logf("soak %s: %d samples in %s (%.0f samples/s), %d requests acknowledged, %d retried (429/5xx), %d series created, "+
		"%d queries (%d series lookups found data); VmHWM %.1f MiB; wrote %s and %s\n%s",
		backend, final.samples, elapsed.Round(time.Second), float64(final.samples)/elapsed.Seconds(), final.requests,
		final.retried, final.series, final.queries, final.queriesWithData, mib(hwm), csvPath, svgPath, csvText)

	// Every request answered as remote write 1.0 allows: 2xx, or 429/5xx that the
	// sender retried. A 4xx or a failed connection is a bug under this load.
	if final.rejected > 0 || final.failed > 0 {
		t.Errorf("soak %s: %d requests answered 4xx, %d failed to connect; first: %s",
			backend, final.rejected, final.failed, l.firstError())
	}
	if final.samples == 0 || final.queriesWithData == 0 {
		t.Errorf("soak %s: %d samples acknowledged, %d series lookups found data; want both above 0",
			backend, final.samples, final.queriesWithData)
	}
	checkFlat(t, backend, samples, cfg.series)
}

// soakWarmUp returns the number of samples of the warm-up: the first third of
// the run, extended, on a slow machine, until the first round has written every
// series once (creating a series costs more than adding a sample to it, and the
// caches fill as it happens). It waits on progress, not on a time.
func soakWarmUp(samples []soakSample, series int) int {
	n := max(1, len(samples)/3)
	for n < len(samples) && samples[n-1].load.samples < int64(series) {
		n++
	}
	return n
}

// checkFlat compares the median of the last third of the samples with the
// maximum of the warm-up (soakWarmUp) against the soak* bounds.
func checkFlat(t *testing.T, backend string, samples []soakSample, series int) {
	t.Helper()
	warmEnd, lastStart := soakWarmUp(samples, series), len(samples)-len(samples)/3
	if warmEnd < soakMinWarmSamples || len(samples)-lastStart < soakMinWarmSamples || warmEnd > lastStart {
		t.Fatalf("soak %s: %d samples, the warm-up (first round of %d series written) took %d: too few to compare "+
			"the warm-up with the last third; run longer (%s)", backend, len(samples), series, warmEnd, envSoakDuration)
	}
	warm, last := samples[:warmEnd], samples[lastStart:]
	values := func(ss []soakSample, f func(soakSample) float64) []float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v
	}
	for _, c := range []struct {
		name  string
		value func(soakSample) float64
		limit func(warmMax float64) float64
	}{
		{"goroutines", func(s soakSample) float64 { return float64(s.goroutines) },
			func(w float64) float64 { return w + max(soakGoroutineSlack, w/10) }},
		{"open files", func(s soakSample) float64 { return float64(s.openFiles) },
			func(w float64) float64 { return w + max(soakOpenFilesSlack, w/4) }},
		{"heap in use (bytes)", func(s soakSample) float64 { return float64(s.heapInuse) },
			func(w float64) float64 { return w * soakHeapFactor }},
	} {
		w, l := values(warm, c.value), values(last, c.value)
		warmMax, lastMedian, lastMax := w[len(w)-1], l[len(l)/2], l[len(l)-1]
		if limit := c.limit(warmMax); lastMedian > limit {
			t.Errorf("soak %s: %s grew: at most %.0f in the warm-up (%d samples), median %.0f (max %.0f) in the "+
				"last third, over the bound %.0f", backend, c.name, warmMax, len(w), lastMedian, lastMax, limit)
		} else {
			t.Logf("soak %s: %s flat: warm-up (%d samples) max %.0f; last third median %.0f (max %.0f), bound %.0f",
				backend, c.name, len(w), warmMax, lastMedian, lastMax, limit)
		}
	}
}

// soakCounts are the load's counters at one moment.
type soakCounts struct {
	requests, samples, retried, rejected, failed int64
	series                                       int64 // distinct series sent so far
	queries, queriesWithData                     int64
}

// soakLoad is the remote-write senders, the churn and the queries.
type soakLoad struct {
	cfg    soakConfig
	url    string
	client *http.Client
	pods   int
	// gen[p] is pod p's generation: its pod label is pod-<p>-<gen>, and churn
	// increments it, so that pod's series are replaced by new ones.
	gen     []atomic.Int64
	stopped chan struct{}
	stop    sync.Once

	requests, samples, retried, rejected, failed, series, queries, queriesWithData atomic.Int64
	mu                                                                             sync.Mutex
	firstErr                                                                       string
}

func newSoakLoad(cfg soakConfig, url string) *soakLoad {
	pods := cfg.series / cfg.seriesPerPod
	return &soakLoad{
		cfg: cfg, url: url, pods: pods, gen: make([]atomic.Int64, pods), stopped: make(chan struct{}),
		// Its own transport, keeping one idle connection per client goroutine:
		// the default keeps two, so the server would see connections opened and
		// closed all the time, which is not the load of a Prometheus.
		client: &http.Client{
			Timeout:   waitStall,
			Transport: &http.Transport{MaxIdleConnsPerHost: cfg.senders + 2},
		},
	}
}

// shutdown stops the senders after the request each is sending, so that no
// request is cut off (a cut request is no answer to check).
func (l *soakLoad) shutdown() { l.stop.Do(func() { close(l.stopped) }) }

func (l *soakLoad) done() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

// pause waits d, or less if the load stops; it reports whether it did not.
func (l *soakLoad) pause(d time.Duration) bool {
	select {
	case <-l.stopped:
		return false
	case <-time.After(d):
		return true
	}
}

func (l *soakLoad) counts() soakCounts {
	return soakCounts{
		requests: l.requests.Load(), samples: l.samples.Load(), retried: l.retried.Load(),
		rejected: l.rejected.Load(), failed: l.failed.Load(), series: l.series.Load(),
		queries: l.queries.Load(), queriesWithData: l.queriesWithData.Load(),
	}
}

func (l *soakLoad) noteError(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstErr == "" {
		l.firstErr = msg
	}
}

func (l *soakLoad) firstError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstErr
}

func podName(p int, gen int64) string { return fmt.Sprintf("pod-%d-%d", p, gen) }

// send writes rounds of one sample per series of the sender's pods, in requests
// of cfg.batch series, until the load stops.
func (l *soakLoad) send(sender int) {
	sentGen := make(map[int]int64) // the generation of each own pod last sent
	var wr prompb.WriteRequest
	for round := 0; !l.done(); round++ {
		roundStart := time.Now()
		ts := roundStart.UnixMilli()
		for p := sender; p < l.pods && !l.done(); p += l.cfg.senders {
			gen := l.gen[p].Load()
			if g, ok := sentGen[p]; !ok || g != gen {
				sentGen[p] = gen
				l.series.Add(int64(l.cfg.seriesPerPod))
			}
			pod, ns := podName(p, gen), fmt.Sprintf("ns-%d", p%20)
			for j := range l.cfg.seriesPerPod {
				// Labels sorted by name, as remote write 1.0 requires.
				wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{
					Labels: []prompb.Label{
						{Name: "__name__", Value: "soak_metric_" + strconv.Itoa(j%10)},
						{Name: "job", Value: "soak"},
						{Name: "namespace", Value: ns},
						{Name: "pod", Value: pod},
						{Name: "series", Value: strconv.Itoa(j / 10)},
					},
					Samples: []prompb.Sample{{Timestamp: ts, Value: float64(round + j)}},
				})
				if len(wr.Timeseries) == l.cfg.batch {
					l.write(&wr)
				}
			}
		}
		if len(wr.Timeseries) > 0 {
			l.write(&wr)
		}
		if !l.pause(time.Until(roundStart.Add(l.cfg.interval))) {
			return
		}
	}
}

// write posts wr as a remote-write 1.0 request, retrying 429 and 5xx answers
// with backoff (as Prometheus does) until acknowledged or the load stops, and
// empties wr.
func (l *soakLoad) write(wr *prompb.WriteRequest) {
	n := len(wr.Timeseries)
	raw, err := wr.Marshal()
	wr.Timeseries = wr.Timeseries[:0]
	if err != nil {
		l.failed.Add(1)
		l.noteError(fmt.Sprintf("marshal write request: %v", err))
		return
	}
	body := snappy.Encode(nil, raw)
	backoff := 100 * time.Millisecond
	for {
		req, err := http.NewRequest(http.MethodPost, l.url+"/api/v1/write", bytes.NewReader(body))
		if err != nil {
			panic(err) // the URL is ours
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := l.client.Do(req)
		if err != nil {
			l.failed.Add(1)
			l.noteError(fmt.Sprintf("POST /api/v1/write: %v", err))
			return
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		switch code := resp.StatusCode; {
		case code/100 == 2:
			l.requests.Add(1)
			l.samples.Add(int64(n))
			return
		case code == http.StatusTooManyRequests || code/100 == 5:
			l.retried.Add(1)
		default:
			l.rejected.Add(1)
			l.noteError(fmt.Sprintf("POST /api/v1/write: %s: %s", resp.Status, bytes.TrimSpace(msg)))
			return
		}
		if !l.pause(backoff) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// churn replaces cfg.churnFraction of the pods every cfg.churnEvery, in turn
// from the first pod, like a rolling restart that moves through the fleet.
func (l *soakLoad) churn() {
	next, n := 0, max(1, int(float64(l.pods)*l.cfg.churnFraction))
	for l.pause(l.cfg.churnEvery) {
		for range n {
			l.gen[next].Add(1)
			next = (next + 1) % l.pods
		}
	}
}

// query is the light read load: a range query over one pod's series and a
// series lookup of another pod, every cfg.queryEvery.
func (l *soakLoad) query() {
	for l.pause(l.cfg.queryEvery) {
		now := time.Now()
		p := rand.IntN(l.pods)
		pod := podName(p, l.gen[p].Load())
		l.get("/api/v1/query_range?" + url.Values{
			"query": {`sum by (series) (rate(soak_metric_3{pod="` + pod + `"}[1m]))`},
			"start": {strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10)},
			"end":   {strconv.FormatInt(now.Unix(), 10)},
			"step":  {"15"},
		}.Encode())
		p = rand.IntN(l.pods)
		pod = podName(p, l.gen[p].Load())
		body := l.get("/api/v1/series?" + url.Values{
			"match[]": {`{pod="` + pod + `"}`},
			"start":   {strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10)},
			"end":     {strconv.FormatInt(now.Unix(), 10)},
		}.Encode())
		var res struct {
			Data []map[string]string `json:"data"`
		}
		if json.Unmarshal(body, &res) == nil && len(res.Data) > 0 {
			l.queriesWithData.Add(1)
		}
	}
}

// get sends one query and returns its body when it is answered 2xx. 429 and 5xx
// (a query over the limits of a busy server) are counted as retried, not retried:
// the next round asks again.
func (l *soakLoad) get(path string) []byte {
	resp, err := l.client.Get(l.url + path)
	if err != nil {
		l.failed.Add(1)
		l.noteError(fmt.Sprintf("GET %s: %v", path, err))
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	switch code := resp.StatusCode; {
	case code/100 == 2:
		l.queries.Add(1)
		return body
	case code == http.StatusTooManyRequests || code/100 == 5:
		l.retried.Add(1)
	default:
		l.rejected.Add(1)
		l.noteError(fmt.Sprintf("GET %s: %s: %.200s", path, resp.Status, bytes.TrimSpace(body)))
	}
	return nil
}

// sampleServer measures the server: its Go heap in use and goroutines from
// /debug/pprof (--web.enable-pprof), its open files and RSS from /proc.
func sampleServer(addr string, pid int) (soakSample, error) {
	var s soakSample
	// gc=1 runs a GC before the profile, so that HeapInuse is the live heap and
	// not wherever the GC cycle happens to be.
	heap, err := httpGetBody("http://" + addr + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return s, err
	}
	v, ok := profileField(heap, "# HeapInuse = ")
	if !ok {
		return s, fmt.Errorf("sample heap: no HeapInuse in /debug/pprof/heap?debug=1")
	}
	if s.heapInuse, err = strconv.ParseUint(v, 10, 64); err != nil {
		return s, fmt.Errorf("sample heap: HeapInuse %q: %w", v, err)
	}
	gr, err := httpGetBody("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return s, err
	}
	v, ok = profileField(gr, "goroutine profile: total ")
	if !ok {
		return s, fmt.Errorf("sample goroutines: no total in /debug/pprof/goroutine?debug=1")
	}
	if s.goroutines, err = strconv.Atoi(v); err != nil {
		return s, fmt.Errorf("sample goroutines: total %q: %w", v, err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("sample open files: %w", err)
	}
	s.openFiles = len(fds)
	s.rss, err = procStatusBytes(pid, "VmRSS")
	return s, err
}

// sampleClient measures the server; its timeout turns a server that stopped
// answering into a failure rather than a test that hangs until -timeout.
var sampleClient = &http.Client{Timeout: waitStall}

func httpGetBody(u string) ([]byte, error) {
	resp, err := sampleClient.Get(u)
	if err != nil {
		return nil, fmt.Errorf("sample: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sample: GET %s: %s %v", u, resp.Status, err)
	}
	return body, nil
}

// profileField returns the rest of the first line of a text profile that
// starts with prefix.
func profileField(profile []byte, prefix string) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(profile))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func soakCSV(samples []soakSample) string {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"elapsed_s", "heap_inuse_bytes", "goroutines", "open_files", "rss_bytes",
		"samples_acked", "requests_acked", "requests_retried", "series_created", "queries"})
	for _, s := range samples {
		w.Write([]string{
			strconv.FormatFloat(s.elapsed.Seconds(), 'f', 1, 64), strconv.FormatUint(s.heapInuse, 10),
			strconv.Itoa(s.goroutines), strconv.Itoa(s.openFiles), strconv.FormatUint(s.rss, 10),
			strconv.FormatInt(s.load.samples, 10), strconv.FormatInt(s.load.requests, 10),
			strconv.FormatInt(s.load.retried, 10), strconv.FormatInt(s.load.series, 10),
			strconv.FormatInt(s.load.queries, 10),
		})
	}
	w.Flush()
	return buf.String()
}

// soakSVG draws the samples as four small line charts (heap, RSS, goroutines,
// open files over time), each scaled from 0 to its maximum, so that a leak shows
// as a line that keeps rising and a flat process as a level one. The warm-up is
// shaded grey, the last third blue.
func soakSVG(title string, samples []soakSample, warmEnd int) string {
	const panelW, panelH, pad, top = 420, 150, 50, 40
	panels := []struct {
		name  string
		value func(soakSample) float64
	}{
		{"heap in use (MiB, after GC)", func(s soakSample) float64 { return mib(s.heapInuse) }},
		{"RSS (MiB)", func(s soakSample) float64 { return mib(s.rss) }},
		{"goroutines", func(s soakSample) float64 { return float64(s.goroutines) }},
		{"open files", func(s soakSample) float64 { return float64(s.openFiles) }},
	}
	width, height := 2*(panelW+pad)+pad, top+2*(panelH+pad)+10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="13">%s</text>`+"\n", pad, svgEscape(title))
	tMax := samples[len(samples)-1].elapsed.Seconds()
	for i, p := range panels {
		x0, y0 := pad+(i%2)*(panelW+pad), top+(i/2)*(panelH+pad)
		vMax := 0.0
		for _, s := range samples {
			vMax = max(vMax, p.value(s))
		}
		if vMax == 0 {
			vMax = 1
		}
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
		fmt.Fprintf(&b, `<text x="0" y="-6">%s</text>`+"\n", svgEscape(p.name))
		fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", panelW, panelH)
		fmt.Fprintf(&b, `<text x="-4" y="10" text-anchor="end">%.0f</text><text x="-4" y="%d" text-anchor="end">0</text>`+"\n", vMax, panelH)
		fmt.Fprintf(&b, `<text x="0" y="%d">0s</text><text x="%d" y="%d" text-anchor="end">%.0fs</text>`+"\n",
			panelH+14, panelW, panelH+14, tMax)
		// The warm-up (grey) and the last third (blue) that is compared with it.
		lastStart := samples[min(len(samples)-1, len(samples)-len(samples)/3)].elapsed.Seconds()
		fmt.Fprintf(&b, `<rect width="%.1f" height="%d" fill="#eee"/>`+"\n",
			float64(panelW)*samples[warmEnd-1].elapsed.Seconds()/tMax, panelH)
		fmt.Fprintf(&b, `<rect x="%.1f" width="%.1f" height="%d" fill="#eef"/>`+"\n",
			float64(panelW)*lastStart/tMax, float64(panelW)*(1-lastStart/tMax), panelH)
		b.WriteString(`<polyline fill="none" stroke="#c33" stroke-width="1.5" points="`)
		for _, s := range samples {
			fmt.Fprintf(&b, "%.1f,%.1f ", float64(panelW)*s.elapsed.Seconds()/tMax, float64(panelH)*(1-p.value(s)/vMax))
		}
		b.WriteString("\"/>\n</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func svgEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
