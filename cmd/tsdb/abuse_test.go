package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// abuseMemoryBound is the peak RSS tsdb serve stays under, whatever a client
// sends, with --query.max-memory=abuseQueryMemory (README, Durability and
// security): the heap the reads may grow to, plus the write path's in-flight
// bytes (--write.max-inflight-bytes, 256 MiB), plus the store's caches and the
// runtime's slack.
const (
	abuseQueryMemory        = 512 << 20
	abuseMemoryBound uint64 = 1536 << 20
)

// TestAbusivePeakRSS runs tsdb serve, built as it is released (without the
// race detector, which multiplies memory), on an embedded store holding a day
// of 100 series at 15 s, and sends it, one after the other, the requests that
// once took it to gigabytes; before each the process's peak RSS is reset
// (/proc/<pid>/clear_refs) and after it the peak (VmHWM) must be under
// abuseMemoryBound:
//   - 64 senders of 8-byte snappy bodies that claim 63 MiB decoded (once 6 GiB);
//   - 64 connections announcing 16 MiB and trickling bytes, while real writes go on (once 1 GiB);
//   - a remote read of 100 copies of {__name__=~".+"} (the per-request sample limit; once 8 GiB at 1 000 copies);
//   - three concurrent max_over_time(m[1d:1ms]) subqueries (once 6 GiB);
//   - overload: 320 senders of 5 000-sample remote writes at once, five times the write slots.
//
// It prints the peaks; the README's bound is the one asserted here.
func TestAbusivePeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tsdb and loads it for a minute or two; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "tsdb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s := startServeBinary(t, bin, nil, "--storage=embedded:"+filepath.Join(t.TempDir(), "data"),
		"--query.max-memory="+strconv.Itoa(abuseQueryMemory>>20)+"MiB")
	s.waitFor(t, "/-/ready", 200)
	pid := s.cmd.Process.Pid
	base := loadDay(t, s.addr)

	peaks := map[string]uint64{}
	measure := func(name string, abuse func()) {
		t.Helper()
		testenv.ResetPeakRSS(t, pid) // fails under make test where it cannot
		abuse()
		peak, err := procStatusBytes(pid, "VmHWM")
		if err != nil {
			t.Fatal(err)
		}
		peaks[name] = peak
		t.Logf("%-28s peak RSS %4d MiB", name, peak>>20)
		if peak > abuseMemoryBound {
			t.Errorf("%s: peak RSS %d MiB, over the bound of %d MiB", name, peak>>20, abuseMemoryBound>>20)
		}
	}

	measure("snappy length claims", func() {
		claim := append(binary.AppendUvarint(nil, 63<<20), 0, 0, 0, 0)
		parallel(64, func(int) {
			for range 20 {
				if code, body := postBody(s.addr, "/api/v1/write", claim, remoteWriteHeaders); code != 400 {
					t.Errorf("snappy claim: %d %s, want 400", code, body)
					return
				}
			}
		})
	})
	measure("slow senders", func() {
		var conns []net.Conn
		for range 64 {
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			fmt.Fprintf(c, "POST /api/v1/write HTTP/1.1\r\nHost: tsdb\r\nContent-Type: application/x-protobuf\r\n"+
				"Content-Encoding: snappy\r\nContent-Length: %d\r\n\r\nx", 16<<20)
		}
		// Real writes while the slow ones hold their connections.
		for i := range 20 {
			body := remoteWriteBody(base+int64(i)*1000+500, 0, 100)
			if code, msg := postBody(s.addr, "/api/v1/write", body, remoteWriteHeaders); code != 204 {
				t.Errorf("a write beside 64 slow senders: %d %s", code, msg)
			}
		}
		for _, c := range conns {
			c.Close()
		}
	})
	measure("remote read, 100 selectors", func() {
		req := &prompb.ReadRequest{}
		for range 100 {
			req.Queries = append(req.Queries, &prompb.Query{StartTimestampMs: base - 86400_000, EndTimestampMs: base,
				Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: ".+"}}})
		}
		raw, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		code, body := postBody(s.addr, "/api/v1/read", snappy.Encode(nil, raw),
			map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"})
		// Over the sample limit (100 × 576 000 samples), or cancelled by the
		// memory guard first: refused either way, and bounded.
		if code != 400 && code != 503 {
			t.Errorf("remote read of 100 copies: %d %.200s, want 400 or 503", code, body)
		}
	})
	measure("3 subqueries at 1 ms", func() {
		parallel(3, func(int) {
			q := url.Values{"query": {"max_over_time(abuse_metric[1d:1ms])"}, "time": {strconv.FormatInt(base/1000, 10)}}
			code, body := s.get("/api/v1/query?" + q.Encode())
			if code != 503 && code != 422 {
				t.Errorf("a 1 ms subquery over a day: %d %.300s, want 503 (memory) or 422 (samples)", code, body)
			}
		})
	})
	measure("overload, 320 senders", func() {
		// Five times as many senders as --write.max-concurrent-requests (64)
		// lets in at once, each with requests of 5 000 samples.
		var mu sync.Mutex
		codes := map[int]int{}
		parallel(320, func(w int) {
			for i := range 2 {
				body := remoteWriteBody(base+int64(w*2+i)*10+7, 0, 5000)
				code, _ := postBody(s.addr, "/api/v1/write", body, remoteWriteHeaders)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
		for code := range codes {
			if code != 204 && code != 429 && code != 503 {
				t.Errorf("under overload: status %d (%d times), want 204, or 429/503 to retry", code, codes[code])
			}
		}
		t.Logf("overload answers: %v", codes)
	})
	if err := s.stop(t); err != nil {
		t.Errorf("serve after the abuse: %v", err)
	}
}

// remoteWriteHeaders are a remote-write 1.0 request's.
var remoteWriteHeaders = map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
	"X-Prometheus-Remote-Write-Version": "0.1.0"}

// remoteWriteBody is a snappy-compressed remote-write 1.0 request of n series
// abuse_metric{series="first".."first+n-1"}, one sample each at ts (ms).
func remoteWriteBody(ts int64, first, n int) []byte {
	req := &prompb.WriteRequest{}
	for i := first; i < first+n; i++ {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "abuse_metric"}, {Name: "series", Value: strconv.Itoa(i)}},
			Samples: []prompb.Sample{{Timestamp: ts, Value: float64(i)}},
		})
	}
	raw, err := req.Marshal()
	if err != nil {
		panic(err) // a WriteRequest always marshals
	}
	return snappy.Encode(nil, raw)
}

