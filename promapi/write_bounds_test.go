package promapi

// Tests of the write path's memory and slot bounds: slow senders hold
// no concurrency slot, bodies have a read deadline, the bytes of bodies in flight
// are bounded, Content-Length is never allocated up front and a snappy block's
// length claim is checked against what the block can hold.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
)

// waitDeadline bounds every wait on progress in these tests; none of them
// measures time, so it is generous.
const waitDeadline = 30 * time.Second

// bodyWatch wraps every request's body, counting the bytes the handlers have
// read, so that a test can wait until a slow sender's bytes are in the server.
type bodyWatch struct {
	mu   sync.Mutex
	read map[string]int // by RemoteAddr
}

type watchedBody struct {
	io.ReadCloser
	w    *bodyWatch
	addr string
}

func (b watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.mu.Lock()
	b.w.read[b.addr] += n
	b.w.mu.Unlock()
	return n, err
}

func (w *bodyWatch) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.Body = watchedBody{ReadCloser: r.Body, w: w, addr: r.RemoteAddr}
		next.ServeHTTP(rw, r)
	})
}

// waitRead waits until the handler of the request from each of conns has read
// at least n bytes of its body.
func (w *bodyWatch) waitRead(t *testing.T, conns []net.Conn, n int) {
	t.Helper()
	until := time.Now().Add(waitDeadline)
	for {
		w.mu.Lock()
		done := 0
		for _, c := range conns {
			if w.read[c.LocalAddr().String()] >= n {
				done++
			}
		}
		w.mu.Unlock()
		if done == len(conns) {
			return
		}
		if time.Now().After(until) {
			t.Fatalf("after %v, %d of %d slow requests had %d body bytes read", waitDeadline, done, len(conns), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchedServer serves the write router with limits, behind a bodyWatch.
func watchedServer(t *testing.T, limits WriteLimits) (*httptest.Server, *bodyWatch) {
	t.Helper()
	watch := &bodyWatch{read: map[string]int{}}
	srv := httptest.NewServer(watch.wrap(writeRouter(t, &scriptedWriter{}, limits, nil)))
	t.Cleanup(srv.Close)
	return srv, watch
}

// slowSend opens a connection, sends a request's headers announcing
// contentLength bytes and the first bytes of body, and leaves the rest unsent.
func slowSend(t *testing.T, srv *httptest.Server, path string, contentLength int, body []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hdr := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: tsdb\r\nContent-Type: %s\r\nContent-Encoding: snappy\r\n"+
		"Content-Length: %d\r\n\r\n", path, ctV1, contentLength)
	if path == "/api/put" {
		hdr = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: tsdb\r\nContent-Length: %d\r\n\r\n", path, contentLength)
	}
	if _, err := c.Write(append([]byte(hdr), body...)); err != nil {
		t.Fatal(err)
	}
	return c
}

// readResponse reads the answer on a connection of slowSend.
func readResponse(t *testing.T, c net.Conn) response {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitDeadline)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", waitDeadline, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: string(b), header: resp.Header}
}

const okPut = `{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`

// TestSlowSendersHoldNoSlot: senders that announce a body and trickle it hold
// no concurrency slot while it arrives, so real writes are served meanwhile
// (before, every slot was held and every write was a 429).
func TestSlowSendersHoldNoSlot(t *testing.T) {
	srv, watch := watchedServer(t, WriteLimits{MaxConcurrentRequests: 2})
	conns := []net.Conn{
		slowSend(t, srv, "/api/v1/write", 1<<20, []byte("x")),
		slowSend(t, srv, "/api/put", 1<<20, []byte("[")),
	}
	watch.waitRead(t, conns, 1)
	if r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t)); r.status != 204 {
		t.Errorf("remote write while 2 slow senders trickle: %d %q Retry-After %q, want 204", r.status, r.body, r.header.Get("Retry-After"))
	}
	if r := post(t, srv.URL+"/api/put", nil, []byte(okPut)); r.status != 204 {
		t.Errorf("/api/put while 2 slow senders trickle: %d %q, want 204", r.status, r.body)
	}
}

// TestBodyReadTimeout: a body that does not arrive within BodyReadTimeout is
// answered 408 naming the flag, on both endpoints.
func TestBodyReadTimeout(t *testing.T) {
	srv, _ := watchedServer(t, WriteLimits{BodyReadTimeout: 100 * time.Millisecond})
	for _, tc := range []struct {
		path string
		want string
	}{
		{"/api/v1/write", "invalid write request: request body not received within 100ms (--write.body-read-timeout); 1 bytes arrived\n"},
		{"/api/put", `{"error":{"code":408,"message":"request body not received within 100ms (--write.body-read-timeout); 1 bytes arrived"}}` + "\n"},
	} {
		c := slowSend(t, srv, tc.path, 1000, []byte("x"))
		if r := readResponse(t, c); r.status != 408 || r.body != tc.want {
			t.Errorf("%s with a body that stops: %d %q, want 408 %q", tc.path, r.status, r.body, tc.want)
		}
	}
	// Bodies that arrive in time are served, on the same server.
	if r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t)); r.status != 204 {
		t.Errorf("remote write after the timeouts: %d %q", r.status, r.body)
	}
}

