package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
)

// Remote-write protocols, as Prometheus' remote_write protobuf_message names them.
const (
	protoV1 = "prometheus.WriteRequest"
	protoV2 = "io.prometheus.write.v2.Request"
)

// promServer is a running Prometheus server.
type promServer struct {
	*process
	url   string    // http://127.0.0.1:port
	start time.Time // when it was started
}

// promConfig describes the Prometheus configuration of one run.
type promConfig struct {
	port          int    // Prometheus' own port (it scrapes itself)
	targetAddr    string // the synthetic target's host:port
	tsdbMetrics   string // tsdb's host:port when tsdb serves /metrics, else ""
	writeURL      string // tsdb's remote-write URL
	protobufMsg   string // protoV1 or protoV2
	runLabel      string // an external label naming the run
	scrapeEvery   time.Duration
	batchDeadline time.Duration
	// readURL, when set, makes a reader instead: a Prometheus that scrapes
	// nothing, writes nowhere and remote-reads from readURL (read_recent, so even
	// the newest data comes from there).
	readURL string
	// client, when set, is YAML added to the tsdb remote_write entry (or the
	// reader's remote_read entry), indented for its keys: basic_auth,
	// tls_config.
	client string
	// extraRemoteWrite, when set, is YAML of more remote_write entries
	// ("  - name: ..."), appended after the tsdb one.
	extraRemoteWrite string
	// backfilled makes a Prometheus that serves the blocks promtool wrote into
	// its data directory, whatever their age (--storage.tsdb.retention.time
	// is relative to the newest block, and the default 15d would delete older
	// ones): it scrapes nothing and writes nowhere.
	backfilled bool
}

// backfillRetention is the retention of a backfilled Prometheus: longer than any
// history a test writes.
const backfillRetention = "10y"

func (c promConfig) yaml() string {
	var b strings.Builder
	if c.backfilled {
		return "global:\n  evaluation_interval: 1m\n"
	}
	if c.readURL != "" {
		fmt.Fprintf(&b, `remote_read:
  - name: tsdb
    url: %q
    read_recent: true
    remote_timeout: 1m
`, c.readURL)
		b.WriteString(c.client)
		return b.String()
	}
	fmt.Fprintf(&b, `global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:%[2]d"]
  - job_name: e2e-target
    static_configs:
      - targets: [%[3]q]
        labels:
          e2e_run: %[4]q
`, model(c.scrapeEvery), c.port, c.targetAddr, c.runLabel)
	if c.tsdbMetrics != "" {
		fmt.Fprintf(&b, `  - job_name: tsdb
    static_configs:
      - targets: [%q]
`, c.tsdbMetrics)
	}
	fmt.Fprintf(&b, `remote_write:
  - name: tsdb
    url: %q
    protobuf_message: %s
    remote_timeout: 30s
    queue_config:
      batch_send_deadline: %s
      min_backoff: 100ms
      max_backoff: 2s
    metadata_config:
      send: true
      send_interval: 5s
`, c.writeURL, c.protobufMsg, model(c.batchDeadline))
	b.WriteString(c.client)
	b.WriteString(c.extraRemoteWrite)
	return b.String()
}

// model formats a duration the way Prometheus' configuration reads it.
func model(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// flushDeadline is Prometheus' --storage.remote.flush-deadline.
const flushDeadline = 2 * time.Minute

// checkNoLoss fails the test when Prometheus' log says it dropped samples itself
// (a reshard or shutdown that hit its flush deadline): tsdb never got them, so the
// comparison would blame tsdb for Prometheus' loss.
func (ps *promServer) checkNoLoss(t *testing.T) {
	t.Helper()
	for _, l := range ps.out.lines() {
		if strings.Contains(l, "Failed to flush all") {
			t.Errorf("Prometheus dropped data itself, so tsdb cannot have it: %s", l)
		}
	}
}

// startPrometheus writes the configuration into dir and starts Prometheus on it,
// retrying with another port if the chosen one was taken meanwhile.
func startPrometheus(t *testing.T, bin, dir string, cfg promConfig) *promServer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cfg.port = freePort(t)
		cfgPath := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(cfgPath, []byte(cfg.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", cfg.port),
			// How long remote write waits for in-flight sends when it reshards its
			// queues or shuts down, before it cancels them and drops their
			// samples. A short deadline (1s) makes shutdown quick but loses a
			// batch whenever a reshard meets a write that takes longer (new
			// series on a loaded HBase): Prometheus' loss, not tsdb's. The test
			// waits for the queues to drain before stopping Prometheus, so a
			// long deadline costs nothing there.
			"--storage.remote.flush-deadline=" + model(flushDeadline),
			"--log.level=info",
		}
		if cfg.protobufMsg == protoV2 {
			// Metadata travels inside remote-write 2.0 requests only with this.
			args = append(args, "--enable-feature=metadata-wal-records")
		}
		if cfg.backfilled {
			// The admin API for a snapshot of the history (vmctl's prometheus mode).
			args = append(args, "--storage.tsdb.retention.time="+backfillRetention, "--web.enable-admin-api")
		}
		p := startProcess(t, "prometheus", dir, bin, args...)
		if ps := readyPrometheus(t, p, cfg.port, attempt, cfg.yaml()); ps != nil {
			return ps
		}
	}
}

