package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends a POST to the server and returns its status and body.
func (s *server) post(t *testing.T, path, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeWritesWithTheWriteFlags checks that tsdb serve wires the write
// endpoints to the store and the --write.* flags (and their environment twins)
// to the HTTP limits and the write pipeline's limits.
func TestServeWritesWithTheWriteFlags(t *testing.T) {
	t.Setenv("TSDB_WRITE_MAX_LABEL_VALUE_LENGTH", "8")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--write.max-body-bytes=1KiB",
		"--write.max-series-per-request=2", "--retention.raw=2d")
	s.waitFor(t, "/-/ready", 200)
	now := time.Now().Unix()
	point := func(host string, ts int64) string {
		return fmt.Sprintf(`{"metric":"sys.cpu","timestamp":%d,"value":1,"tags":{"host":%q}}`, ts, host)
	}

	if code, body := s.post(t, "/api/put", point("web01", now), nil); code != 204 {
		t.Fatalf("a valid datapoint: %d %q", code, body)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		inBody     string
	}{
		{"--write.max-body-bytes", strings.Repeat(" ", 2000) + point("a", now), 413, "over the limit of 1024 bytes (--write.max-body-bytes)"},
		{"--write.max-series-per-request", "[" + point("a", now) + "," + point("b", now) + "," + point("c", now) + "]", 400,
			"3 series in the request, over the limit of 2"},
		{"$TSDB_WRITE_MAX_LABEL_VALUE_LENGTH", point("a-very-long-host", now), 400, "over the limit of 8"},
		{"--retention.raw as the max age", point("a", now-3*86400), 400, "older than the max age of 2d"},
	} {
		code, body := s.post(t, "/api/put?details", tc.body, nil)
		if code != tc.code || !strings.Contains(body, tc.inBody) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.name, code, body, tc.code, tc.inBody)
		}
	}
	if code, body := s.post(t, "/api/v1/write", "", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}); code != 400 ||
		body != "invalid write request: empty request body\n" {
		t.Errorf("empty remote write: %d %q", code, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
	if log := s.log(); !strings.Contains(log, `msg="write request rejected"`) {
		t.Errorf("no rejected write request was logged:\n%s", log)
	}
}

func TestServeRefusesUnworkableWriteLimits(t *testing.T) {
	// Each options struct validates itself; serve names the flags, every bad one.
	code, _, stderr := tsdb(t, "serve", "--storage=embedded:"+t.TempDir(), "--write.max-concurrent-requests=-1",
		"--write.max-series-per-request=-2", "--write.max-label-value-length=-3", "--listen=127.0.0.1:0")
	want := "tsdb serve: --write.max-concurrent-requests must not be negative (0 takes the default), got -1\n" +
		"--write.max-series-per-request must not be negative (0 means no limit), got -2\n" +
		"--write.max-label-value-length must not be negative (0 means no limit), got -3\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}

// TestServeBindsTheWriteBodyBounds: --write.body-read-timeout reaches the
// write endpoints, and --write.max-inflight-bytes is refused when one request
// of the largest size could not fit, naming the flags.
func TestServeBindsTheWriteBodyBounds(t *testing.T) {
	code, _, stderr := tsdb(t, "serve", "--storage=embedded:"+t.TempDir(), "--write.max-inflight-bytes=1MiB",
		"--listen=127.0.0.1:0")
	want := "tsdb serve: --write.max-inflight-bytes (1048576) must be at least --write.max-body-bytes + " +
		"--write.max-decompressed-bytes (16777216 + 67108864 = 83886080), or a request of the largest size could never be served\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}

	t.Setenv("TSDB_WRITE_MAX_INFLIGHT_BYTES", "100MiB")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--write.body-read-timeout=200ms")
	s.waitFor(t, "/-/ready", 200)
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /api/v1/write HTTP/1.1\r\nHost: tsdb\r\nContent-Type: application/x-protobuf\r\n" +
		"Content-Encoding: snappy\r\nContent-Length: 1000\r\n\r\nx")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a body that stops: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantBody := "invalid write request: request body not received within 200ms (--write.body-read-timeout); 1 bytes arrived\n"
	if resp.StatusCode != 408 || string(body) != wantBody {
		t.Errorf("a body that stops: %d %q, want 408 %q", resp.StatusCode, body, wantBody)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}
