package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestVMEndpointsTakeTheirRoles: VictoriaMetrics' import endpoints are write
// endpoints and its export a read endpoint for --web.write-only-users and
// --web.read-only-users; /health is open to both.
func TestVMEndpointsTakeTheirRoles(t *testing.T) {
	s := startRolesServer(t)
	c := http.DefaultClient
	base := "http://" + s.addr
	ms := time.Now().Add(-time.Minute).UnixMilli()
	line := fmt.Sprintf(`{"metric":{"__name__":"vm_roles","host":"a"},"values":[1.5],"timestamps":[%d]}`, ms)
	const (
		readOnly  = "403 Forbidden: this user may only read (--web.read-only-users)\n"
		writeOnly = "403 Forbidden: this user may only write (--web.write-only-users)\n"
	)
	for _, path := range []string{"/api/v1/import", "/api/v1/import/prometheus"} {
		if code, body := do(t, c, "POST", base+path, "grafana", "pw-grafana", "vm_roles 1\n"); code != 403 || body != readOnly {
			t.Errorf("read-only user's POST %s: %d %q, want 403 %q", path, code, body, readOnly)
		}
	}
	if code, body := do(t, c, "POST", base+"/api/v1/import", "prometheus", "pw-prometheus", line); code != 204 {
		t.Errorf("write-only user's import: %d %q, want 204", code, body)
	}
	if code, body := do(t, c, "POST", base+"/api/v1/import/prometheus?timestamp="+fmt.Sprint(ms+1000), "prometheus", "pw-prometheus",
		"vm_roles{host=\"a\"} 2.5\n"); code != 204 {
		t.Errorf("write-only user's text import: %d %q, want 204", code, body)
	}
	export := base + "/api/v1/export?match[]=vm_roles"
	if code, body := do(t, c, "GET", export, "prometheus", "pw-prometheus", ""); code != 403 || body != writeOnly {
		t.Errorf("write-only user's export: %d %q, want 403 %q", code, body, writeOnly)
	}
	want := fmt.Sprintf(`{"metric":{"__name__":"vm_roles","host":"a"},"values":[1.5,2.5],"timestamps":[%d,%d]}`+"\n", ms, ms+1000)
	if code, body := do(t, c, "GET", export, "grafana", "pw-grafana", ""); code != 200 || body != want {
		t.Errorf("read-only user's export: %d %q, want 200 %q", code, body, want)
	}
	for _, user := range []string{"grafana", "prometheus"} {
		if code, body := do(t, c, "GET", base+"/health", user, "pw-"+user, ""); code != 200 || body != "OK" {
			t.Errorf("%s's GET /health: %d %q, want 200 \"OK\"", user, code, body)
		}
	}
}

// TestServeHelpListsTheExportFlags: the export bounds are flags with their
// defaults in tsdb serve --help.
func TestServeHelpListsTheExportFlags(t *testing.T) {
	code, stdout, stderr := tsdb(t, "serve", "--help")
	out := stdout + stderr
	if code != 0 {
		t.Fatalf("tsdb serve --help: exit %d\n%s", code, out)
	}
	for _, want := range []string{"--export.max-samples-per-line=10000", "--export.max-concurrent=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("tsdb serve --help lacks %q", want)
		}
	}
}

func TestServeRefusesNegativeExportBounds(t *testing.T) {
	code, _, stderr := tsdb(t, "serve", "--storage=embedded:"+t.TempDir(), "--export.max-samples-per-line=-1",
		"--export.max-concurrent=-2", "--listen=127.0.0.1:0")
	want := "tsdb serve: --export.max-samples-per-line must not be negative (0 takes the default), got -1\n" +
		"--export.max-concurrent must not be negative (0 takes the default), got -2\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}
