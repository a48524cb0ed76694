package promapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// Benchmarks of the read endpoints through the real HTTP handler (promapi.NewRouter
// over db.DB, an httptest server, a real HTTP client) on each backend:
//
//	go test -run '^$' -bench 'BenchmarkRemoteRead|BenchmarkLast' -benchtime 5x ./promapi/
//	TSDB_TEST_HBASE_ZK=127.0.0.1:22331 go test -run '^$' -bench 'BenchmarkRemoteRead|BenchmarkLast' -benchtime 5x ./promapi/
//
// BenchmarkRemoteRead: one remote-read request for 1 000 series x 2 h at a 15 s
// interval (481 samples each, 481 000 in all), answered as SAMPLES (one
// snappy-compressed ReadResponse) and as STREAMED_XOR_CHUNKS (frames); the client
// only counts the bytes. It reports ms/request, the response size, and the
// process' memory for the request: peak-heap-MB is the highest heap in use
// (runtime/metrics, sampled every millisecond while the request runs) above the
// heap in use before it; alloc-MB/op is everything allocated. BenchmarkLast:
// GET /api/v1/last?host=web1&metric=bench_last&n=5 on a series with 30 days of
// one-minute data (720 rows of 1 h), reporting the rows read from the data table
// per request.

const (
	readSeries   = 1000
	readInterval = 15 * time.Second
	readSpan     = 2 * time.Hour
)

// readEnv is a db.DB on a fresh store and tsdb's HTTP surface over it.
type readEnv struct {
	db    *db.DB
	store *rowCounter
	url   string
}

func newReadEnv(b *testing.B, be schematest.Backend) *readEnv {
	b.Helper()
	st := &rowCounter{Store: be.Store(b)}
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: be.Settings, Write: write.Options{Limits: write.DefaultLimits()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	h, err := promapi.NewRouter(promapi.Options{DB: promapi.StaticDB(d)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return &readEnv{db: d, store: st, url: srv.URL}
}

func (e *readEnv) write(b *testing.B, req *write.Request) {
	b.Helper()
	res, err := e.db.Write(context.Background(), req)
	if err != nil {
		b.Fatalf("load: %v", err)
	}
	if err := write.RejectionError(res); err != nil {
		b.Fatalf("load: %v", err)
	}
}

func BenchmarkRemoteRead(b *testing.B) {
	for _, be := range schematest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			if !be.Available() {
				b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
			}
			e := newReadEnv(b, be)
			end := time.Now().Truncate(time.Minute)
			start := end.Add(-readSpan)
			n := int(readSpan/readInterval) + 1
			began := time.Now()
			var req write.Request
			for i := range readSeries {
				s := write.Series{Labels: labels.FromStrings("__name__", "bench_read", "instance", fmt.Sprintf("host-%04d:9100", i), "job", "node")}
				for k := range n {
					s.Samples = append(s.Samples, cellenc.Sample{T: start.Add(time.Duration(k) * readInterval).UnixMilli(), V: float64(i*n + k)})
				}
				req.Series = append(req.Series, s)
				if len(req.Series) == 100 || i == readSeries-1 {
					e.write(b, &req)
					req.Series = req.Series[:0]
				}
			}
			load := time.Since(began)
			body := readRequest(b, start.UnixMilli(), end.UnixMilli())
			for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
				b.Run(typ.String(), func(b *testing.B) {
					benchRemoteRead(b, e.url+"/api/v1/read", body, typ, n)
					b.ReportMetric(load.Seconds(), "load-s")
				})
			}
		})
	}
}

// readRequest is a snappy-compressed remote-read request for every bench_read
// series in [mint, maxt]; the response type is set per benchmark.
func readRequest(b *testing.B, mint, maxt int64) prompb.ReadRequest {
	b.Helper()
	return prompb.ReadRequest{Queries: []*prompb.Query{{
		StartTimestampMs: mint,
		EndTimestampMs:   maxt,
		Matchers:         []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "bench_read"}},
	}}}
}

