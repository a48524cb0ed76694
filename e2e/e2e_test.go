package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// TestPrometheusRemoteWrite runs a real Prometheus against a real `tsdb serve` for
// every store and remote-write protocol, directly and through a proxy that aborts
// requests mid-write (so that Prometheus retries them), and checks that what tsdb
// stored is exactly what Prometheus has. The runs are independent and run in
// parallel (go test -parallel, GOMAXPROCS by default).
func TestPrometheusRemoteWrite(t *testing.T) {
	promBin := prometheusBinary(t)
	dur := runDuration(t)
	stores := []struct {
		name string
		new  func(*testing.T) store
	}{
		{"embedded", embeddedStore},
		{"hbase", hbaseStore},
	}
	runs := []struct {
		name   string
		proto  string
		aborts bool // through an abortingProxy
		// queries: at the end of the run, check tsdb's query APIs against
		// Prometheus (checkQueryAPIs); once per store is enough.
		queries bool
		// compacted: tsdb compacts while it runs (compactedRun).
		compacted bool
	}{
		{"rw1", protoV1, false, true, false},
		{"rw2", protoV2, false, false, false},
		{"rw1-aborted-requests", protoV1, true, false, false},
		{"rw2-aborted-requests", protoV2, true, false, false},
		{"rw1-compacted", protoV1, false, true, true},
	}
	for _, st := range stores {
		for _, run := range runs {
			t.Run(st.name+"/"+run.name, func(t *testing.T) {
				t.Parallel()
				s, d := st.new(t), dur
				if run.compacted {
					s, d = compactedRun(s, dur)
				}
				runRemoteWrite(t, promBin, s, run.proto, run.aborts, run.queries, d)
				if run.compacted && !t.Failed() {
					checkCompacted(t, s)
				}
			})
		}
	}
}

// compactedRun makes a run in which tsdb compacts all along: one-minute buckets,
// sealed 10 seconds after they end (the least such buckets allow is 9s,
// schema.MinGrace: samples that arrive more than 3s after their bucket's end
// are stored as late samples), a compaction round every second. Everything the
// run compares (raw samples to the bit, the query APIs, remote read) then
// reads chunks, late samples merged with them and buckets being rewritten
// while queries run. It scrapes at least long enough for two buckets to be
// sealed.
func compactedRun(st store, dur time.Duration) (store, time.Duration) {
	st.flags = append(slices.Clone(st.flags), "--schema.bucket-width=1m", "--compact.grace=10s", "--compact.interval=1s")
	return st, max(dur, 90*time.Second)
}

// checkCompacted fails unless the store holds chunk cells: a compacted run that
// compacted nothing would have compared raw cells only.
func checkCompacted(t *testing.T, st store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
	defer cancel()
	s, err := st.open(ctx)
	if err != nil {
		t.Fatalf("open the %s store: %v", st.name, err)
	}
	defer s.Close()
	chunks, err := countCells(ctx, s, schema.TableData, schema.FamilyChunk)
	if err != nil {
		t.Fatal(err)
	}
	if chunks == 0 {
		t.Fatal("tsdb compacted nothing during the run: the comparison read raw cells only")
	}
	t.Logf("%d buckets were compacted into chunks while the run compared", chunks)
}

// countCells counts the cells a scan returns of one family of a table, reading
// keys only.
func countCells(ctx context.Context, s kv.Store, table, family string) (int, error) {
	sc := s.Scan(ctx, table, nil, nil, kv.Families(family), kv.WithFilter(kv.KeyOnlyFilter{}))
	defer sc.Close()
	n := 0
	for sc.Next() {
		n += len(sc.Row().Cells)
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("scan family %s of table %s: %w", family, table, err)
	}
	return n, nil
}

// The cut-off time T lies cutoffMargin before the end of scraping, and Prometheus is
// queried once it has sent samples sentBeyondCutoff past T, so that every sample at
// or before T was scraped and appended by then.
const (
	cutoffMargin     = 5 * time.Second
	sentBeyondCutoff = 4 * time.Second
)

// querySelectors are the selectors whose query_range answer is checked against
// tsdb's raw samples evaluated with Prometheus' lookback and staleness rules.
var querySelectors = []string{
	"up",
	metricFlapping,
	metricSpecial,
	metricExplicitT,
	"prometheus_http_requests_total",
}

