package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var end = time.Date(2026, 12, 3, 11, 30, 0, 0, time.UTC)

// TestDatapointJSONIsExactlyWhatTheCollectorsSend pins the bytes of the first
// request: the field order of tcollector and scollector, timestamps in
// seconds, integers for even metrics and sixteenths for odd ones.
func TestDatapointJSONIsExactlyWhatTheCollectorsSend(t *testing.T) {
	l := Load{Hosts: 2, Metrics: 2, Points: 2, Interval: time.Second, Senders: 1, Batch: 3, Prefix: "bench."}
	e, err := l.Encode(end.Add(400 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ts := end.Unix() - 1
	want := fmt.Sprintf(`[{"metric":"bench.m000","timestamp":%d,"value":1000000,"tags":{"host":"host-000","dc":"dc0"}},`+
		`{"metric":"bench.m001","timestamp":%d,"value":1.6875,"tags":{"host":"host-000","dc":"dc0"}},`+
		`{"metric":"bench.m000","timestamp":%d,"value":1000000,"tags":{"host":"host-001","dc":"dc1"}}]`, ts, ts, ts)
	if got := string(e.Bodies[0][0]); got != want {
		t.Errorf("first request\n got %s\nwant %s", got, want)
	}
	if !e.Start.Equal(end.Add(-time.Second)) || !e.End.Equal(end) {
		t.Errorf("span %s..%s, want %s..%s", e.Start, e.End, end.Add(-time.Second), end)
	}
	if got := slices.Concat(e.Points...); !slices.Equal(got, []int{3, 3, 2}) {
		t.Errorf("datapoints per request = %v, want [3 3 2]", got)
	}
}

type putDatapoint struct {
	Metric    string            `json:"metric"`
	Timestamp int64             `json:"timestamp"`
	Value     json.Number       `json:"value"`
	Tags      map[string]string `json:"tags"`
}

// decode returns the datapoints of one body, gunzipped when gz.
func decode(t *testing.T, body []byte, gz bool) []putDatapoint {
	t.Helper()
	if gz {
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var dps []putDatapoint
	if err := dec.Decode(&dps); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return dps
}

func TestLoadSendsEveryPointOnceInTimeOrderFromItsHostsSender(t *testing.T) {
	for _, tc := range []struct {
		name string
		load Load
	}{
		{"seconds, plain", Load{Hosts: 7, Metrics: 5, Points: 9, Interval: 15 * time.Second, Senders: 3, Batch: 11, Prefix: "bench."}},
		{"milliseconds, gzip", Load{Hosts: 4, Metrics: 3, Points: 5, Interval: 250 * time.Millisecond, Senders: 2, Batch: 100, Gzip: true, Prefix: "warmup."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.load
			e, err := l.Encode(end)
			if err != nil {
				t.Fatal(err)
			}
			type key struct {
				metric, host string
				ts           int64
			}
			seen := map[key]bool{}
			floats, ints := 0, 0
			for s, bodies := range e.Bodies {
				last := map[string]int64{} // series -> last timestamp
				for i, body := range bodies {
					dps := decode(t, body, l.Gzip)
					if len(dps) != e.Points[s][i] || len(dps) > l.Batch {
						t.Fatalf("sender %d request %d: %d datapoints, Points says %d, batch %d", s, i, len(dps), e.Points[s][i], l.Batch)
					}
					for _, dp := range dps {
						var h int
						if _, err := fmt.Sscanf(dp.Tags["host"], "host-%d", &h); err != nil || h%l.Senders != s {
							t.Fatalf("sender %d sent host %q", s, dp.Tags["host"])
						}
						if !strings.HasPrefix(dp.Metric, l.Prefix) || len(dp.Tags) != 2 || dp.Tags["dc"] != fmt.Sprintf("dc%d", h%4) {
							t.Fatalf("datapoint %+v", dp)
						}
						k := key{dp.Metric, dp.Tags["host"], dp.Timestamp}
						if seen[k] {
							t.Fatalf("datapoint %+v sent twice", dp)
						}
						seen[k] = true
						series := dp.Metric + dp.Tags["host"]
						if prev, ok := last[series]; ok && dp.Timestamp-prev != l.Interval.Milliseconds()/unitMillis(l) {
							t.Fatalf("series %s: timestamp %d after %d", series, dp.Timestamp, prev)
						}
						last[series] = dp.Timestamp
						if strings.Contains(dp.Value.String(), ".") {
							floats++
						} else {
							ints++
						}
					}
				}
			}
			if len(seen) != l.Total() {
				t.Errorf("%d distinct datapoints, want %d", len(seen), l.Total())
			}
			if !e.End.Equal(end) {
				t.Errorf("the span ends at %s, want %s", e.End, end)
			}
			if floats == 0 || ints == 0 {
				t.Errorf("%d float and %d integer values, want both", floats, ints)
			}
		})
	}
}

func unitMillis(l Load) int64 {
	if l.inMillis() {
		return 1
	}
	return 1000
}

// TestBothTargetsReceiveIdenticalRequests sends one load to two servers as the
// benchmark does and compares what each received: the same method, path,
// query and headers, and from each sender exactly the bodies it encoded, in
// its order; every point counted as stored.
func TestBothTargetsReceiveIdenticalRequests(t *testing.T) {
	l := Load{Hosts: 6, Metrics: 4, Points: 5, Interval: time.Second, Senders: 3, Batch: 7, Gzip: true, Prefix: "bench."}
	e, err := l.Encode(end)
	if err != nil {
		t.Fatal(err)
	}
	type received struct {
		mu       sync.Mutex
		requests map[string]bool // method, path and query, headers
		bodies   [][][]byte      // by sender (the owner of the first datapoint's host)
	}
	s := &sender{client: http.DefaultClient, log: slog.New(slog.DiscardHandler), query: putQuery(true), progress: time.Hour}
	for _, name := range []string{targetOpenTSDB, targetTSDB} {
		r := &received{requests: map[string]bool{}, bodies: make([][][]byte, l.Senders)}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			dps := decode(t, body, req.Header.Get("Content-Encoding") == "gzip")
			var h int
			fmt.Sscanf(dps[0].Tags["host"], "host-%d", &h)
			r.mu.Lock()
			r.requests[req.Method+" "+req.URL.RequestURI()+" "+req.Header.Get("Content-Type")+" "+req.Header.Get("Content-Encoding")] = true
			r.bodies[h%l.Senders] = append(r.bodies[h%l.Senders], body)
			r.mu.Unlock()
			fmt.Fprintf(w, `{"success":%d,"failed":0,"errors":[]}`, len(dps))
		}))
		res, err := s.send(context.Background(), name, srv.URL, e)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.stored != l.Total() || res.failed != 0 {
			t.Fatalf("%s: stored %d, failed %d; want %d stored", name, res.stored, res.failed, l.Total())
		}
		want := map[string]bool{"POST /api/put?details&sync application/json gzip": true}
		if !maps.Equal(r.requests, want) {
			t.Errorf("%s received requests %v, want %v", name, r.requests, want)
		}
		for sender, bodies := range r.bodies {
			if !slices.EqualFunc(bodies, e.Bodies[sender], bytes.Equal) {
				t.Errorf("%s received other bodies from sender %d than it encoded", name, sender)
			}
		}
	}
}