// readyPrometheus waits for the Prometheus process p, listening on port, to be
// ready and returns it; nil when it exited because the port was taken on an
// early attempt (the caller retries on another port). Any other failure fails
// the test with the end of its log (and config, its configuration file).
func readyPrometheus(t *testing.T, p *process, port, attempt int, config string) *promServer {
	t.Helper()
	ps := &promServer{process: p, url: fmt.Sprintf("http://127.0.0.1:%d", port), start: time.Now()}
	var last error // the last readiness poll's
	err := p.waitUntil("prometheus to be ready", 200*time.Millisecond, func() (bool, error) {
		// A poll that gets no answer in time just polls again.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, last = httpGet(ctx, ps.url+"/-/ready")
		return last == nil, nil
	})
	switch {
	case err == nil:
		return ps
	case p.exited() && attempt < 3 && p.out.contains("address already in use"):
		t.Logf("prometheus: port %d was taken, retrying", port)
		return nil
	case p.exited():
		t.Fatalf("prometheus exited at start (%v); last lines of its log:\n%s\nconfig:\n%s", p.waitErr, p.tail(40), config)
	default:
		t.Fatalf("%v (last answer: %v); last lines of its log:\n%s", err, last, p.tail(40))
	}
	return nil
}

// metrics returns the sum over all series of each metric family named in names, read
// from Prometheus' own /metrics page (not from its TSDB, which lags a scrape).
func (ps *promServer) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	return ps.metricsWhere(ctx, "", names...)
}

// metricsWhere is metrics over the series whose line contains match (such as
// `remote_name="tsdb"`, to read one remote-write queue's metrics); "" matches all.
func (ps *promServer) metricsWhere(ctx context.Context, match string, names ...string) (map[string]float64, error) {
	return ps.metricsKept(ctx, func(line string) bool { return strings.Contains(line, match) }, names...)
}

// metricsKept is metricsWhere for the lines keep returns true for, summed
// from one read of /metrics (so that sums over different label sets are of
// the same moment).
func (ps *promServer) metricsKept(ctx context.Context, keep func(line string) bool, names ...string) (map[string]float64, error) {
	body, err := httpGet(ctx, ps.url+"/metrics")
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	sums := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if !want[name] || !keep(line) {
			continue
		}
		fields := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		sums[name] += v
	}
	return sums, sc.Err()
}

// Prometheus' remote-write metrics, reported after every run.
var remoteWriteMetrics = []string{
	"prometheus_remote_storage_samples_total",
	"prometheus_remote_storage_samples_failed_total",
	"prometheus_remote_storage_samples_retried_total",
	"prometheus_remote_storage_samples_dropped_total",
	"prometheus_remote_storage_samples_pending",
	"prometheus_remote_storage_metadata_total",
	"prometheus_remote_storage_metadata_failed_total",
	"prometheus_remote_storage_queue_highest_sent_timestamp_seconds",
	"prometheus_remote_storage_bytes_total",
}

// waitSent waits until Prometheus has sent samples up to ts (ms; the gauge it reports
// has whole seconds) and holds nothing pending for tsdb, and returns its remote-write
// metrics. It waits as long as the sending makes progress (sendWatch), however long
// that takes on a loaded machine, and fails the test once it has made none for
// stallTimeout or when Prometheus exits.
func (ps *promServer) waitSent(t *testing.T, ts int64) map[string]float64 {
	t.Helper()
	return ps.waitSentWhere(t, ts, "")
}

