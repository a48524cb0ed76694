package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tsuidPattern is the tsuid of an /api/query/last answer.
var tsuidPattern = regexp.MustCompile(`"tsuid":"[0-9A-F]{16}"`)

// TestOpenTSDBEndpointsTakeTheirRoles: OpenTSDB's /api/suggest, /api/aggregators,
// /api/version, /api/query/last, /api/search/lookup and /api/config/filters
// are read endpoints for --web.read-only-users and --web.write-only-users, and
// a suggest, a lookup and a last point find what /api/put stored; tsdb serve
// answers /api/version with its own version.
func TestOpenTSDBEndpointsTakeTheirRoles(t *testing.T) {
	s := startRolesServer(t)
	c := http.DefaultClient
	base := "http://" + s.addr
	const writeOnly = "403 Forbidden: this user may only write (--web.write-only-users)\n"
	ts := time.Now().Add(-time.Minute).Unix()
	put := fmt.Sprintf(`{"metric":"otsdb.roles","timestamp":%d,"value":1,"tags":{"host":"web01"}}`, ts)
	if code, body := do(t, c, "POST", base+"/api/put", "prometheus", "pw-prometheus", put); code != 204 {
		t.Fatalf("write-only user's /api/put: %d %q, want 204", code, body)
	}
	for _, c2 := range []struct{ path, want string }{
		{"/api/suggest?type=metrics&q=otsdb", `["otsdb.roles"]` + "\n"},
		{"/api/suggest?type=tagv&q=web", `["web01"]` + "\n"},
		{"/api/version", `{"short_revision":"` + shortRevision() + `","repo":"github.com/hbtsdb/hbtsdb","host":"","version":"` + version +
			`","full_revision":"` + revision() + `","repo_status":"","user":"hbtsdb","branch":"hbtsdb-` + version + `","timestamp":""}` + "\n"},
		{"/api/query/last?timeseries=otsdb.roles%7Bhost%3Dweb01%7D&back_scan=1",
			fmt.Sprintf(`[{"timestamp":%d000,"value":"1","tsuid":"%s"}]`, ts, "")},
	} {
		code, body := do(t, c, "GET", base+c2.path, "grafana", "pw-grafana", "")
		if strings.HasPrefix(c2.path, "/api/query/last") {
			body = tsuidPattern.ReplaceAllString(body, `"tsuid":""`) // the series ID is the registry's
		}
		if code != 200 || body != c2.want {
			t.Errorf("read-only user's GET %s: %d %q, want 200 %q", c2.path, code, body, c2.want)
		}
	}
	code, body := do(t, c, "GET", base+"/api/search/lookup?m=otsdb.roles", "grafana", "pw-grafana", "")
	if code != 200 || !strings.Contains(body, `"metric":"otsdb.roles","tags":{"host":"web01"}}],"startIndex":0,"totalResults":1}`) {
		t.Errorf("read-only user's /api/search/lookup: %d %q, want 200 with the one series", code, body)
	}
	if code, body := do(t, c, "GET", base+"/api/config/filters", "grafana", "pw-grafana", ""); code != 200 || !strings.HasPrefix(body, `{"regexp":`) {
		t.Errorf("read-only user's /api/config/filters: %d %q, want 200 with OpenTSDB's filters", code, body)
	}
	for _, path := range []string{"/api/suggest?type=metrics", "/api/aggregators", "/api/version", "/api/query/last?timeseries=otsdb.roles",
		"/api/search/lookup?m=otsdb.roles", "/api/config/filters"} {
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