func benchRemoteRead(b *testing.B, url string, req prompb.ReadRequest, typ prompb.ReadRequest_ResponseType, perSeries int) {
	req.AcceptedResponseTypes = []prompb.ReadRequest_ResponseType{typ}
	raw, err := req.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	body := snappy.Encode(nil, raw)
	post := func(sink io.Writer) int64 {
		hreq, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		hreq.Header.Set("Content-Encoding", "snappy")
		hreq.Header.Set("Content-Type", "application/x-protobuf")
		hreq.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
		resp, err := http.DefaultClient.Do(hreq)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			b.Fatalf("remote read %s: %s: %s", typ, resp.Status, msg)
		}
		n, err := io.Copy(sink, resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}

	// Once, untimed: the answer holds every series and sample.
	var whole bytes.Buffer
	post(&whole)
	series, samples := countReadResponse(b, whole.Bytes(), typ)
	if series != readSeries || samples != readSeries*perSeries {
		b.Fatalf("remote read %s: %d series, %d samples; want %d, %d", typ, series, samples, readSeries, readSeries*perSeries)
	}

	var peak, alloc, size int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		before := heapInUse()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		allocBefore := ms.TotalAlloc
		sampler := startHeapSampler()
		b.StartTimer()
		size = post(io.Discard)
		b.StopTimer()
		peak = max(peak, sampler.stop()-before)
		runtime.ReadMemStats(&ms)
		alloc += int64(ms.TotalAlloc - allocBefore)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/request")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(alloc)/float64(b.N)/(1<<20), "alloc-MB/op")
	b.ReportMetric(float64(size)/(1<<20), "response-MB")
	b.ReportMetric(float64(samples), "samples")
}

// countReadResponse decodes a remote-read answer and counts its series and
// samples (a streamed series split over frames counts once).
func countReadResponse(b *testing.B, body []byte, typ prompb.ReadRequest_ResponseType) (series, samples int) {
	b.Helper()
	if typ == prompb.ReadRequest_SAMPLES {
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			b.Fatal(err)
		}
		var rr prompb.ReadResponse
		if err := rr.Unmarshal(raw); err != nil {
			b.Fatal(err)
		}
		for _, ts := range rr.Results[0].Timeseries {
			series++
			samples += len(ts.Samples)
		}
		return series, samples
	}
	r := bytes.NewReader(body)
	var last labels.Labels
	for r.Len() > 0 {
		size, err := binaryUvarint(r)
		if err != nil {
			b.Fatal(err)
		}
		msg := make([]byte, size)
		if _, err := r.Seek(4, io.SeekCurrent); err != nil { // the CRC, checked by e2e/
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, msg); err != nil {
			b.Fatal(err)
		}
		var cr prompb.ChunkedReadResponse
		if err := cr.Unmarshal(msg); err != nil {
			b.Fatal(err)
		}
		for _, cs := range cr.ChunkedSeries {
			b2 := labels.NewScratchBuilder(len(cs.Labels))
			for _, l := range cs.Labels {
				b2.Add(l.Name, l.Value)
			}
			b2.Sort()
			if cur := b2.Labels(); !labels.Equal(cur, last) {
				series++
				last = cur
			}
			for _, c := range cs.Chunks {
				// An XOR chunk starts with its sample count, 2 bytes big-endian.
				samples += int(c.Data[0])<<8 | int(c.Data[1])
			}
		}
	}
	return series, samples
}

