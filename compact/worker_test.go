package compact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// newSaltedFixture is newFixture's data spread over salts: n handles on one store
// created with the given number of salts, and two series on each of
// enough hosts that every salt holds two hosts. Samples run from day0 to
// day0+3h20m every 15s, so each series has 3 sealed buckets of 240 samples and
// an open one of 80 at the fixture's clock (day0+3h30m, grace 10m).
func newSaltedFixture(t *testing.T, b schematest.Backend, n, salts int) (*fixture, []kv.Store) {
	t.Helper()
	b.Settings.Salts, b.TableOptions.Salts = salts, salts
	b.TableOptions.RawRetention = 0 // the samples are older than any retention would keep
	b.TableOptions.Rollups = testRollups
	sts := b.Stores(t, n)
	st := sts[0]
	f := openFixture(t, st, b.Settings)
	perSalt := make([]int, salts)
	for i, full := 0, 0; full < salts; i++ {
		host := fmt.Sprintf("h%d", i)
		salt := schema.Salt(host, salts)
		if perSalt[salt] == 2 {
			continue
		}
		if perSalt[salt]++; perSalt[salt] == 2 {
			full++
		}
		f.series = append(f.series,
			labels.FromStrings("__name__", "node_load1", "host", host),
			labels.FromStrings("__name__", "up", "host", host, "job", "node"))
	}
	req := write.Request{}
	for i, ls := range f.series {
		var samples []cellenc.Sample
		for ts := day0; ts < day0+3*hour+20*60_000; ts += 15_000 {
			samples = append(samples, cellenc.Sample{T: ts, V: float64(ts-day0) / 1000 * float64(i+1)})
		}
		req.Series = append(req.Series, write.Series{Labels: ls, Samples: samples})
	}
	f.writeOnTime(t, req)
	return f, sts
}

// sealedRows is how many rows of the fixture are sealed buckets.
func (f *fixture) sealedRows() int { return 3 * len(f.series) }

