package dashboards

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
)

// selfScrapeFlag is the tsdb serve flag that writes tsdb's own metrics into
// its store (job="hbtsdb"), which the overview dashboard shows.
const selfScrapeFlag = "--self-scrape.interval"

// TestPanelQueriesReturnData runs every query of every committed dashboard —
// each variable's label_values and each panel's PromQL, the variables
// substituted as Grafana writes them (one host, and "All"; $__rate_interval,
// $__interval, $__range) — against a real `tsdb serve` (built from this
// checkout) on an embedded store. The store holds two hours of
// node-exporter-shaped data at 15s for three hosts, written with remote write
// 1.0, and tsdb's own metrics from --self-scrape.interval=1s; its compaction
// worker runs every second. Every query must be accepted by /api/v1/query;
// graph panels' queries must return series from /api/v1/query_range, stat and
// table panels' queries a non-empty instant result.
//
// Self-scraped data appears over time, so the checks poll: a query that is
// still empty fails once the server has self-scraped scrapeBudget more times,
// or when nothing moved (no new scrape, no check passing) for stallTimeout.
func TestPanelQueriesReturnData(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs tsdb serve")
	}
	boards := loadCommitted(t)
	bin := buildTSDB(t)
	selfScrape := hasFlag(t, bin, selfScrapeFlag)
	args := []string{
		"--storage=embedded:" + filepath.Join(t.TempDir(), "store"),
		"--storage.min-free-bytes=0",
		"--compact.interval=1s",
	}
	if selfScrape {
		args = append(args, selfScrapeFlag+"=1s")
	}
	srv := startTSDB(t, bin, args...)

	dataEnd := time.Now().Truncate(15 * time.Second)
	dataStart := dataEnd.Add(-2 * time.Hour)
	writeNodeExporterData(t, srv, dataStart, dataEnd)
	writeRejected(t, srv)

	t.Run(HostsUID, func(t *testing.T) {
		// The node data is fixed: the queries run where it is, as a Grafana
		// opened at its end would run them.
		checkBoard(t, srv, boards[HostsUID], func() (time.Time, time.Time) { return dataStart, dataEnd }, time.Minute)
	})
	t.Run(OverviewUID, func(t *testing.T) {
		if !selfScrape {
			t.Fatalf("tsdb serve has no %s flag (tsdb serve --help does not list it), and the overview's data "+
				"(job=%q) comes from tsdb's self-scrape: the overview's queries cannot run", selfScrapeFlag, SelfJob)
		}
		// Every metric the overview reads is exported: a query with an "or
		// ... * 0" fallback would otherwise hide a missing one.
		var exported []check
		for _, name := range metricNames(t, boards[OverviewUID]) {
			if onlyAfterFailure[name] {
				continue
			}
			exported = append(exported, check{
				name: fmt.Sprintf("metric %s{job=%q}", name, SelfJob),
				run: func() (bool, string, error) {
					n, detail, err := srv.query(fmt.Sprintf(`count(%s{job=%q})`, name, SelfJob), time.Now())
					return n > 0, detail, err
				},
			})
		}
		pollChecks(t, srv, exported)
		// The self-scraped data grows while the test runs: from the start of
		// the server to now.
		start := srv.started.Truncate(time.Second)
		checkBoard(t, srv, boards[OverviewUID], func() (time.Time, time.Time) { return start, time.Now() }, 2*time.Second)
	})
}

// onlyAfterFailure are the overview's metrics that have no series until
// something fails (the panels fall back to 0 for them).
var onlyAfterFailure = map[string]bool{"hbtsdb_kv_operation_errors_total": true}

const (
	// scrapeBudget is how many self-scrapes a query may wait for its data.
	scrapeBudget = 60
	// stallTimeout is how long the checks wait while nothing moves.
	stallTimeout = 2 * time.Minute
)

// check is one query of a dashboard: run reports whether it has its data yet
// (detail says what it got), or an error that waiting cannot fix.
type check struct {
	name string
	run  func() (ok bool, detail string, err error)
}

