package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// TestServeOnAFullDisk: tsdb serve on an embedded store whose disk (a tmpfs
// the test mounts, as root; testenv.MountTmpfs, which fails under make test
// where it cannot) gets under --storage.min-free-bytes answers
// writes with 503 naming the free space (Prometheus retries them) and
// /-/ready with 503, while it keeps answering; once space is freed it takes
// writes again, and what it acknowledged is there.
func TestServeOnAFullDisk(t *testing.T) {
	mnt := testenv.MountTmpfs(t, "96m")
	s := startServe(t, "--storage=embedded:"+filepath.Join(mnt, "data"), "--storage.min-free-bytes=32MiB")
	t.Cleanup(func() { // before the unmount
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	s.waitFor(t, "/-/ready", 200)
	point := func(v int) string {
		return fmt.Sprintf(`{"metric":"sys.cpu","timestamp":%d,"value":%d,"tags":{"host":"a"}}`, time.Now().Unix(), v)
	}
	if code, body := s.post(t, "/api/put", point(1), nil); code != 204 {
		t.Fatalf("a datapoint with space: %d %q", code, body)
	}

	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(mnt, &fs); err != nil {
		t.Fatal(err)
	}
	free := int(fs.Bavail) * int(fs.Bsize)
	if _, err := f.Write(make([]byte, free-16<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	body := s.waitFor(t, "/-/ready", 503)
	if !strings.Contains(body, "under the reserve of 33554432 (--storage.min-free-bytes)") {
		t.Errorf("/-/ready on a full disk: %q", body)
	}
	code, msg := s.post(t, "/api/put", point(2), nil)
	if code != 503 || !strings.Contains(msg, "bytes free, under the reserve of 33554432") {
		t.Errorf("a datapoint on a full disk: %d %q, want 503 naming the free space", code, msg)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "/-/ready", 200)
	if code, body := s.post(t, "/api/put", point(3), nil); code != 204 {
		t.Fatalf("a datapoint once space is freed: %d %q", code, body)
	}
	// The two acknowledged datapoints, not the refused one.
	q := url.Values{"query": {`sum_over_time({__name__="sys.cpu"}[1h])`}}
	if code, body := s.get("/api/v1/query?" + q.Encode()); code != 200 || !strings.Contains(body, `"4"]`) {
		t.Errorf("sum of what was acknowledged: %d %s, want 1+3 = 4", code, body)
	}
}
