package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv"
)

// headRec is one record as replay saw it (or as Append placed it).
type headRec struct {
	seg uint64
	rec []byte
}

// openTestHeadLog opens the log in dir and returns it with the records it
// replayed (copied: replay reuses its buffer). A nil Logger discards.
func openTestHeadLog(t testing.TB, dir string, opts headLogOptions) (*headLog, []headRec) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var got []headRec
	l, err := openHeadLog(dir, opts, func(seg uint64, rec []byte) error {
		got = append(got, headRec{seg, bytes.Clone(rec)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, got
}

// framed is the bytes recs take in a segment.
func framed(recs ...[]byte) int64 {
	var n int64
	for _, r := range recs {
		n += headRecordHeader + int64(len(r))
	}
	return n
}

// segPath is the path of segment num in dir.
func segPath(dir string, num uint64) string {
	return filepath.Join(dir, headSegmentName(num))
}

// fileSize is the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// isSegment says whether f is a segment file (not the directory).
func isSegment(f *os.File) bool { return strings.HasSuffix(f.Name(), headSegmentExt) }

// waitFor yields until cond, read under the log's mutex, holds. It waits on
// the scheduler, not on the clock.
func waitFor(l *headLog, cond func() bool) {
	for {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}

func TestHeadLogRoundTrip(t *testing.T) {
	const (
		goroutines = 8
		perG       = 150
	)
	dir := t.TempDir()
	// Small segments, so that records spread over many of them and some are
	// bigger than a segment.
	l, got := openTestHeadLog(t, dir, headLogOptions{SegmentSize: 32 << 10})
	if len(got) != 0 || l.Segment() != 1 || l.Segments() != 1 || l.Size() != 0 {
		t.Fatalf("new log: replayed %d, segment %d, segments %d, size %d; want 0, 1, 1, 0", len(got), l.Segment(), l.Segments(), l.Size())
	}

	// payload is goroutine g's record i: empty for some, else g and i then
	// random bytes of random length (one in 61 bigger than a segment).
	payload := func(rng *rand.Rand, g, i int) []byte {
		if i%37 == 5 {
			return []byte{}
		}
		n := rng.IntN(3000)
		if i%61 == 0 {
			n = 40 << 10
		}
		p := binary.BigEndian.AppendUint32(nil, uint32(g))
		p = binary.BigEndian.AppendUint32(p, uint32(i))
		for range n {
			p = append(p, byte(rng.Uint32()))
		}
		return p
	}
	appended := make([][]headRec, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < perG; {
				// Even goroutines Append; odd ones AppendBatch 1 to 3 records.
				n := 1
				if g%2 == 1 {
					n = min(1+rng.IntN(3), perG-i)
				}
				var recs [][]byte
				for range n {
					recs = append(recs, payload(rng, g, i))
					i++
				}
				var seg uint64
				var err error
				if n == 1 && g%2 == 0 {
					seg, err = l.Append(ctx, recs[0])
				} else {
					seg, err = l.AppendBatch(ctx, recs)
				}
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range recs {
					appended[g] = append(appended[g], headRec{seg, bytes.Clone(r)})
				}
				// The caller may reuse rec once Append returned.
				for _, r := range recs {
					clear(r)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var want []headRec
	var wantSize int64
	for _, recs := range appended {
		for _, r := range recs {
			want = append(want, r)
			wantSize += framed(r.rec)
		}
	}
	lastSeg, segments, size := l.Segment(), l.Segments(), l.Size()
	if size != wantSize {
		t.Errorf("Size() = %d, want %d", size, wantSize)
	}
	if lastSeg < 10 {
		t.Errorf("Segment() = %d after %d bytes in segments of 32 KiB, want at least 10", lastSeg, wantSize)
	}
	if segments != int(lastSeg) {
		t.Errorf("Segments() = %d, want %d", segments, lastSeg)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l2, got := openTestHeadLog(t, dir, headLogOptions{SegmentSize: 32 << 10})
	if l2.Segment() != lastSeg+1 || l2.Segments() != segments+1 || l2.Size() != wantSize {
		t.Errorf("reopened: segment %d, segments %d, size %d; want %d, %d, %d",
			l2.Segment(), l2.Segments(), l2.Size(), lastSeg+1, segments+1, wantSize)
	}
	// Segments come in order.
	for i := 1; i < len(got); i++ {
		if got[i].seg < got[i-1].seg {
			t.Fatalf("replay went from segment %d back to %d", got[i-1].seg, got[i].seg)
		}
	}
	// Per goroutine, the records come in the order they were appended.
	empties, wantEmpties := 0, 0
	for i := range perG {
		if i%37 == 5 {
			wantEmpties += goroutines
		}
	}
	order := make([][]uint32, goroutines)
	for _, r := range got {
		if len(r.rec) == 0 {
			empties++
			continue
		}
		g := binary.BigEndian.Uint32(r.rec)
		order[g] = append(order[g], binary.BigEndian.Uint32(r.rec[4:]))
	}
	for g := range goroutines {
		var wantOrder []uint32
		for i := range perG {
			if i%37 == 5 {
				continue
			}
			wantOrder = append(wantOrder, uint32(i))
		}
		if !slices.Equal(order[g], wantOrder) {
			t.Errorf("goroutine %d: replayed record numbers %v, want %v", g, order[g], wantOrder)
		}
	}
	if empties != wantEmpties {
		t.Errorf("replayed %d empty records, want %d", empties, wantEmpties)
	}
	// Exactly the records appended, each in the segment Append reported.
	if !sameRecords(got, want) {
		t.Errorf("replayed %d records, appended %d: the (segment, record) sets differ", len(got), len(want))
	}
}

func TestHeadLogGroupCommit(t *testing.T) {
	const (
		goroutines = 32
		perG       = 1000
		records    = goroutines * perG
	)
	var syncs atomic.Int64
	l, _ := openTestHeadLog(t, t.TempDir(), headLogOptions{sync: func(f *os.File) error {
		if isSegment(f) {
			syncs.Add(1)
			// A device is slower than a CPU: let the appenders run while the
			// fsync is "in flight", as they would during a real one.
			runtime.Gosched()
		}
		return f.Sync()
	}})
	rec := make([]byte, 16)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				if _, err := l.Append(context.Background(), rec); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n := syncs.Load()
	t.Logf("%d records, %d fsyncs (%.1f records per fsync)", records, n, float64(records)/float64(n))
	if n < 1 || n > records/2 {
		t.Errorf("%d fsyncs for %d records from %d goroutines, want at most %d", n, records, goroutines, records/2)
	}
	if l.Size() != records*framed(rec) {
		t.Errorf("Size() = %d, want %d", l.Size(), records*framed(rec))
	}
}

// TestHeadLogGroupCommitShares makes the sharing exact: while the first fsync
// is held, 31 Appends arrive; they are written together and share one fsync.
func TestHeadLogGroupCommitShares(t *testing.T) {
	var syncs atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{sync: func(f *os.File) error {
		if isSegment(f) && syncs.Add(1) == 1 {
			close(entered)
			<-release
		}
		return f.Sync()
	}})
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := l.Append(ctx, []byte("first")); err != nil {
			t.Error(err)
		}
	})
	<-entered
	for i := range 31 {
		wg.Go(func() {
			if seg, err := l.Append(ctx, fmt.Appendf(nil, "r%02d", i)); err != nil || seg != 1 {
				t.Errorf("Append = %d, %v; want 1, nil", seg, err)
			}
		})
	}
	waitFor(l, func() bool { return len(l.pending) == 31 })
	close(release)
	wg.Wait()
	if n := syncs.Load(); n != 2 {
		t.Errorf("%d fsyncs for 32 records, 31 of which arrived during the first; want 2", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openTestHeadLog(t, dir, headLogOptions{})
	if len(got) != 32 || string(got[0].rec) != "first" {
		t.Errorf("replayed %d records, first %q; want 32, first %q", len(got), got[0].rec, "first")
	}
}

func TestHeadLogTornTail(t *testing.T) {
	recs := [][]byte{[]byte("alpha"), {}, []byte("gamma gamma"), bytes.Repeat([]byte{0}, 100), []byte("epsilon")}
	all := framed(recs...)
	lastStart := framed(recs[:4]...)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		intact int    // how many records survive
		reason string // in the Warn line
	}{
		{"partial payload", func(t *testing.T, path string) { truncateTo(t, path, all-3) }, 4, "partial record (4 payload bytes of 7)"},
		{"partial header", func(t *testing.T, path string) { truncateTo(t, path, lastStart+5) }, 4, "partial record header (5 of 8 bytes)"},
		{"bad checksum", func(t *testing.T, path string) { flipByte(t, path, all-1) }, 4, "checksum mismatch"},
		{"zero-filled end", func(t *testing.T, path string) { appendTo(t, path, make([]byte, 4096)) }, 5, "zero bytes where a record header should be"},
		{"garbage", func(t *testing.T, path string) {
			appendTo(t, path, []byte("\x05\x00\x00\x00\xde\xad\xbe\xefhello"))
		}, 5, "checksum mismatch"},
		{"huge length", func(t *testing.T, path string) { appendTo(t, path, []byte("\xff\xff\xff\xff\x00\x00\x00\x00")) }, 5, "record length 4294967295 over the limit"},
		{"length past the end", func(t *testing.T, path string) { appendTo(t, path, []byte("\x00\x10\x00\x00\x01\x02\x03\x04abc")) }, 5, "partial record (3 payload bytes of 4096)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openTestHeadLog(t, dir, headLogOptions{})
			for _, r := range recs {
				if seg, err := l.Append(context.Background(), r); err != nil || seg != 1 {
					t.Fatalf("Append = %d, %v", seg, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := segPath(dir, 1)
			tc.damage(t, path)

			var logs bytes.Buffer
			l2, got := openTestHeadLog(t, dir, headLogOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			want := recs[:tc.intact]
			checkReplay(t, got, 1, want)
			prefix := framed(want...)
			if size := fileSize(t, path); size != prefix {
				t.Errorf("segment 1 is %d bytes after open, want it truncated to %d", size, prefix)
			}
			if l2.Size() != prefix || l2.Segments() != 2 || l2.Segment() != 2 {
				t.Errorf("Size, Segments, Segment = %d, %d, %d; want %d, 2, 2", l2.Size(), l2.Segments(), l2.Segment(), prefix)
			}
			for _, s := range []string{"level=WARN", "segment=1", fmt.Sprintf("offset=%d ", prefix), "file=" + path, tc.reason} {
				if !strings.Contains(logs.String(), s) {
					t.Errorf("log does not contain %q:\n%s", s, logs.String())
				}
			}

			if seg, err := l2.Append(context.Background(), []byte("after")); err != nil || seg != 2 {
				t.Fatalf("Append after reopen = %d, %v; want 2, nil", seg, err)
			}
			if err := l2.Close(); err != nil {
				t.Fatal(err)
			}
			_, got = openTestHeadLog(t, dir, headLogOptions{})
			if len(got) != tc.intact+1 {
				t.Fatalf("replayed %d records, want %d", len(got), tc.intact+1)
			}
			checkReplay(t, got[:tc.intact], 1, want)
			checkReplay(t, got[tc.intact:], 2, [][]byte{[]byte("after")})
		})
	}
}

// checkReplay fails t unless got is exactly want, all in segment seg.
func checkReplay(t *testing.T, got []headRec, seg uint64, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].seg != seg || !bytes.Equal(got[i].rec, want[i]) {
			t.Errorf("record %d: segment %d, %q; want %d, %q", i, got[i].seg, got[i].rec, seg, want[i])
		}
	}
}

func truncateTo(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestHeadLogCorruptSegmentNotLast(t *testing.T) {
	recs := [][]byte{[]byte("one"), []byte("two"), []byte("three")}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"bad checksum", func(t *testing.T, path string) { flipByte(t, path, framed(recs[0])+headRecordHeader) },
			fmt.Sprintf("is corrupt at offset %d: checksum mismatch", framed(recs[0]))},
		{"partial record", func(t *testing.T, path string) { truncateTo(t, path, framed(recs...)-1) },
			fmt.Sprintf("is corrupt at offset %d: partial record (4 payload bytes of 5)", framed(recs[:2]...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openTestHeadLog(t, dir, headLogOptions{})
			ctx := context.Background()
			for _, r := range recs {
				if _, err := l.Append(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if seg, err := l.Roll(); err != nil || seg != 2 {
				t.Fatalf("Roll = %d, %v; want 2, nil", seg, err)
			}
			if _, err := l.Append(ctx, []byte("four")); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := segPath(dir, 1)
			tc.damage(t, path)
			sizeBefore := fileSize(t, path)

			_, err := openHeadLog(dir, headLogOptions{Logger: slog.New(slog.DiscardHandler)}, nil)
			if err == nil {
				t.Fatal("open succeeded, want an error about segment 1")
			}
			for _, s := range []string{"embedded: head log: " + path + " " + tc.want, "it is not the last segment", "truncate -s"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if size := fileSize(t, path); size != sizeBefore {
				t.Errorf("the failed open changed segment 1 from %d to %d bytes", sizeBefore, size)
			}
			if _, err := os.Stat(segPath(dir, 3)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed open created segment 3 (stat: %v)", err)
			}
		})
	}
}

func TestHeadLogReplayError(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{})
	if _, err := l.Append(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	boom := errors.New("boom")
	_, err := openHeadLog(dir, headLogOptions{Logger: slog.New(slog.DiscardHandler)}, func(uint64, []byte) error { return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), segPath(dir, 1)+", record at offset 0") {
		t.Errorf("open = %v, want the replay error, naming segment 1 and offset 0", err)
	}
}

func TestHeadLogRollAndTruncateBefore(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{})
	ctx := context.Background()
	appendAll := func(wantSeg uint64, recs ...string) {
		t.Helper()
		for _, r := range recs {
			if seg, err := l.Append(ctx, []byte(r)); err != nil || seg != wantSeg {
				t.Fatalf("Append(%q) = %d, %v; want %d, nil", r, seg, err, wantSeg)
			}
		}
	}
	appendAll(1, "a1", "a2")
	if seg, err := l.Roll(); err != nil || seg != 2 || l.Segment() != 2 {
		t.Fatalf("Roll = %d, %v (Segment %d); want 2, nil (2)", seg, err, l.Segment())
	}
	appendAll(2, "b1", "b2", "b3")
	if seg, err := l.Roll(); err != nil || seg != 3 {
		t.Fatalf("Roll = %d, %v; want 3, nil", seg, err)
	}
	appendAll(3, "c1")
	const seg1, seg2, seg3 = 2 * 10, 3 * 10, 10 // "xN" records take 8+2 bytes
	if l.Segments() != 3 || l.Size() != seg1+seg2+seg3 {
		t.Fatalf("Segments, Size = %d, %d; want 3, %d", l.Segments(), l.Size(), seg1+seg2+seg3)
	}
	for num, size := range map[uint64]int64{1: seg1, 2: seg2, 3: seg3} {
		if got := fileSize(t, segPath(dir, num)); got != size {
			t.Errorf("segment %d is %d bytes, want %d", num, got, size)
		}
	}

	if removed, err := l.TruncateBefore(1); err != nil || removed != 0 || l.Segments() != 3 {
		t.Errorf("TruncateBefore(1) = %d, %v (Segments %d); want 0, nil (3)", removed, err, l.Segments())
	}
	if removed, err := l.TruncateBefore(3); err != nil || removed != seg1+seg2 {
		t.Errorf("TruncateBefore(3) = %d, %v; want %d, nil", removed, err, seg1+seg2)
	}
	if l.Segments() != 1 || l.Size() != seg3 {
		t.Errorf("after TruncateBefore(3): Segments, Size = %d, %d; want 1, %d", l.Segments(), l.Size(), seg3)
	}
	for _, num := range []uint64{1, 2} {
		if _, err := os.Stat(segPath(dir, num)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("segment %d still there (stat: %v)", num, err)
		}
	}
	// Never the current segment, however far seg is.
	if removed, err := l.TruncateBefore(100); err != nil || removed != 0 || l.Segments() != 1 {
		t.Errorf("TruncateBefore(100) = %d, %v (Segments %d); want 0, nil (1)", removed, err, l.Segments())
	}
	appendAll(3, "c2")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l2, got := openTestHeadLog(t, dir, headLogOptions{})
	checkReplay(t, got, 3, [][]byte{[]byte("c1"), []byte("c2")})
	if l2.Segment() != 4 || l2.Segments() != 2 || l2.Size() != 20 {
		t.Errorf("reopened: Segment, Segments, Size = %d, %d, %d; want 4, 2, 20", l2.Segment(), l2.Segments(), l2.Size())
	}
	if removed, err := l2.TruncateBefore(4); err != nil || removed != 20 || l2.Segments() != 1 || l2.Size() != 0 {
		t.Errorf("TruncateBefore(4) = %d, %v (Segments %d, Size %d); want 20, nil (1, 0)", removed, err, l2.Segments(), l2.Size())
	}
}

// TestHeadLogTruncateWhileAppending truncates, rolls and reads the sizes
// while appends (and automatic rolls) go on: the bookkeeping stays exact and
// replay sees exactly the appended records of the segments that remain.
func TestHeadLogTruncateWhileAppending(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{SegmentSize: 1 << 10})
	var (
		mu       sync.Mutex
		appended []headRec
		wg       sync.WaitGroup
	)
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				rec := fmt.Appendf(nil, "g%d-%03d-%s", g, i, strings.Repeat("x", i%50))
				seg, err := l.Append(context.Background(), rec)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				appended = append(appended, headRec{seg, rec})
				mu.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	var truncs sync.WaitGroup
	truncs.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%7 == 0 {
				if _, err := l.Roll(); err != nil {
					t.Error(err)
				}
			}
			if _, err := l.TruncateBefore(l.Segment() - 1); err != nil {
				t.Error(err)
			}
			_, _ = l.Size(), l.Segments()
			runtime.Gosched()
		}
	})
	wg.Wait()
	close(stop)
	truncs.Wait()
	// The truncater may have rolled past every appended record; one more
	// keeps the replay check below from being empty.
	seg, err := l.Append(context.Background(), []byte("last"))
	if err != nil {
		t.Fatal(err)
	}
	appended = append(appended, headRec{seg, []byte("last")})

	nums, err := l.listSegments()
	if err != nil {
		t.Fatal(err)
	}
	var onDisk int64
	for _, n := range nums {
		onDisk += fileSize(t, segPath(dir, n))
	}
	if l.Segments() != len(nums) || l.Size() != onDisk || nums[len(nums)-1] != l.Segment() {
		t.Errorf("Segments, Size, Segment = %d, %d, %d; the directory has %d segments of %d bytes, the last %d",
			l.Segments(), l.Size(), l.Segment(), len(nums), onDisk, nums[len(nums)-1])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var want []headRec
	for _, r := range appended {
		if r.seg >= nums[0] {
			want = append(want, r)
		}
	}
	_, got := openTestHeadLog(t, dir, headLogOptions{})
	if !sameRecords(got, want) {
		t.Errorf("replayed %d records, want the %d appended to segments %d and later", len(got), len(want), nums[0])
	}
}

func TestHeadLogSegmentSize(t *testing.T) {
	dir := t.TempDir()
	// Records of 40 bytes take 48: a segment takes three (144 >= 100), then
	// the log rolls.
	l, _ := openTestHeadLog(t, dir, headLogOptions{SegmentSize: 100})
	ctx := context.Background()
	rec := make([]byte, 40)
	var segs []uint64
	for range 7 {
		seg, err := l.Append(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, seg)
	}
	if want := []uint64{1, 1, 1, 2, 2, 2, 3}; !slices.Equal(segs, want) {
		t.Errorf("Append segments %v, want %v", segs, want)
	}
	if l.Segment() != 3 || l.Segments() != 3 || l.Size() != 7*48 {
		t.Errorf("Segment, Segments, Size = %d, %d, %d; want 3, 3, %d", l.Segment(), l.Segments(), l.Size(), 7*48)
	}
	// A batch stays in one segment, however big.
	seg, err := l.AppendBatch(ctx, [][]byte{rec, rec, rec, rec})
	if err != nil || seg != 3 {
		t.Errorf("AppendBatch = %d, %v; want 3, nil", seg, err)
	}
	if got := fileSize(t, segPath(dir, 3)); got != 5*48 {
		t.Errorf("segment 3 is %d bytes, want %d", got, 5*48)
	}
	if l.Segment() != 4 {
		t.Errorf("Segment() = %d after segment 3 filled up, want 4", l.Segment())
	}
	if seg, err := l.AppendBatch(ctx, nil); err != nil || seg != 4 {
		t.Errorf("AppendBatch(nil) = %d, %v; want 4, nil", seg, err)
	}
}

func TestHeadLogNumbering(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"00000000000000000007.log", "notes.txt", "8.log", "00000000000000000009.log.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, got := openTestHeadLog(t, dir, headLogOptions{})
	if len(got) != 0 || l.Segment() != 8 || l.Segments() != 2 {
		t.Errorf("replayed %d, Segment %d, Segments %d; want 0, 8, 2", len(got), l.Segment(), l.Segments())
	}
	if _, err := os.Stat(segPath(dir, 8)); err != nil {
		t.Error(err)
	}

	// A directory that does not exist yet is created.
	nested := filepath.Join(t.TempDir(), "store", "head")
	l2, _ := openTestHeadLog(t, nested, headLogOptions{})
	if seg, err := l2.Append(context.Background(), []byte("x")); err != nil || seg != 1 {
		t.Errorf("Append = %d, %v; want 1, nil", seg, err)
	}
	if _, err := openHeadLog(dir, headLogOptions{SegmentSize: -1}, nil); err == nil ||
		!strings.Contains(err.Error(), "SegmentSize must not be negative") {
		t.Errorf("open with SegmentSize -1 = %v, want an error", err)
	}
}

func TestHeadLogFsyncFailure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"ENOSPC", syscall.ENOSPC, true},
		{"EIO", syscall.EIO, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failing atomic.Bool
			var syncs atomic.Int64
			dir := t.TempDir()
			l, _ := openTestHeadLog(t, dir, headLogOptions{sync: func(f *os.File) error {
				if isSegment(f) {
					syncs.Add(1)
					if failing.Load() {
						return tc.err
					}
				}
				return f.Sync()
			}})
			ctx := context.Background()
			if seg, err := l.Append(ctx, []byte("ok")); err != nil || seg != 1 {
				t.Fatalf("Append = %d, %v", seg, err)
			}
			failing.Store(true)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, tc.err) || errors.Is(err, kv.ErrUnavailable) != tc.unavailable {
					t.Errorf("%s = %v; want it to wrap %v, and kv.ErrUnavailable: %v", what, err, tc.err, tc.unavailable)
				}
			}
			seg, err := l.Append(ctx, []byte("failed"))
			check("Append during the failing fsync", err)
			if seg != 0 || !strings.Contains(err.Error(), "embedded: head log: fsync "+segPath(dir, 1)) {
				t.Errorf("Append = %d, %v; want 0 and an error naming the fsync of segment 1", seg, err)
			}
			// The disk recovers, but the log does not: what the file holds is unknown.
			failing.Store(false)
			_, err = l.Append(ctx, []byte("later"))
			check("Append after the failure", err)
			_, err = l.AppendBatch(ctx, [][]byte{[]byte("later")})
			check("AppendBatch after the failure", err)
			_, err = l.Roll()
			check("Roll after the failure", err)
			if n := syncs.Load(); n != 2 {
				t.Errorf("%d segment fsyncs, want 2 (none after the failure)", n)
			}
			check("Close", l.Close())

			// The failed record was written before its fsync failed (here the
			// data did reach the file), so replay sees it: a failed Append's
			// record may or may not come back.
			_, got := openTestHeadLog(t, dir, headLogOptions{})
			checkReplay(t, got, 1, [][]byte{[]byte("ok"), []byte("failed")})
		})
	}
}

