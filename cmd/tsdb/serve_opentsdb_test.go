package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestOpenTSDBEndpointsTakeTheirRoles: OpenTSDB's /api/suggest, /api/aggregators
// and /api/version are read endpoints for --web.read-only-users and
// --web.write-only-users, and a suggest finds what /api/put stored; tsdb serve
// answers /api/version with its own version.
func TestOpenTSDBEndpointsTakeTheirRoles(t *testing.T) {
	s := startRolesServer(t)
	c := http.DefaultClient
	base := "http://" + s.addr
	const writeOnly = "403 Forbidden: this user may only write (--web.write-only-users)\n"
	put := fmt.Sprintf(`{"metric":"otsdb.roles","timestamp":%d,"value":1,"tags":{"host":"web01"}}`, time.Now().Add(-time.Minute).Unix())
	if code, body := do(t, c, "POST", base+"/api/put", "prometheus", "pw-prometheus", put); code != 204 {
		t.Fatalf("write-only user's /api/put: %d %q, want 204", code, body)
	}
	for _, c2 := range []struct{ path, want string }{
		{"/api/suggest?type=metrics&q=otsdb", `["otsdb.roles"]` + "\n"},
		{"/api/suggest?type=tagv&q=web", `["web01"]` + "\n"},
		{"/api/version", `{"short_revision":"` + shortRevision() + `","repo":"github.com/hbtsdb/hbtsdb","host":"","version":"` + version +
			`","full_revision":"` + revision() + `","repo_status":"","user":"hbtsdb","branch":"hbtsdb-` + version + `","timestamp":""}` + "\n"},
	} {
		if code, body := do(t, c, "GET", base+c2.path, "grafana", "pw-grafana", ""); code != 200 || body != c2.want {
			t.Errorf("read-only user's GET %s: %d %q, want 200 %q", c2.path, code, body, c2.want)
		}
	}
	for _, path := range []string{"/api/suggest?type=metrics", "/api/aggregators", "/api/version"} {
		if code, body := do(t, c, "GET", base+path, "prometheus", "pw-prometheus", ""); code != 403 || body != writeOnly {
			t.Errorf("write-only user's GET %s: %d %q, want 403 %q", path, code, body, writeOnly)
		}
	}
}

// shortRevision is /api/version's short_revision: the first 9 characters of the
// revision, as OpenTSDB's.
func shortRevision() string {
	r := revision()
	return r[:min(len(r), 9)]
}