// loadDay writes a day of 100 series at 15 s ending now (rounded down to the
// second) and returns its last timestamp in ms.
func loadDay(t *testing.T, addr string) int64 {
	t.Helper()
	end := time.Now().Truncate(time.Second).UnixMilli()
	const step, series = 15_000, 100
	var reqs [][]byte
	req := &prompb.WriteRequest{}
	for i := range series {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "abuse_metric"},
			{Name: "series", Value: strconv.Itoa(i)}}}
		for at := end - 86400_000 + step; at <= end; at += step {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: at, Value: float64(at / step % 1000)})
		}
		req.Timeseries = append(req.Timeseries, ts)
		if len(req.Timeseries) == 5 {
			raw, err := req.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, snappy.Encode(nil, raw))
			req = &prompb.WriteRequest{}
		}
	}
	for _, body := range reqs {
		if code, msg := postBody(addr, "/api/v1/write", body, remoteWriteHeaders); code != 204 {
			t.Fatalf("loading a day of data: %d %s", code, msg)
		}
	}
	return end
}

// postBody posts body with headers; 0 and the error when there is no answer.
func postBody(addr, path string, body []byte, headers map[string]string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// parallel runs f(0..n-1) at once and waits for them.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// procStatusBytes reads a "kB" field of /proc/<pid>/status (VmRSS, VmHWM) in bytes.
func procStatusBytes(pid int, field string) (uint64, error) {
	kb, err := procKBField(fmt.Sprintf("/proc/%d/status", pid), field)
	return kb * 1024, err
}
