package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// histReceiver is one `tsdb serve` of TestPrometheusNativeHistograms: a store and
// the remote-write protocol Prometheus sends it.
type histReceiver struct {
	name  string // the remote_write queue's name: <store>-rw1 or <store>-rw2
	proto string // protoV1 or protoV2
	st    store
	tsdb  *tsdbServer
	// compacted: tsdb compacts while it runs (compactedRun), so that the
	// comparisons read histogram chunks, raw cells and both merged.
	compacted bool
}

// sees reports whether the receiver gets the series whose labels.String() is key:
// the 1.0 receivers get the hist-native job only (remote write 1.0 cannot carry
// the custom-bucket histograms of hist-nhcb).
func (r *histReceiver) sees(key string) bool {
	return r.proto != protoV1 || !strings.Contains(key, `job="hist-nhcb"`)
}

// maxQueryReports is how many differing queries a receiver reports in full.
const maxQueryReports = 12

// histQueries are the PromQL expressions whose answers (instant at T, and range
// from the first scrape to T) tsdb must give exactly as Prometheus does: native
// histograms raw, rate/increase of them, every histogram_* function, quantiles of
// classic, exponential and custom-bucket (NHCB) histograms, aggregation, counter
// resets, a float gauge histogram, and a counter whose samples carry start
// timestamps.
var histQueries = []string{
	metricHistLatency,
	`rate(` + metricHistLatency + `[10s])`,
	`increase(` + metricHistLatency + `[15s])`,
	`histogram_quantile(0.9, rate(` + metricHistLatency + `[10s]))`,
	`histogram_quantile(0.1, ` + metricHistLatency + `)`,
	`histogram_quantile(0.5, rate(` + metricHistLatency + `_bucket[10s]))`,
	`histogram_quantile(0.75, rate(` + metricHistClassic + `[10s]))`,
	`histogram_quantile(0.75, rate(` + metricHistClassic + `_bucket[10s]))`,
	`histogram_count(rate(` + metricHistSizes + `[10s]))`,
	`histogram_sum(rate(` + metricHistResetting + `[10s]))`,
	`histogram_avg(rate(` + metricHistLatency + `[10s]))`,
	`histogram_stddev(` + metricHistLatency + `)`,
	`histogram_stdvar(rate(` + metricHistSizes + `[10s]))`,
	`histogram_fraction(-0.5, 0.5, rate(` + metricHistLatency + `[10s]))`,
	`histogram_fraction(0, 4, ` + metricHistClassic + `)`,
	`sum by (job) (rate(` + metricHistLatency + `[10s]))`,
	`histogram_quantile(0.99, sum by (job) (rate(` + metricHistSizes + `[10s])))`,
	metricHistResetting,
	`resets(` + metricHistResetting + `[1m])`,
	`increase(` + metricHistResetting + `[10s])`,
	metricHistGauge,
	`histogram_count(` + metricHistGauge + `)`,
	`avg_over_time(` + metricHistGauge + `[5s])`,
	`sum(` + metricHistGauge + `) by (job)`,
	`rate(` + metricHistGauge + `[10s])`,
	`deriv(` + metricHistRequests + `[10s])`,
	`rate(` + metricHistRequests + `[10s])`,
	`last_over_time({job=~"hist-.+"}[5s])`,
}

