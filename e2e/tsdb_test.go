package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/backend"
	"github.com/hbtsdb/hbtsdb/testing/hbasestore"
	"github.com/hbtsdb/hbtsdb/testing/hbasetest"
)

// store is where one run's tsdb keeps its data: the serve flags that select it and
// how the test opens it afterwards.
type store struct {
	name string
	// flags are the tsdb serve flags that select the store.
	flags []string
	// open opens the store in-process once tsdb has stopped.
	open func(ctx context.Context) (kv.Store, error)
}

// keepStores reports whether a failed test keeps its store for a post-mortem
// (EnvKeep=1): the embedded directory, the HBase tables.
func keepStores() bool { return os.Getenv(EnvKeep) == "1" }

// embeddedStore is a fresh embedded store in a directory of the test's own.
func embeddedStore(t *testing.T) store {
	dir := filepath.Join(t.TempDir(), "store")
	if keepStores() {
		tmp, err := os.MkdirTemp("", "hbtsdb-e2e-store-")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(tmp, "store")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s=1: kept the embedded store in %s", EnvKeep, dir)
				return
			}
			os.RemoveAll(tmp)
		})
	}
	addr := backend.Address{Kind: backend.Embedded, Dir: dir}
	return store{
		name:  "embedded",
		flags: []string{"--storage=" + addr.String()},
		open: func(ctx context.Context) (kv.Store, error) {
			return backend.Open(ctx, addr, backend.Options{})
		},
	}
}

// hbaseStore is a table prefix of the test's own on the test HBase; its tables are
// dropped when the test ends.
func hbaseStore(t *testing.T) store {
	zk := hbasetest.ZooKeeper(t)
	prefix := hbasetest.UniquePrefix("e2e")
	t.Cleanup(func() {
		if keepStores() && t.Failed() {
			t.Logf("%s=1: kept the HBase tables %s* at ZooKeeper %s", EnvKeep, prefix, zk)
			return
		}
		hbasestore.DropPrefix(t, zk, prefix)
	})
	addr := backend.Address{Kind: backend.HBase, Quorum: zk}
	return store{
		name:  "hbase",
		flags: []string{"--storage=" + addr.String(), "--hbase.table-prefix=" + prefix},
		open: func(ctx context.Context) (kv.Store, error) {
			return backend.Open(ctx, addr, backend.Options{HBaseTablePrefix: prefix})
		},
	}
}

// tsdbWeb is how a test reaches a `tsdb serve` with a --web.config.file. The
// zero value is plain HTTP without authentication.
type tsdbWeb struct {
	// args are the --web.* flags.
	args []string
	// https: tsdb serves TLS; client must trust its certificate.
	https  bool
	client *http.Client
	// user and password are the basic-auth credentials of the test's own
	// requests (readiness, queries): a user that may read.
	user, password string
}

// tsdbServer is a running `tsdb serve`; it is a receiver.
type tsdbServer struct {
	*process
	addr  string // host:port it listens on
	web   tsdbWeb
	store store
	// canceledOK: errors of requests whose client went away ("context
	// canceled") are expected, because a proxy aborts requests on purpose.
	canceledOK bool
}

func (s *tsdbServer) writeURL() string { return s.baseURL() + "/api/v1/write" }

// baseURL is http://host:port, or https:// when tsdb serves TLS.
func (s *tsdbServer) baseURL() string {
	if s.web.https {
		return "https://" + s.addr
	}
	return "http://" + s.addr
}

// do sends req to tsdb with the test's credentials (tsdbWeb) and returns the
// status and body.
func (s *tsdbServer) do(req *http.Request) (int, []byte, error) {
	c := httpClient
	if s.web.client != nil {
		c = s.web.client
	}
	if s.web.user != "" {
		req.SetBasicAuth(s.web.user, s.web.password)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read the answer: %w", req.Method, req.URL.Path, err)
	}
	return resp.StatusCode, body, nil
}

// readBack reads what tsdb stored, in-process, once it has stopped.
func (s *tsdbServer) readBack(ctx context.Context, mint, maxt int64, families []string) (seriesSet, map[string]metadata, error) {
	return readBack(ctx, s.store, mint, maxt, families)
}

// startTSDB starts `tsdb serve` on a free loopback port and waits until it is ready.
func startTSDB(t *testing.T, dir string, st store) *tsdbServer {
	t.Helper()
	return startTSDBWeb(t, dir, st, tsdbWeb{})
}

