package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/pkitest"
)

// The two remote-write queues of the TLS run: one with the write-only user's
// password, one with a wrong one. Each matches its queue's metric lines only
// (`remote_name="tsdb"` is not a prefix of the other's label).
const (
	queueRight = `remote_name="tsdb"`
	queueWrong = `remote_name="tsdb-wrong-password"`
)

// tlsMinSamples is how many samples each queue must have tried to send before
// the cut-off is taken: a few scrapes of Prometheus' own metrics.
const tlsMinSamples = 300

// TestTLSRemoteWrite runs a real Prometheus against `tsdb serve` with a web
// config file: TLS with a certificate of a CA made here, basic auth with bcrypt
// hashes, a write-only user for remote write and a read-only user for queries.
// Prometheus remote-writes through two queues, configured as an operator would
// (basic_auth with password_file, tls_config with ca_file): the right password's
// samples must all arrive, the wrong password's must all be refused (401) and
// none stored. A second Prometheus then remote-reads everything back over TLS
// as the read-only user.
func TestTLSRemoteWrite(t *testing.T) {
	promBin := prometheusBinary(t)
	for _, st := range []struct {
		name string
		new  func(*testing.T) store
	}{
		{"embedded", embeddedStore},
		{"hbase", hbaseStore},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			runTLS(t, promBin, st.new(t))
		})
	}
}