// workerOn returns a worker on st with the fixture's grace and clock c, owned
// by owner; opts may set anything else.
func (f *fixture) workerOn(t *testing.T, st kv.Store, owner string, c *clock, opts WorkerOptions) *Worker {
	t.Helper()
	opts.Owner, opts.Now = owner, c.Now
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = testTTL
	}
	if opts.Compact.Grace == 0 {
		opts.Compact.Grace = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w, err := NewWorker(st, f.settings, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// holders follows who holds each salt, as the workers' lease hooks report it,
// and fails the test when a salt is taken while held or written by a worker
// that does not hold it.
type holders struct {
	t    *testing.T
	mu   sync.Mutex
	held map[byte]string
	// took counts the leases each owner took.
	took map[string]int
}

func newHolders(t *testing.T) *holders {
	return &holders{t: t, held: map[byte]string{}, took: map[string]int{}}
}

func (h *holders) hook(owner string) func(event string, salt byte) {
	return func(event string, salt byte) {
		h.mu.Lock()
		defer h.mu.Unlock()
		switch event {
		case "acquired":
			if other, ok := h.held[salt]; ok {
				h.t.Errorf("%s took salt %d while %s held it", owner, salt, other)
			}
			h.held[salt] = owner
			h.took[owner]++
		case "releasing":
			if h.held[salt] != owner {
				h.t.Errorf("%s released salt %d, held by %q", owner, salt, h.held[salt])
			}
			delete(h.held, salt)
		}
	}
}

// spyStore is a worker's store: it checks that each data and rollup row it
// writes is of a salt its owner holds.
type spyStore struct {
	kv.Store
	owner   string
	holders *holders
}

func (s *spyStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	if table == schema.TableData || strings.HasPrefix(table, "rollup-") {
		s.holders.mu.Lock()
		for _, m := range muts {
			if holder := s.holders.held[m.Row[0]]; holder != s.owner {
				s.holders.t.Errorf("%s wrote a row of salt %d, which %q holds", s.owner, m.Row[0], holder)
				break
			}
		}
		s.holders.mu.Unlock()
	}
	return s.Store.Apply(ctx, table, muts)
}

func (s *spyStore) CheckAndPut(ctx context.Context, table string, expected []byte, put kv.Mutation) (bool, error) {
	if table == schema.TableData || strings.HasPrefix(table, "rollup-") {
		s.holders.mu.Lock()
		if holder := s.holders.held[put.Row[0]]; holder != s.owner {
			s.holders.t.Errorf("%s wrote a row of salt %d, which %q holds", s.owner, put.Row[0], holder)
		}
		s.holders.mu.Unlock()
	}
	return s.Store.CheckAndPut(ctx, table, expected, put)
}

// Two workers on two connections to one store, running a round at the same
// time, compact every sealed bucket exactly once between them (its chunk and
// each of its rollup cells written once), never work on one salt at once, and
// lose no sample; every salt gets its watermark.
func TestWorkersShareTheSaltsThroughLeases(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f, sts := newSaltedFixture(t, b, 2, 4)
			before, samples := f.dump(t), f.samples(t)
			c := newClock(f.now.UnixMilli())
			h := newHolders(t)
			var (
				workers  []*Worker
				counters []*schematest.CountingStore
			)
			for i, owner := range []string{"w1", "w2"} {
				counting := schematest.Counting(sts[i])
				counters = append(counters, counting)
				workers = append(workers, f.workerOn(t, &spyStore{Store: counting, owner: owner, holders: h}, owner, c,
					WorkerOptions{Compact: Options{BatchRows: 2, Rollups: testRollups}, onLease: h.hook(owner)}))
			}
			// puts counts the cells the workers put into table's family.
			puts := func(table, family string) int {
				n := 0
				for _, cs := range counters {
					n += cs.Puts(table, family)
				}
				return n
			}
			round := func() []RoundStats {
				stats := make([]RoundStats, len(workers))
				var wg sync.WaitGroup
				for i, w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						st, err := w.RunOnce(context.Background())
						if err != nil {
							t.Errorf("worker %d: %v", i, err)
						}
						stats[i] = st
					}()
				}
				wg.Wait()
				return stats
			}

			stats := round()
			var total Stats
			for i, st := range stats {
				total.add(st.Stats)
				if st.Salts+st.Busy != 4 || st.Failed != 0 {
					t.Errorf("worker %d: %+v; want each of the 4 salts compacted or left to the other", i, st)
				}
			}
			n := f.sealedRows()
			if want := (Stats{Rows: n, Samples: n * 240, RawCells: n * 240, RollupCells: 2 * n, RowsRead: n, CellsRead: n + n*240}); total != want {
				t.Errorf("the two workers did %+v between them, want %+v (%+v and %+v)", total, want, stats[0], stats[1])
			}
			for _, tf := range [][2]string{{schema.TableData, schema.FamilyChunk}, {schema.RollupTable(5 * time.Minute), schema.FamilyRollup},
				{schema.RollupTable(time.Hour), schema.FamilyRollup}} {
				if got := puts(tf[0], tf[1]); got != n {
					t.Errorf("%d cells put into %s/%s, want one per sealed bucket, %d", got, tf[0], tf[1], n)
				}
			}
			f.checkRollups(t, testRollups, samples)
			wm, err := workers[0].Watermarks(context.Background())
			if err != nil || !maps.Equal(wm, f.allWatermarks(f.cutoff())) {
				t.Errorf("watermarks = %v, %v; want every salt's at %d", wm, err, f.cutoff())
			}
			t.Logf("leases taken: %v", h.took)
			raw, chunk, buckets := f.cells(t)
			if raw != len(f.series)*80 || chunk != n || buckets[day0+3*hour] != raw {
				t.Errorf("after the round: %d raw cells (by bucket %v), %d chunks; want %d raw, all in the open bucket, and %d chunks",
					raw, buckets, chunk, len(f.series)*80, n)
			}
			if after := f.dump(t); after != before {
				t.Errorf("samples changed:\nbefore %s\nafter  %s", before, after)
			}
			for i, st := range round() {
				if st.Stats != (Stats{}) {
					t.Errorf("worker %d's second round did %+v, want nothing", i, st.Stats)
				}
			}
			for _, tf := range [][2]string{{schema.TableData, schema.FamilyChunk}, {schema.RollupTable(5 * time.Minute), schema.FamilyRollup},
				{schema.RollupTable(time.Hour), schema.FamilyRollup}} {
				if got := puts(tf[0], tf[1]); got != 0 {
					t.Errorf("the second round put %d cells into %s/%s, want none", got, tf[0], tf[1])
				}
			}
		})
	}
}

// A worker leaves a salt whose lease another owner holds, and takes it over once
// that lease expires (the holder stopped renewing: it died).
func TestWorkerTakesOverAnExpiredLease(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f, sts := newSaltedFixture(t, b, 2, 1)
			c := newClock(f.now.UnixMilli())
			mustAcquire(t, newLeaser(sts[1], "dead", c), 0) // and never renewed
			w := f.workerOn(t, sts[0], "alive", c, WorkerOptions{})

			c.Add(testTTL - time.Millisecond)
			if st, err := w.RunOnce(context.Background()); err != nil || st != (RoundStats{Busy: 1}) {
				t.Fatalf("round while the lease is held = %+v, %v; want the salt left busy", st, err)
			}
			c.Add(time.Millisecond)
			st, err := w.RunOnce(context.Background())
			if err != nil || st.Salts != 1 || st.Rows != f.sealedRows() {
				t.Fatalf("round once the lease expired = %+v, %v; want the salt's %d rows compacted", st, err, f.sealedRows())
			}
			if l, _ := leaseCell(t, sts[1], 0); l != (schema.Lease{Owner: "alive"}) {
				t.Fatalf("lease after the round: %+v, want alive's, released", l)
			}
		})
	}
}