func TestJudgeCountsWhatTheAnswerSays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   outcome
	}{
		{"all stored", 200, `{"success":5,"failed":0,"errors":[]}`, outcome{stored: 5}},
		{"one bad datapoint", 400, `{"success":4,"failed":1,"errors":[{"datapoint":{},"error":"Unable to parse value to a number"}]}`,
			outcome{stored: 4, failed: 1, reason: "Unable to parse value to a number"}},
		{"OpenTSDB's 200 when HBase failed puts under sync", 200, `{"success":2,"failed":3,"errors":[]}`,
			outcome{stored: 2, failed: 3, reason: "3 failed without errors"}},
		{"datapoints the answer leaves out fail", 200, `{"success":3,"failed":0}`,
			outcome{stored: 3, failed: 2, reason: "the answer accounts for 3 of 5 datapoints"}},
		{"a 204 without counts fails all", 204, ``, outcome{failed: 5, reason: "HTTP 204: "}},
		{"a store failure fails all", 503, `{"error":"store unavailable"}`, outcome{failed: 5, reason: `HTTP 503: {"error":"store unavailable"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(tc.status, []byte(tc.body), 5); got != tc.want {
				t.Errorf("judge = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestQuickShrinksTheLoadButExplicitFlagsWin(t *testing.T) {
	c, err := parseFlags([]string{"-quick", "-points", "50"})
	if err != nil {
		t.Fatal(err)
	}
	if c.load.Hosts != 10 || c.load.Metrics != 10 || c.load.Points != 50 || c.rounds != 1 || c.warmup != 1 {
		t.Errorf("quick config = %+v", c)
	}
	c, err = parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.load.Total() != 2_400_000 || !c.sync || !c.hbase.Start || !slices.Equal(c.targets, []string{targetOpenTSDB, targetTSDB}) {
		t.Errorf("default config = %+v", c)
	}
	if _, err := parseFlags([]string{"-hbase-zk", "h:1", "-hbase-run", "/x"}); err == nil {
		t.Error("-hbase-zk with -hbase-run accepted")
	}
	if c, err := parseFlags([]string{"-targets", "tsdb,opentsdb"}); err != nil || !slices.Equal(c.targets, []string{targetOpenTSDB, targetTSDB}) ||
		!slices.Equal(roundOrder(c.targets, 2), []string{targetTSDB, targetOpenTSDB}) {
		t.Errorf("targets %v, %v", c.targets, err)
	}
}
