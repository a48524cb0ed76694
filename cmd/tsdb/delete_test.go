package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
)

func TestDeleteCommand(t *testing.T) {
	s := newOldStore(t)
	if code, _, stderr := tsdb(t, "compact", "--once", s.storage(), "--retention.raw=0"); code != 0 {
		t.Fatalf("compact --once: exit %d: %s", code, stderr)
	}
	args := []string{"delete", s.storage(), "--retention.raw=0", `--match=node_load1{host="a"}`,
		"--start=2024-01-01T01:30:00Z", "--end=1704074400"} // 02:00:00
	// 01:30:00..02:00:00 at 15 s: 121 samples, in the chunks of buckets 1 and
	// 2, whose 1h rollup cells are rewritten (the 5m ones of 2024 are past
	// their table's 90-day TTL).
	counts := "series: 1\nrows: 2\nsamples: 121\nraw_cells: 0\nchunks_rewritten: 2\nrollup_cells_rewritten: 2\nexemplars: 0\nunindexed_series_days: 0\n"
	code, out, stderr := tsdb(t, append(args, "--dry-run")...)
	if code != 0 || !strings.HasPrefix(out, "dry run: nothing was deleted; a delete would remove:\n"+counts+"duration: ") {
		t.Fatalf("--dry-run: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	s.check(t) // nothing changed
	code, out, stderr = tsdb(t, args...)
	if code != 0 || !strings.HasPrefix(out, counts+"duration: ") {
		t.Fatalf("delete: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	from, to := time.Date(2024, 1, 1, 1, 30, 0, 0, time.UTC).UnixMilli(), time.Date(2024, 1, 1, 2, 0, 0, 0, time.UTC).UnixMilli()
	s.with(t, func(d *db.DB, _ kv.Store) {
		for i, ls := range s.series {
			got, err := d.Reader().Samples(context.Background(), ls, 0, kv.MaxTimestamp)
			if err != nil {
				t.Fatal(err)
			}
			want := oldSamples / 3 // 3h20m at 15 s
			if i == 0 {
				want += 1 - 121 // and the sample of now
			}
			if len(got) != want {
				t.Errorf("%s: %d samples, want %d", ls, len(got), want)
			}
			for _, smp := range got {
				if i == 0 && smp.T >= from && smp.T <= to {
					t.Errorf("%s: sample at %d in the deleted range", ls, smp.T)
				}
			}
		}
	})
	// Again: nothing left to remove.
	code, out, _ = tsdb(t, args...)
	if code != 0 || !strings.HasPrefix(out, "series: 0\nrows: 0\nsamples: 0\n") {
		t.Errorf("second delete: exit %d, stdout %q", code, out)
	}
}

func TestDeleteCommandRefusesBadFlags(t *testing.T) {
	store := "--storage=embedded:" + t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--match=up", "--start=0"}, 2, "required flag(s) '--end' not provided"},
		{[]string{"--match=up", "--start=yesterday", "--end=1"}, 1, "--start=yesterday: not RFC 3339 (2026-12-01T00:00:00Z) nor Unix seconds"},
		{[]string{"--match=up", "--start=2", "--end=1"}, 1, "--end=1 is before --start=2"},
		{[]string{"--match=up", "--start=1", "--end=2", "--delete.concurrency=0"}, 1, "--delete.concurrency must be at least 1, got 0"},
		{[]string{"--match=up{", "--start=1", "--end=2"}, 1, "--match=up{: "},
		{[]string{`--match={host=""}`, "--start=1", "--end=2"}, 1,
			`--match={host=""}: every matcher matches the empty string: it would select series by what they lack`},
	} {
		code, _, stderr := tsdb(t, append([]string{"delete", store}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("tsdb delete %v: exit %d, stderr %q; want exit %d with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestDeleteCommandIsInHelp(t *testing.T) {
	if code, out, _ := tsdb(t, "--help"); code != 0 || !strings.Contains(out, "delete --match=MATCH --start=START --end=END") {
		t.Errorf("tsdb --help: exit %d, does not list tsdb delete:\n%s", code, out)
	}
	code, out, _ := tsdb(t, "delete", "--help")
	for _, want := range []string{"--match=MATCH", "--start=START", "--end=END", "--[no-]dry-run", "--compact.lease-ttl=1m",
		"--storage.write-batch-size", "($TSDB_MATCH)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("tsdb delete --help: exit %d, does not mention %q", code, want)
		}
	}
	if code, out, _ := tsdb(t, "serve", "--help"); code != 0 || !strings.Contains(out, "--[no-]web.enable-admin-api") {
		t.Errorf("tsdb serve --help does not mention --web.enable-admin-api")
	}
}
