package promapi

// Pure HTTP tests of the write endpoints: status mapping, headers, the concurrency
// bound and decoding. They use a scripted Writer, which stands in for the store
// only where the store's behaviour is the input (a store that fails, or that
// blocks). Every endpoint is also tested end to end against the real write
// pipeline on both backends in write_test.go; the decoders themselves are tested
// and fuzzed in package wire.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/write"
)

// scriptedWriter answers every Write with err, or with a Result counting every
// sample as written; block, if set, holds each Write until it is closed.
type scriptedWriter struct {
	err   error
	block chan struct{}
	calls atomic.Int32
	mu    sync.Mutex
	last  *write.Request
}

func (w *scriptedWriter) Write(ctx context.Context, req *write.Request) (write.Result, error) {
	w.calls.Add(1)
	w.mu.Lock()
	w.last = req
	w.mu.Unlock()
	if w.block != nil {
		<-w.block
	}
	if w.err != nil {
		return write.Result{}, w.err
	}
	res := write.Result{SeriesWritten: len(req.Series)}
	for _, s := range req.Series {
		res.SamplesWritten += len(s.Samples)
	}
	return res, nil
}

func TestStatusOfEveryErrorClass(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 204},
		{fmt.Errorf("%w: x", write.ErrInvalid), 400},
		{fmt.Errorf("%w: x", errInvalidBody), 400},
		{errEmptyBody, 400},
		{bodyTimeout{fmt.Errorf("%w: x", errInvalidBody)}, 408},
		{errNoStore, 503},
		{fmt.Errorf("%w: opening", errStoreUnavailable), 503},
		{fmt.Errorf("put: %w", kv.ErrInvalidArgument), 400},
		{fmt.Errorf("%w: x", errUnsupportedMedia), 415},
		{fmt.Errorf("%w: x", errContentTooLarge), 413},
		{fmt.Errorf("%w: x", errOverloaded), 429},
		{fmt.Errorf("hbase: %w", kv.ErrUnavailable), 503},
		{fmt.Errorf("apply: %w", kv.ErrClosed), 503},
		{fmt.Errorf("scan: %w", context.DeadlineExceeded), 503},
		{fmt.Errorf("apply: %w", context.Canceled), 499},
		{fmt.Errorf("apply: %w", kv.ErrTableNotFound), 500},
		{errors.New("something broke"), 500},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func okV1(t testing.TB) []byte {
	return marshalV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		v1Series(labels.FromStrings("__name__", "up", "job", "a"), prompb.Sample{Timestamp: time.Now().UnixMilli(), Value: 1}),
	}})
}

func okV2(t testing.TB) []byte {
	return marshalV2(t, v2Request(v2In{labels: labels.FromStrings("__name__", "up", "job", "a"),
		samples: []writev2.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}}}))
}

func TestStoreFailureIsRetriableAndAcknowledgesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"store unavailable", fmt.Errorf("hbase: region server down: %w", kv.ErrUnavailable), 503},
		{"store closed", fmt.Errorf("embedded: %w", kv.ErrClosed), 503},
		{"table dropped", fmt.Errorf("apply data: %w", kv.ErrTableNotFound), 500},
		{"request rejected whole", fmt.Errorf("%w: 3 series is over the limit of 2 series per request", write.ErrInvalid), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(writeRouter(t, &scriptedWriter{err: tc.err}, WriteLimits{}, nil))
			defer srv.Close()
			r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV2), okV2(t))
			if r.status != tc.status || r.body != tc.err.Error()+"\n" {
				t.Errorf("v2: %d %q, want %d %q", r.status, r.body, tc.status, tc.err.Error())
			}
			if got := r.header.Get(headerSamplesWritten); got != "0" {
				t.Errorf("v2 %s = %q, want 0: nothing is acknowledged", headerSamplesWritten, got)
			}
			r = post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t))
			if r.status != tc.status || r.body != tc.err.Error()+"\n" {
				t.Errorf("v1: %d %q, want %d", r.status, r.body, tc.status)
			}
			if got := r.header.Get(headerSamplesWritten); got != "" {
				t.Errorf("v1 response has %s = %q; 1.0 has no such header", headerSamplesWritten, got)
			}
			r = post(t, srv.URL+"/api/put", nil, []byte(`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`))
			msg := strings.TrimPrefix(tc.err.Error(), write.ErrInvalid.Error()+": ")
			want := fmt.Sprintf(`{"error":{"code":%d,"message":%q}}`+"\n", tc.status, msg)
			if r.status != tc.status || r.body != want {
				t.Errorf("/api/put: %d %s, want %d %s", r.status, r.body, tc.status, want)
			}
		})
	}
}

