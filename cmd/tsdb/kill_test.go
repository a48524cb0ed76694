package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// TestKill9LosesNothingAcknowledged: four writers send /api/put batches to
// tsdb serve, which is killed with SIGKILL mid-stream five times and started
// again on the same store; every datapoint it acknowledged (204) is then there,
// bit for bit, once. Unacknowledged ones may or may not be (the sender would
// retry them). On the embedded store and, when the test HBase runs, on HBase.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testKill9(t, "--storage=embedded:"+filepath.Join(t.TempDir(), "data"))
	})
	t.Run("hbase", func(t *testing.T) {
		t.Parallel()
		zk := hbasetest.ZooKeeper(t)
		prefix := hbasetest.UniquePrefix("kill")
		t.Cleanup(func() { hbasestore.DropPrefix(t, zk, prefix) })
		testKill9(t, "--storage=hbase:"+zk, "--hbase.table-prefix="+prefix, "--schema.salts=4")
	})
}

func testKill9(t *testing.T, args ...string) {
	const (
		writers  = 4
		batch    = 10
		rounds   = 5
		perRound = 20 // acknowledged batches before the kill
		metric   = "kill_test"
	)
	base := time.Now().Add(-time.Minute).UnixMilli()
	var (
		mu    sync.Mutex
		acked = make([]map[int64]bool, writers) // writer -> acknowledged sequence numbers
		next  = make([]int64, writers)
	)
	for w := range acked {
		acked[w] = map[int64]bool{}
	}
	body := func(w int, first int64) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range int64(batch) {
			if i > 0 {
				b.WriteByte(',')
			}
			seq := first + i
			fmt.Fprintf(&b, `{"metric":%q,"timestamp":%d,"value":%d,"tags":{"writer":"w%d"}}`, metric, base+seq, seq, w)
		}
		b.WriteByte(']')
		return b.String()
	}
	for round := range rounds {
		s := startServe(t, args...)
		s.waitFor(t, "/-/ready", 200)
		ctx, cancel := context.WithCancel(context.Background())
		var batches atomic.Int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					mu.Lock()
					first := next[w]
					next[w] += batch
					mu.Unlock()
					resp, err := http.Post("http://"+s.addr+"/api/put", "application/json", strings.NewReader(body(w, first)))
					if err != nil { // killed: not acknowledged
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 204 {
						mu.Lock()
						for i := range int64(batch) {
							acked[w][first+i] = true
						}
						mu.Unlock()
						batches.Add(1)
					}
				}
			}()
		}
		// Kill once the writers made progress this round.
		for batches.Load() < perRound {
			select {
			case err := <-s.done:
				t.Fatalf("round %d: tsdb exited (%v) before it was killed; log:\n%s", round, err, s.log())
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-s.done
		cancel()
		wg.Wait()
	}

	s := startServe(t, args...)
	s.waitFor(t, "/-/ready", 200)
	stored := storedDatapoints(t, s, metric, base, writers)
	total := 0
	for w := range writers {
		for seq := range acked[w] {
			total++
			if n := stored[w][seq]; n != 1 {
				t.Errorf("writer %d: acknowledged datapoint %d stored %d times", w, seq, n)
			}
		}
	}
	t.Logf("%d rounds of kill -9: %d datapoints acknowledged, all read back once", rounds, total)
	if err := s.stop(t); err != nil {
		t.Errorf("final serve: %v", err)
	}
}

// storedDatapoints reads metric's last hour back from s, once it answers, and
// counts per writer (its series' writer label, w0, w1, ...) how many times each
// datapoint is stored, by sequence number: a writer's datapoint seq has the
// value seq at the timestamp base+seq (ms), and one that does not fails the test.
func storedDatapoints(t *testing.T, s *server, metric string, base int64, writers int) []map[int64]int {
	t.Helper()
	q := url.Values{"query": {metric + "[1h]"}, "time": {strconv.FormatInt(time.Now().Unix()+60, 10)}}
	out := s.waitFor(t, "/api/v1/query?"+q.Encode(), 200)
	var resp struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("read back: %v: %s", err, out[:min(len(out), 500)])
	}
	stored := make([]map[int64]int, writers)
	for w := range stored {
		stored[w] = map[int64]int{}
	}
	for _, r := range resp.Data.Result {
		w, err := strconv.Atoi(strings.TrimPrefix(r.Metric["writer"], "w"))
		if err != nil || w < 0 || w >= writers {
			t.Fatalf("read back: unexpected series %v", r.Metric)
		}
		for _, v := range r.Values {
			ts, _ := v[0].(float64)
			val, _ := v[1].(string)
			seq, err := strconv.ParseInt(val, 10, 64)
			if err != nil || int64(ts*1000+0.5) != base+seq {
				t.Errorf("writer %d: sample %v does not match what was sent (timestamp base+value)", w, v)
			}
			stored[w][seq]++
		}
	}
	return stored
}