// waitSentWhere is waitSent for the remote-write queues whose metric lines
// contain match (metricsWhere): with several queues, one queue's, since the
// highest sent timestamp of each is summed.
func (ps *promServer) waitSentWhere(t *testing.T, ts int64, match string) map[string]float64 {
	t.Helper()
	w := newSendWatch(ts)
	var m map[string]float64
	var last error // the last metrics poll's
	var progress sendProgress
	err := waitForProgress(fmt.Sprintf("prometheus to send samples up to %s", fmtTime(ts)), 250*time.Millisecond, func() (sendProgress, bool, error) {
		if ps.exited() {
			return progress, false, fmt.Errorf("prometheus exited (%v)", ps.waitErr)
		}
		// A poll that gets no answer in time just polls again.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := ps.metricsWhere(ctx, match, remoteWriteMetrics...)
		if last = err; err != nil {
			return progress, false, nil
		}
		m = got
		var done bool
		progress, done = w.observe(m)
		return progress, done, nil
	})
	if err != nil {
		t.Fatalf("%v (metrics %v, last poll error %v); last lines of its log:\n%s", err, m, last, ps.tail(40))
	}
	return m
}

// sendWatch follows Prometheus' remote write towards having sent every sample up to
// a timestamp, from successive readings of its remote-write metrics (the
// queue_manager.go metrics of Prometheus v0.316.0).
type sendWatch struct {
	goal float64 // ms: the highest sent timestamp must reach it
	// sent is the most samples seen sent successfully: samples_total counts every
	// attempt, samples_retried_total the attempts that failed and are retried,
	// samples_failed_total those given up. An attempt in flight counts in the first
	// only, so the difference can fall back; its maximum cannot, so a sender that
	// retries one batch forever makes no progress.
	sent float64
	// limit, once the goal is reached, is sent then plus what was pending then:
	// the most there is left to send of samples up to the goal. Prometheus goes on
	// scraping and sending newer samples, which must not count as progress, or a
	// queue that never reads as empty would be waited on forever.
	limit   float64
	reached bool
	// atReach and pendingAtReach are the samples sent and pending when the
	// goal was reached. A queue that never reads as empty (a receiver on a busy
	// machine keeps up, but only just) is done once four times what was
	// pending then has been sent since: Prometheus spreads series evenly over
	// its shards, so by then every shard has sent what it held at the goal
	// unless one is stuck, which the comparison of the data then shows.
	atReach, pendingAtReach float64
}

func newSendWatch(goal int64) *sendWatch { return &sendWatch{goal: float64(goal)} }

// sendProgress is how far Prometheus' remote write has come towards a goal.
type sendProgress struct {
	highestSent float64 // seconds, at most the goal
	sent        float64 // samples sent successfully, counted as sendWatch.sent
}

func (p sendProgress) String() string {
	return fmt.Sprintf("highest sent timestamp %s, %.0f samples sent", fmtTime(int64(p.highestSent*1000)), p.sent)
}

// observe takes one reading of the metrics (remoteWriteMetrics) and returns the
// progress so far and whether the goal is reached with nothing pending.
func (w *sendWatch) observe(m map[string]float64) (sendProgress, bool) {
	highest := m["prometheus_remote_storage_queue_highest_sent_timestamp_seconds"]
	pending := m["prometheus_remote_storage_samples_pending"]
	sent := m["prometheus_remote_storage_samples_total"] -
		m["prometheus_remote_storage_samples_retried_total"] -
		m["prometheus_remote_storage_samples_failed_total"]
	if !w.reached && highest*1000 >= w.goal {
		w.reached, w.limit = true, max(sent, w.sent)+pending
		w.atReach, w.pendingAtReach = max(sent, w.sent), pending
	}
	drained := w.reached && (pending == 0 || sent-w.atReach >= 4*w.pendingAtReach)
	if w.reached {
		sent = min(sent, w.limit)
	}
	w.sent = max(w.sent, sent)
	return sendProgress{highestSent: min(highest, w.goal/1000), sent: w.sent}, drained
}

// apiResponse is the envelope of Prometheus' HTTP API.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Infos     []string        `json:"infos"`
}

type apiMatrix struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string    `json:"metric"`
		Values [][2]json.RawMessage `json:"values"`
	} `json:"result"`
}

// queryMatrix runs an API query (path /api/v1/query or /api/v1/query_range) whose
// result is a matrix and returns its series, each with samples in time order.
func (ps *promServer) queryMatrix(ctx context.Context, path string, params url.Values) (seriesSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ps.url+path, strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseMatrixResponse(body, resp.Status)
}

