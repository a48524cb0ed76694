//go:build cluster

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// clusterLoad is the load of the cluster fault tests (hbasecluster_test.go): writers
// that send remote write (even writers) and /api/put (odd writers) to the tsdb
// processes in turn, each resending a batch that was not acknowledged until it is,
// and a reader that checks every answer of PromQL and remote read against what was
// acknowledged when it asked.
//
// Writer w's sample seq is {__name__=metric, writer="w<w>", s="<seq/perSeries>"} = seq
// at base + seq*step ms: a new series every perSeries samples, so series are created
// (registry and index rows written) all the time.
type clusterLoad struct {
	metric    string
	base      int64 // ms
	step      int64 // ms
	batch     int64
	perSeries int64 // samples per series: a new series every perSeries samples
	targets   []*server

	phase atomic.Pointer[string]
	stop  atomic.Bool // writers take no new batch (the one in flight is still resent until acknowledged)
	rr    atomic.Int64

	mu       sync.Mutex
	acked    []int64                   // writer -> samples 0..acked-1 acknowledged
	answers  map[string]map[string]int // phase -> "write 204" / "query 503" ... -> count
	order    []string                  // phases in the order they began
	failures []string
	checked  int // reader answers checked against the acknowledged data
	lastBad  time.Time
}

const (
	clusterWriters = 4
	// clusterSeriesRun is a load's samples per series unless set otherwise.
	clusterSeriesRun = 40
)

func newClusterLoad(metric string, base int64, targets ...*server) *clusterLoad {
	// 10ms apart: the load stays hours in the past however long the test's region
	// operations let it run (a million samples per writer span under 3h).
	l := &clusterLoad{metric: metric, base: base, step: 10, batch: 200, perSeries: clusterSeriesRun, targets: targets,
		acked: make([]int64, clusterWriters), answers: map[string]map[string]int{}}
	l.setPhase("before")
	return l
}

func (l *clusterLoad) setPhase(p string) {
	l.mu.Lock()
	l.order = append(l.order, p)
	l.mu.Unlock()
	l.phase.Store(&p)
}

func (l *clusterLoad) currentPhase() string { return *l.phase.Load() }

func (l *clusterLoad) target() *server {
	return l.targets[int(l.rr.Add(1))%len(l.targets)]
}

func (l *clusterLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

// count records an answer in the current phase; a non-2xx one also as the latest
// refusal (for the recovery time).
func (l *clusterLoad) count(kind string, code int) {
	p := l.currentPhase()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.answers[p] == nil {
		l.answers[p] = map[string]int{}
	}
	l.answers[p][fmt.Sprintf("%s %d", kind, code)]++
	if code/100 != 2 {
		l.lastBad = time.Now()
	}
}

func (l *clusterLoad) seriesOf(seq int64) string { return strconv.FormatInt(seq/l.perSeries, 10) }

// writeBody is writer w's batch from first: a snappy remote-write request or an
// /api/put JSON array.
func (l *clusterLoad) writeBody(w int, first int64) (path string, body []byte, headers map[string]string) {
	if w%2 == 1 {
		var b strings.Builder
		b.WriteByte('[')
		for seq := first; seq < first+l.batch; seq++ {
			if seq > first {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":%q,"timestamp":%d,"value":%d,"tags":{"writer":"w%d","s":%q}}`,
				l.metric, l.base+seq*l.step, seq, w, l.seriesOf(seq))
		}
		b.WriteByte(']')
		return "/api/put", []byte(b.String()), map[string]string{"Content-Type": "application/json"}
	}
	req := &prompb.WriteRequest{}
	for seq := first; seq < first+l.batch; seq++ {
		if seq == first || seq%l.perSeries == 0 {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: l.metric}, {Name: "s", Value: l.seriesOf(seq)}, {Name: "writer", Value: fmt.Sprintf("w%d", w)}}})
		}
		ts := &req.Timeseries[len(req.Timeseries)-1]
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: l.base + seq*l.step, Value: float64(seq)})
	}
	raw, err := req.Marshal()
	if err != nil {
		panic(err) // a WriteRequest always marshals
	}
	return "/api/v1/write", snappy.Encode(nil, raw), remoteWriteHeaders
}

// write sends writer w's batches until stop is set; a batch answered 503 or 429 is
// resent (to the next process) until it is acknowledged, as Prometheus would.
func (l *clusterLoad) write(ctx context.Context, w int) {
	for !l.stop.Load() && ctx.Err() == nil {
		l.mu.Lock()
		first := l.acked[w]
		l.mu.Unlock()
		path, body, headers := l.writeBody(w, first)
		for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
			if ctx.Err() != nil {
				return
			}
			code, msg := postBody(l.target().addr, path, body, headers)
			l.count("write", code)
			if code/100 == 2 {
				break
			}
			if code != 503 && code != 429 {
				l.fail("writer %d: %s answered %d in phase %q (a sender drops 4xx data; only 503 and 429 are retried): %.300s",
					w, path, code, l.currentPhase(), msg)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		l.mu.Lock()
		l.acked[w] = first + l.batch
		l.mu.Unlock()
	}
}

func (l *clusterLoad) ackedOf(w int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked[w]
}

func (l *clusterLoad) totalAcked() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, a := range l.acked {
		n += a
	}
	return n
}

