package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/hbtsdb/hbtsdb/testing/pkitest"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
)

func writeWebConfig(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// do sends one request and returns its status and body; user "" sends no
// credentials. An error (no answer at all) fails the test.
func do(t *testing.T, c *http.Client, method, rawURL, user, pass, body string) (int, string) {
	t.Helper()
	code, text, err := try(c, method, rawURL, user, pass, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	return code, text
}

func try(c *http.Client, method, rawURL, user, pass, body string) (int, string, error) {
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// now is a sample time the store accepts (within the raw retention), in seconds.
var now = time.Now().Unix()

var putBody = fmt.Sprintf(`{"metric":"sys.cpu.user","timestamp":%d,"value":1,"tags":{"host":"a"}}`, now)

func TestServeBasicAuth(t *testing.T) {
	dir := t.TempDir()
	cfg := writeWebConfig(t, filepath.Join(dir, "web.yml"), "basic_auth_users:\n"+
		"  alice: "+pkitest.BcryptHash(t, "s3cret-alice")+"\n"+
		"  bob: "+pkitest.BcryptHash(t, "s3cret-bob")+"\n")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--web.config.file="+cfg, "--web.read-only-users=bob")
	s.waitLog(t, `msg="store ready"`)
	c := http.DefaultClient
	base := "http://" + s.addr
	buildinfo := base + "/api/v1/status/buildinfo"

	if code, _ := do(t, c, "GET", buildinfo, "", "", ""); code != 401 {
		t.Errorf("no credentials: %d, want 401", code)
	}
	if code, _ := do(t, c, "GET", buildinfo, "alice", "wrong", ""); code != 401 {
		t.Errorf("wrong password: %d, want 401", code)
	}
	if code, _ := do(t, c, "GET", buildinfo, "mallory", "s3cret-alice", ""); code != 401 {
		t.Errorf("unknown user: %d, want 401", code)
	}
	if code, _ := do(t, c, "POST", base+"/api/put", "alice", "wrong", putBody); code != 401 {
		t.Errorf("put with a wrong password: %d, want 401", code)
	}
	if code, body := do(t, c, "GET", buildinfo, "alice", "s3cret-alice", ""); code != 200 || !strings.Contains(body, `"status":"success"`) {
		t.Errorf("right password: %d %q, want 200", code, body)
	}
	if code, body := do(t, c, "POST", base+"/api/put", "alice", "s3cret-alice", putBody); code != 204 {
		t.Errorf("put with the right password: %d %q, want 204", code, body)
	}

	// A read-only user reads, and cannot write.
	if code, body := do(t, c, "GET", base+"/api/v1/query?query="+url.QueryEscape(`{__name__="sys.cpu.user"}`)+fmt.Sprintf("&time=%d", now), "bob", "s3cret-bob", ""); code != 200 ||
		!strings.Contains(body, `"host":"a"`) {
		t.Errorf("read-only user's query: %d %q, want 200 with the series alice wrote", code, body)
	}
	for _, path := range []string{"/api/put", "/api/v1/write", "/api/v1/admin/tsdb/delete_series"} {
		if code, body := do(t, c, "POST", base+path, "bob", "s3cret-bob", putBody); code != 403 {
			t.Errorf("read-only user's POST %s: %d %q, want 403", path, code, body)
		}
	}
	if code, _ := do(t, c, "POST", base+"/api/put", "bob", "wrong", putBody); code != 401 {
		t.Errorf("read-only user with a wrong password: %d, want 401 before any 403", code)
	}

	// The file is read on every request: a new password applies without a restart.
	writeWebConfig(t, cfg, "basic_auth_users:\n  alice: "+pkitest.BcryptHash(t, "s3cret-new")+"\n")
	if code, _ := do(t, c, "GET", buildinfo, "alice", "s3cret-alice", ""); code != 401 {
		t.Errorf("old password after the change: %d, want 401", code)
	}
	if code, _ := do(t, c, "GET", buildinfo, "alice", "s3cret-new", ""); code != 200 {
		t.Errorf("new password after the change: %d, want 200", code)
	}
	if log := s.log(); strings.Contains(log, "s3cret-alice") || strings.Contains(log, "s3cret-new") || strings.Contains(log, "sys.cpu") {
		t.Errorf("the log holds a password or a body:\n%s", log)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

func TestServeTLS(t *testing.T) {
	p := pkitest.New(t)
	cfg := writeWebConfig(t, filepath.Join(p.Dir, "web.yml"), "tls_server_config:\n"+
		"  cert_file: server.pem\n  key_file: server-key.pem\n"+ // relative to the file, as in Prometheus
		"basic_auth_users:\n  alice: "+pkitest.BcryptHash(t, "s3cret-alice")+"\n")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--web.config.file="+cfg)
	s.waitLog(t, `msg="store ready"`)
	s.waitLog(t, `msg="TLS is enabled."`)

	// Plain HTTP to the TLS listener is not served: Go's TLS server answers the
	// plain request 400 and closes the connection.
	if code, body := do(t, http.DefaultClient, "GET", "http://"+s.addr+"/-/ready", "alice", "s3cret-alice", ""); code != 400 ||
		!strings.Contains(body, "Client sent an HTTP request to an HTTPS server") {
		t.Errorf("plain HTTP to the TLS listener: %d %q, want 400 refusing it", code, body)
	}
	// A client that does not trust the CA does not get through the handshake.
	if _, _, err := try(&http.Client{}, "GET", "https://"+s.addr+"/-/ready", "alice", "s3cret-alice", ""); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("HTTPS without trusting the CA: %v, want a certificate error", err)
	}
	c := p.Client(false)
	if code, body := do(t, c, "GET", "https://"+s.addr+"/-/ready", "alice", "s3cret-alice", ""); code != 200 {
		t.Errorf("HTTPS trusting the CA: %d %q, want 200", code, body)
	}
	if code, _ := do(t, c, "GET", "https://"+s.addr+"/-/ready", "alice", "wrong", ""); code != 401 {
		t.Errorf("HTTPS with a wrong password: %d, want 401", code)
	}
	if code, body := do(t, c, "POST", "https://"+s.addr+"/api/put", "alice", "s3cret-alice", putBody); code != 204 {
		t.Errorf("put over HTTPS: %d %q, want 204", code, body)
	}

	// Prometheus' own remote-write client, configured as remote_write's
	// basic_auth and tls_config are, writes successfully.
	u, err := url.Parse("https://" + s.addr + "/api/v1/write")
	if err != nil {
		t.Fatal(err)
	}
	wc, err := remote.NewWriteClient("tsdb", &remote.ClientConfig{
		URL:     &config_util.URL{URL: u},
		Timeout: model.Duration(time.Minute),
		HTTPClientConfig: config_util.HTTPClientConfig{
			BasicAuth: &config_util.BasicAuth{Username: "alice", Password: "s3cret-alice"},
			TLSConfig: config_util.TLSConfig{CAFile: p.CAFile},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "tls"}},
		Samples: []prompb.Sample{{Timestamp: now * 1000, Value: 1}},
	}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Store(context.Background(), snappy.Encode(nil, raw), 0); err != nil {
		t.Errorf("Prometheus' remote-write client with basic_auth and tls_config: %v", err)
	}
	if code, body := do(t, c, "GET", "https://"+s.addr+fmt.Sprintf("/api/v1/query?query=up&time=%d", now), "alice", "s3cret-alice", ""); code != 200 ||
		!strings.Contains(body, `"job":"tls"`) {
		t.Errorf("the remote-written sample: %d %q", code, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

func TestServeClientCertificates(t *testing.T) {
	p := pkitest.New(t)
	cfg := writeWebConfig(t, filepath.Join(p.Dir, "web.yml"), "tls_server_config:\n"+
		"  cert_file: "+p.ServerCert+"\n  key_file: "+p.ServerKey+"\n"+
		"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: "+p.CAFile+"\n")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--web.config.file="+cfg)
	s.waitLog(t, `msg="store ready"`)
	s.waitLog(t, `msg="TLS is enabled."`)
	ready := "https://" + s.addr + "/-/ready"
	if code, body, err := try(p.Client(false), "GET", ready, "", "", ""); err == nil {
		t.Errorf("HTTPS without a client certificate: %d %q, want the handshake to fail", code, body)
	}
	// A certificate the CA did not sign (the server's own CA trusts only its CA).
	other := pkitest.New(t)
	if code, body, err := try(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: p.Pool, Certificates: []tls.Certificate{other.ClientPair}}}}, "GET", ready, "", "", ""); err == nil {
		t.Errorf("HTTPS with a client certificate of another CA: %d %q, want the handshake to fail", code, body)
	}
	if code, body := do(t, p.Client(true), "GET", ready, "", "", ""); code != 200 {
		t.Errorf("HTTPS with a client certificate: %d %q, want 200", code, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

func TestServeRefusesBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yml")
	badYAML := writeWebConfig(t, filepath.Join(dir, "bad.yml"), "basic_auth_users: [unclosed\n")
	unknownKey := writeWebConfig(t, filepath.Join(dir, "unknown.yml"), "basic_auth_user:\n  alice: x\n")
	notBcrypt := writeWebConfig(t, filepath.Join(dir, "plain.yml"), "basic_auth_users:\n  alice: plaintext\n")
	noCert := writeWebConfig(t, filepath.Join(dir, "nocert.yml"), "tls_server_config:\n  cert_file: nope.pem\n  key_file: nope-key.pem\n")
	users := writeWebConfig(t, filepath.Join(dir, "users.yml"), "basic_auth_users:\n  alice: "+pkitest.BcryptHash(t, "x")+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--web.config.file=" + missing}, "--web.config.file " + missing + ": "},
		{[]string{"--web.config.file=" + badYAML}, "--web.config.file " + badYAML + ": yaml"},
		{[]string{"--web.config.file=" + unknownKey}, "--web.config.file " + unknownKey + ": yaml"},
		{[]string{"--web.config.file=" + notBcrypt}, "--web.config.file " + notBcrypt + ": "},
		{[]string{"--web.config.file=" + noCert}, "--web.config.file " + noCert + ": "},
		{[]string{"--web.read-only-users=bob"}, "--web.read-only-users needs --web.config.file"},
		{[]string{"--web.config.file=" + users, "--web.read-only-users=alice,bob"},
			`--web.read-only-users: user "bob" is not in the basic_auth_users of --web.config.file ` + users},
		{[]string{"--web.write-only-users=prometheus"}, "--web.write-only-users needs --web.config.file"},
		{[]string{"--web.config.file=" + users, "--web.write-only-users=alice", "--web.write-only-users=bob"},
			`--web.write-only-users: user "bob" is not in the basic_auth_users of --web.config.file ` + users},
		{[]string{"--web.config.file=" + users, "--web.read-only-users=alice", "--web.write-only-users=alice"},
			`user "alice" is in both --web.read-only-users and --web.write-only-users: a user who may read and write belongs in neither`},
	} {
		storeDir := t.TempDir()
		s := startServe(t, append([]string{"--storage=embedded:" + storeDir}, tc.args...)...)
		if err := s.waitExit(t); err == nil || !strings.Contains(s.log(), tc.want) {
			t.Errorf("serve %v exited with %v; want a failure with %q; log:\n%s", tc.args, err, tc.want, s.log())
		}
		if strings.Contains(s.log(), "listening") {
			t.Errorf("serve %v listened before refusing its web config:\n%s", tc.args, s.log())
		}
	}
}

func TestReadEndpoint(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/query": true, "/api/v1/query_range": true, "/api/v1/read": true, "/api/v1/label/job/values": true,
		"/api/v1/status/buildinfo": true, "/-/ready": true, "/api/v1/last": true,
		"/api/v1/write": false, "/api/put": false, "/api/v1/admin/tsdb/snapshot": false, "/api/v1/label/job/x": false,
		"/api/v1/label//values": false, "/api/v1/status/a/b": false, "/api/v1/query/../write": false,
		"/": true, "/assets/app-ABC.js": true, "/assets/": false, "/assets/a/b.js": false, "/index.html": false,
	} {
		if got := readEndpoint(path); got != want {
			t.Errorf("readEndpoint(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestWriteEndpoint(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/write": true, "/api/put": true, "/-/healthy": true, "/-/ready": true,
		"/api/v1/read": false, "/api/v1/query": false, "/api/v1/write/": false, "/api/put/x": false,
		"/api/v1/admin/tsdb/delete_series": false, "/debug/pprof/": false, "/": false, "/assets/app-ABC.js": false,
	} {
		if got := writeEndpoint(path); got != want {
			t.Errorf("writeEndpoint(%q) = %v, want %v", path, got, want)
		}
	}
}

// startRolesServer starts tsdb serve behind basic auth with three users: admin
// (unrestricted, password pw-admin), prometheus (write-only, pw-prometheus) and
// grafana (read-only, pw-grafana), and waits until its store is ready.
func startRolesServer(t *testing.T) *server {
	t.Helper()
	cfg := writeWebConfig(t, filepath.Join(t.TempDir(), "web.yml"), "basic_auth_users:\n"+
		"  admin: "+pkitest.BcryptHash(t, "pw-admin")+"\n"+
		"  prometheus: "+pkitest.BcryptHash(t, "pw-prometheus")+"\n"+
		"  grafana: "+pkitest.BcryptHash(t, "pw-grafana")+"\n")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--web.config.file="+cfg,
		"--web.read-only-users=grafana", "--web.write-only-users=prometheus")
	s.waitLog(t, `msg="store ready"`)
	return s
}

// TestWebRoles: with a write-only, a read-only and an unrestricted user on one
// server, each may call exactly its endpoints, and the admin ones (neither
// read nor write) only the unrestricted user.
func TestWebRoles(t *testing.T) {
	s := startRolesServer(t)
	c := http.DefaultClient
	base := "http://" + s.addr
	query := base + "/api/v1/query?query=" + url.QueryEscape(`{__name__="sys.cpu.user"}`) + fmt.Sprintf("&time=%d", now)
	const (
		readOnly  = "403 Forbidden: this user may only read (--web.read-only-users)\n"
		writeOnly = "403 Forbidden: this user may only write (--web.write-only-users)\n"
	)

	// The write-only user writes, with /api/put and with remote write, and
	// may probe health.
	if code, body := do(t, c, "POST", base+"/api/put", "prometheus", "pw-prometheus", putBody); code != 204 {
		t.Errorf("write-only user's put: %d %q, want 204", code, body)
	}
	raw, err := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "sys.cpu.user"}, {Name: "host", Value: "rw"}},
		Samples: []prompb.Sample{{Timestamp: now * 1000, Value: 2}},
	}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	rw, err := http.NewRequest("POST", base+"/api/v1/write", strings.NewReader(string(snappy.Encode(nil, raw))))
	if err != nil {
		t.Fatal(err)
	}
	rw.SetBasicAuth("prometheus", "pw-prometheus")
	rw.Header.Set("Content-Encoding", "snappy")
	rw.Header.Set("Content-Type", "application/x-protobuf")
	rw.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := c.Do(rw)
	if err != nil {
		t.Fatalf("write-only user's remote write: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Errorf("write-only user's remote write: %d, want 204", resp.StatusCode)
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		if code, body := do(t, c, "GET", base+path, "prometheus", "pw-prometheus", ""); code != 200 {
			t.Errorf("write-only user's GET %s: %d %q, want 200", path, code, body)
		}
	}
	// ... and reads nothing: queries, remote read, metadata, status.
	for _, req := range []struct{ method, url string }{
		{"GET", query}, {"POST", base + "/api/v1/read"}, {"GET", base + "/api/v1/labels"},
		{"GET", base + "/api/v1/label/host/values"}, {"GET", base + "/api/v1/status/buildinfo"},
		{"GET", base + "/api/v1/metadata"}, {"POST", base + "/api/v1/last"},
	} {
		if code, body := do(t, c, req.method, req.url, "prometheus", "pw-prometheus", ""); code != 403 || body != writeOnly {
			t.Errorf("write-only user's %s %s: %d %q, want 403 %q", req.method, req.url, code, body, writeOnly)
		}
	}
	// A wrong password is refused by authentication, before any role applies.
	if code, _ := do(t, c, "GET", query, "prometheus", "wrong", ""); code != 401 {
		t.Errorf("write-only user with a wrong password: %d, want 401", code)
	}

	// The read-only user sees both writes and still cannot write.
	if code, body := do(t, c, "GET", query, "grafana", "pw-grafana", ""); code != 200 ||
		!strings.Contains(body, `"host":"a"`) || !strings.Contains(body, `"host":"rw"`) {
		t.Errorf("read-only user's query: %d %q, want 200 with both series the write-only user wrote", code, body)
	}
	for _, path := range []string{"/api/put", "/api/v1/write"} {
		if code, body := do(t, c, "POST", base+path, "grafana", "pw-grafana", putBody); code != 403 || body != readOnly {
			t.Errorf("read-only user's POST %s: %d %q, want 403 %q", path, code, body, readOnly)
		}
	}

	// The unrestricted user does both.
	if code, body := do(t, c, "POST", base+"/api/put", "admin", "pw-admin", putBody); code != 204 {
		t.Errorf("unrestricted user's put: %d %q, want 204", code, body)
	}
	if code, body := do(t, c, "GET", query, "admin", "pw-admin", ""); code != 200 || !strings.Contains(body, `"host":"rw"`) {
		t.Errorf("unrestricted user's query: %d %q, want 200 with the series", code, body)
	}

	// Admin endpoints, neither read nor write, are closed to both roles; for
	// the unrestricted user they pass the role check and reach the router
	// (404 here: this server serves no pprof and no admin API).
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/api/v1/admin/tsdb/snapshot"} {
		if code, body := do(t, c, "GET", base+path, "prometheus", "pw-prometheus", ""); code != 403 || body != writeOnly {
			t.Errorf("write-only user's GET %s: %d %q, want 403 %q", path, code, body, writeOnly)
		}
		if code, body := do(t, c, "GET", base+path, "grafana", "pw-grafana", ""); code != 403 || body != readOnly {
			t.Errorf("read-only user's GET %s: %d %q, want 403 %q", path, code, body, readOnly)
		}
		if code, body := do(t, c, "GET", base+path, "admin", "pw-admin", ""); code != 404 {
			t.Errorf("unrestricted user's GET %s: %d %q, want 404 from the router behind the roles", path, code, body)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}