func runTLS(t *testing.T, promBin string, st store) {
	ctx := context.Background()
	began := time.Now()
	dir := t.TempDir()
	pki := pkitest.New(t)
	caFile, pool := pki.CAFile, pki.Pool
	writerPW, readerPW := randomPassword(t), randomPassword(t)
	webConfig := writeFile(t, dir, "web.yml", "tls_server_config:\n"+
		"  cert_file: "+pki.ServerCert+"\n  key_file: "+pki.ServerKey+"\n"+
		"basic_auth_users:\n"+
		"  prometheus: "+pkitest.BcryptHash(t, writerPW)+"\n"+
		"  grafana: "+pkitest.BcryptHash(t, readerPW)+"\n")
	writerFile := writeFile(t, dir, "prometheus.password", writerPW)
	wrongFile := writeFile(t, dir, "wrong.password", writerPW+"-wrong")
	readerFile := writeFile(t, dir, "grafana.password", readerPW)

	tsdb := startTSDBWeb(t, dir, st, tsdbWeb{
		args: []string{"--web.config.file=" + webConfig,
			"--web.write-only-users=prometheus", "--web.read-only-users=grafana"},
		https: true,
		client: &http.Client{Timeout: stallTimeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
		user: "grafana", password: readerPW,
	})
	tg := startTarget(t)
	ps := startPrometheus(t, promBin, dir, promConfig{
		targetAddr:    tg.hostPort(),
		writeURL:      tsdb.writeURL(),
		protobufMsg:   protoV1,
		runLabel:      t.Name(),
		scrapeEvery:   time.Second,
		batchDeadline: time.Second,
		client:        clientYAML("prometheus", writerFile, caFile),
		// The wrong password's queue labels what it sends, so that anything of
		// it in tsdb is told apart from the right queue's copy.
		extraRemoteWrite: fmt.Sprintf(`  - name: tsdb-wrong-password
    url: %q
    remote_timeout: 30s
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 2s
    write_relabel_configs:
      - target_label: e2e_queue
        replacement: wrong-password
`, tsdb.writeURL()) + clientYAML("prometheus", wrongFile, caFile),
	})
	t.Logf("tsdb at %s (%s), Prometheus at %s", tsdb.baseURL(), st.name, ps.url)

	// Let both queues try a few scrapes' worth, and let scraping run long
	// enough that the cut-off (cutoffMargin before now) follows a few scrapes.
	// Scraping begins seconds after Prometheus is ready (its discovery hands
	// out targets every 5s), so this is measured on the timestamps it sends:
	// firstSent is the highest sent timestamp (s) of the first batch seen.
	var firstSent float64
	type tried struct{ right, wrong float64 }
	var got tried
	err := waitForProgress("both remote-write queues to try a few scrapes", 250*time.Millisecond, func() (tried, bool, error) {
		tsdb.alive(t)
		ps.alive(t)
		// A poll that gets no answer in time just polls again.
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		right, err := ps.metricsWhere(pctx, queueRight, remoteWriteMetrics...)
		if err != nil {
			return got, false, nil
		}
		wrong, err := ps.metricsWhere(pctx, queueWrong, remoteWriteMetrics...)
		if err != nil {
			return got, false, nil
		}
		got = tried{right["prometheus_remote_storage_samples_total"], wrong["prometheus_remote_storage_samples_total"]}
		highest := right["prometheus_remote_storage_queue_highest_sent_timestamp_seconds"]
		if firstSent == 0 {
			firstSent = highest
		}
		return got, firstSent > 0 && highest >= firstSent+(cutoffMargin+3*time.Second).Seconds() &&
			got.right >= tlsMinSamples && got.wrong >= tlsMinSamples, nil
	})
	if err != nil {
		t.Fatalf("%v; last lines of Prometheus' log:\n%s", err, ps.tail(40))
	}

	cutoff := time.Now().Add(-cutoffMargin).UnixMilli()
	rw := ps.waitSentWhere(t, cutoff+sentBeyondCutoff.Milliseconds(), queueRight)
	wrong, err := ps.metricsWhere(ctx, queueWrong, remoteWriteMetrics...)
	if err != nil {
		t.Fatalf("Prometheus' metrics: %v", err)
	}
	t.Logf("queue with the right password:%s", fmtMetrics(rw))
	t.Logf("queue with a wrong password:%s", fmtMetrics(wrong))
	if rw["prometheus_remote_storage_samples_failed_total"] > 0 || rw["prometheus_remote_storage_samples_dropped_total"] > 0 {
		t.Errorf("the right password's queue failed or dropped samples:%s", fmtMetrics(rw))
	}
	// 401 is not retried (Prometheus retries 5xx and 429 only): every batch
	// the wrong password's queue sent failed at once.
	if wrong["prometheus_remote_storage_samples_failed_total"] < tlsMinSamples ||
		wrong["prometheus_remote_storage_samples_retried_total"] > 0 {
		t.Errorf("the wrong password's queue: want at least %d samples failed and none retried:%s", tlsMinSamples, fmtMetrics(wrong))
	}
	if !ps.out.contains("server returned HTTP status 401 Unauthorized") {
		t.Errorf("Prometheus' log does not show the wrong password refused with 401; last lines:\n%s", ps.tail(40))
	}

	// What Prometheus has up to T, and what tsdb answers the read-only user
	// over HTTPS for the same query.
	windowSec := (cutoff-ps.start.UnixMilli())/1000 + 60
	params := url.Values{
		"query": {fmt.Sprintf(`{__name__=~".+"}[%ds]`, windowSec)},
		"time":  {apiTime(cutoff)},
	}
	want, err := ps.queryMatrix(ctx, "/api/v1/query", params)
	if err != nil {
		t.Fatalf("Prometheus query API: %v", err)
	}
	wantSeries, wantSamples, _ := want.stats()
	if wantSamples < tlsMinSamples {
		t.Fatalf("Prometheus has %d samples in %d series up to T: too few to compare", wantSamples, wantSeries)
	}
	fromTSDB, err := tsdb.queryMatrix(ctx, params)
	if err != nil {
		t.Fatalf("tsdb query API over HTTPS as the read-only user: %v", err)
	}
	if d := compareSets(want, fromTSDB, apiEqual); len(d) > 0 {
		t.Errorf("tsdb's answer over HTTPS differs from Prometheus' in %d places:%s", len(d), summarize(d, 20))
	}
	// Said again on its own, since it is the point: nothing of the wrong
	// password's queue got in, at any time.
	leaked, err := tsdb.queryMatrix(ctx, url.Values{
		"query": {fmt.Sprintf(`{e2e_queue="wrong-password"}[%ds]`, windowSec+60)},
		"time":  {apiTime(time.Now().UnixMilli())},
	})
	if err != nil {
		t.Fatalf("tsdb query API: %v", err)
	}
	if len(leaked) > 0 {
		t.Errorf("tsdb stored %d series sent with a wrong password, such as %s", len(leaked), leaked.sortedKeys()[0])
	}

	// Remote read over TLS: a Prometheus with no data of its own reads
	// everything from tsdb as the read-only user.
	readerDir := filepath.Join(dir, "reader")
	if err := os.Mkdir(readerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	reader := startPrometheus(t, promBin, readerDir, promConfig{
		readURL: tsdb.baseURL() + "/api/v1/read",
		client:  clientYAML("grafana", readerFile, caFile),
	})
	viaRead, err := reader.queryMatrix(ctx, "/api/v1/query", params)
	if err != nil {
		t.Fatalf("Prometheus remote-reading from tsdb over HTTPS: %v", err)
	}
	if d := compareSets(want, viaRead, apiEqual); len(d) > 0 {
		t.Errorf("Prometheus remote-reading from tsdb over HTTPS differs from the writing Prometheus in %d places:%s", len(d), summarize(d, 20))
	}
	gotSeries, gotSamples, _ := fromTSDB.stats()
	readSeries, readSamples, _ := viaRead.stats()
	t.Logf("up to T=%s: Prometheus %d series / %d samples; tsdb over HTTPS %d / %d; remote read over HTTPS %d / %d",
		fmtTime(cutoff), wantSeries, wantSamples, gotSeries, gotSamples, readSeries, readSamples)

	if err := reader.stop(); err != nil {
		t.Errorf("stop the reading Prometheus: %v", err)
	}
	if err := ps.stop(); err != nil {
		t.Errorf("stop Prometheus: %v", err)
	}
	ps.checkNoLoss(t)
	tsdb.stopAndCheck(t)
	t.Logf("run took %s", time.Since(began).Round(time.Second))
}

// queryMatrix runs an instant query whose result is a matrix on tsdb, with the
// test's credentials (tsdbWeb).
func (s *tsdbServer) queryMatrix(ctx context.Context, params url.Values) (seriesSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL()+"/api/v1/query", strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	code, body, err := s.do(req)
	if err != nil {
		return nil, fmt.Errorf("POST /api/v1/query: %w", err)
	}
	return parseMatrixResponse(body, fmt.Sprint(code))
}

// clientYAML is a remote_write or remote_read entry's client settings, as an
// operator writes them: basic auth with a password file, the CA to trust.
func clientYAML(user, passwordFile, caFile string) string {
	return fmt.Sprintf(`    basic_auth:
      username: %q
      password_file: %q
    tls_config:
      ca_file: %q
`, user, passwordFile, caFile)
}

// writeFile writes content to dir/name, readable by its owner only (it may be
// a key or a password), and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// randomPassword is a password no other run shares.
func randomPassword(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}