// read runs PromQL and remote read against the processes until ctx is done. A
// question covers only samples acknowledged before it was asked, so an answer is
// either 503 (the store cannot answer now; ask again) or exactly those samples:
// anything else is a partial answer presented as complete, or an error the
// client is not told to retry.
func (l *clusterLoad) read(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		w := i % clusterWriters
		p := l.ackedOf(w)
		if p == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if i%2 == 0 {
			l.checkQuery(w, p)
		} else {
			l.checkRemoteRead(w, p)
		}
	}
}

func (l *clusterLoad) checkQuery(w int, p int64) {
	at := l.base + (p-1)*l.step
	q := url.Values{"query": {fmt.Sprintf(`sum(count_over_time(%s{writer="w%d"}[1d])) * 1e9 + sum(sum_over_time(%s{writer="w%d"}[1d]))`, l.metric, w, l.metric, w)},
		"time": {fmt.Sprintf("%d.%03d", at/1000, at%1000)}}
	code, body := l.target().get("/api/v1/query?" + q.Encode())
	l.count("query", code)
	switch {
	case code == 503:
		return
	case code != 200:
		l.fail("query for writer %d: %d in phase %q: %.300s", w, code, l.currentPhase(), body)
		return
	}
	var resp struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Data.Result) != 1 {
		l.fail("query for writer %d in phase %q: %v: %.300s", w, l.currentPhase(), err, body)
		return
	}
	got, _ := resp.Data.Result[0].Value[1].(string)
	want := strconv.FormatFloat(float64(p)*1e9+float64(p*(p-1)/2), 'e', -1, 64)
	if g, err := strconv.ParseFloat(got, 64); err != nil || strconv.FormatFloat(g, 'e', -1, 64) != want {
		l.fail("query for writer %d in phase %q: %s, want %s (count %d, sum %d): a partial answer presented as complete",
			w, l.currentPhase(), got, want, p, p*(p-1)/2)
		return
	}
	l.mu.Lock()
	l.checked++
	l.mu.Unlock()
}

func (l *clusterLoad) checkRemoteRead(w int, p int64) {
	samples, code, msg := l.remoteRead(l.target(), w, l.base+(p-1)*l.step)
	l.count("read", code)
	switch {
	case code == 503:
		return
	case code != 200:
		l.fail("remote read for writer %d: %d in phase %q: %.300s", w, code, l.currentPhase(), msg)
		return
	}
	if err := l.exactly(w, samples, p); err != nil {
		l.fail("remote read for writer %d in phase %q: %v: a partial answer presented as complete", w, l.currentPhase(), err)
		return
	}
	l.mu.Lock()
	l.checked++
	l.mu.Unlock()
}

// remoteRead reads writer w's samples up to end (ms) from s.
func (l *clusterLoad) remoteRead(s *server, w int, end int64) ([]*prompb.TimeSeries, int, string) {
	req := &prompb.ReadRequest{Queries: []*prompb.Query{{StartTimestampMs: l.base, EndTimestampMs: end,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: l.metric},
			{Type: prompb.LabelMatcher_EQ, Name: "writer", Value: fmt.Sprintf("w%d", w)}}}}}
	raw, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	code, body := postBody(s.addr, "/api/v1/read", snappy.Encode(nil, raw),
		map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy", "X-Prometheus-Remote-Read-Version": "0.1.0"})
	if code != 200 {
		return nil, code, body
	}
	dec, err := snappy.Decode(nil, []byte(body))
	if err != nil {
		return nil, 0, "snappy: " + err.Error()
	}
	var resp prompb.ReadResponse
	if err := resp.Unmarshal(dec); err != nil || len(resp.Results) != 1 {
		return nil, 0, fmt.Sprintf("read response: %v (%d results)", err, len(resp.Results))
	}
	return resp.Results[0].Timeseries, code, ""
}

// exactly checks that series hold writer w's samples 0..p-1, each once and bit for
// bit, in the series it was sent to, and nothing else.
func (l *clusterLoad) exactly(w int, series []*prompb.TimeSeries, p int64) error {
	seen := make([]bool, p)
	n := int64(0)
	for _, ts := range series {
		var s string
		for _, lb := range ts.Labels {
			if lb.Name == "s" {
				s = lb.Value
			}
		}
		for _, smp := range ts.Samples {
			seq := (smp.Timestamp - l.base) / l.step
			switch {
			case (smp.Timestamp-l.base)%l.step != 0 || seq < 0 || seq >= p:
				return fmt.Errorf("a sample at %d ms, outside the %d acknowledged", smp.Timestamp, p)
			case smp.Value != float64(seq) || s != l.seriesOf(seq):
				return fmt.Errorf("sample %d is %v in series s=%q, sent %d in s=%q", seq, smp.Value, s, seq, l.seriesOf(seq))
			case seen[seq]:
				return fmt.Errorf("sample %d read twice", seq)
			}
			seen[seq] = true
			n++
		}
	}
	if n != p {
		return fmt.Errorf("%d of %d acknowledged samples", n, p)
	}
	return nil
}