// metadataFamilies are the metric families whose metadata tsdb must have stored as
// Prometheus knows it: the synthetic target's and one of Prometheus' own of each
// type.
var metadataFamilies = []string{
	metricSpecial,                    // gauge with help
	metricCounter,                    // counter with help
	metricFlapping,                   // gauge with help
	metricMany,                       // gauge without help
	"prometheus_http_requests_total", // counter
	"prometheus_http_request_duration_seconds", // histogram
	"go_gc_duration_seconds",                   // summary
	"prometheus_build_info",                    // gauge
}

// receiver is the remote-write receiver under test: `tsdb serve` on a store, or the
// reference receiver that checks the harness itself.
type receiver interface {
	// writeURL is where Prometheus sends remote write.
	writeURL() string
	// metricsAddr is a host:port with /metrics for Prometheus to scrape, or "".
	metricsAddr() string
	// alive fails the test if the receiver has died.
	alive(t *testing.T)
	// stopAndCheck stops the receiver and fails the test unless it stopped cleanly.
	stopAndCheck(t *testing.T)
	// readBack returns every series stored with samples in [mint, maxt] (ms,
	// inclusive), stale markers included, and the metadata stored for each of
	// families (nil when the receiver keeps no metadata).
	readBack(ctx context.Context, mint, maxt int64, families []string) (seriesSet, map[string]metadata, error)
}

// runRemoteWrite starts tsdb on st and runs Prometheus against it, directly or, with
// aborts, through a proxy that aborts the first attempt of every request while tsdb
// works on it. With queries, tsdb's query APIs are checked against Prometheus at the
// end of the run (checkQueryAPIs).
func runRemoteWrite(t *testing.T, promBin string, st store, protobufMsg string, aborts, queries bool, dur time.Duration) {
	dir := t.TempDir()
	tsdb := startTSDB(t, dir, st)
	tsdb.checkWriteEndpoint(t)
	var rcv receiver = tsdb
	what := st.name
	if aborts {
		// Aborted requests are logged as failed writes; that is expected here.
		tsdb.canceledOK = true
		rcv = proxied{receiver: tsdb, proxy: startAbortingProxy(t, "http://"+tsdb.addr, 300*time.Millisecond), path: "/api/v1/write"}
		what += ", first attempts aborted"
	}
	var after afterCutoff
	if queries {
		after = func(ctx context.Context, t *testing.T, ps *promServer, cutoff int64) {
			checkQueryAPIs(ctx, t, promBin, dir, ps, tsdb, cutoff)
		}
	}
	runAgainst(t, promBin, dir, rcv, what, protobufMsg, dur, after)
}

// afterCutoff is a check that runs at the end of a run, while Prometheus and the
// receiver still run and once Prometheus has sent every sample up to the cut-off
// (ms).
type afterCutoff func(ctx context.Context, t *testing.T, ps *promServer, cutoff int64)

