package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/write"
)

// oldStore is an embedded store holding 3 series with a sample every 15s from
// 2024-01-01 00:00 to 03:20 UTC (4 buckets each, all sealed long ago: 12 rows
// of 2,400 samples) and one sample now, in the open bucket, which no grace
// seals. The schema is created by tsdb schema create with --retention.raw=0, or
// the table's TTL would hide such old samples.
type oldStore struct {
	dir    string
	series []labels.Labels
	// samples are every series' samples as written, rendered by dump.
	samples string
}

const oldRows, oldSamples = 12, 2400

func newOldStore(t *testing.T) *oldStore {
	t.Helper()
	s := &oldStore{dir: t.TempDir(), series: []labels.Labels{
		labels.FromStrings("__name__", "node_load1", "host", "a"),
		labels.FromStrings("__name__", "node_load1", "host", "b"),
		labels.FromStrings("__name__", "up", "host", "a", "job", "node"),
	}}
	if code, _, stderr := tsdb(t, "schema", "create", s.storage(), "--retention.raw=0"); code != 0 {
		t.Fatalf("schema create: exit %d: %s", code, stderr)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	req := write.Request{}
	for i, ls := range s.series {
		var samples []cellenc.Sample
		for ts := start; ts < start+(3*60+20)*60_000; ts += 15_000 {
			samples = append(samples, cellenc.Sample{T: ts, V: float64(ts-start)/1000 + float64(i)})
		}
		req.Series = append(req.Series, write.Series{Labels: ls, Samples: samples})
	}
	req.Series = append(req.Series, write.Series{Labels: s.series[0], Samples: []cellenc.Sample{{T: time.Now().UnixMilli(), V: -1}}})
	s.with(t, func(d *db.DB, _ kv.Store) {
		res, err := d.Write(context.Background(), &req)
		if err != nil || len(res.Rejected) > 0 {
			t.Fatalf("write: %v %+v", err, res.Rejected)
		}
		s.samples = s.dump(t, d)
	})
	return s
}

func (s *oldStore) storage() string { return "--storage=embedded:" + s.dir }

// with opens the store (no tsdb may hold it) for f, and closes it.
func (s *oldStore) with(t *testing.T, f func(*db.DB, kv.Store)) {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, s.dir, embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(ctx, db.Options{Store: st, CloseStore: true, Settings: schema.DefaultEmbeddedSettings()})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	defer d.Close()
	f(d, st)
}

// dump renders every series' samples, "t=bits" each.
func (s *oldStore) dump(t *testing.T, d *db.DB) string {
	t.Helper()
	var b strings.Builder
	for _, ls := range s.series {
		got, err := d.Reader().Samples(context.Background(), ls, 0, kv.MaxTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:", ls)
		for _, smp := range got {
			fmt.Fprintf(&b, " %d=%x", smp.T, math.Float64bits(smp.V))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// check verifies that no sample changed and counts the data table's cells: raw
// ones in the old (sealed) buckets and in the open one, and chunks.
func (s *oldStore) check(t *testing.T) (sealedRaw, openRaw, chunks int) {
	t.Helper()
	open := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() // the old buckets are of 2024, the open one of now
	s.with(t, func(d *db.DB, st kv.Store) {
		if got := s.dump(t, d); got != s.samples {
			t.Errorf("samples changed:\nbefore %s\nafter  %s", s.samples, got)
		}
		sc := st.Scan(context.Background(), schema.TableData, nil, nil, kv.Families(schema.FamilyRaw, schema.FamilyChunk))
		defer sc.Close()
		for sc.Next() {
			_, bucket, err := schema.ParseDataRowTail(sc.Row().Key)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range sc.Row().Cells {
				switch {
				case c.Family == schema.FamilyChunk:
					chunks++
				case bucket >= open:
					openRaw++
				default:
					sealedRaw++
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	})
	return sealedRaw, openRaw, chunks
}

func TestCompactOnceCompactsSealedBuckets(t *testing.T) {
	s := newOldStore(t)
	code, out, stderr := tsdb(t, "compact", "--once", s.storage(), "--retention.raw=0")
	// A rollup cell per row and resolution (5m and 1h, the default).
	// It reads the sealed rows (their raw cells and pending marks) and
	// nothing else, the open bucket's row included.
	want := fmt.Sprintf("buckets_compacted: %d\nsamples: %d\nraw_cells_deleted: %d\nrollup_cells_written: %d\nbuckets_left_raw: 0\n"+
		"buckets_left_to_next_round: 0\nrows_read: %d\ncells_read: %d\n"+
		"salts_done: 1\nsalts_busy: 0\nsalts_failed: 0\nduration: ", oldRows, oldSamples, oldSamples, 2*oldRows, oldRows, oldSamples+oldRows)
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Fatalf("compact --once: exit %d, stdout:\n%s\nwant it to start with:\n%s\nstderr: %s", code, out, want, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf(`msg="compaction round" rows=%d samples=%d raw_cells_deleted=%d`, oldRows, oldSamples, oldSamples)) {
		t.Errorf("no round line in the log:\n%s", stderr)
	}
	if sealedRaw, openRaw, chunks := s.check(t); sealedRaw != 0 || openRaw != 1 || chunks != oldRows {
		t.Errorf("after compact --once: %d raw cells in sealed buckets, %d in the open one, %d chunks; want 0, 1 and %d",
			sealedRaw, openRaw, chunks, oldRows)
	}
	// A second round, under the command's old name: nothing left to do.
	if code, out, stderr := tsdb(t, "downsample", "--once", s.storage(), "--retention.raw=0"); code != 0 || !strings.HasPrefix(out, "buckets_compacted: 0\n") {
		t.Fatalf("a second round, as tsdb downsample --once: exit %d, stdout %q, stderr %s; want nothing done", code, out, stderr)
	}
}

// syncBuffer is a log sink safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Without --once, tsdb compact runs rounds until it is stopped, and stops
// cleanly: the store is closed (openable again) when it returns.
func TestCompactRunsUntilStopped(t *testing.T) {
	s := newOldStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"compact", s.storage(), "--retention.raw=0", "--compact.interval=1h"}, &strings.Builder{}, &stderr)
	}()
	logLen, lastChange := -1, time.Now()
	for !strings.Contains(stderr.String(), `msg="compaction round"`) {
		if n := len(stderr.String()); n != logLen {
			logLen, lastChange = n, time.Now()
		} else if time.Since(lastChange) > waitStall {
			t.Fatalf("no round logged, and the log is unchanged for %s:\n%s", waitStall, stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("compact exited %d before a round; log:\n%s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("compact exited %d after cancellation; log:\n%s", code, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{`msg="compaction worker started"`, "interval=1h0m0s", "msg=stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if sealedRaw, _, chunks := s.check(t); sealedRaw != 0 || chunks != oldRows {
		t.Errorf("after a round: %d raw cells in sealed buckets and %d chunks; want 0 and %d", sealedRaw, chunks, oldRows)
	}
}

// tsdb serve compacts in the background by default, and stops the worker
// before it closes the store.
func TestServeCompacts(t *testing.T) {
	s := newOldStore(t)
	srv := startServe(t, s.storage(), "--retention.raw=0")
	srv.waitLog(t, `msg="compaction round"`)
	if err := srv.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, srv.log())
	}
	log := srv.log()
	if !strings.Contains(log, `msg="compaction worker started"`) || !strings.Contains(log, "msg=stopped") {
		t.Errorf("serve's log lacks the worker's start or the stop:\n%s", log)
	}
	if sealedRaw, _, chunks := s.check(t); sealedRaw != 0 || chunks != oldRows {
		t.Errorf("after serve: %d raw cells in sealed buckets and %d chunks; want 0 and %d", sealedRaw, chunks, oldRows)
	}
}

// With --compact.enabled=false, tsdb serve starts no worker: nothing is
// compacted. The store is ready before the worker would start, and serve waits
// for the store-opening goroutine before it exits, so a complete log without
// the worker's start line proves it never started.
func TestServeWithoutCompaction(t *testing.T) {
	s := newOldStore(t)
	srv := startServe(t, s.storage(), "--retention.raw=0", "--compact.enabled=false")
	srv.waitFor(t, "/-/ready", 200)
	if err := srv.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM; log:\n%s", err, srv.log())
	}
	if log := srv.log(); strings.Contains(log, "compaction") || !strings.Contains(log, `msg="store ready"`) {
		t.Errorf("serve --compact.enabled=false logged compaction, or not that the store was ready:\n%s", log)
	}
	if sealedRaw, openRaw, chunks := s.check(t); sealedRaw != oldSamples || openRaw != 1 || chunks != 0 {
		t.Errorf("after serve: %d raw cells in sealed buckets, %d in the open one, %d chunks; want %d, 1 and none",
			sealedRaw, openRaw, chunks, oldSamples)
	}
}

func TestBadCompactFlags(t *testing.T) {
	store := "--storage=embedded:" + t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"compact", "--once", store, "--compact.lease-ttl=10ms"}, 1,
			"tsdb compact: --compact.lease-ttl must be at least 1s (0 means the default, 1m0s), got 10ms\n"},
		{[]string{"serve", store, "--listen=127.0.0.1:0", "--compact.lease-ttl=500ms", "--compact.enabled=false"}, 1,
			"tsdb serve: --compact.lease-ttl must be at least 1s (0 means the default, 1m0s), got 500ms\n"},
		{[]string{"compact", store, "--compact.interval=soon"}, 2, "--compact.interval"},
		{[]string{"compact", store, "--compact.grace=-1h"}, 2, "--compact.grace"},
		{[]string{"serve", store, "--compact.lease-ttl=often"}, 2, "--compact.lease-ttl"},
		// The writer's and the compactor's writes share two flags.
		{[]string{"compact", "--once", store, "--storage.write-batch-size=-1"}, 1,
			"tsdb compact: --storage.write-batch-size must not be negative (0 means the default, 10000), got -1\n"},
		{[]string{"serve", store, "--listen=127.0.0.1:0", "--storage.write-concurrency=-2"}, 1,
			"tsdb serve: --storage.write-concurrency must not be negative (0 means the default, 4), got -2\n"},
	} {
		code, _, stderr := tsdb(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) || tc.code == 1 && stderr != tc.stderr {
			t.Errorf("tsdb %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}