// checkBoard resolves d's variables and then runs every panel query with them,
// over the time range window returns, at step for range queries.
func checkBoard(t *testing.T, srv *tsdbServer, d dashJSON, window func() (time.Time, time.Time), step time.Duration) {
	t.Helper()
	if d.UID == "" {
		t.Fatal("dashboard not committed")
	}
	qvars, err := d.queryVars()
	if err != nil {
		t.Fatal(err)
	}
	// The variables, in order: each must list values; later ones may use
	// earlier ones.
	values := map[string][]string{}
	subst := func(v map[string]string) map[string]string {
		start, end := window()
		out := builtins(max(int64(end.Sub(start).Seconds()), 1))
		for k, x := range v {
			out[k] = x
		}
		return out
	}
	allValues := map[string]string{}
	for _, v := range qvars {
		sel := func() string { return interpolate(v.selector, subst(allValues)) }
		pollChecks(t, srv, []check{{
			name: fmt.Sprintf("variable %s: label_values(%s, %s)", v.name, v.selector, v.label),
			run: func() (bool, string, error) {
				start, end := window()
				vals, detail, err := srv.labelValues(v.label, sel(), start, end)
				if err != nil || len(vals) == 0 {
					return false, detail, err
				}
				values[v.name] = vals
				return true, detail, nil
			},
		}})
		if t.Failed() {
			return
		}
		allValues[v.name] = regexValue(values[v.name])
		t.Logf("variable %s = %v", v.name, values[v.name])
	}
	// Two settings of the variables: "All", and the first value of each.
	settings := []map[string]string{allValues}
	first := map[string]string{}
	for _, v := range qvars {
		first[v.name] = regexValue(values[v.name][:1])
	}
	settings = append(settings, first)

	var checks []check
	seen := map[string]bool{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			for _, vars := range settings {
				key := p.Title + tg.RefID + interpolate(tg.Expr, vars)
				if seen[key] {
					continue
				}
				seen[key] = true
				kind := "instant"
				if p.Type == "timeseries" {
					kind = "range"
				}
				checks = append(checks, check{
					name: fmt.Sprintf("%s / %q %s (%s query %s)", d.Title, p.Title, tg.RefID, kind, interpolate(tg.Expr, vars)),
					run: func() (bool, string, error) {
						start, end := window()
						expr := interpolate(tg.Expr, subst(vars))
						// Every query must be accepted as an instant query.
						n, detail, err := srv.query(expr, end)
						if err != nil || kind == "instant" {
							return n > 0, detail, err
						}
						n, detail, err = srv.queryRange(expr, start, end, step)
						return n > 0, detail, err
					},
				})
			}
		}
	}
	t.Logf("%s: %d panel queries", d.Title, len(checks))
	pollChecks(t, srv, checks)
}