// A worker whose lease is lost part way through a salt stops before its next
// batch, whatever made it lose the lease; nothing is lost, and a later round
// finishes the salt.
func TestLosingTheLeaseStopsWork(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, tc := range []struct {
			name string
			lose func(t *testing.T, st kv.Store, fs *failingStore, c *clock)
			want string
			// recover lets a later round take the lease.
			recover func(fs *failingStore, c *clock)
		}{
			{"renewal refused", func(t *testing.T, st kv.Store, _ *failingStore, c *clock) {
				steal(t, st, 0, "thief", c.Now().UnixMilli()+testTTL.Milliseconds())
				c.Add(testTTL / 2)
			}, "renewal refused", func(_ *failingStore, c *clock) { c.Add(testTTL) }},
			{"renewal failed", func(t *testing.T, _ kv.Store, fs *failingStore, c *clock) {
				fs.setFail(fmt.Errorf("region server gone: %w", kv.ErrUnavailable))
				c.Add(testTTL / 2)
			}, "renewal failed: region server gone", func(fs *failingStore, _ *clock) { fs.setFail(nil) }},
			{"lease ran out", func(t *testing.T, _ kv.Store, _ *failingStore, c *clock) {
				c.Add(3 * testTTL / 4) // a batch that stalled
			}, "the lease ran out", func(*failingStore, *clock) {}},
		} {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				f, _ := newSaltedFixture(t, b, 1, 1)
				before := f.dump(t)
				c := newClock(f.now.UnixMilli())
				fs := &failingStore{Store: f.st}
				var once sync.Once
				w := f.workerOn(t, fs, "w", c, WorkerOptions{Compact: Options{BatchRows: 2, afterStep: func(step string) error {
					if step == "raw deleted" {
						once.Do(func() { tc.lose(t, f.st, fs, c) })
					}
					return nil
				}}})
				st, err := w.RunOnce(context.Background())
				if !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("RunOnce = %v, want ErrLeaseLost saying %q", err, tc.want)
				}
				if st.Rows != 2 || st.Failed != 1 || st.Salts != 0 {
					t.Errorf("round = %+v, want one batch of 2 rows done and the salt failed", st)
				}
				f.checkWatermarks(t, map[byte]int64{}) // the salt was left part way
				if raw, _, _ := f.cells(t); raw != (f.sealedRows()-2)*240+len(f.series)*80 {
					t.Errorf("%d raw cells left, want the %d rows not reached raw", raw, f.sealedRows()-2)
				}
				if after := f.dump(t); after != before {
					t.Errorf("samples changed:\nbefore %s\nafter  %s", before, after)
				}

				tc.recover(fs, c)
				st, err = w.RunOnce(context.Background())
				if err != nil || st.Rows != f.sealedRows()-2 || st.Salts != 1 {
					t.Fatalf("the next round = %+v, %v; want the other %d rows compacted", st, err, f.sealedRows()-2)
				}
				if raw, chunk, _ := f.cells(t); raw != len(f.series)*80 || chunk != f.sealedRows() {
					t.Errorf("after the next round: %d raw cells, %d chunks", raw, chunk)
				}
				f.checkWatermarks(t, map[byte]int64{0: f.cutoff()})
				if after := f.dump(t); after != before {
					t.Errorf("samples changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// logBuffer is an io.Writer safe for the concurrent use of a logger.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A round that runs longer than the lease's TTL keeps renewing it, and logs its
// progress; the round's line gives what it did.
func TestLongRoundRenewsAndLogsProgress(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			f, _ := newSaltedFixture(t, b, 1, 4)
			c := newClock(f.now.UnixMilli())
			var logs logBuffer
			w := f.workerOn(t, f.st, "w", c, WorkerOptions{ProgressInterval: 10 * time.Second,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Compact: Options{BatchRows: 2, Rollups: testRollups, afterStep: func(step string) error {
					if step == "raw deleted" {
						c.Add(10 * time.Second) // each batch takes 10s
					}
					return nil
				}}})
			st, err := w.RunOnce(context.Background())
			n := f.sealedRows()
			if err != nil || st.Rows != n || st.Salts != 4 {
				t.Fatalf("round = %+v, %v; want %d rows in 4 salts", st, err, n)
			}
			if st.Duration != time.Duration(n/2)*10*time.Second || st.Duration <= testTTL {
				t.Fatalf("the round took %s by the test clock, want longer than the lease TTL", st.Duration)
			}
			log := logs.String()
			wantRound := fmt.Sprintf(`msg="compaction round" rows=%d samples=%d raw_cells_deleted=%d rollup_cells=%d skipped=0 conflicts=0 rows_read=%d cells_read=%d salts=4 busy=0 failed=0 duration=%s rows_per_s=0.2 samples_per_s=48`,
				n, n*240, n*240, 2*n, n, n+n*240, st.Duration)
			if !strings.Contains(log, wantRound) {
				t.Errorf("no round line %q in the log:\n%s", wantRound, log)
			}
			if !strings.Contains(log, `msg="compaction progress" salts_done=0 salts=4 rows=4 rollup_cells=8 elapsed=10s rows_per_s=0.4`) ||
				!strings.Contains(log, "rows_estimated=") || !strings.Contains(log, " eta=") {
				t.Errorf("no progress lines with an estimate in the log:\n%s", log)
			}
		})
	}
}