// binaryUvarint reads a uvarint.
func binaryUvarint(r io.ByteReader) (uint64, error) {
	var x uint64
	var s uint
	for i := 0; ; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c < 0x80 {
			if i > 9 || i == 9 && c > 1 {
				return 0, fmt.Errorf("uvarint overflows 64 bits")
			}
			return x | uint64(c)<<s, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
}

// heapInUse is the bytes of heap objects in use (runtime/metrics: cheap, no
// stop-the-world).
func heapInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapSampler records the highest heapInUse seen every millisecond until stop.
type heapSampler struct {
	peak atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{done: make(chan struct{})}
	h.peak.Store(heapInUse())
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-tick.C:
				if v := heapInUse(); v > h.peak.Load() {
					h.peak.Store(v)
				}
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak.
func (h *heapSampler) stop() int64 {
	close(h.done)
	h.wg.Wait()
	if v := heapInUse(); v > h.peak.Load() {
		h.peak.Store(v)
	}
	return h.peak.Load()
}

func BenchmarkLast(b *testing.B) {
	for _, be := range schematest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			if !be.Available() {
				b.Skip("no HBase: set TSDB_TEST_HBASE_ZK")
			}
			e := newReadEnv(b, be)
			end := time.Now().Truncate(time.Minute)
			const days, every = 30, time.Minute
			n := days * 24 * 60
			began := time.Now()
			lbls := labels.FromStrings("__name__", "bench_last", "host", "web1", "job", "node")
			// Two other series of the same host and metric, and the same metric on
			// other hosts, so that the read must pick its series.
			others := []labels.Labels{
				labels.FromStrings("__name__", "bench_last", "host", "web1", "job", "other"),
				labels.FromStrings("__name__", "bench_last", "host", "web2", "job", "node"),
			}
			const perRequest = 20_000
			for k0 := 0; k0 < n; k0 += perRequest {
				req := write.Request{}
				for _, ls := range append([]labels.Labels{lbls}, others...) {
					s := write.Series{Labels: ls}
					for k := k0; k < min(k0+perRequest, n); k++ {
						s.Samples = append(s.Samples, cellenc.Sample{T: end.Add(-time.Duration(n-1-k) * every).UnixMilli(), V: float64(k)})
					}
					req.Series = append(req.Series, s)
				}
				e.write(b, &req)
			}
			load := time.Since(began)
			url := e.url + "/api/v1/last?host=web1&metric=bench_last&n=5&match[]=" + `{job="node"}`
			get := func() []byte {
				resp, err := http.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET /api/v1/last: %s %v: %s", resp.Status, err, body)
				}
				return body
			}
			var ans struct {
				Data []struct {
					Metric map[string]string `json:"metric"`
					Values [][2]any          `json:"values"`
				} `json:"data"`
			}
			if err := json.Unmarshal(get(), &ans); err != nil {
				b.Fatal(err)
			}
			if len(ans.Data) != 1 || len(ans.Data[0].Values) != 5 || ans.Data[0].Values[0][1] != fmt.Sprint(n-1) || ans.Data[0].Values[4][1] != fmt.Sprint(n-5) {
				b.Fatalf("/api/v1/last = %+v, want one series with values %d..%d newest first", ans.Data, n-1, n-5)
			}
			b.Run("n=5", func(b *testing.B) {
				e.store.reset()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					get()
				}
				b.StopTimer()
				rows := e.store.rows(schema.TableData)
				b.ReportMetric(float64(rows)/float64(b.N), "data-rows-read/op")
				b.ReportMetric(float64(e.store.rows(""))/float64(b.N), "rows-read/op")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/request")
				b.ReportMetric(float64(n), "samples-stored")
				b.ReportMetric(load.Seconds(), "load-s")
			})
		})
	}
}

// rowCounter is a real store that counts the rows its reads return, per table:
// Get, GetRows and Scan.
type rowCounter struct {
	kv.Store
	mu     sync.Mutex
	byTbl  map[string]int
	allCnt int
}

func (c *rowCounter) add(table string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byTbl == nil {
		c.byTbl = map[string]int{}
	}
	c.byTbl[table] += n
	c.allCnt += n
}

// rows returns the rows read from table since the last reset ("" for all tables).
func (c *rowCounter) rows(table string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if table == "" {
		return c.allCnt
	}
	return c.byTbl[table]
}

func (c *rowCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byTbl, c.allCnt = nil, 0
}

func (c *rowCounter) Get(ctx context.Context, table string, row []byte, opts ...kv.ReadOption) (kv.Row, error) {
	r, err := c.Store.Get(ctx, table, row, opts...)
	if err == nil && len(r.Cells) > 0 {
		c.add(table, 1)
	}
	return r, err
}

func (c *rowCounter) GetRows(ctx context.Context, table string, rows [][]byte, opts ...kv.ReadOption) ([]kv.Row, error) {
	rs, err := c.Store.GetRows(ctx, table, rows, opts...)
	n := 0
	for _, r := range rs {
		if len(r.Cells) > 0 {
			n++
		}
	}
	c.add(table, n)
	return rs, err
}

func (c *rowCounter) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	return &countingScanner{Scanner: c.Store.Scan(ctx, table, start, stop, opts...), count: func() { c.add(table, 1) }}
}

type countingScanner struct {
	kv.Scanner
	count func()
}

func (s *countingScanner) Next() bool {
	ok := s.Scanner.Next()
	if ok {
		s.count()
	}
	return ok
}