// runAgainst lets Prometheus scrape and remote-write to rcv for dur, then compares
// what rcv stored with what Prometheus has; after, if not nil, runs before
// Prometheus and rcv are stopped.
func runAgainst(t *testing.T, promBin, dir string, rcv receiver, what, protobufMsg string, dur time.Duration, after afterCutoff) {
	ctx := context.Background()
	began := time.Now()
	tg := startTarget(t)
	ps := startPrometheus(t, promBin, dir, promConfig{
		targetAddr:    tg.hostPort(),
		tsdbMetrics:   rcv.metricsAddr(),
		writeURL:      rcv.writeURL(),
		protobufMsg:   protobufMsg,
		runLabel:      t.Name(),
		scrapeEvery:   time.Second,
		batchDeadline: time.Second,
	})
	t.Logf("receiver %s (%s), Prometheus at %s sending %s; scraping for %s", rcv.writeURL(), what, ps.url, protobufMsg, dur)

	for end := time.Now().Add(dur); time.Now().Before(end); time.Sleep(time.Second) {
		rcv.alive(t)
		ps.alive(t)
	}

	// T: everything at or before it is compared. Prometheus must have appended
	// every sample at or before T when it is queried: wait until it has sent
	// samples of scrapes well after T (the target's explicit timestamps lie 2.5 s
	// before their scrape).
	cutoff := time.Now().Add(-cutoffMargin).UnixMilli()
	rw := ps.waitSent(t, cutoff+sentBeyondCutoff.Milliseconds())
	windowSec := (cutoff-ps.start.UnixMilli())/1000 + 60
	mint := cutoff - windowSec*1000 + 1 // a range selector's window is left-open

	// Each request is bounded by httpClient's timeout (stallTimeout); the queries
	// together have no budget.
	viaAPI, err := ps.queryMatrix(ctx, "/api/v1/query", url.Values{
		"query": {fmt.Sprintf(`{__name__=~".+"}[%ds]`, windowSec)},
		"time":  {apiTime(cutoff)},
	})
	if err != nil {
		t.Fatalf("Prometheus query API: %v", err)
	}
	viaRead, err := ps.remoteRead(ctx, mint, cutoff)
	if err != nil {
		t.Fatalf("Prometheus remote read: %v", err)
	}
	promMeta, err := ps.metadata(ctx, metadataFamilies)
	if err != nil {
		t.Fatalf("Prometheus metadata API: %v", err)
	}
	rangeStart := ps.start.Truncate(time.Second).UnixMilli()
	ranges := map[string]seriesSet{}
	for _, sel := range querySelectors {
		r, err := ps.queryMatrix(ctx, "/api/v1/query_range", url.Values{
			"query": {sel},
			"start": {apiTime(rangeStart)},
			"end":   {apiTime(cutoff)},
			"step":  {"1"},
		})
		if err != nil {
			t.Fatalf("Prometheus query_range %s: %v", sel, err)
		}
		ranges[sel] = r
	}
	if after != nil {
		after(ctx, t, ps, cutoff)
	}

	stopStart := time.Now()
	if err := ps.stop(); err != nil {
		t.Errorf("stop Prometheus: %v", err)
	}
	t.Logf("Prometheus stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	ps.checkNoLoss(t)
	rcv.stopAndCheck(t)

	// readBack bounds each read of the store by stallTimeout, not all of them.
	stored, storedMeta, err := rcv.readBack(ctx, mint, cutoff, metadataFamilies)
	if err != nil {
		t.Fatalf("read back what tsdb stored: %v", err)
	}

	apiSeries, apiSamples, _ := viaAPI.stats()
	rrSeries, rrSamples, rrStale := viaRead.stats()
	gotSeries, gotSamples, gotStale := stored.stats()
	t.Logf("up to T=%s: Prometheus query API %d series / %d samples; remote read %d series / %d samples / %d stale markers; tsdb %d series / %d samples / %d stale markers",
		fmtTime(cutoff), apiSeries, apiSamples, rrSeries, rrSamples, rrStale, gotSeries, gotSamples, gotStale)
	t.Logf("Prometheus remote write: %s", fmtMetrics(rw))
	if rw["prometheus_remote_storage_samples_dropped_total"] > 0 || rw["prometheus_remote_storage_metadata_failed_total"] > 0 {
		t.Errorf("Prometheus dropped samples or failed metadata sends (tsdb rejected them): %s", fmtMetrics(rw))
	}

	// The harness itself: Prometheus must have scraped both jobs.
	checkHarness(t, viaAPI)

	// 1. Raw samples, stale markers included, to the bit: Prometheus' remote read.
	if d := compareSets(viaRead, stored, bitsEqual); len(d) > 0 {
		t.Errorf("tsdb differs from Prometheus' remote read (raw samples, stale markers included) in %d places:%s", len(d), summarize(d, 20))
	}

	// 2. What the query API shows: a range selector's raw samples, no stale markers.
	if d := compareSets(viaAPI, stored.withoutStale(), apiEqual); len(d) > 0 {
		t.Errorf("tsdb differs from Prometheus' query API ({__name__=~\".+\"}[%ds] at T) in %d places:%s", windowSec, len(d), summarize(d, 20))
	}

	// 3. query_range of a few selectors, recomputed from tsdb's raw samples.
	for _, sel := range querySelectors {
		want := ranges[sel]
		got := seriesSet{}
		for k, s := range stored.filter(func(ls labels.Labels) bool { return ls.Get(labels.MetricName) == sel }) {
			if pts := evalRange(s.samples, rangeStart, cutoff, 1000, 5*60*1000); len(pts) > 0 {
				got[k] = &series{labels: s.labels, samples: pts}
			}
		}
		if len(want) == 0 {
			t.Errorf("query_range %s: Prometheus returned no series", sel)
		}
		if d := compareSets(want, got, apiEqual); len(d) > 0 {
			t.Errorf("query_range %s (step 1s): Prometheus' answer differs from tsdb's samples in %d places:%s", sel, len(d), summarize(d, 20))
		}
	}

	// 4. Metric metadata (type, help, unit) as Prometheus' metadata API shows it.
	// Remote write 1.0 names the metric family of each metadata entry; 2.0 attaches
	// metadata to series, and tsdb files a histogram's x_bucket/x_sum/x_count
	// under family x (promapi.metricFamily), so both must match.
	if storedMeta != nil {
		for _, f := range metadataFamilies {
			if got, want := storedMeta[f], promMeta[f]; got != want {
				t.Errorf("metadata of %s: tsdb has %+v, Prometheus %+v", f, got, want)
			}
		}
	}

	// 5. What the synthetic target exposed, checked against tsdb directly.
	checkTargetSeries(t, stored)
	t.Logf("run took %s", time.Since(began).Round(time.Second))
}

// apiTime formats ms as the API's seconds with three decimals.
func apiTime(ms int64) string { return fmt.Sprintf("%d.%03d", ms/1000, ms%1000) }

func fmtMetrics(m map[string]float64) string {
	var s string
	for _, name := range remoteWriteMetrics {
		s += fmt.Sprintf(" %s=%s", name[len("prometheus_remote_storage_"):], strconv.FormatFloat(m[name], 'f', -1, 64))
	}
	return s
}

// checkHarness fails the test when Prometheus itself did not collect what the test
// relies on: its own metrics and the synthetic target's.
func checkHarness(t *testing.T, viaAPI seriesSet) {
	t.Helper()
	jobs := map[string]int{}
	for _, s := range viaAPI {
		jobs[s.labels.Get("job")]++
	}
	if jobs["prometheus"] < 50 || jobs["e2e-target"] < manySeries {
		t.Fatalf("Prometheus has too little data for a meaningful comparison: series per job %v", jobs)
	}
}

// checkTargetSeries checks the synthetic target's series in what tsdb stored against
// what the target exposed: the special values to the bit, label values unchanged,
// explicit timestamps, and one stale marker for every generation of e2e_flapping
// that was replaced, at the first timestamp of the next generation.
func checkTargetSeries(t *testing.T, stored seriesSet) {
	t.Helper()
	byName := map[string][]*series{}
	for _, s := range stored {
		if s.labels.Get("job") == "e2e-target" {
			byName[s.labels.Get(labels.MetricName)] = append(byName[s.labels.Get(labels.MetricName)], s)
		}
	}

	seen := map[string]bool{}
	for _, s := range byName[metricSpecial] {
		kind := s.labels.Get("kind")
		want, ok := specialValues[kind]
		if !ok {
			t.Errorf("%s: unexpected kind %q", metricSpecial, kind)
			continue
		}
		seen[kind] = true
		for _, p := range s.samples {
			if !value.IsStaleNaN(p.v) && !bitsEqual(want, p.v) {
				t.Errorf("%s{kind=%q} at %s: stored %s, exposed %s", metricSpecial, kind, fmtTime(p.t), fmtValue(p.v), fmtValue(want))
				break
			}
		}
	}
	for kind := range specialValues {
		if !seen[kind] {
			t.Errorf("%s{kind=%q}: not stored", metricSpecial, kind)
		}
	}

	// A scrape that failed (up is 0 at its timestamp: the target did not answer
	// in time, as on a busy machine) makes Prometheus write a stale marker for
	// every series of the target at that timestamp.
	failedScrape := map[int64]bool{}
	for _, s := range byName["up"] {
		for _, p := range s.samples {
			if p.v != 1 {
				failedScrape[p.t] = true
			}
		}
	}
	for _, s := range byName[metricNaN] {
		for _, p := range s.samples {
			if value.IsStaleNaN(p.v) && failedScrape[p.t] {
				continue
			}
			if !math.IsNaN(p.v) || value.IsStaleNaN(p.v) {
				t.Errorf("%s at %s: stored %s, want a NaN that is not a stale marker", metricNaN, fmtTime(p.t), fmtValue(p.v))
				break
			}
		}
	}

	labelsSeen := map[string]bool{}
	for _, s := range byName[metricLabels] {
		which := s.labels.Get("which")
		if want, ok := labelEscapes[which]; !ok || s.labels.Get("value") != want {
			t.Errorf("%s{which=%q}: stored value label %q, exposed %q", metricLabels, which, s.labels.Get("value"), want)
		}
		labelsSeen[which] = true
	}
	if len(labelsSeen) != len(labelEscapes) {
		t.Errorf("%s: %d of %d series stored", metricLabels, len(labelsSeen), len(labelEscapes))
	}

	// e2e_explicit_timestamp's value is the scrape number: it must grow with the
	// (exposed, not scraped) timestamp.
	if len(byName[metricExplicitT]) != 1 {
		t.Errorf("%s: %d series stored, want 1", metricExplicitT, len(byName[metricExplicitT]))
	}
	for _, s := range byName[metricExplicitT] {
		for i := 1; i < len(s.samples); i++ {
			if s.samples[i].v <= s.samples[i-1].v {
				t.Errorf("%s: value %v at %s after %v at %s: explicit timestamps lost their order",
					metricExplicitT, s.samples[i].v, fmtTime(s.samples[i].t), s.samples[i-1].v, fmtTime(s.samples[i-1].t))
				break
			}
		}
	}

	// Stale markers of e2e_flapping (flappingProblems). A failed scrape is no
	// wrong answer: it is counted and logged, and its stale markers expected.
	if len(failedScrape) > 0 {
		ts := slices.Sorted(maps.Keys(failedScrape))
		t.Logf("%d scrapes of the target failed (up 0), the first at %s: Prometheus wrote a stale marker for every series of the target there, which the checks of %s and %s expect",
			len(ts), fmtTime(ts[0]), metricNaN, metricFlapping)
	}
	flap := byName[metricFlapping]
	slices.SortFunc(flap, func(a, b *series) int {
		ga, _ := strconv.Atoi(a.labels.Get("generation"))
		gb, _ := strconv.Atoi(b.labels.Get("generation"))
		return ga - gb
	})
	if len(flap) < 2 {
		t.Errorf("%s: %d generations stored, want at least 2", metricFlapping, len(flap))
	}
	for _, p := range flappingProblems(flap, failedScrape) {
		t.Error(p)
	}
}

// flappingProblems checks the generations of e2e_flapping, in order, against
// what the target exposed and Prometheus' staleness rules, and returns what is
// wrong. Generation g ends with a stale marker at the first sample of
// generation g+1 (both at the timestamp of the same scrape); a failed scrape
// (failed: the timestamps where up was 0) ends every series of the target with
// a stale marker at its own timestamp, so there a generation may also have one
// in its middle (the next successful scrape starts it again), or end with it
// before generation g+1 starts (the scrape that would have changed generations
// failed). A stale marker anywhere else, or a generation that does not end
// with one, is a wrong answer. The last generation has not ended yet.
func flappingProblems(gens []*series, failed map[int64]bool) []string {
	var problems []string
	for i, cur := range gens {
		if len(cur.samples) == 0 {
			continue
		}
		gen := cur.labels.Get("generation")
		var next *series
		if i+1 < len(gens) && len(gens[i+1].samples) > 0 {
			next = gens[i+1]
		}
		for j, p := range cur.samples {
			if !value.IsStaleNaN(p.v) || failed[p.t] {
				continue
			}
			if next == nil || j != len(cur.samples)-1 || p.t != next.samples[0].t {
				problems = append(problems, fmt.Sprintf("%s{generation=%q}: a stale marker at %s, neither at a failed scrape nor the end of the generation at the first sample of the next",
					metricFlapping, gen, fmtTime(p.t)))
			}
		}
		if next == nil {
			continue
		}
		last, start := cur.samples[len(cur.samples)-1], next.samples[0]
		switch {
		case !value.IsStaleNaN(last.v):
			problems = append(problems, fmt.Sprintf("%s{generation=%q}: last stored sample %s, want a stale marker at %s (the first sample of generation %s)",
				metricFlapping, gen, fmtSample(last), fmtTime(start.t), next.labels.Get("generation")))
		case last.t > start.t:
			problems = append(problems, fmt.Sprintf("%s{generation=%q}: stale marker at %s, after the first sample of generation %s at %s",
				metricFlapping, gen, fmtTime(last.t), next.labels.Get("generation"), fmtTime(start.t)))
		}
	}
	return problems
}