// Run runs rounds until its context is cancelled, between rounds or in the
// middle of one; it returns promptly, with the lease released (goleak, in
// TestMain, checks that nothing is left running).
func TestRunStopsWhenCancelled(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name+"/between rounds", func(t *testing.T) {
			f, _ := newSaltedFixture(t, b, 1, 1)
			c := newClock(f.now.UnixMilli())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rounds := make(chan RoundStats, 10)
			w := f.workerOn(t, f.st, "w", c, WorkerOptions{Interval: time.Nanosecond, afterRound: func(st RoundStats, err error) {
				if err != nil && ctx.Err() == nil {
					t.Errorf("round: %v", err)
				}
				select {
				case rounds <- st:
				default: // the test has what it needs
				}
			}})
			done := make(chan struct{})
			go func() { defer close(done); w.Run(ctx) }()
			if st := <-rounds; st.Rows != f.sealedRows() {
				t.Errorf("first round = %+v, want %d rows", st, f.sealedRows())
			}
			if st := <-rounds; st.Rows != 0 || st.Salts != 1 {
				t.Errorf("second round = %+v, want the salt visited and nothing to do", st)
			}
			cancel()
			<-done
		})
		t.Run(b.Name+"/in a round", func(t *testing.T) {
			f, _ := newSaltedFixture(t, b, 1, 1)
			c := newClock(f.now.UnixMilli())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var roundErr error
			w := f.workerOn(t, f.st, "w", c, WorkerOptions{
				afterRound: func(_ RoundStats, err error) { roundErr = err },
				Compact: Options{BatchRows: 2, afterStep: func(step string) error {
					if step == "chunks written" {
						cancel()
					}
					return nil
				}}})
			w.Run(ctx)
			if !errors.Is(roundErr, context.Canceled) {
				t.Errorf("the cancelled round ended with %v, want context.Canceled", roundErr)
			}
			if l, _ := leaseCell(t, f.st, 0); l != (schema.Lease{Owner: "w"}) {
				t.Errorf("lease after Run returned: %+v, want released", l)
			}
		})
	}
}

func TestWorkerOptionsValidate(t *testing.T) {
	err := WorkerOptions{Interval: -time.Second, LeaseTTL: time.Millisecond, ProgressInterval: -1, Owner: "a b",
		Compact: Options{Grace: -time.Second}}.Validate()
	want := "compact: WorkerOptions.Interval must not be negative (0 means the default, 5m0s), got -1s\n" +
		"compact: WorkerOptions.LeaseTTL must be at least 1s (0 means the default, 1m0s), got 1ms\n" +
		"compact: WorkerOptions.ProgressInterval must not be negative (0 means the default, 1m0s), got -1ns\n" +
		`compact: WorkerOptions.Owner: schema: lease owner "a b" has a byte that is a space or not printable ASCII (0x20): malformed` + "\n" +
		"compact: Options.Grace must not be negative (0 means the default, 1h0m0s), got -1s"
	if err == nil || err.Error() != want {
		t.Errorf("Validate =\n%v\nwant\n%s", err, want)
	}
	if err := (WorkerOptions{Owner: "h-1-ab"}).Validate(); err != nil {
		t.Errorf("zero options with an owner: %v", err)
	}
	if err := (WorkerOptions{}).Validate(); err == nil || !strings.Contains(err.Error(), "WorkerOptions.Owner") {
		t.Errorf("no owner: %v, want an error naming WorkerOptions.Owner", err)
	}
}