// startTSDBWeb is startTSDB with web's flags, reached as web says.
func startTSDBWeb(t *testing.T, dir string, st store, web tsdbWeb) *tsdbServer {
	t.Helper()
	bin := tsdbBinary(t)
	args := append([]string{"serve", "--listen=127.0.0.1:0", "--log.format=json", "--log.level=info"}, st.flags...)
	args = append(args, web.args...)
	p := startProcess(t, "tsdb", dir, bin, args...)
	var addr string
	p.waitForLine(t, `"listening" log line`, func(line string) bool {
		var rec struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "listening" {
			return false
		}
		addr = rec.Address
		return true
	})
	s := &tsdbServer{process: p, addr: addr, web: web, store: st}
	// Creating the tables (pre-split on HBase) can take a while on a loaded machine:
	// waitReady waits as long as tsdb runs and logs (stallTimeout).
	if web.args == nil {
		p.waitReady(t, "http://"+addr+"/-/ready")
		return s
	}
	var last string
	err := p.waitUntil(p.name+" to be ready at "+s.baseURL(), 200*time.Millisecond, func() (bool, error) {
		// A poll that gets no answer in time just polls again.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.baseURL()+"/-/ready", nil)
		if err != nil {
			return false, err
		}
		code, body, err := s.do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d: %s", code, bytes.TrimSpace(body))
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("%v (last answer: %s); last lines of its log:\n%s", err, last, p.tail(40))
	}
	return s
}

// checkWriteEndpoint posts an empty remote-write 1.0 request: a tsdb that serves
// /api/v1/write accepts it (2xx) and stores nothing.
func (s *tsdbServer) checkWriteEndpoint(t *testing.T) {
	t.Helper()
	code, body, err := postRemoteWrite(context.Background(), "http://"+s.addr+"/api/v1/write", &prompb.WriteRequest{})
	switch {
	case err != nil:
		t.Fatal(err)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		t.Fatalf("tsdb serve does not serve POST /api/v1/write (%d %s): the remote-write receiver is not wired into promapi/cmd yet", code, http.StatusText(code))
	case code/100 != 2:
		t.Fatalf("POST /api/v1/write with an empty remote-write 1.0 request: %d %s: %s", code, http.StatusText(code), bytes.TrimSpace(body))
	}
}

// postRemoteWrite posts wr to url as Prometheus sends remote write 1.0 (protobuf,
// snappy-compressed, the 1.0 headers) and returns the answer's status and body.
func postRemoteWrite(ctx context.Context, url string, wr *prompb.WriteRequest) (int, []byte, error) {
	raw, err := wr.Marshal()
	if err != nil {
		return 0, nil, fmt.Errorf("encode a remote-write request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: read the answer: %w", url, err)
	}
	return resp.StatusCode, body, nil
}

// metricsAddr returns the address to scrape tsdb's own metrics at, or "" when tsdb
// does not serve /metrics. The request has httpClient's timeout (stallTimeout), not a
// short one: a slow answer must not pass for a tsdb without /metrics.
func (s *tsdbServer) metricsAddr() string {
	body, err := httpGet(context.Background(), "http://"+s.addr+"/metrics")
	if err != nil || !strings.Contains(string(body), "# TYPE") {
		return ""
	}
	return s.addr
}

// stopAndCheck stops tsdb with SIGTERM and fails the test if it did not exit
// cleanly or if the race detector reported a data race in it.
func (s *tsdbServer) stopAndCheck(t *testing.T) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Errorf("stop tsdb: %v; last lines of its log:\n%s", err, s.tail(40))
	}
	if s.out.contains("WARNING: DATA RACE") {
		t.Errorf("the race detector found a data race in tsdb serve; see its log %s:\n%s", s.logPath, s.tail(80))
	}
	if errs := s.errorLines(); len(errs) > 0 {
		t.Errorf("tsdb logged %d errors:\n  %s", len(errs), strings.Join(errs[:min(len(errs), 10)], "\n  "))
	}
}

// errorLines returns tsdb's ERROR log lines, without those of requests whose client
// went away when that is expected.
func (s *tsdbServer) errorLines() []string {
	var errs []string
	for _, l := range s.out.lines() {
		if !strings.Contains(l, `"level":"ERROR"`) {
			continue
		}
		if s.canceledOK && strings.Contains(l, "context canceled") {
			continue
		}
		errs = append(errs, l)
	}
	return errs
}