// pollChecks runs checks until each has its data. An error fails its check at
// once; a check still without data fails once the server self-scraped
// scrapeBudget times since polling began, or when neither the scrape count nor
// the number of checks passed moved for stallTimeout.
func pollChecks(t *testing.T, srv *tsdbServer, checks []check) {
	t.Helper()
	pending := checks
	last := map[string]string{}
	startMark := srv.selfScrapes()
	mark, moved := startMark, time.Now()
	for {
		var still []check
		for _, c := range pending {
			ok, detail, err := c.run()
			switch {
			case err != nil:
				t.Errorf("%s: %v", c.name, err)
			case !ok:
				last[c.name] = detail
				still = append(still, c)
			case testing.Verbose():
				t.Logf("ok: %s: %s", c.name, truncate(detail, 200))
			}
		}
		if len(still) < len(pending) {
			moved = time.Now()
		}
		pending = still
		if len(pending) == 0 {
			return
		}
		if m := srv.selfScrapes(); m > mark {
			mark, moved = m, time.Now()
		}
		var why string
		switch {
		case mark-startMark >= scrapeBudget:
			why = fmt.Sprintf("still without data after %d self-scrapes", mark-startMark)
		case time.Since(moved) > stallTimeout:
			why = fmt.Sprintf("still without data, and nothing moved for %s (%d self-scrapes so far)", stallTimeout, mark-startMark)
		}
		if why != "" {
			for _, c := range pending {
				t.Errorf("%s: %s; last answer: %s", c.name, why, last[c.name])
			}
			return
		}
		select {
		case <-srv.done:
			t.Fatalf("tsdb serve exited (%v); its log ends:\n%s", srv.waitErr, srv.tail())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// buildTSDB builds ./cmd/tsdb of this checkout (with -race when the tests run
// with it) into a temporary directory.
func buildTSDB(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tsdb")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/tsdb")
	goCmd := "go"
	if root := os.Getenv("GOROOT"); root != "" {
		if _, err := os.Stat(filepath.Join(root, "bin", "go")); err == nil {
			goCmd = filepath.Join(root, "bin", "go")
		}
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = ".." // the module root
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built tsdb (race=%v) in %s", raceEnabled, time.Since(start).Round(time.Millisecond))
	return bin
}

// hasFlag reports whether tsdb serve --help lists flag.
func hasFlag(t *testing.T, bin, flag string) bool {
	t.Helper()
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("tsdb serve --help: %v\n%s", err, out)
	}
	return bytes.Contains(out, []byte(flag+"="))
}

// tsdbServer is a running tsdb serve.
type tsdbServer struct {
	addr    string
	started time.Time
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error
	client  *http.Client

	mu  sync.Mutex
	log []string // the last lines of its log
}

// startTSDB starts bin serve on a free loopback port with args and waits until
// /-/ready answers 200.
func startTSDB(t *testing.T, bin string, args ...string) *tsdbServer {
	t.Helper()
	s := &tsdbServer{
		started: time.Now(),
		done:    make(chan struct{}),
		client:  &http.Client{Timeout: time.Minute},
	}
	s.cmd = exec.Command(bin, append([]string{"serve", "--listen=127.0.0.1:0", "--log.format=json"}, args...)...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log = append(s.log, line)
			if len(s.log) > 200 {
				s.log = s.log[len(s.log)-100:]
			}
			s.mu.Unlock()
			var rec struct{ Msg, Address string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				select {
				case listening <- rec.Address:
				default:
				}
			}
		}
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("tsdb serve's log ends:\n%s", s.tail())
		}
	})
	select {
	case s.addr = <-listening:
	case <-s.done:
		t.Fatalf("tsdb serve exited (%v) before listening; log:\n%s", s.waitErr, s.tail())
	}
	var last string
	moved := time.Now()
	for {
		code, body, err := s.get("/-/ready")
		if code == http.StatusOK {
			return s
		}
		if now := fmt.Sprint(code, body, err, len(s.tail())); now != last {
			last, moved = now, time.Now()
		} else if time.Since(moved) > stallTimeout {
			t.Fatalf("tsdb serve not ready (%d %s %v) and no progress for %s; log:\n%s", code, body, err, stallTimeout, s.tail())
		}
		select {
		case <-s.done:
			t.Fatalf("tsdb serve exited (%v) before it was ready; log:\n%s", s.waitErr, s.tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *tsdbServer) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := s.log
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

func (s *tsdbServer) get(path string) (int, string, error) {
	resp, err := s.client.Get("http://" + s.addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// apiResponse is the Prometheus HTTP API's envelope.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// api sends form to path as Grafana does (queries POSTed, as the provisioned
// data source's httpMethod says; label values with GET, the only method
// Prometheus' API has for them) and decodes the answer. A 4xx is an error that
// waiting cannot fix (the query is wrong); a 5xx or a failed connection is
// reported in detail only, and polled again.
func (s *tsdbServer) api(method, path string, form url.Values) (data json.RawMessage, detail string, err error) {
	var resp *http.Response
	if method == http.MethodGet {
		resp, err = s.client.Get("http://" + s.addr + path + "?" + form.Encode())
	} else {
		resp, err = s.client.PostForm("http://"+s.addr+path, form)
	}
	if err != nil {
		return nil, err.Error(), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err.Error(), nil
	}
	detail = fmt.Sprintf("%d %s", resp.StatusCode, truncate(string(body), 300))
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return nil, detail, fmt.Errorf("%s answered %s", path, detail)
	}
	var r apiResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &r) != nil || r.Status != "success" {
		return nil, detail, nil
	}
	return r.Data, detail, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// query runs an instant query at ts and returns how many series (or scalars)
// it gave.
func (s *tsdbServer) query(expr string, ts time.Time) (int, string, error) {
	data, detail, err := s.api(http.MethodPost, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(ts)}})
	return countResult(data), detail, err
}

// queryRange runs a range query and returns how many series have samples.
func (s *tsdbServer) queryRange(expr string, start, end time.Time, step time.Duration) (int, string, error) {
	data, detail, err := s.api(http.MethodPost, "/api/v1/query_range", url.Values{
		"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {fmt.Sprint(step.Seconds())},
	})
	return countResult(data), detail, err
}

func countResult(data json.RawMessage) int {
	var r struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &r) != nil {
		return 0
	}
	switch r.ResultType {
	case "scalar", "string":
		return 1
	case "vector":
		var v []json.RawMessage
		_ = json.Unmarshal(r.Result, &v)
		return len(v)
	case "matrix":
		var m []struct {
			Values []json.RawMessage `json:"values"`
		}
		_ = json.Unmarshal(r.Result, &m)
		n := 0
		for _, s := range m {
			if len(s.Values) > 0 {
				n++
			}
		}
		return n
	}
	return 0
}