// TestPrometheusNativeHistograms runs a real Prometheus that scrapes a target
// exposing native histograms (histTarget) with the protobuf format, twice: job
// hist-native keeps native histograms (and the classic buckets beside them), job
// hist-nhcb converts every classic histogram to custom buckets (NHCB). Prometheus
// keeps exemplars and start timestamps (--enable-feature=exemplar-storage,
// st-storage) and remote-writes everything, native histograms and exemplars
// included, to four `tsdb serve`: remote write 1.0 and 2.0 to the embedded store
// and to HBase (HBase when configured); the 2.0 ones compact into chunks all
// along (one-minute buckets, so Prometheus scrapes for at least 65 s). For each, tsdb's answers are compared with
// Prometheus' own answers from its local TSDB, bit for bit: the raw series (floats
// and histograms) through the query API, the histQueries instant and range,
// remote read SAMPLES and STREAMED_XOR_CHUNKS, and /api/v1/query_exemplars.
// Prometheus must have dropped and failed nothing. Once tsdb has stopped, the
// stores are read in-process: over remote write 2.0 a counter's and a native
// histogram's samples carry the created timestamp the target exposed as their
// start timestamp; over 1.0, which cannot carry one, none.
func TestPrometheusNativeHistograms(t *testing.T) {
	promBin := prometheusBinary(t)
	// The 2.0 receivers compact all along (compactedRun: one-minute buckets): a
	// minute boundary must pass, with a second of grace, while Prometheus scrapes.
	dur := max(runDuration(t), 65*time.Second)
	dir := t.TempDir()
	stores := []struct {
		name string
		new  func(*testing.T) store
	}{{"embedded", embeddedStore}}
	if os.Getenv(hbasetest.EnvZooKeeper) != "" || os.Getenv(hbasetest.EnvRequire) == "1" {
		stores = append(stores, struct {
			name string
			new  func(*testing.T) store
		}{"hbase", hbaseStore})
	} else {
		t.Logf("no HBase (%s unset): the embedded store only", hbasetest.EnvZooKeeper)
	}
	var rcvs []*histReceiver
	for _, st := range stores {
		for _, p := range []struct{ name, proto string }{{"rw1", protoV1}, {"rw2", protoV2}} {
			r := &histReceiver{name: st.name + "-" + p.name, proto: p.proto, st: st.new(t)}
			if r.compacted = p.proto == protoV2; r.compacted {
				r.st, _ = compactedRun(r.st, dur)
			}
			// tsdb keeps at most --exemplars.per-slot (10) exemplars per series
			// and slot, each in the place its time points to, a later one
			// replacing an earlier one there (README, Exemplars): the default
			// 10 s slot keeps one exemplar a second. This test scrapes every
			// second, an exemplar per series each time, and scrape times jitter
			// by milliseconds, so its slots are 250 ms (25 ms places): every
			// exemplar Prometheus keeps must be kept by tsdb too.
			r.st.flags = append(slices.Clone(r.st.flags), "--exemplars.slot=250ms")
			rdir := filepath.Join(dir, r.name)
			if err := os.Mkdir(rdir, 0o755); err != nil {
				t.Fatal(err)
			}
			r.tsdb = startTSDB(t, rdir, r.st)
			r.tsdb.checkWriteEndpoint(t)
			rcvs = append(rcvs, r)
		}
	}

	tg := startHistTarget(t)
	ps := startHistPrometheus(t, promBin, dir, tg.hostPort(), rcvs)
	t.Logf("Prometheus at %s scraping %s for %s, remote-writing to %d tsdb", ps.url, tg.hostPort(), dur, len(rcvs))
	for end := time.Now().Add(dur); time.Now().Before(end); time.Sleep(time.Second) {
		ps.alive(t)
		for _, r := range rcvs {
			r.tsdb.alive(t)
		}
	}

	cutoff := time.Now().Add(-cutoffMargin).UnixMilli()
	for _, r := range rcvs {
		ps.waitHistSent(t, cutoff+sentBeyondCutoff.Milliseconds(), r.name)
	}
	windowSec := (cutoff-ps.start.UnixMilli())/1000 + 60
	mint := cutoff - windowSec*1000 + 1
	rangeStart := ps.start.Truncate(time.Second).UnixMilli()

	ctx := context.Background()
	// Prometheus' answers, once; then each tsdb's, compared.
	type query struct {
		what, path string
		params     url.Values
	}
	queries := []query{{
		what:   fmt.Sprintf(`raw series {job=~"hist-.+"}[%ds] at T`, windowSec),
		path:   "/api/v1/query",
		params: url.Values{"query": {fmt.Sprintf(`{job=~"hist-.+"}[%ds]`, windowSec)}, "time": {apiTime(cutoff)}},
	}}
	for _, q := range histQueries {
		queries = append(queries,
			query{what: q + " at T", path: "/api/v1/query", params: url.Values{"query": {q}, "time": {apiTime(cutoff)}}},
			query{what: q + " at T-7.5s", path: "/api/v1/query", params: url.Values{"query": {q}, "time": {apiTime(cutoff - 7500)}}},
			query{what: q + " range, step 1s", path: "/api/v1/query_range", params: url.Values{
				"query": {q}, "start": {apiTime(rangeStart)}, "end": {apiTime(cutoff)}, "step": {"1"}}},
		)
	}
	want := make([]*histAnswer, len(queries))
	for i, q := range queries {
		a, err := histAPIQuery(ctx, ps.url, q.path, q.params)
		if err != nil {
			t.Fatalf("Prometheus %s: %v", q.what, err)
		}
		want[i] = a
	}
	if raw := want[0]; raw.histograms == 0 || raw.floats == 0 {
		t.Fatalf("Prometheus has %d histogram and %d float samples of the target: nothing to compare", raw.histograms, raw.floats)
	} else {
		t.Logf("Prometheus up to T=%s: %d series, %d float samples, %d histogram samples", fmtTime(cutoff), len(raw.series), raw.floats, raw.histograms)
	}
	for _, q := range want[1:] {
		if len(q.series) == 0 && q.resultType != "scalar" {
			t.Errorf("Prometheus answers %s with no series: the query compares nothing", q.what)
		}
	}
	readMatchers := []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "job", Value: "hist-.+"}}
	readTypes := []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS}
	wantRead := map[prompb.ReadRequest_ResponseType]histSet{}
	for _, rt := range readTypes {
		s, err := histRemoteRead(ctx, ps.url+"/api/v1/read", mint, cutoff, readMatchers, rt)
		if err != nil {
			t.Fatalf("Prometheus %v", err)
		}
		wantRead[rt] = s
	}
	if d := compareHistSets(wantRead[prompb.ReadRequest_SAMPLES], wantRead[prompb.ReadRequest_STREAMED_XOR_CHUNKS]); len(d) > 0 {
		t.Fatalf("Prometheus' own remote read differs between SAMPLES and STREAMED_XOR_CHUNKS in %d places:%s", len(d), summarize(d, 10))
	}
	exParams := url.Values{"query": {`{job=~"hist-.+"}`}, "start": {apiTime(mint)}, "end": {apiTime(cutoff)}}
	wantEx, err := histExemplars(ctx, ps.url, exParams)
	if err != nil {
		t.Fatalf("Prometheus query_exemplars: %v", err)
	}
	if len(wantEx) == 0 {
		t.Fatal("Prometheus has no exemplars of the target: nothing to compare")
	}

	for _, r := range rcvs {
		base := r.tsdb.baseURL()
		// A receiver that differs everywhere (one that stores no histograms)
		// reports its first few differing queries in full, then counts.
		failed := 0
		for i, q := range queries {
			got, err := histAPIQuery(ctx, base, q.path, q.params)
			if err != nil {
				t.Errorf("%s: %s: %v", r.name, q.what, err)
				continue
			}
			if d := want[i].only(r.sees).diff(got); len(d) > 0 {
				if failed++; failed <= maxQueryReports {
					t.Errorf("%s: %s: tsdb differs from Prometheus in %d places:%s", r.name, q.what, len(d), summarize(d, 10))
				}
			}
		}
		if failed > maxQueryReports {
			t.Errorf("%s: %d more queries differ from Prometheus (%d of %d in all)", r.name, failed-maxQueryReports, failed, len(queries))
		}
		for _, rt := range readTypes {
			got, err := histRemoteRead(ctx, base+"/api/v1/read", mint, cutoff, readMatchers, rt)
			if err != nil {
				t.Errorf("%s: %v", r.name, err)
				continue
			}
			if d := compareHistSets(only(wantRead[rt], r.sees), got); len(d) > 0 {
				t.Errorf("%s: remote read %s differs from Prometheus' in %d places:%s", r.name, rt, len(d), summarize(d, 10))
			}
		}
		gotEx, err := histExemplars(ctx, base, exParams)
		if err != nil {
			t.Errorf("%s: query_exemplars: %v", r.name, err)
		} else if d := compareExemplars(only(wantEx, r.sees), gotEx); len(d) > 0 {
			t.Errorf("%s: query_exemplars differs from Prometheus' in %d places:%s", r.name, len(d), summarize(d, 10))
		}
	}

	// Prometheus' remote-write counters, per queue, at the end.
	ps.checkHistQueues(t, rcvs)
	if err := ps.stop(); err != nil {
		t.Errorf("stop Prometheus: %v", err)
	}
	ps.checkNoLoss(t)
	// Remote-write errors, and warnings of data dropped, fail the test; other
	// warnings (a batch retried after a 5xx or a timeout, resharding skipped on a
	// slow machine) lose nothing and are only shown.
	for _, l := range ps.out.lines() {
		if !strings.Contains(l, "component=remote") || !(strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN")) {
			continue
		}
		switch {
		case strings.Contains(l, "as remote write v1 does not support it") && strings.Contains(l, "-rw1 "):
			// the NHCB samples a 1.0 queue drops (see startHistPrometheus)
		case strings.Contains(l, "level=ERROR") || strings.Contains(strings.ToLower(l), "drop"):
			t.Errorf("Prometheus logged a remote-write problem: %s", l)
		default:
			t.Logf("Prometheus logged: %s", l)
		}
	}
	for _, r := range rcvs {
		r.tsdb.stopAndCheck(t)
		if r.compacted {
			checkCompacted(t, r.st)
		}
	}
	created := tg.createdTimestamps(t)
	for _, r := range rcvs {
		checkStartTimestamps(ctx, t, r, mint, cutoff, created)
	}
}

