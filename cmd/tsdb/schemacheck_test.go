package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaCheckRawRetention: a store created with --retention.raw=1m is
// refused by schema check and serve configured with 30d, naming both values
// (the data table's TTL is fixed: acknowledging a 10-minute-old sample into a
// 1m table would hide it at once); check --print shows the recorded retention.
func TestSchemaCheckRawRetention(t *testing.T) {
	store := "--storage=embedded:" + filepath.Join(t.TempDir(), "d")
	if code, _, stderr := tsdb(t, "schema", "create", store, "--retention.raw=1m"); code != 0 {
		t.Fatalf("schema create: exit %d, %s", code, stderr)
	}
	want := "the store keeps raw data for 1m, this process is configured to keep it for 30d (--retention.raw=30d); " +
		"the retention is the TTL of the data table, set when it was created, and tsdb cannot change it: start with --retention.raw=1m " +
		"(an embedded store's table TTL cannot be changed)\n"
	code, out, stderr := tsdb(t, "schema", "check", "--print", store, "--retention.raw=30d")
	if code != 1 || !strings.HasSuffix(stderr, want) || !strings.Contains(out, "raw_retention: 1m\n") {
		t.Errorf("schema check --retention.raw=30d: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, stderr, want)
	}
	code, _, stderr = tsdb(t, "serve", store, "--retention.raw=30d", "--listen=127.0.0.1:0")
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("serve --retention.raw=30d: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	if code, _, stderr := tsdb(t, "schema", "check", store, "--retention.raw=1m"); code != 0 {
		t.Errorf("schema check --retention.raw=1m: exit %d, %s", code, stderr)
	}
}

// TestSchemaCheckWithoutAStore: schema check on a directory that does not
// exist says so and creates nothing.
func TestSchemaCheckWithoutAStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	code, _, stderr := tsdb(t, "schema", "check", "--storage=embedded:"+dir)
	if want := "tsdb schema check: embedded store " + dir + ": the directory does not exist: no store\n"; code != 1 || stderr != want {
		t.Errorf("schema check: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("schema check created %s: %v", dir, err)
	}
}
