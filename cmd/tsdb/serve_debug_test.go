package main

import (
	"strings"
	"testing"
)

func TestServeProfilesOnlyWithEnablePprof(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"profiles are not served by default", nil, 404},
		{"profiles are served with --web.enable-pprof", []string{"--web.enable-pprof"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServe(t, append([]string{"--storage=embedded:" + t.TempDir()}, tc.args...)...)
			s.waitFor(t, "/-/ready", 200)
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
				code, body := s.get(path)
				if code != tc.code {
					t.Errorf("%s: %d, want %d", path, code, tc.code)
				}
				if path == "/debug/pprof/goroutine?debug=1" && tc.code == 200 && !strings.HasPrefix(body, "goroutine profile: total ") {
					t.Errorf("%s does not start with the goroutine count: %.100q", path, body)
				}
			}
			// The API is still served next to the profiles.
			if code, _ := s.get("/api/v1/status/buildinfo"); code != 200 {
				t.Errorf("/api/v1/status/buildinfo: %d with args %v", code, tc.args)
			}
			if err := s.stop(t); err != nil {
				t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
			}
		})
	}
}
