package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// EnvVmctl is the path of VictoriaMetrics' vmctl binary; testing/vmctl/vmctl.sh
// builds it and prints the path. Missing, the vmctl tests skip (fail under
// EnvRequire=1).
const EnvVmctl = "TSDB_TEST_VMCTL"

func vmctlBinary(t *testing.T) string {
	t.Helper()
	return binaryFromEnv(t, "vmctl", "VictoriaMetrics' vmctl binary", EnvVmctl, "testing/vmctl/vmctl.sh")
}

// TestVmctlMigratesPrometheusIntoTSDB: a real Prometheus, backfilled with two
// days of history, is migrated into tsdb serve by a real vmctl (remote read from
// Prometheus, /api/v1/import into tsdb: SAMPLES on the embedded store, streamed
// chunks on HBase); then tsdb's /api/v1/export holds exactly the history,
// tsdb's PromQL answers a set of expressions exactly as Prometheus does, and the
// export imported into a fresh store exports the same bytes again. Then vmctl's
// prometheus mode migrates a snapshot of the same Prometheus (its blocks on disk)
// into a fresh store, with the same checks.
func TestVmctlMigratesPrometheusIntoTSDB(t *testing.T) {
	promBin := prometheusBinary(t)
	promtool := promtoolBinary(t)
	vmctl := vmctlBinary(t)
	ctx := context.Background()
	h := newVmctlHistory(time.Now())
	promDir := t.TempDir()
	ps := backfillPrometheus(t, promBin, promtool, promDir, h)
	reqs := vmctlRequests(h)
	want := make([]*queryResult, len(reqs))
	for i, r := range reqs {
		res, err := apiQuery(ctx, ps.url, "/api/v1/query_range", r.params())
		if err != nil {
			t.Fatalf("Prometheus: %s: %v", r, err)
		}
		if res.resultType != "matrix" || len(res.series) == 0 {
			t.Fatalf("Prometheus: %s: a %s of %d series, want a matrix with series: the comparison would prove nothing", r, res.resultType, len(res.series))
		}
		want[i] = res
	}
	t.Logf("history: %d series, %d samples, [%s, %s); Prometheus asked %d requests", len(h.series), h.samples(), fmtDate(h.start), fmtDate(h.end), len(reqs))

	for _, sf := range []struct {
		name   string
		new    func(*testing.T) store
		stream bool
	}{
		{"embedded", embeddedStore, false},
		{"hbase", hbaseStore, true},
	} {
		t.Run(sf.name, func(t *testing.T) {
			st := sf.new(t)
			st.flags = append(st.flags, "--compact.enabled=false")
			tsdb := startTSDB(t, t.TempDir(), st)
			began := time.Now()
			runVmctl(t, vmctl, ps.url, tsdb.baseURL(), h, sf.stream)
			t.Logf("%s: vmctl migrated %d samples in %s", st.name, h.samples(), time.Since(began).Round(time.Millisecond))

			export := exportAll(t, tsdb.baseURL())
			checkMigrated(ctx, t, tsdb.baseURL(), export, h, reqs, want)

			// Export -> import into a fresh store -> export: the same bytes.
			fresh := startTSDB(t, t.TempDir(), embeddedStore(t))
			resp, err := http.Post(fresh.baseURL()+"/api/v1/import", "application/json", bytes.NewReader(export))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("import of the export: %d %s", resp.StatusCode, body)
			}
			if again := exportAll(t, fresh.baseURL()); !bytes.Equal(again, export) {
				t.Fatalf("the export of the imported export differs (%d bytes, first %d bytes)", len(again), len(export))
			}
			fresh.stopAndCheck(t)
			tsdb.stopAndCheck(t)
		})
	}

	// vmctl's prometheus mode: it reads a snapshot of Prometheus' blocks from disk
	// (Prometheus' own tsdb package) and imports it through /api/v1/import.
	t.Run("snapshot", func(t *testing.T) {
		snapshot := prometheusSnapshot(t, ps.url, promDir)
		tsdb := startTSDB(t, t.TempDir(), embeddedStore(t))
		args := []string{"prometheus", "-s", "--disable-progress-bar", "--prom-snapshot=" + snapshot,
			"--prom-tmp-dir-path=" + t.TempDir(), "--vm-addr=" + tsdb.baseURL(),
			"--vm-backoff-retries=1", "--vm-backoff-min-duration=100ms"}
		out, err := exec.Command(vmctl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("vmctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("vmctl %s:\n%s", strings.Join(args, " "), lastLines(out, 6))
		checkMigrated(ctx, t, tsdb.baseURL(), exportAll(t, tsdb.baseURL()), h, reqs, want)
		tsdb.stopAndCheck(t)
	})
}

// checkMigrated checks a store that vmctl migrated the history into: its export
// (of tsdbURL) holds exactly the history, and it answers reqs bit for bit as
// Prometheus did (want).
func checkMigrated(ctx context.Context, t *testing.T, tsdbURL string, export []byte, h *oracleHistory, reqs []vmctlRequest, want []*queryResult) {
	t.Helper()
	wantSet := seriesSet{}
	for _, s := range h.series {
		wantSet[s.labels.String()] = s
	}
	if d := compareSets(wantSet, parseExport(t, export), sameBits); len(d) > 0 {
		t.Fatalf("tsdb's export after vmctl differs from the history in %d places:%s", len(d), summarize(d, 10))
	}
	for i, r := range reqs {
		res, err := apiQuery(ctx, tsdbURL, "/api/v1/query_range", r.params())
		if err != nil {
			t.Fatalf("tsdb: %s: %v", r, err)
		}
		if d := compareResults(want[i], res, sameBits); len(d) > 0 {
			t.Errorf("tsdb answers %s unlike Prometheus in %d places:%s", r, len(d), summarize(d, 10))
		}
	}
}

// prometheusSnapshot takes a snapshot of the Prometheus at promURL (its admin
// API, POST /api/v1/admin/tsdb/snapshot) whose data directory is
// promDir/prometheus-data, and returns the snapshot's directory.
func prometheusSnapshot(t *testing.T, promURL, promDir string) string {
	t.Helper()
	resp, err := http.Post(promURL+"/api/v1/admin/tsdb/snapshot", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var snap struct {
		Data struct {
			Name string `json:"name"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &snap); resp.StatusCode != http.StatusOK || err != nil || snap.Data.Name == "" {
		t.Fatalf("Prometheus snapshot: %d %s (%v)", resp.StatusCode, body, err)
	}
	return filepath.Join(promDir, "prometheus-data", "snapshots", snap.Data.Name)
}

// newVmctlHistory is two days of history ending at the UTC midnight before now,
// one sample a minute (whole seconds), from a fixed seed: counters with resets
// (one with a gap of 3 hours), gauges of three decimals with +Inf and -Inf
// among them, label values with a quote, a backslash and a non-ASCII letter.
// No NaN: VictoriaMetrics' import format skips NaN values (so does tsdb's
// /api/v1/import), and the comparison is of what vmctl can carry.
func newVmctlHistory(now time.Time) *oracleHistory {
	const day = 24 * time.Hour
	end := now.UTC().Truncate(day)
	start := end.Add(-2 * day)
	h := &oracleHistory{start: start.UnixMilli(), end: end.UnixMilli()}
	rng := rand.New(rand.NewPCG(25, 1))
	add := func(lbls labels.Labels, offset time.Duration, gapFrom, gapTo int64, next func() float64) {
		s := &series{labels: lbls}
		for ts := start.Add(offset); ts.Before(end); ts = ts.Add(time.Minute) {
			if ms := ts.UnixMilli(); ms >= gapFrom && ms < gapTo {
				continue
			}
			s.samples = append(s.samples, sample{t: ts.UnixMilli(), v: next()})
		}
		h.series = append(h.series, s)
	}
	counter := func() func() float64 {
		c := 0.0
		return func() float64 {
			if rng.IntN(500) == 0 {
				c = 0
			}
			c += float64(rng.IntN(100))
			return c
		}
	}
	gauge := func() func() float64 {
		return func() float64 {
			switch rng.IntN(400) {
			case 0:
				return math.Inf(1)
			case 1:
				return math.Inf(-1)
			}
			return float64(rng.IntN(200_001)-100_000) / 1000
		}
	}
	gapFrom := start.Add(30 * time.Hour).UnixMilli()
	add(labels.FromStrings(labels.MetricName, "vm_requests_total", "job", "api", "instance", "a:80"), 0, 0, 0, counter())
	add(labels.FromStrings(labels.MetricName, "vm_requests_total", "job", "api", "instance", "b:80"), 17*time.Second, gapFrom, gapFrom+3*time.Hour.Milliseconds(), counter())
	add(labels.FromStrings(labels.MetricName, "vm_requests_total", "job", "web", "instance", `q"\ü`), 59*time.Second, 0, 0, counter())
	add(labels.FromStrings(labels.MetricName, "vm_temperature", "job", "api", "room", "a"), 0, 0, 0, gauge())
	add(labels.FromStrings(labels.MetricName, "vm_temperature", "job", "web", "room", "b"), 30*time.Second, 0, 0, gauge())
	return h
}

// vmctlRequest is one query_range request of the comparison.
type vmctlRequest struct {
	expr       string
	start, end int64 // ms
	step       time.Duration
}

func (r vmctlRequest) String() string {
	return fmt.Sprintf("%s over [%s, %s] step %s", r.expr, fmtDate(r.start), fmtDate(r.end), r.step)
}

func (r vmctlRequest) params() url.Values {
	return url.Values{"query": {r.expr}, "start": {strconv.FormatInt(r.start/1000, 10)},
		"end": {strconv.FormatInt(r.end/1000, 10)}, "step": {strconv.FormatFloat(r.step.Seconds(), 'f', -1, 64)}}
}

// vmctlRequests are the expressions compared, over the whole history at a
// step that is no divisor of a minute's offset, and over its last 6 hours at
// 37s.
func vmctlRequests(h *oracleHistory) []vmctlRequest {
	exprs := []string{
		"vm_requests_total",
		"vm_temperature",
		"rate(vm_requests_total[5m])",
		"sum by (job) (increase(vm_requests_total[1h]))",
		"max_over_time(vm_temperature[30m])",
		"min_over_time(vm_temperature[30m])",
		"avg by (job) (vm_temperature)",
		"count_over_time(vm_requests_total[10m])",
		"resets(vm_requests_total[2h])",
		"irate(vm_requests_total[3m])",
	}
	var out []vmctlRequest
	for _, e := range exprs {
		out = append(out,
			vmctlRequest{expr: e, start: h.start, end: h.end + 5*time.Minute.Milliseconds(), step: 7 * time.Minute},
			vmctlRequest{expr: e, start: h.end - 6*time.Hour.Milliseconds(), end: h.end, step: 37 * time.Second})
	}
	return out
}

// runVmctl migrates the history from Prometheus (promURL) into tsdb (tsdbURL)
// with vmctl remote-read, a day per step, and fails the test with vmctl's
// output if it fails.
func runVmctl(t *testing.T, vmctl, promURL, tsdbURL string, h *oracleHistory, stream bool) {
	t.Helper()
	args := []string{"remote-read", "-s", "--disable-progress-bar",
		"--remote-read-src-addr=" + promURL,
		"--remote-read-filter-time-start=" + time.UnixMilli(h.start).UTC().Format(time.RFC3339),
		"--remote-read-filter-time-end=" + time.UnixMilli(h.end).UTC().Format(time.RFC3339),
		"--remote-read-step-interval=day",
		"--remote-read-use-stream=" + strconv.FormatBool(stream),
		"--vm-addr=" + tsdbURL,
		"--vm-backoff-retries=1", "--vm-backoff-min-duration=100ms",
	}
	cmd := exec.Command(vmctl, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("vmctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("vmctl %s:\n%s", strings.Join(args, " "), lastLines(out, 6))
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// exportAll is tsdb's /api/v1/export of every series.
func exportAll(t *testing.T, base string) []byte {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/export", url.Values{"match[]": {`{__name__=~".+"}`}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %v %s", resp.StatusCode, err, lastLines(b, 3))
	}
	return b
}

// parseExport reads export JSON lines into series (lines of one series joined).
func parseExport(t *testing.T, b []byte) seriesSet {
	t.Helper()
	out := seriesSet{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var line struct {
			Metric     map[string]string `json:"metric"`
			Values     []json.RawMessage `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || len(line.Values) != len(line.Timestamps) {
			t.Fatalf("export line %d: %v (%d values, %d timestamps)", n, err, len(line.Values), len(line.Timestamps))
		}
		lbls := labels.FromMap(line.Metric)
		s := out[lbls.String()]
		if s == nil {
			s = &series{labels: lbls}
			out[lbls.String()] = s
		}
		for i, raw := range line.Values {
			var v float64
			switch string(raw) {
			case "null":
				v = math.NaN()
			case `"Infinity"`:
				v = math.Inf(1)
			case `"-Infinity"`:
				v = math.Inf(-1)
			default:
				f, err := strconv.ParseFloat(string(raw), 64)
				if err != nil {
					t.Fatalf("export line %d: value %s: %v", n, raw, err)
				}
				v = f
			}
			s.samples = append(s.samples, sample{t: line.Timestamps[i], v: v})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
