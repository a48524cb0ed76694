package main

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/testing/pkitest"
)

func TestServeAdminAPIIsNotServedWithoutItsFlag(t *testing.T) {
	s := startServe(t, "--storage=embedded:"+t.TempDir())
	s.waitFor(t, "/-/ready", 200)
	for _, path := range []string{"/api/v1/admin/tsdb/delete_series?match[]=up", "/api/v1/admin/tsdb/clean_tombstones"} {
		if code, body := do(t, http.DefaultClient, "POST", "http://"+s.addr+path, "", "", ""); code != 404 {
			t.Errorf("POST %s without --web.enable-admin-api: %d %q, want 404", path, code, body)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
}

func TestServeDeleteSeries(t *testing.T) {
	dir := t.TempDir()
	cfg := writeWebConfig(t, filepath.Join(dir, "web.yml"), "basic_auth_users:\n"+
		"  alice: "+pkitest.BcryptHash(t, "pw-alice")+"\n"+
		"  bob: "+pkitest.BcryptHash(t, "pw-bob")+"\n"+
		"  carol: "+pkitest.BcryptHash(t, "pw-carol")+"\n")
	s := startServe(t, "--storage=embedded:"+t.TempDir(), "--web.config.file="+cfg, "--web.enable-admin-api",
		"--web.read-only-users=bob", "--web.write-only-users=carol")
	s.waitLog(t, `msg="store ready"`)
	c := http.DefaultClient
	base := "http://" + s.addr

	// 60 points of each of two hosts, every 10 s up to now.
	var points []string
	for i := range 60 {
		for _, host := range []string{"a", "b"} {
			points = append(points, fmt.Sprintf(`{"metric":"del_cpu","timestamp":%d,"value":%d,"tags":{"host":%q}}`, now-590+int64(i)*10, i, host))
		}
	}
	if code, body := do(t, c, "POST", base+"/api/put", "carol", "pw-carol", "["+strings.Join(points, ",")+"]"); code != 204 {
		t.Fatalf("put: %d %q", code, body)
	}
	deletePath := func(q string) string { return base + "/api/v1/admin/tsdb/delete_series?" + q }
	// Points 30..40 of host a: 11 of them.
	good := "match[]=" + url.QueryEscape(`del_cpu{host="a"}`) + fmt.Sprintf("&start=%d&end=%d", now-290, now-190)

	for _, user := range []struct{ name, pass string }{{"bob", "pw-bob"}, {"carol", "pw-carol"}} {
		for _, path := range []string{deletePath(good), base + "/api/v1/admin/tsdb/clean_tombstones"} {
			if code, body := do(t, c, "POST", path, user.name, user.pass, ""); code != 403 {
				t.Errorf("%s's POST %s: %d %q, want 403", user.name, path, code, body)
			}
		}
	}
	for _, tc := range []struct{ query, body string }{
		{"start=1", `{"status":"error","errorType":"bad_data","error":"no match[] parameter provided"}`},
		{"match[]=del_cpu&start=yesterday",
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"start\": invalid time value for 'start': cannot parse \"yesterday\" to a valid timestamp"}`},
		{"match[]=del_cpu&end=NaN",
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"end\": invalid time value for 'end': cannot parse \"NaN\" to a valid timestamp"}`},
		{"match[]=del_cpu&start=20&end=10",
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"end\": end timestamp must not be before start time"}`},
		{"match[]=" + url.QueryEscape(`{host=""}`),
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"match[]\": vector selector must contain at least one non-empty matcher"}`},
	} {
		if code, body := do(t, c, "POST", deletePath(tc.query), "alice", "pw-alice", ""); code != 400 || body != tc.body {
			t.Errorf("delete_series?%s: %d %s, want 400 %s", tc.query, code, body, tc.body)
		}
	}
	if code, body := do(t, c, "POST", deletePath("match[]="+url.QueryEscape("del_cpu{")), "alice", "pw-alice", ""); code != 400 ||
		!strings.HasPrefix(body, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"match[]\": `) {
		t.Errorf("a selector that does not parse: %d %s, want 400 naming match[]", code, body)
	}

	if code, body := do(t, c, "POST", deletePath(good), "alice", "pw-alice", ""); code != 204 || body != "" {
		t.Fatalf("delete_series: %d %q, want 204 and no body", code, body)
	}
	if code, body := do(t, c, "PUT", base+"/api/v1/admin/tsdb/clean_tombstones", "alice", "pw-alice", ""); code != 204 || body != "" {
		t.Errorf("clean_tombstones: %d %q, want 204 and no body", code, body)
	}
	q := base + "/api/v1/query?query=" + url.QueryEscape(`count_over_time(del_cpu[15m])`) + fmt.Sprintf("&time=%d", now)
	code, body := do(t, c, "GET", q, "bob", "pw-bob", "")
	for _, want := range []string{`{"metric":{"host":"a"},"value":[%d,"49"]}`, `{"metric":{"host":"b"},"value":[%d,"60"]}`} {
		if want = fmt.Sprintf(want, now); code != 200 || !strings.Contains(body, want) {
			t.Errorf("after the delete, %s: %d %s, want %s", q, code, body, want)
		}
	}
	// The points at the edges of the range (30 and 40) are gone too; their neighbours stay.
	q = base + "/api/v1/query_range?query=" + url.QueryEscape(`del_cpu{host="a"}`) + fmt.Sprintf("&start=%d&end=%d&step=10", now-300, now-180)
	code, body = do(t, c, "GET", q, "alice", "pw-alice", "")
	// Point 29 (now-300) is the last one before the range, so the lookback
	// answers with it up to point 41 (now-180), the first one after.
	var values []string
	for ts := now - 300; ts < now-180; ts += 10 {
		values = append(values, fmt.Sprintf(`[%d,"29"]`, ts))
	}
	values = append(values, fmt.Sprintf(`[%d,"41"]`, now-180))
	if want := `"values":[` + strings.Join(values, ",") + "]"; code != 200 || !strings.Contains(body, want) {
		t.Errorf("%s: %d %s, want %s", q, code, body, want)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, s.log())
	}
	if log := s.log(); !strings.Contains(log, `msg=delete_series`) || !strings.Contains(log, "samples=11") {
		t.Errorf("the log does not tell what delete_series removed:\n%s", log)
	}
}