// labelValues is what Grafana asks for label_values(selector, label): the
// values of label on the series of selector in [start, end].
func (s *tsdbServer) labelValues(label, selector string, start, end time.Time) ([]string, string, error) {
	data, detail, err := s.api(http.MethodGet, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{
		"match[]": {selector}, "start": {unix(start)}, "end": {unix(end)},
	})
	var vals []string
	_ = json.Unmarshal(data, &vals)
	return vals, detail, err
}

// selfScrapes is how many times tsdb has scraped itself so far (the samples of
// its go_goroutines), or 0 without a self-scrape.
func (s *tsdbServer) selfScrapes() int {
	data, _, _ := s.api(http.MethodPost, "/api/v1/query", url.Values{
		"query": {`sum(count_over_time(go_goroutines{job="` + SelfJob + `"}[1d]))`},
		"time":  {unix(time.Now())},
	})
	var r struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if json.Unmarshal(data, &r) != nil || len(r.Result) == 0 {
		return 0
	}
	var n float64
	if str, ok := r.Result[0].Value[1].(string); ok {
		fmt.Sscan(str, &n)
	}
	return int(n)
}

func unix(ts time.Time) string {
	return fmt.Sprintf("%.3f", float64(ts.UnixMilli())/1000)
}

// remoteWrite sends one remote-write 1.0 request as Prometheus does and
// returns the status and body.
func (s *tsdbServer) remoteWrite(t *testing.T, series []prompb.TimeSeries) (int, string) {
	t.Helper()
	b, err := (&prompb.WriteRequest{Timeseries: series}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "Prometheus/3.0.0")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("remote write: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Hosts of the node-exporter data.
var testHosts = []string{"db01", "web01", "web02"}

// writeNodeExporterData writes, for each of testHosts, what a node exporter
// scraped every 15s from start to end (both included) gives: CPU seconds by cpu
// and mode, memory, filesystems, disks, network interfaces, load and uname,
// labelled job="node", instance="<host>:9100", host="<host>". One remote-write
// request per host.
func writeNodeExporterData(t *testing.T, srv *tsdbServer, start, end time.Time) {
	t.Helper()
	const step = 15 * time.Second
	total := 0
	for hi, host := range testHosts {
		var series []prompb.TimeSeries
		add := func(name string, value func(sec float64) float64, extra ...string) {
			lbls := labels.FromStrings(append([]string{
				"__name__", name, "job", "node", "instance", host + ":9100", "host", host,
			}, extra...)...)
			ts := prompb.TimeSeries{Labels: prompb.FromLabels(lbls, nil)}
			for at := start; !at.After(end); at = at.Add(step) {
				sec := at.Sub(start).Seconds()
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: at.UnixMilli(), Value: value(sec)})
			}
			total += len(ts.Samples)
			series = append(series, ts)
		}
		h := float64(hi + 1)
		counter := func(perSecond float64) func(float64) float64 {
			return func(sec float64) float64 { return 1e5*h + perSecond*sec }
		}
		wave := func(base, amp float64) func(float64) float64 {
			return func(sec float64) float64 { return base + amp*math.Sin(sec/600+h) }
		}
		add("node_uname_info", func(float64) float64 { return 1 },
			"nodename", host, "sysname", "Linux", "release", "6.1.0-28-amd64", "machine", "x86_64")
		for cpu := 0; cpu < 2; cpu++ {
			for mode, share := range map[string]float64{"idle": 0.9 - 0.2*h/3, "user": 0.2 * h / 3, "system": 0.07, "iowait": 0.03} {
				add("node_cpu_seconds_total", counter(share), "cpu", fmt.Sprint(cpu), "mode", mode)
			}
		}
		add("node_load1", wave(0.5*h, 0.3))
		add("node_memory_MemTotal_bytes", func(float64) float64 { return 16 << 30 })
		add("node_memory_MemAvailable_bytes", wave(float64(4<<30)*h/2, 1<<30))
		for _, fs := range []struct{ device, mountpoint, fstype string }{
			{"/dev/sda1", "/", "ext4"}, {"/dev/nvme0n1p1", "/data", "xfs"}, {"tmpfs", "/run", "tmpfs"},
		} {
			add("node_filesystem_size_bytes", func(float64) float64 { return 100 << 30 },
				"device", fs.device, "mountpoint", fs.mountpoint, "fstype", fs.fstype)
			add("node_filesystem_avail_bytes", func(sec float64) float64 { return float64(60<<30) - 1e4*h*sec },
				"device", fs.device, "mountpoint", fs.mountpoint, "fstype", fs.fstype)
		}
		for _, dev := range []string{"nvme0n1", "sda"} {
			add("node_disk_read_bytes_total", counter(2e6*h), "device", dev)
			add("node_disk_written_bytes_total", counter(5e6*h), "device", dev)
		}
		for _, dev := range []string{"eth0", "lo"} {
			add("node_network_receive_bytes_total", counter(1e6*h), "device", dev)
			add("node_network_transmit_bytes_total", counter(3e5*h), "device", dev)
		}
		if code, body := srv.remoteWrite(t, series); code/100 != 2 {
			t.Fatalf("remote write of %s's node-exporter data: %d %s", host, code, body)
		}
	}
	t.Logf("wrote %d node-exporter samples for %d hosts, %s to %s", total, len(testHosts),
		start.Format(time.RFC3339), end.Format(time.RFC3339))
}

// writeRejected sends writes that tsdb must refuse (400), so that the
// overview's reject panels have something to show: a remote write with a
// series without a metric name, and an OpenTSDB put that is not JSON.
func writeRejected(t *testing.T, srv *tsdbServer) {
	t.Helper()
	bad := prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "job", Value: "node"}},
		Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}},
	}
	if code, body := srv.remoteWrite(t, []prompb.TimeSeries{bad}); code != http.StatusBadRequest {
		t.Fatalf("remote write of a series without a metric name: %d %s, want 400", code, body)
	}
	resp, err := srv.client.Post("http://"+srv.addr+"/api/put", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("/api/put of a body that is not JSON: %d %s, want 400", resp.StatusCode, body)
	}
}