// run starts the writers and the reader; the returned function stops the writers
// (each finishes its batch in flight), then the reader, and waits for them.
func (l *clusterLoad) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	readCtx, cancelRead := context.WithCancel(ctx)
	var writers, reader sync.WaitGroup
	for w := range clusterWriters {
		writers.Go(func() { l.write(ctx, w) })
	}
	reader.Go(func() { l.read(readCtx) })
	return func() {
		l.stop.Store(true)
		writers.Wait()
		cancelRead()
		reader.Wait()
		cancel()
	}
}

// waitAcked waits until n more samples than now are acknowledged in all, failing on
// a wrong answer, a process that exited, or no progress for waitStall.
func (l *clusterLoad) waitAcked(t *testing.T, n int64, what string) {
	t.Helper()
	target := l.totalAcked() + n
	last, lastChange := int64(-1), time.Now()
	for {
		l.mu.Lock()
		failures := l.failures
		l.mu.Unlock()
		if len(failures) > 0 {
			t.Fatalf("%s:\n%s\n%s", what, strings.Join(failures, "\n"), l.logs())
		}
		c := l.totalAcked()
		if c >= target {
			return
		}
		if c != last {
			last, lastChange = c, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("%s: %d of %d samples acknowledged, and none for %s; answers so far:%s\n%s", what, c, target, waitStall, l.summary(), l.logs())
		}
		for _, s := range l.targets {
			select {
			case err := <-s.done:
				t.Fatalf("%s: tsdb at %s exited (%v); log:\n%s", what, s.addr, err, s.log())
			default:
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *clusterLoad) logs() string {
	var b strings.Builder
	for _, s := range l.targets {
		log := s.log()
		fmt.Fprintf(&b, "tsdb at %s, log tail:\n%s\n", s.addr, log[max(0, len(log)-4000):])
	}
	return b.String()
}

// summary lists the answers by phase, in the order the phases began.
func (l *clusterLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, p := range l.order {
		keys := make([]string, 0, len(l.answers[p]))
		for k := range l.answers[p] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n  %-28s", p)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s: %d,", k, l.answers[p][k])
		}
	}
	return b.String()
}

// refused counts the answers of a kind ("write", "query", "read") in phase p that
// were not 2xx.
func (l *clusterLoad) refused(p, kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, c := range l.answers[p] {
		if strings.HasPrefix(k, kind+" ") && !strings.HasPrefix(k, kind+" 2") {
			n += c
		}
	}
	return n
}

// report fails on a wrong answer seen, and logs the answers by phase.
func (l *clusterLoad) report(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	failures, checked := l.failures, l.checked
	l.mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	if checked == 0 {
		t.Error("the reader checked no answer")
	}
	t.Logf("answers by phase (kind status: count):%s\n%d reader answers checked exact", l.summary(), checked)
}

// checkReadBack reads every writer's samples back through each process: exactly
// the acknowledged ones, once each (the writers resend a refused batch until it is
// acknowledged and stop between batches, so nothing unacknowledged is stored).
func (l *clusterLoad) checkReadBack(t *testing.T) {
	t.Helper()
	for _, s := range l.targets {
		for w := range clusterWriters {
			p := l.ackedOf(w)
			series, code, msg := l.remoteRead(s, w, l.base+(p+l.batch)*l.step)
			if code != 200 {
				t.Fatalf("read back writer %d through %s: %d %s", w, s.addr, code, msg)
			}
			if err := l.exactly(w, series, p); err != nil {
				t.Errorf("read back writer %d through %s: %v", w, s.addr, err)
			}
		}
	}
	t.Logf("%d acknowledged samples of %d writers read back exactly once through each of %d processes", l.totalAcked(), clusterWriters, len(l.targets))
}

// regionServerPorts maps each region server of a cluster run directory (rs1, ...)
// to its RPC port, from its hbase-site.xml.
func regionServerPorts(t *testing.T, runDir string) map[string]string {
	t.Helper()
	confs, err := filepath.Glob(filepath.Join(runDir, "conf-rs*", "hbase-site.xml"))
	if err != nil || len(confs) == 0 {
		t.Fatalf("no region server confs in %s: %v", runDir, err)
	}
	re := regexp.MustCompile(`hbase.regionserver.port</name><value>(\d+)<`)
	ports := map[string]string{}
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s names no region server port", c)
		}
		ports[strings.TrimPrefix(filepath.Base(filepath.Dir(c)), "conf-")] = string(m[1])
	}
	return ports
}