// parseMatrixResponse decodes an API response whose data is a matrix.
func parseMatrixResponse(body []byte, status string) (seriesSet, error) {
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: not an API response: %w: %s", status, err, truncate(string(body), 300))
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", status, r.ErrorType, r.Error)
	}
	var m apiMatrix
	if err := json.Unmarshal(r.Data, &m); err != nil {
		return nil, fmt.Errorf("decode matrix: %w", err)
	}
	if m.ResultType != "matrix" {
		return nil, fmt.Errorf("result type %q, want matrix", m.ResultType)
	}
	set := seriesSet{}
	for _, s := range m.Result {
		ls := labels.FromMap(s.Metric)
		out := &series{labels: ls}
		for _, p := range s.Values {
			ts, err := parseAPITimestamp(string(p[0]))
			if err != nil {
				return nil, fmt.Errorf("series %s: %w", ls, err)
			}
			var vs string
			if err := json.Unmarshal(p[1], &vs); err != nil {
				return nil, fmt.Errorf("series %s: value %s is not a string: %w", ls, p[1], err)
			}
			v, err := parseAPIValue(vs)
			if err != nil {
				return nil, fmt.Errorf("series %s: %w", ls, err)
			}
			out.samples = append(out.samples, sample{t: ts, v: v})
		}
		if _, dup := set[ls.String()]; dup {
			return nil, fmt.Errorf("series %s twice in one result", ls)
		}
		set[ls.String()] = out
	}
	return set, nil
}

// parseAPITimestamp parses an API timestamp (seconds with up to three decimals, as
// Prometheus writes them) into milliseconds, exactly.
func parseAPITimestamp(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	secs, frac, _ := strings.Cut(s, ".")
	if len(frac) > 3 {
		return 0, fmt.Errorf("timestamp %s has more than millisecond precision", s)
	}
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("timestamp %q: %w", s, err)
	}
	var ms int64
	if frac != "" {
		ms, err = strconv.ParseInt(frac+strings.Repeat("0", 3-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("timestamp %q: %w", s, err)
		}
	}
	ts := sec*1000 + ms
	if neg {
		ts = -ts
	}
	return ts, nil
}

// parseAPIValue parses a sample value as the API writes it: shortest round-trip
// decimal, NaN, +Inf or -Inf.
func parseAPIValue(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q: %w", s, err)
	}
	return v, nil
}

// remoteRead reads the raw samples of every series in [mint, maxt] (ms, inclusive)
// through Prometheus' remote-read API (sampled response). Unlike the query API it
// returns stale markers, with their bits.
func (ps *promServer) remoteRead(ctx context.Context, mint, maxt int64) (seriesSet, error) {
	req := &prompb.ReadRequest{
		Queries: []*prompb.Query{{
			StartTimestampMs: mint,
			EndTimestampMs:   maxt,
			Matchers:         []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: labels.MetricName, Value: ".+"}},
		}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES},
	}
	raw, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, ps.url+"/api/v1/read", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := httpClient.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("remote read: %s: %s", resp.Status, truncate(string(body), 300))
	}
	dec, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("remote read: response is not snappy: %w", err)
	}
	var rr prompb.ReadResponse
	if err := rr.Unmarshal(dec); err != nil {
		return nil, fmt.Errorf("remote read: decode response: %w", err)
	}
	if len(rr.Results) != 1 {
		return nil, fmt.Errorf("remote read: %d results for 1 query", len(rr.Results))
	}
	set := seriesSet{}
	for _, ts := range rr.Results[0].Timeseries {
		b := labels.NewScratchBuilder(len(ts.Labels))
		for _, l := range ts.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		ls := b.Labels()
		if len(ts.Histograms) > 0 {
			return nil, fmt.Errorf("remote read: series %s has native histograms, which this test does not expect", ls)
		}
		s := &series{labels: ls}
		for _, smp := range ts.Samples {
			s.samples = append(s.samples, sample{t: smp.Timestamp, v: smp.Value})
		}
		set[ls.String()] = s
	}
	return set, nil
}

// metadata is a metric family's metadata as Prometheus' metadata API shows it.
type metadata struct {
	Type string `json:"type"`
	Help string `json:"help"`
	Unit string `json:"unit"`
}

// metadata returns Prometheus' metadata of each family (the zero value for a
// family it has none of); a family with more than one distinct entry is an error.
func (ps *promServer) metadata(ctx context.Context, families []string) (map[string]metadata, error) {
	out := map[string]metadata{}
	for _, f := range families {
		body, err := httpGet(ctx, ps.url+"/api/v1/metadata?metric="+url.QueryEscape(f))
		if err != nil {
			return nil, err
		}
		var r apiResponse
		if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
			return nil, fmt.Errorf("metadata of %s: %v %s: %s", f, err, r.Error, truncate(string(body), 300))
		}
		var m map[string][]metadata
		if err := json.Unmarshal(r.Data, &m); err != nil {
			return nil, fmt.Errorf("metadata of %s: %w", f, err)
		}
		switch entries := m[f]; len(entries) {
		case 0:
		case 1:
			out[f] = entries[0]
		default:
			return nil, fmt.Errorf("metadata of %s: %d different entries %+v", f, len(entries), entries)
		}
	}
	return out, nil
}
