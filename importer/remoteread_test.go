package importer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/hbtsdb/hbtsdb/importer"
	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// Environment variables of the end-to-end tests (e2e/env_test.go): the
// Prometheus binary, and whether its absence fails the test.
const (
	envPrometheus        = "TSDB_TEST_PROMETHEUS"
	envRequirePrometheus = "TSDB_TEST_REQUIRE_E2E"
)

// startPrometheus runs the real Prometheus server with its remote-write
// receiver on, and returns its base URL once it is ready.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(envPrometheus)
	if bin == "" {
		testenv.Missing(t, envRequirePrometheus, "no Prometheus: set "+envPrometheus+
			" to a Prometheus server binary; `"+envPrometheus+"=$(testing/prometheus/prometheus.sh)` builds (once, cached) and prints one")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	url := "http://" + addr
	for {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited before it was ready: %v", err)
		default:
		}
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		time.Sleep(50 * time.Millisecond) // poll; the exit check above ends a failed start
	}
}

// remoteWrite sends ts to url's remote-write receiver (remote write 1.0).
func remoteWrite(t *testing.T, url string, ts []prompb.TimeSeries) {
	t.Helper()
	req := &prompb.WriteRequest{Timeseries: ts}
	raw, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hr, err := http.NewRequest(http.MethodPost, url+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("remote write to prometheus: %s: %s", resp.Status, body)
	}
}

// TestImportRemoteReadFromPrometheus pushes float and native histogram
// series into a real Prometheus, imports them over its remote-read endpoint
// (streamed XOR chunks) in slices, several at once, in small batches, and
// reads back exactly what Prometheus holds; a second run with the checkpoint
// skips every slice.
func TestImportRemoteReadFromPrometheus(t *testing.T) {
	prom := startPrometheus(t)
	ctx := context.Background()
	const n = 300 // 50 minutes every 10s
	base := time.Now().Add(-55 * time.Minute).Truncate(time.Second).UnixMilli()
	want := dataset{}
	var series []prompb.TimeSeries
	for s := range 3 {
		lbls := labels.FromStrings("__name__", "node_cpu_seconds_total", "cpu", fmt.Sprint(s), "instance", "host:9100", "job", "node")
		ts := prompb.TimeSeries{}
		lbls.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
		for i := range n {
			v := float64(i*(s+1)) + 0.125
			if i == 7 {
				v = math.Inf(1)
			}
			ms := base + int64(i)*10_000
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: ms, Value: v})
			want[lbls.String()] = append(want[lbls.String()], point{T: ms, Bits: math.Float64bits(v)})
		}
		series = append(series, ts)
	}
	hl := labels.FromStrings("__name__", "rpc_duration_seconds", "job", "api")
	hts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "rpc_duration_seconds"}, {Name: "job", Value: "api"}}}
	for i := range n {
		// buckets 1 and 1+i (as deltas), one in the zero bucket
		h := &histogram.Histogram{Schema: 0, Count: uint64(3 + i), Sum: float64(i) + 0.5, ZeroThreshold: 0.001, ZeroCount: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, int64(i)}}
		ms := base + int64(i)*10_000
		hts.Histograms = append(hts.Histograms, prompb.FromIntHistogram(ms, h))
		want[hl.String()] = append(want[hl.String()], point{T: ms, H: h.String()})
	}
	series = append(series, hts)
	remoteWrite(t, prom, series)

	d, _, _ := openDB(t, embedded())
	r := importer.RemoteRead{URL: prom + "/api/v1/read",
		Selectors: []string{`{__name__="node_cpu_seconds_total"}`, `rpc_duration_seconds`},
		Start:     base - 60_000, End: base + n*10_000, Slice: 7 * time.Minute}
	cp, err := importer.OpenCheckpoint(filepath.Join(t.TempDir(), "cp.json"), r.Job())
	if err != nil {
		t.Fatal(err)
	}
	progress := &importer.Progress{}
	opts := importer.Options{Sink: d, BatchSamples: 100, Concurrency: 3, Checkpoint: cp, Progress: progress}
	if err := importer.ImportRemoteRead(ctx, r, opts); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, r.Start, r.End); diff(want, got) != "" {
		t.Fatalf("imported from prometheus:\n%s", diff(want, got))
	}
	slices := int64(2 * 8) // 51 minutes in slices of 7, for two selectors
	if progress.Samples.Load() != int64(want.samples()) || progress.Series() != 4 || progress.Done.Load() != slices ||
		progress.Total.Load() != slices {
		t.Fatalf("progress: samples %d (want %d), series %d (want 4), slices %d of %d (want %d)", progress.Samples.Load(),
			want.samples(), progress.Series(), progress.Done.Load(), progress.Total.Load(), slices)
	}
	// The remote-read client counts the queries answered by response type:
	// every slice was a streamed chunked response read to its end.
	if got := readQueries(t, r.URL); !maps.Equal(got, map[string]float64{"chunked 200": float64(slices)}) {
		t.Fatalf("remote-read queries by response type and code: %v, want %d chunked 200", got, slices)
	}
	for i := range int(slices) {
		if !cp.SliceDone(i) {
			t.Fatalf("slice %d is not in the checkpoint", i)
		}
	}
	again := &importer.Progress{}
	opts.Progress = again
	if err := importer.ImportRemoteRead(ctx, r, opts); err != nil {
		t.Fatal(err)
	}
	if again.Samples.Load() != 0 || again.Done.Load() != slices {
		t.Fatalf("second run with the checkpoint: %d samples, %d slices done, want 0 and %d", again.Samples.Load(), again.Done.Load(), slices)
	}
}

