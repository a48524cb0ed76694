package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestQueryPageBehindWebConfig: with --web.config.file the query page and its
// assets are behind the same basic auth as the API; read-only and unrestricted
// users get them, a write-only user (who could not run a query from it) gets
// 403, and paths next to the page stay 404.
func TestQueryPageBehindWebConfig(t *testing.T) {
	s := startRolesServer(t)
	c := http.DefaultClient
	base := "http://" + s.addr

	code, page := do(t, c, "GET", base+"/", "admin", "pw-admin", "")
	if code != 200 || !strings.Contains(page, "<title>hbtsdb") {
		t.Fatalf("GET / as the unrestricted user: %d %.200q, want the page", code, page)
	}
	script := regexp.MustCompile(`src="(assets/app-[^"]+\.js)"`).FindStringSubmatch(page)
	if script == nil {
		t.Fatalf("the page names no script:\n%s", page)
	}
	for _, path := range []string{"/", "/" + script[1]} {
		if code, _ := do(t, c, "GET", base+path, "", "", ""); code != 401 {
			t.Errorf("GET %s without credentials: %d, want 401", path, code)
		}
		if code, _ := do(t, c, "GET", base+path, "grafana", "wrong", ""); code != 401 {
			t.Errorf("GET %s with a wrong password: %d, want 401", path, code)
		}
		for _, user := range []string{"admin", "grafana"} {
			if code, _ := do(t, c, "GET", base+path, user, "pw-"+user, ""); code != 200 {
				t.Errorf("GET %s as %s: %d, want 200", path, user, code)
			}
		}
		if code, body := do(t, c, "GET", base+path, "prometheus", "pw-prometheus", ""); code != 403 ||
			!strings.Contains(body, "--web.write-only-users") {
			t.Errorf("GET %s as the write-only user: %d %q, want 403", path, code, body)
		}
	}
	for _, path := range []string{"/index.html", "/assets/nope.js", "/graph"} {
		if code, _ := do(t, c, "GET", base+path, "admin", "pw-admin", ""); code != 404 {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}