func TestHeadLogClosed(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{})
	if _, err := l.Append(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := l.Append(ctx, []byte("y"))
	_, errBatch := l.AppendBatch(ctx, [][]byte{[]byte("y")})
	_, errEmpty := l.AppendBatch(ctx, nil)
	_, errRoll := l.Roll()
	_, errTrunc := l.TruncateBefore(10)
	for what, err := range map[string]error{"Append": err, "AppendBatch": errBatch, "AppendBatch(nil)": errEmpty, "Roll": errRoll, "TruncateBefore": errTrunc} {
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close = %v, want kv.ErrClosed", what, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	_, got := openTestHeadLog(t, dir, headLogOptions{})
	checkReplay(t, got, 1, [][]byte{[]byte("x")})
}

func TestHeadLogCancelledContext(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	seg, err := l.Append(ctx, []byte("cancelled"))
	if seg != 0 || !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "embedded: head log: append: ") {
		t.Errorf("Append with a cancelled ctx = %d, %v; want 0 and a wrapped context.Canceled", seg, err)
	}
	if _, err := l.AppendBatch(ctx, [][]byte{[]byte("cancelled")}); !errors.Is(err, context.Canceled) {
		t.Errorf("AppendBatch with a cancelled ctx = %v, want context.Canceled", err)
	}
	if _, err := l.Append(context.Background(), []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openTestHeadLog(t, dir, headLogOptions{})
	checkReplay(t, got, 1, [][]byte{[]byte("kept")})
}

// TestHeadLogAppendWaitsForWriter: while the writer is stuck in an fsync and
// the queue is full, an Append waits, and cancelling it then returns before
// its record is handed over; what was handed over is written.
func TestHeadLogAppendWaitsForWriter(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var syncs atomic.Int64
	dir := t.TempDir()
	l, _ := openTestHeadLog(t, dir, headLogOptions{maxPending: 100, sync: func(f *os.File) error {
		if isSegment(f) && syncs.Add(1) == 1 {
			close(entered)
			<-release
		}
		return f.Sync()
	}})
	bg := context.Background()
	a, b, c := []byte("a"), bytes.Repeat([]byte("b"), 80), bytes.Repeat([]byte("c"), 50)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := l.Append(bg, a); err != nil {
			t.Error(err)
		}
	})
	<-entered
	wg.Go(func() {
		if _, err := l.Append(bg, b); err != nil {
			t.Error(err)
		}
	})
	waitFor(l, func() bool { return l.pendingBytes == int(framed(b)) })
	ctx, cancel := context.WithCancel(bg)
	errC := make(chan error, 1)
	go func() {
		_, err := l.Append(ctx, c)
		errC <- err
	}()
	waitFor(l, func() bool { return l.space != nil }) // c waits for room
	cancel()
	if err := <-errC; !errors.Is(err, context.Canceled) {
		t.Errorf("Append waiting for room, cancelled = %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openTestHeadLog(t, dir, headLogOptions{})
	checkReplay(t, got, 1, [][]byte{a, b})
}

func TestHeadLogRecordTooLarge(t *testing.T) {
	l, _ := openTestHeadLog(t, t.TempDir(), headLogOptions{})
	_, err := l.Append(context.Background(), make([]byte, maxHeadRecord+1))
	if !errors.Is(err, kv.ErrInvalidArgument) || !strings.Contains(err.Error(), "record of 268435457 bytes (at most 268435456)") {
		t.Errorf("Append of 256 MiB + 1 = %v, want kv.ErrInvalidArgument", err)
	}
	if l.Size() != 0 {
		t.Errorf("Size() = %d after a refused record, want 0", l.Size())
	}
}

// BenchmarkHeadLogAppend appends 2 KiB records from 16 goroutines per CPU to a
// log on the temporary directory's disk, with real fsyncs.
func BenchmarkHeadLogAppend(b *testing.B) {
	var syncs atomic.Int64
	l, _ := openTestHeadLog(b, b.TempDir(), headLogOptions{sync: func(f *os.File) error {
		if isSegment(f) {
			syncs.Add(1)
		}
		return f.Sync()
	}})
	rec := make([]byte, 2<<10)
	b.SetBytes(int64(len(rec)))
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Append(context.Background(), rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/record")
}

// sameRecords reports whether got and want hold the same (segment, record)
// pairs, in any order; it sorts both.
func sameRecords(got, want []headRec) bool {
	cmpRec := func(a, b headRec) int {
		if a.seg != b.seg {
			return int(a.seg) - int(b.seg)
		}
		return bytes.Compare(a.rec, b.rec)
	}
	slices.SortFunc(want, cmpRec)
	slices.SortFunc(got, cmpRec)
	return slices.EqualFunc(got, want, func(a, b headRec) bool { return cmpRec(a, b) == 0 })
}