// TestImportRemoteReadRefusesBadArguments: what cannot work is said at once,
// every problem in one error.
func TestImportRemoteReadRefusesBadArguments(t *testing.T) {
	err := importer.ImportRemoteRead(context.Background(), importer.RemoteRead{URL: "prometheus:9090", Selectors: []string{`up{`},
		Start: 2000, End: 1000}, importer.Options{})
	want := `importer: remote-read URL "prometheus:9090" is not an http:// or https:// URL
the end 1970-01-01T00:00:01Z is before the start 1970-01-01T00:00:02Z
selector "up{": 1:4: parse error: unexpected end of input inside braces`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	err = importer.ImportRemoteRead(context.Background(), importer.RemoteRead{URL: "http://x"}, importer.Options{})
	if want := `importer: no selector: give at least one --match, e.g. --match='{job="node"}' or --match='{__name__=~".+"}'`; err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// readQueries is what Prometheus' remote-read client counted for endpoint in
// this process (prometheus_remote_read_client_queries_total), by
// "<response type> <code>".
func readQueries(t *testing.T, endpoint string) map[string]float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "prometheus_remote_read_client_queries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["url"] == endpoint {
				got[l["response_type"]+" "+l["code"]] += m.GetCounter().GetValue()
			}
		}
	}
	return got
}

// TestImportRemoteReadReadsAFailedSliceAgain serves a store through
// Prometheus' own remote-read handler, failing some requests with a 503: the
// import reads those slices again and ends with everything; a 400 fails it at
// once with the server's answer.
func TestImportRemoteReadReadsAFailedSliceAgain(t *testing.T) {
	ctx := context.Background()
	base := hoursAgo(5)
	path, want := omFile(t, base, 200)
	src, _, _ := openDB(t, embedded())
	if err := importer.ImportFile(ctx, path, importer.FormatOpenMetrics, importer.Options{Sink: src}); err != nil {
		t.Fatal(err)
	}
	handler := remote.NewReadHandler(slog.Default(), nil, src, func() config.Config { return config.DefaultConfig }, 0, 4, 1<<20)
	var requests atomic.Int64
	fail := map[int64]int{2: http.StatusServiceUnavailable, 5: http.StatusServiceUnavailable}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, ok := fail[requests.Add(1)]; ok {
			http.Error(w, "try again later", code)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	dst, _, _ := openDB(t, embedded())
	r := importer.RemoteRead{URL: srv.URL + "/api/v1/read", Selectors: []string{`{__name__=~".+"}`},
		Start: base, End: base + 200*15_000, Slice: 10 * time.Minute}
	if err := importer.ImportRemoteRead(ctx, r, importer.Options{Sink: dst, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dst, r.Start, r.End); diff(want, got) != "" {
		t.Fatalf("after two slices read again:\n%s", diff(want, got))
	}
	if n := requests.Load(); n != 6+2 { // 6 slices (the end is inclusive), 2 of them twice
		t.Fatalf("%d requests, want 8", n)
	}

	fail = map[int64]int{9: http.StatusBadRequest}
	err := importer.ImportRemoteRead(ctx, r, importer.Options{Sink: dst, Concurrency: 1})
	if want := "importer: remote read slice "; err == nil || !strings.HasPrefix(err.Error(), want) ||
		!strings.HasSuffix(err.Error(), "returned http status 400 Bad Request: try again later") || requests.Load() != 9 {
		t.Fatalf("a 400: %v after %d requests", err, requests.Load())
	}
}