// TestInflightBytesAnswer429WithRetryAfter: bytes of bodies held across
// requests are bounded by MaxInflightBytes; a request whose bytes do not fit is
// a 429 with Retry-After, and the bytes are given back when a request ends.
func TestInflightBytesAnswer429WithRetryAfter(t *testing.T) {
	limits := WriteLimits{MaxBodyBytes: 1000, MaxDecompressedBytes: 1000, MaxInflightBytes: 2000, RetryAfter: 2 * time.Second}
	srv, watch := watchedServer(t, limits)
	conns := []net.Conn{
		slowSend(t, srv, "/api/v1/write", 1000, bytes.Repeat([]byte("x"), 990)),
		slowSend(t, srv, "/api/put", 1000, bytes.Repeat([]byte(" "), 990)),
	}
	watch.waitRead(t, conns, 990)

	for _, tc := range []struct {
		path string
		hdr  map[string]string
		body []byte
		want string
	}{
		{"/api/v1/write", remoteHeaders(ctV1), okV1(t),
			"overloaded: more than 2000 bytes of write request bodies in flight (--write.max-inflight-bytes); retry later\n"},
		{"/api/put", nil, []byte(okPut),
			`{"error":{"code":429,"message":"overloaded: more than 2000 bytes of write request bodies in flight (--write.max-inflight-bytes); retry later"}}` + "\n"},
	} {
		// The slow senders' last bytes are reserved just after the server read
		// them: wait for the 429 rather than expect it at once.
		r := waitStatus(t, srv.URL+tc.path, tc.hdr, tc.body, 429)
		if r.body != tc.want || r.header.Get("Retry-After") != "2" {
			t.Errorf("%s over the in-flight bytes: %d %q Retry-After %q, want 429 %q and 2", tc.path, r.status, r.body,
				r.header.Get("Retry-After"), tc.want)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	waitStatus(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t), 204)
}

// waitStatus posts until the answer has status want, within waitDeadline.
func waitStatus(t *testing.T, url string, hdr map[string]string, body []byte, want int) response {
	t.Helper()
	until := time.Now().Add(waitDeadline)
	for {
		r := post(t, url, hdr, body)
		if r.status == want {
			return r
		}
		if time.Now().After(until) {
			t.Fatalf("POST %s: still %d %q after %v, want %d", url, r.status, r.body, waitDeadline, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allocatedBy is how many bytes f allocated on the heap (runtime.MemStats'
// TotalAlloc). Tests running at once add to it, so it is compared with bounds
// far from what is measured.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestContentLengthIsNotAllocatedUpFront: a body announcing 256 MiB (within
// the limit) and sending 10 bytes costs kilobytes, not the 256 MiB announced.
func TestContentLengthIsNotAllocatedUpFront(t *testing.T) {
	const announced = 256 << 20
	h := writeRouter(t, &scriptedWriter{}, WriteLimits{MaxBodyBytes: announced, MaxInflightBytes: 2 * announced}, nil)
	for _, tc := range []struct {
		path string
		hdr  map[string]string
		want string
	}{
		{"/api/v1/write", remoteHeaders(ctV1), "invalid write request: body is not snappy block-compressed: snappy: corrupt input\n"},
		{"/api/put", nil, `{"error":{"code":400,"message":"Unable to parse the given JSON: content starts with 'x', not with an object or an array"}}` + "\n"},
	} {
		req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader("xxxxxxxxxx"))
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		req.ContentLength = announced
		rec := httptest.NewRecorder()
		n := allocatedBy(func() { h.ServeHTTP(rec, req) })
		if rec.Code != 400 || rec.Body.String() != tc.want {
			t.Errorf("%s: %d %q, want 400 %q", tc.path, rec.Code, rec.Body.String(), tc.want)
		}
		if n > 32<<20 {
			t.Errorf("%s: a 10-byte body announcing %d bytes allocated %d bytes", tc.path, announced, n)
		}
	}
}

// TestSnappyLengthClaimIsCheckedBeforeAllocating: an 8-byte body whose header
// claims 63 MiB (under the 64 MiB limit) is a 400 naming the claim and the
// limit, and allocates nothing of that size.
func TestSnappyLengthClaimIsCheckedBeforeAllocating(t *testing.T) {
	h := writeRouter(t, &scriptedWriter{}, WriteLimits{}, nil)
	body := binary.AppendUvarint(nil, 63<<20)
	body = append(body, 0x00, 'a', 0x00, 'b') // two 1-byte literals
	if len(body) != 8 {
		t.Fatalf("the body is %d bytes", len(body))
	}
	want := "invalid write request: snappy block of 8 bytes claims a decoded length of 66060288 bytes, more than the 85 " +
		"bytes a block of that size can hold (the limit is 67108864 bytes, --write.max-decompressed-bytes)\n"
	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
		for k, v := range remoteHeaders(ctV1) {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		n := allocatedBy(func() { h.ServeHTTP(rec, req) })
		if rec.Code != 400 || rec.Body.String() != want {
			t.Errorf("8 bytes claiming 63 MiB: %d %q, want 400 %q", rec.Code, rec.Body.String(), want)
		}
		if n > 16<<20 {
			t.Errorf("8 bytes claiming 63 MiB allocated %d bytes", n)
		}
	}
}

// TestSnappyBoundHoldsForTheDensestBlocks: what snappy's own encoder makes of
// the most compressible inputs is never refused by the length-claim check.
func TestSnappyBoundHoldsForTheDensestBlocks(t *testing.T) {
	h := newWriteHandler(Options{WriteLimits: WriteLimits{MaxInflightBytes: 1 << 30}})
	for _, in := range [][]byte{
		make([]byte, 1<<20),
		bytes.Repeat([]byte("ab"), 1<<19),
		bytes.Repeat([]byte("0123456789"), 100_000),
		{},
		{1},
	} {
		enc := snappy.Encode(nil, in)
		res := &reservation{budget: h.bytes}
		var dst []byte
		out, err := h.decodeSnappy(&dst, enc, res)
		if err != nil || !bytes.Equal(out, in) {
			t.Errorf("%d bytes encoded in %d: %v", len(in), len(enc), err)
		}
		if res.held != int64(len(in)) {
			t.Errorf("%d bytes decoded reserved %d", len(in), res.held)
		}
		res.release()
	}
	if got := h.bytes.inUse(); got != 0 {
		t.Errorf("%d bytes still reserved after every request released", got)
	}
}

// TestReadGrowingReservesWhatArrives: the buffer grows with what arrives, and
// every byte is reserved before it is kept.
func TestReadGrowingReservesWhatArrives(t *testing.T) {
	budget := &byteBudget{max: 1 << 20, what: "write request bodies", flag: "--write.max-inflight-bytes"}
	res := &reservation{budget: budget}
	in := bytes.Repeat([]byte("z"), 200_000)
	out, over, err := readGrowing(bytes.NewReader(in), nil, 1<<20, 16<<20, res)
	if err != nil || over || !bytes.Equal(out, in) {
		t.Fatalf("read %d of %d bytes, over %v: %v", len(out), len(in), over, err)
	}
	if cap(out) > 2*len(in)+initialBodyBuffer {
		t.Errorf("a %d-byte body announcing 16 MiB took a %d-byte buffer", len(in), cap(out))
	}
	if budget.inUse() != int64(len(in)) {
		t.Errorf("reserved %d bytes for %d", budget.inUse(), len(in))
	}
	// Exactly as announced: no buffer past it.
	res2 := &reservation{budget: budget}
	out, over, err = readGrowing(bytes.NewReader(in), nil, 1<<20, int64(len(in)), res2)
	if err != nil || over || len(out) != len(in) || cap(out) > len(in)+len(in)/8 {
		t.Errorf("a body as long as announced: %d bytes in a %d-byte buffer, over %v: %v", len(out), cap(out), over, err)
	}
	// Over the budget.
	res3 := &reservation{budget: budget}
	_, _, err = readGrowing(bytes.NewReader(make([]byte, 1<<20)), nil, 2<<20, 0, res3)
	want := "overloaded: more than 1048576 bytes of write request bodies in flight " +
		"(--write.max-inflight-bytes); retry later"
	if err == nil || err.Error() != want {
		t.Errorf("over the budget: %v, want %q", err, want)
	}
	if res3.held > 1<<20-2*int64(len(in)) {
		t.Errorf("the request over the budget holds %d bytes", res3.held)
	}
	res.release()
	res2.release()
	res3.release()
	if got := budget.inUse(); got != 0 {
		t.Errorf("%d bytes still reserved after every request released", got)
	}
}

func TestWriteLimitsValidateInflightBytes(t *testing.T) {
	err := WriteLimits{MaxBodyBytes: 1000, MaxDecompressedBytes: 2000, MaxInflightBytes: 2999}.Validate()
	want := "promapi: WriteLimits.MaxInflightBytes (2999) must be at least promapi: WriteLimits.MaxBodyBytes + " +
		"promapi: WriteLimits.MaxDecompressedBytes (1000 + 2000 = 3000), or a request of the largest size could never be served"
	if err == nil || err.Error() != want {
		t.Errorf("in-flight bytes below one request: %v, want %q", err, want)
	}
	if err := (WriteLimits{MaxBodyBytes: 1000, MaxDecompressedBytes: 2000, MaxInflightBytes: 3000}).Validate(); err != nil {
		t.Errorf("in-flight bytes of one request: %v", err)
	}
	err = WriteLimits{BodyReadTimeout: -time.Second, MaxInflightBytes: -1}.Validate()
	want = "promapi: WriteLimits.MaxInflightBytes must not be negative (0 takes the default), got -1\n" +
		"promapi: WriteLimits.BodyReadTimeout must not be negative (0 takes the default), got -1s"
	if err == nil || err.Error() != want {
		t.Errorf("negative: %v, want %q", err, want)
	}
}