// startHistPrometheus starts Prometheus for TestPrometheusNativeHistograms,
// scraping target with two jobs and remote-writing to every receiver.
func startHistPrometheus(t *testing.T, bin, dir, target string, rcvs []*histReceiver) *promServer {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: hist-native
    params:
      observe: ["1"]
    scrape_protocols: [PrometheusProto]
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: [%[1]q]
  - job_name: hist-nhcb
    scrape_protocols: [PrometheusProto]
    scrape_native_histograms: false
    convert_classic_histograms_to_nhcb: true
    static_configs:
      - targets: [%[1]q]
remote_write:
`, target)
	for _, r := range rcvs {
		fmt.Fprintf(&b, `  - name: %s
    url: %q
    protobuf_message: %s
    remote_timeout: 30s
    send_exemplars: true
    send_native_histograms: true
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 2s
`, r.name, r.tsdb.writeURL(), r.proto)
		if r.proto == protoV1 {
			// Remote write 1.0 cannot carry custom buckets: Prometheus drops the
			// NHCB samples (and counts them dropped, reason
			// nhcb_in_rw1_not_supported). The 1.0 receivers get the hist-native
			// job only (histReceiver.sees), the rest is dropped by relabelling
			// (reason dropped_series).
			fmt.Fprintf(&b, `    metadata_config:
      send: true
      send_interval: 5s
    write_relabel_configs:
      - source_labels: [job]
        regex: hist-nhcb
        action: drop
`)
		} else {
			// 2.0 sends metadata with the series (metadata-wal-records); the
			// metadata watcher would only be switched off with a warning.
			fmt.Fprintf(&b, "    metadata_config:\n      send: false\n")
		}
	}
	cfg := b.String()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		p := startProcess(t, "prometheus", dir, bin,
			"--config.file="+cfgPath,
			"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--storage.remote.flush-deadline="+model(flushDeadline),
			// Exemplars are kept (and sent) only with exemplar-storage; start
			// timestamps are parsed from the protobuf exposition, kept in the WAL
			// and sent with remote write 2.0 only with st-storage; metadata
			// travels in 2.0 requests only with metadata-wal-records.
			"--enable-feature=exemplar-storage,st-storage,metadata-wal-records",
			"--log.level=info",
		)
		if ps := readyPrometheus(t, p, port, attempt, cfg); ps != nil {
			return ps
		}
	}
}

// histKinds are the kinds of data a remote-write queue sends; its metrics are
// prometheus_remote_storage_<kind>_total, _failed_total, _retried_total,
// _dropped_total and _pending.
var histKinds = []string{"samples", "histograms", "exemplars"}

// histQueueMetrics are the remote-write metrics read per queue.
func histQueueMetrics() []string {
	names := []string{"prometheus_remote_storage_queue_highest_sent_timestamp_seconds"}
	for _, k := range histKinds {
		for _, s := range []string{"_total", "_failed_total", "_retried_total", "_dropped_total", "_pending"} {
			names = append(names, "prometheus_remote_storage_"+k+s)
		}
	}
	return names
}

// waitHistSent is waitSent for one remote-write queue (by its name) counting
// samples, histograms and exemplars together: it returns once the queue has sent
// data up to ts (ms) and holds nothing pending, as long as it makes progress.
func (ps *promServer) waitHistSent(t *testing.T, ts int64, queue string) {
	t.Helper()
	w := newSendWatch(ts)
	match := fmt.Sprintf("remote_name=%q", queue)
	var m map[string]float64
	var last error
	var progress sendProgress
	err := waitForProgress(fmt.Sprintf("prometheus to send up to %s to %s", fmtTime(ts), queue), 250*time.Millisecond, func() (sendProgress, bool, error) {
		if ps.exited() {
			return progress, false, fmt.Errorf("prometheus exited (%v)", ps.waitErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := ps.metricsWhere(ctx, match, histQueueMetrics()...)
		if last = err; err != nil {
			return progress, false, nil
		}
		m = got
		// sendWatch reads the samples metrics: give it all three kinds summed.
		sum := map[string]float64{"prometheus_remote_storage_queue_highest_sent_timestamp_seconds": m["prometheus_remote_storage_queue_highest_sent_timestamp_seconds"]}
		for _, k := range histKinds {
			for _, s := range []string{"_total", "_failed_total", "_retried_total", "_pending"} {
				sum["prometheus_remote_storage_samples"+s] += m["prometheus_remote_storage_"+k+s]
			}
		}
		var done bool
		progress, done = w.observe(sum)
		return progress, done, nil
	})
	if err != nil {
		t.Fatalf("%v (metrics %v, last poll error %v); last lines of its log:\n%s", err, m, last, ps.tail(40))
	}
}

// checkHistQueues fails the test unless every queue sent float samples,
// histograms and exemplars, and none failed or was dropped (a 1.0 queue may drop
// what startHistPrometheus makes it drop). Retries (after a 5xx or a timeout,
// which a loaded HBase can cause) lose nothing: they are only reported.
func (ps *promServer) checkHistQueues(t *testing.T, rcvs []*histReceiver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
	defer cancel()
	for _, r := range rcvs {
		queue := fmt.Sprintf("remote_name=%q", r.name)
		// What a 1.0 queue drops on purpose (startHistPrometheus) is left out
		// of the same read of the metrics: Prometheus goes on scraping and
		// dropping, so a second read would count more (a run read -5).
		var onPurpose []string
		if r.proto == protoV1 {
			onPurpose = []string{`reason="dropped_series"`, `reason="nhcb_in_rw1_not_supported"`}
		}
		m, err := ps.metricsKept(ctx, func(line string) bool {
			return strings.Contains(line, queue) && !slices.ContainsFunc(onPurpose, func(r string) bool { return strings.Contains(line, r) })
		}, histQueueMetrics()...)
		if err != nil {
			t.Errorf("Prometheus' metrics: %v", err)
			return
		}
		var parts []string
		for _, k := range histKinds {
			p := "prometheus_remote_storage_" + k
			parts = append(parts, fmt.Sprintf("%s sent=%g failed=%g retried=%g dropped=%g", k, m[p+"_total"], m[p+"_failed_total"], m[p+"_retried_total"], m[p+"_dropped_total"]))
			if m[p+"_total"] == 0 {
				t.Errorf("queue %s sent no %s", r.name, k)
			}
			if m[p+"_failed_total"] != 0 || m[p+"_dropped_total"] != 0 {
				t.Errorf("queue %s: %s failed %g, dropped %g: tsdb refused some, or Prometheus gave up on them", r.name, k, m[p+"_failed_total"], m[p+"_dropped_total"])
			}
		}
		t.Logf("queue %s (%s): %s", r.name, r.proto, strings.Join(parts, "; "))
	}
}

// checkStartTimestamps reads r's store in-process (tsdb has stopped) and checks
// the start timestamps of the hist-native job's counter and native histograms:
// over remote write 2.0 every sample carries its series' created timestamp as
// the target exposed it, over 1.0 none (0). e2e_hist_resetting is left out: it
// gets a new created timestamp with every reset.
func checkStartTimestamps(ctx context.Context, t *testing.T, r *histReceiver, mint, maxt int64, created map[string]int64) {
	t.Helper()
	got, err := readStartTimestamps(ctx, r.st, mint, maxt, labels.MustNewMatcher(labels.MatchEqual, "job", "hist-native"),
		labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, metricHistRequests+"|"+metricHistLatency+"|"+metricHistSizes))
	if err != nil {
		t.Errorf("%s: read the start timestamps: %v", r.name, err)
		return
	}
	if len(got) != len(created) {
		t.Errorf("%s: %d series of the counter and the native histograms, want %d (%v)", r.name, len(got), len(created), created)
	}
	for key, sts := range got {
		want, ok := created[key]
		if !ok {
			t.Errorf("%s: series %s is not one the target created", r.name, key)
			continue
		}
		if r.proto == protoV1 {
			want = 0 // remote write 1.0 has no start timestamps
		}
		bad := 0
		for _, p := range sts {
			if p.st != want {
				if bad++; bad <= 3 {
					t.Errorf("%s: %s at %s: start timestamp %d, want %d", r.name, key, fmtTime(p.t), p.st, want)
				}
			}
		}
		if bad > 3 {
			t.Errorf("%s: %s: %d more samples with a wrong start timestamp", r.name, key, bad-3)
		}
		if len(sts) == 0 {
			t.Errorf("%s: %s: no samples", r.name, key)
		} else if bad == 0 {
			t.Logf("%s: %s: %d samples, each with start timestamp %d", r.name, key, len(sts), want)
		}
	}
}