func TestNoStoreYetIs503(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store Provider
		msg   string
	}{
		{"no store configured", nil, "store unavailable: no store is configured"},
		{"store not open yet", func() (DB, error) { return nil, errors.New("opening the store") }, "store unavailable: opening the store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewRouter(Options{DB: tc.store})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			if r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t)); r.status != 503 || r.body != tc.msg+"\n" {
				t.Errorf("1.0: %d %q, want 503 %q", r.status, r.body, tc.msg)
			}
			if r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV2), okV2(t)); r.status != 503 || r.body != tc.msg+"\n" ||
				r.header.Get(headerSamplesWritten) != "0" {
				t.Errorf("2.0: %d %q, Samples-Written %q; want 503 %q and 0", r.status, r.body, r.header.Get(headerSamplesWritten), tc.msg)
			}
			want := fmt.Sprintf(`{"error":{"code":503,"message":%q}}`+"\n", tc.msg)
			if r := post(t, srv.URL+"/api/put", nil, []byte(`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`)); r.status != 503 || r.body != want {
				t.Errorf("/api/put: %d %s, want 503 %s", r.status, r.body, want)
			}
			// A body that can never succeed is the client's fault, store or not.
			if r := post(t, srv.URL+"/api/put", nil, []byte(`[]`)); r.status != 400 {
				t.Errorf("/api/put of nothing without a store: %d %s, want 400", r.status, r.body)
			}
		})
	}
}

// countingBody records whether a handler read the request body to its end.
type countingBody struct {
	io.Reader
	read atomic.Bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		b.read.Store(true)
	}
	return n, err
}
func (b *countingBody) Close() error { return nil }

// TestConcurrencyLimitAnswers429OnceTheBodyHasArrived: the slot is taken only
// once the whole body is read (a slow sender holds none), and a request over
// the bound is answered 429 with Retry-After before it is decoded.
func TestConcurrencyLimitAnswers429OnceTheBodyHasArrived(t *testing.T) {
	w := &scriptedWriter{block: make(chan struct{})}
	h := writeRouter(t, w, WriteLimits{MaxConcurrentRequests: 2, RetryAfter: 3 * time.Second}, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()

	var wg sync.WaitGroup
	results := make(chan response, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t))
		}()
	}
	for w.calls.Load() < 2 { // both requests are inside the writer
		time.Sleep(time.Millisecond)
	}
	for _, path := range []string{"/api/v1/write", "/api/put"} {
		body := &countingBody{Reader: strings.NewReader("never read")}
		req := httptest.NewRequest(http.MethodPost, path, body)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "3" {
			t.Errorf("%s over the limit: %d Retry-After %q, want 429 and 3", path, rec.Code, rec.Header().Get("Retry-After"))
		}
		if !strings.Contains(rec.Body.String(), "more than 2 write requests in flight (--write.max-concurrent-requests)") {
			t.Errorf("%s over the limit: body %q", path, rec.Body.String())
		}
		if !body.read.Load() {
			t.Errorf("%s over the limit was answered before its body had arrived", path)
		}
	}
	close(w.block)
	wg.Wait()
	close(results)
	for r := range results {
		if r.status != 204 {
			t.Errorf("request within the limit: %d %q", r.status, r.body)
		}
	}
	// The slots are free again.
	if r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), okV1(t)); r.status != 204 {
		t.Errorf("after the burst: %d %q", r.status, r.body)
	}
}

// panickingWriter is a bug in the layers below.
type panickingWriter struct{}

func (panickingWriter) Write(context.Context, *write.Request) (write.Result, error) {
	panic("index out of range")
}

func TestPanicInTheWritePathIs500(t *testing.T) {
	srv := httptest.NewServer(writeRouter(t, panickingWriter{}, WriteLimits{}, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		body []byte
		hdr  map[string]string
	}{
		{"/api/v1/write", okV1(t), remoteHeaders(ctV1)},
		{"/api/put", []byte(`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`), nil},
	} {
		if r := post(t, srv.URL+tc.path, tc.hdr, tc.body); r.status != 500 || r.body != "internal server error\n" {
			t.Errorf("%s with a panicking writer: %d %q", tc.path, r.status, r.body)
		}
	}
}

func TestV2HeadersCountWhatWasWritten(t *testing.T) {
	srv := httptest.NewServer(writeRouter(t, &scriptedWriter{}, WriteLimits{}, nil))
	defer srv.Close()
	now := time.Now().UnixMilli()
	body := marshalV2(t, v2Request(
		v2In{labels: labels.FromStrings("__name__", "a"), samples: []writev2.Sample{{Timestamp: now, Value: 1}, {Timestamp: now + 1, Value: 2}}},
		v2In{labels: labels.FromStrings("__name__", "b"), samples: []writev2.Sample{{Timestamp: now, Value: 1}}},
	))
	r := post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV2), body)
	if r.status != 204 || r.header.Get(headerSamplesWritten) != "3" || r.header.Get(headerHistogramsWritten) != "0" ||
		r.header.Get(headerExemplarsWritten) != "0" {
		t.Fatalf("v2 write: %d %q headers %v", r.status, r.body, r.header)
	}
}

func TestWriteLimitsValidate(t *testing.T) {
	if err := (WriteLimits{}).Validate(); err != nil {
		t.Errorf("zero limits (the defaults): %v", err)
	}
	if err := DefaultWriteLimits().Validate(); err != nil {
		t.Errorf("the default limits: %v", err)
	}
	err := WriteLimits{MaxBodyBytes: -1, MaxConcurrentRequests: 3, RetryAfter: -time.Second}.Validate()
	want := "promapi: WriteLimits.MaxBodyBytes must not be negative (0 takes the default), got -1\n" +
		"promapi: WriteLimits.RetryAfter must not be negative (0 takes the default), got -1s"
	if err == nil || err.Error() != want {
		t.Errorf("negative limits: %v, want %q", err, want)
	}
}
