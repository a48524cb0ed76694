package embedded

// The head log: the write-ahead log that makes the in-memory head durable.
//
// Cells of some column families are kept in memory (the head) instead of being
// written to Pebble one by one; what makes them survive a crash is this log. The
// head appends one record per write, the log returns once the record is fsynced,
// and on the next open the log replays every record so that the head can be
// rebuilt. When the head has flushed what a segment holds into Pebble, it
// deletes that segment and those before it (TruncateBefore). The log does not
// know what a record means: to it a record is an opaque byte string.
//
// # On-disk format
//
// The log is a directory (<store>/head) of segment files. A segment is named by
// its number, decimal, zero-padded to 20 digits (the width of the largest
// uint64), with the extension .log:
//
//	00000000000000000001.log
//	00000000000000000002.log
//
// so that names sort as numbers do. Numbers start at 1 and only grow: every
// open starts a new segment numbered one more than the largest there is, and a
// roll starts the next one. Files whose names do not have that form are
// ignored. A segment has no header; it is a sequence of records, each
//
//	+-----------------+-----------------+--------------------+
//	| length (uint32) | crc (uint32)    | payload            |
//	| little endian   | little endian   | length bytes       |
//	+-----------------+-----------------+--------------------+
//
// length is the payload's length in bytes, at most maxHeadRecord (256 MiB).
// crc is the CRC-32C (Castagnoli) of the 4 length bytes followed by the
// payload. It covers the length as well as the payload so that a run of zero
// bytes (space a file system allocated but whose data never reached the disk
// before a crash) does not read as a series of valid empty records: the CRC-32C
// of an empty payload alone is 0, but that of four zero length bytes is not.
//
// A record is intact when its 8 header bytes and its length payload bytes are
// all in the file and the crc matches. Replay reads each segment from the start
// and stops at the first record that is not intact. In the last segment that is
// the torn tail of a crash (a partial record, or space that was never written),
// expected and harmless: those records were never acknowledged, because a
// record is acknowledged only after its fsync. The tail is cut off (the file is
// truncated to the last intact record) and reported at Warn. In any other
// segment it is corruption: a segment is fsynced completely before the next one
// is created, so records after the damage were acknowledged and would be lost
// silently; the open fails and says what to do.
//
// A change of this format needs a new file extension (or a header), so that an
// old binary cannot misread a new log.

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hbtsdb/hbtsdb/kv"
)

const (
	// defaultHeadSegmentSize is headLogOptions.SegmentSize's default: big enough
	// that rolls (a file creation and a directory fsync) are rare, small enough
	// that TruncateBefore frees space in useful steps.
	defaultHeadSegmentSize = 64 << 20
	// maxHeadRecord is the largest payload a record may have. It bounds what
	// replay has to allocate for one record, and no sane head write comes close.
	maxHeadRecord = 256 << 20
	// headRecordHeader is the size of a record's header: length and crc.
	headRecordHeader = 8
	// defaultHeadMaxPending bounds the bytes of records handed to the log that
	// the writer has not taken yet. Appends wait (and can be cancelled) while it
	// is reached, so a slow disk pushes back on writers instead of the log
	// buffering without limit.
	defaultHeadMaxPending = 64 << 20
	// headSegmentExt is the extension of segment files; headSegmentDigits the
	// width of their zero-padded number.
	headSegmentExt    = ".log"
	headSegmentDigits = 20
	// headWriteBuffer is the size of the writer's buffer: small records of one
	// group are written with few write calls; a large one goes straight through.
	headWriteBuffer = 256 << 10
	// headReadBuffer is the size of the buffered reader replay streams a
	// segment through.
	headReadBuffer = 256 << 10
)

// castagnoli is the CRC-32C table records are checksummed with (hardware
// accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// headLogOptions tunes a headLog. Zero values take the defaults.
type headLogOptions struct {
	SegmentSize int64        // roll to a new segment once the current one holds at least this many bytes [64 MiB]
	Logger      *slog.Logger // [slog.Default()]

	// sync makes a file's (or directory's) data durable [(*os.File).Sync]. Tests
	// replace it to count fsyncs or make them fail.
	sync func(*os.File) error
	// maxPending is how many bytes of handed-over records may wait for the
	// writer before Appends wait [64 MiB]. Tests make it small.
	maxPending int
}

// headLog is the head's write-ahead log: a directory of segment files that
// records are appended to with group commit.
//
// One writer goroutine owns the current segment file. Append frames its record
// (copying it), queues it and waits; the writer takes everything queued at
// once, writes it, fsyncs once and wakes the Appends it covered. While that
// fsync is in flight new Appends queue up and share the next one, so the fsync
// rate is bounded by the disk's fsync latency, not by the number of writers,
// and a lone writer still pays just one fsync per record.
type headLog struct {
	dir        string
	segSize    int64
	maxPending int
	logger     *slog.Logger
	sync       func(*os.File) error

	current atomic.Uint64 // the segment appends go to; written by the writer (and open)
	exited  chan struct{} // closed when the writer has returned

	mu           sync.Mutex
	work         *sync.Cond    // signalled when pending grows or the log closes
	pending      []*headLogReq // handed to the writer, not taken yet
	spare        []*headLogReq // the writer's last batch, reused as pending
	pendingBytes int           // bytes of records in pending
	space        chan struct{} // closed when the writer takes pending; nil unless an Append waits
	closed       bool          // Close was called: no more requests
	err          error         // the write or fsync error that made the log unusable
	segs         []headSegment // every segment file, oldest first; the last is current

	truncMu sync.Mutex // serializes TruncateBefore

	writerState headWriter // owned by the writer goroutine (and open, before it starts)
	closeErr    error      // what Close returns, set by the writer before it exits

	replayedRecs int   // records replayed at open, for the open log line
	replayedSize int64 // bytes replayed at open
}

// headSegment is one segment file and its size in bytes.
type headSegment struct {
	num  uint64
	size int64
}

// headWriter is the state only the writer goroutine touches (and open, before
// it starts).
type headWriter struct {
	f       *os.File      // the current segment; nil once the log failed or closed
	w       *bufio.Writer // buffers writes to f
	size    int64         // bytes written to f, buffered ones included
	dirty   bool          // written since the last fsync
	failed  error         // the error that made the log unusable (mirrors headLog.err)
	waiting []*headLogReq // written since the last fsync: settled by the next one
}

// headLogReq is one Append, AppendBatch or Roll handed to the writer.
type headLogReq struct {
	data []byte // the framed records; nil for a roll
	roll bool   // start a new segment instead of writing

	done chan struct{} // closed when seg and err are set
	seg  uint64        // the segment the records are in (the new one for a roll)
	err  error
}

// finish settles r.
func (r *headLogReq) finish(seg uint64, err error) {
	r.seg, r.err = seg, err
	close(r.done)
}

// openHeadLog opens (creating if needed) the log in dir (e.g. <store>/head), calls replay
// for every intact record of every segment in order (oldest segment first, records in the
// order they were appended), with the segment number each record is in, then opens a NEW
// segment for appends (never appends to a segment from before the open). A torn or corrupt
// tail of the LAST segment (partial record, bad checksum, zero-filled end) is where replay
// stops: it is truncated away and logged at Warn with the segment and offset; corruption in
// a segment that is not the last is an error (wrap with context, say which file and offset
// and what to do). replay's error aborts the open.
//
// rec is only valid during the call: replay reuses its buffer for the next
// record (so that a segment streams through a bounded amount of memory), so a
// replay function that keeps bytes of rec must copy them. replay may be nil.
//
// A record whose Append failed may still be replayed (it may have reached the
// disk before the failure), so what the head does with a record must be
// idempotent.
func openHeadLog(dir string, opts headLogOptions, replay func(seg uint64, rec []byte) error) (*headLog, error) {
	if opts.SegmentSize < 0 {
		return nil, fmt.Errorf("embedded: head log: SegmentSize must not be negative (0 means the default, %d), got %d",
			defaultHeadSegmentSize, opts.SegmentSize)
	}
	l := &headLog{
		dir:        dir,
		segSize:    cmp.Or(opts.SegmentSize, defaultHeadSegmentSize),
		maxPending: cmp.Or(opts.maxPending, defaultHeadMaxPending),
		logger:     opts.Logger,
		sync:       opts.sync,
		exited:     make(chan struct{}),
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if l.sync == nil {
		l.sync = (*os.File).Sync
	}
	l.work = sync.NewCond(&l.mu)

	if err := l.makeDir(); err != nil {
		return nil, err
	}
	nums, err := l.listSegments()
	if err != nil {
		return nil, err
	}
	for i, num := range nums {
		size, err := l.replaySegment(num, i == len(nums)-1, replay)
		if err != nil {
			return nil, err
		}
		l.segs = append(l.segs, headSegment{num: num, size: size})
	}

	next := uint64(1)
	if len(nums) > 0 {
		next = nums[len(nums)-1] + 1
	}
	f, err := l.createSegment(next)
	if err != nil {
		return nil, err
	}
	l.segs = append(l.segs, headSegment{num: next})
	l.current.Store(next)
	l.writerState = headWriter{f: f, w: bufio.NewWriterSize(f, headWriteBuffer)}

	l.logger.Debug("embedded: head log opened", "dir", dir, "segments", len(nums),
		"records", l.replayedRecs, "bytes", l.replayedSize, "segment", next)
	go l.run()
	return l, nil
}

// makeDir creates the log's directory if it does not exist, and then fsyncs
// its parent so that the new directory survives a crash along with the
// segments about to be created in it.
func (l *headLog) makeDir() error {
	if _, err := os.Stat(l.dir); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return headIOError("stat", l.dir, err)
	}
	if err := os.MkdirAll(l.dir, dirMode); err != nil {
		return headIOError("create directory", l.dir, err)
	}
	return l.syncDir(filepath.Dir(l.dir))
}

// listSegments returns the numbers of the segment files in the directory,
// ascending.
func (l *headLog) listSegments() ([]uint64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, headIOError("list", l.dir, err)
	}
	var nums []uint64
	for _, e := range entries {
		num, ok := parseHeadSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		nums = append(nums, num)
	}
	slices.Sort(nums)
	return nums, nil
}

// headSegmentName is the file name of segment num.
func headSegmentName(num uint64) string {
	return fmt.Sprintf("%0*d%s", headSegmentDigits, num, headSegmentExt)
}

// parseHeadSegmentName returns the number of a segment file name, and false
// for a name that is not one (exactly 20 digits, then .log).
func parseHeadSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, headSegmentExt)
	if !ok || len(digits) != headSegmentDigits {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	num, err := strconv.ParseUint(digits, 10, 64)
	return num, err == nil
}

// path is the path of segment num.
func (l *headLog) path(num uint64) string {
	return filepath.Join(l.dir, headSegmentName(num))
}

// replaySegment streams segment num through replay and returns its size after
// replay: the end of its last intact record. last says whether it is the last
// segment, whose torn tail is cut off rather than an error.
func (l *headLog) replaySegment(num uint64, last bool, replay func(uint64, []byte) error) (int64, error) {
	path := l.path(num)
	flag := os.O_RDONLY
	if last {
		flag = os.O_RDWR // to truncate a torn tail
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return 0, headIOError("open", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, headIOError("stat", path, err)
	}
	fileSize := st.Size()

	r := bufio.NewReaderSize(f, headReadBuffer)
	var (
		hdr  [headRecordHeader]byte
		buf  []byte
		off  int64  // where the record being read starts
		torn string // why replay stopped before the end of the file
	)
	for {
		n, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			break
		}
		if err == io.ErrUnexpectedEOF {
			torn = fmt.Sprintf("partial record header (%d of %d bytes)", n, headRecordHeader)
			break
		}
		if err != nil {
			return 0, headIOError("read", path, err)
		}
		length := binary.LittleEndian.Uint32(hdr[0:4])
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		if hdr == [headRecordHeader]byte{} {
			torn = "zero bytes where a record header should be (space that was never written)"
			break
		}
		if length > maxHeadRecord {
			torn = fmt.Sprintf("record length %d over the limit of %d bytes", length, maxHeadRecord)
			break
		}
		if end := off + headRecordHeader + int64(length); end > fileSize {
			torn = fmt.Sprintf("partial record (%d payload bytes of %d)", fileSize-off-headRecordHeader, length)
			break
		}
		buf = slices.Grow(buf[:0], int(length))[:length]
		if _, err := io.ReadFull(r, buf); err != nil {
			// The size was checked against the file's: it shrank under us.
			return 0, headIOError("read", path, err)
		}
		if crc := crc32.Update(crc32.Checksum(hdr[0:4], castagnoli), castagnoli, buf); crc != sum {
			torn = fmt.Sprintf("checksum mismatch (record says %08x, payload is %08x)", sum, crc)
			break
		}
		if replay != nil {
			if err := replay(num, buf); err != nil {
				return 0, fmt.Errorf("embedded: head log: replay %s, record at offset %d: %w", path, off, err)
			}
		}
		off += headRecordHeader + int64(length)
		l.replayedRecs++
	}
	l.replayedSize += off
	if torn == "" {
		return off, nil
	}
	if !last {
		return 0, fmt.Errorf("embedded: head log: %s is corrupt at offset %d: %s; it is not the last segment, "+
			"so the records after that offset were acknowledged and would be lost: restore the file from a backup, "+
			"or accept losing them by truncating it to %d bytes (truncate -s %d %s) and restarting",
			path, off, torn, off, off, path)
	}
	if err := f.Truncate(off); err != nil {
		return 0, headIOError("truncate torn tail of", path, err)
	}
	if err := l.sync(f); err != nil {
		return 0, headIOError("fsync", path, err)
	}
	l.logger.Warn("embedded: head log: cut off the torn tail of the last segment (usually a crash during "+
		"a write, whose records were never acknowledged)",
		"segment", num, "file", path, "offset", off, "dropped_bytes", fileSize-off, "reason", torn)
	return off, nil
}

// createSegment creates the empty file of segment num and fsyncs the
// directory, so that the file survives a crash: otherwise records fsynced into
// it could vanish with its directory entry.
func (l *headLog) createSegment(num uint64) (*os.File, error) {
	path := l.path(num)
	// O_EXCL: numbers only grow, so the file existing means something is wrong.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return nil, headIOError("create segment", path, err)
	}
	if err := l.syncDir(l.dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// syncDir fsyncs directory dir, making the creation or removal of the files
// in it durable.
func (l *headLog) syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return headIOError("open directory", dir, err)
	}
	err = l.sync(d)
	if cerr := d.Close(); err == nil && cerr != nil {
		return headIOError("close directory", dir, cerr)
	}
	if err != nil {
		return headIOError("fsync directory", dir, err)
	}
	return nil
}

// headIOError wraps err, which op on path returned, with context. Running out
// of disk space also wraps kv.ErrUnavailable, so that a write that failed for
// that reason is answered with a 503 and retried rather than dropped.
func headIOError(op, path string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("embedded: head log: %s %s: %w (%w)", op, path, err, kv.ErrUnavailable)
	}
	return fmt.Errorf("embedded: head log: %s %s: %w", op, path, err)
}

// unusable wraps the error that made the log unusable, for the requests that
// come after it.
func unusable(err error) error {
	return fmt.Errorf("embedded: head log: unusable since an earlier write failed "+
		"(the state of the file is unknown; restart to replay the log): %w", err)
}

// Append writes rec (copying it; the caller may reuse rec after Append returns) and returns
// once it is durably on disk (written and fsynced) — or an error, in which case the caller must
// assume the record is not stored. Group commit: concurrent Appends that arrive while an fsync
// is in flight are written together and share the next fsync, so fsyncs per second stay bounded
// however many goroutines append. It returns the number of the segment holding the record.
// ctx cancellation before the record is handed to the writer returns ctx's error; after that
// Append waits for the fsync result (do not leave a record half-acknowledged).
//
// A record larger than 256 MiB is refused with an error wrapping
// kv.ErrInvalidArgument. The record is handed over at once unless 64 MiB of
// records already wait for the writer (a disk slower than the writers); only
// then can ctx interrupt the wait.
func (l *headLog) Append(ctx context.Context, rec []byte) (seg uint64, err error) {
	return l.AppendBatch(ctx, [][]byte{rec})
}

// AppendBatch is Append for several records that must all be durable together (one fsync
// covers them all); they land in one segment, in order.
//
// An empty batch writes nothing and returns the current segment.
func (l *headLog) AppendBatch(ctx context.Context, recs [][]byte) (seg uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("embedded: head log: append: %w", err)
	}
	size := 0
	for _, rec := range recs {
		if len(rec) > maxHeadRecord {
			return 0, fmt.Errorf("embedded: head log: append: %w: record of %d bytes (at most %d)",
				kv.ErrInvalidArgument, len(rec), maxHeadRecord)
		}
		size += headRecordHeader + len(rec)
	}
	if len(recs) == 0 {
		l.mu.Lock()
		defer l.mu.Unlock()
		if err := l.usable(); err != nil {
			return 0, err
		}
		return l.current.Load(), nil
	}
	// Framing here copies rec, and computes the checksums in the appending
	// goroutines rather than in the one writer.
	data := make([]byte, 0, size)
	for _, rec := range recs {
		data = appendHeadRecord(data, rec)
	}
	req := &headLogReq{data: data, done: make(chan struct{})}
	if err := l.enqueue(ctx, req); err != nil {
		return 0, err
	}
	<-req.done
	return req.seg, req.err
}

// appendHeadRecord appends rec, framed, to dst.
func appendHeadRecord(dst, rec []byte) []byte {
	var length [4]byte
	binary.LittleEndian.PutUint32(length[:], uint32(len(rec)))
	crc := crc32.Update(crc32.Checksum(length[:], castagnoli), castagnoli, rec)
	dst = append(dst, length[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return append(dst, rec...)
}

// usable returns why the log takes no more requests, or nil. l.mu is held.
func (l *headLog) usable() error {
	if l.closed {
		return fmt.Errorf("embedded: head log: %w", kv.ErrClosed)
	}
	if l.err != nil {
		return unusable(l.err)
	}
	return nil
}

// enqueue hands req to the writer, waiting while the bytes waiting for it are
// at their bound (a request is always let in when nothing waits, however big).
// ctx interrupts only that wait: once req is queued it will be written.
func (l *headLog) enqueue(ctx context.Context, req *headLogReq) error {
	for {
		l.mu.Lock()
		if err := l.usable(); err != nil {
			l.mu.Unlock()
			return err
		}
		if l.pendingBytes == 0 || l.pendingBytes+len(req.data) <= l.maxPending {
			l.pending = append(l.pending, req)
			l.pendingBytes += len(req.data)
			l.work.Signal()
			l.mu.Unlock()
			return nil
		}
		if l.space == nil {
			l.space = make(chan struct{})
		}
		space := l.space
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded: head log: append: %w", ctx.Err())
		case <-space:
		}
	}
}

// Segment is the number of the segment appends currently go to.
func (l *headLog) Segment() uint64 {
	return l.current.Load()
}

// Roll closes the current segment and starts a new one, returning the new one's number.
//
// Appends handed over before Roll land in segments before the new one, so a
// caller that rolls and then flushes what it had appended can TruncateBefore
// the new segment afterwards.
func (l *headLog) Roll() (uint64, error) {
	req := &headLogReq{roll: true, done: make(chan struct{})}
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	l.pending = append(l.pending, req) // not bounded by maxPending: it carries no data
	l.work.Signal()
	l.mu.Unlock()
	<-req.done
	return req.seg, req.err
}

// TruncateBefore deletes every segment whose number is < seg (never the current one), and
// fsyncs the directory. It returns how many bytes it removed.
//
// It does not wait for appends: the segments it deletes are no longer written.
// On an error it returns what it removed before it.
func (l *headLog) TruncateBefore(seg uint64) (removed int64, err error) {
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, fmt.Errorf("embedded: head log: truncate: %w", kv.ErrClosed)
	}
	cur := l.current.Load()
	var doomed []headSegment
	for _, s := range l.segs {
		if s.num < seg && s.num < cur {
			doomed = append(doomed, s)
		}
	}
	l.mu.Unlock()
	if len(doomed) == 0 {
		return 0, nil
	}

	var gone int
	for _, s := range doomed {
		path := l.path(s.num)
		if err = os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			err = headIOError("remove segment", path, err)
			break
		}
		err = nil
		removed += s.size
		gone++
	}
	l.mu.Lock()
	// doomed are the oldest segments, in order: the first gone of l.segs.
	l.segs = slices.Delete(l.segs, 0, gone)
	l.mu.Unlock()
	if serr := l.syncDir(l.dir); err == nil {
		err = serr
	}
	l.logger.Debug("embedded: head log: truncated", "before", seg, "segments", gone, "bytes", removed)
	return removed, err
}

// Size is the total bytes of all segment files of the log; Segments how many there are.
func (l *headLog) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Segments is the number of segment files of the log.
func (l *headLog) Segments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segs)
}

// Close flushes and fsyncs what is pending, then closes the log. Appends after Close fail
// with an error wrapping kv.ErrClosed.
//
// It returns the error that made the log unusable, if one did (what was
// pending could then not be made durable), or the error closing the file. A
// second Close returns the same.
func (l *headLog) Close() error {
	l.mu.Lock()
	l.closed = true
	l.work.Signal()
	l.mu.Unlock()
	<-l.exited
	return l.closeErr
}

// run is the writer goroutine: it takes what is pending, writes it, fsyncs
// and settles the requests, until the log is closed and nothing is pending.
func (l *headLog) run() {
	defer close(l.exited)
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && !l.closed {
			l.work.Wait()
		}
		batch := l.pending
		l.pending, l.spare = l.spare[:0], nil
		l.pendingBytes = 0
		if l.space != nil {
			close(l.space)
			l.space = nil
		}
		closing := l.closed
		l.mu.Unlock()

		if len(batch) == 0 && closing {
			l.closeErr = l.finish()
			return
		}
		l.process(batch)
		clear(batch)
		l.mu.Lock()
		l.spare = batch[:0]
		l.mu.Unlock()
	}
}

// process writes the requests of batch in order and fsyncs once at the end;
// a roll (asked for, or because the segment is full) fsyncs the segment it
// leaves. Each request is settled with the result of the fsync that covers it.
func (l *headLog) process(batch []*headLogReq) {
	w := &l.writerState
	for _, r := range batch {
		if w.failed != nil {
			r.finish(0, unusable(w.failed))
			continue
		}
		if r.roll || w.size >= l.segSize {
			if err := l.roll(); err != nil {
				l.fail(err)
				r.finish(0, err)
				continue
			}
			if r.roll {
				r.finish(l.current.Load(), nil)
				continue
			}
		}
		if _, err := w.w.Write(r.data); err != nil {
			err = headIOError("write", w.f.Name(), err)
			l.fail(err) // settles the requests written before r
			r.finish(0, err)
			continue
		}
		w.size += int64(len(r.data))
		w.dirty = true
		r.seg = l.current.Load()
		w.waiting = append(w.waiting, r)
	}
	switch {
	case w.failed != nil:
	case w.size >= l.segSize:
		// Roll now rather than at the next write, so that when these Appends
		// return, Segment is already the segment the next one goes to.
		if err := l.roll(); err != nil {
			l.fail(err)
		}
	default:
		if err := l.syncSegment(); err != nil {
			l.fail(err)
			return
		}
		l.settle(nil)
	}
}

// syncSegment flushes and fsyncs the current segment if anything was written
// since the last fsync. On success the caller settles the waiting requests;
// on an error fail does, with the error.
func (l *headLog) syncSegment() error {
	w := &l.writerState
	if !w.dirty {
		return nil
	}
	if err := w.w.Flush(); err != nil {
		return headIOError("write", w.f.Name(), err)
	}
	l.mu.Lock()
	l.segs[len(l.segs)-1].size = w.size
	l.mu.Unlock()
	if err := l.sync(w.f); err != nil {
		return headIOError("fsync", w.f.Name(), err)
	}
	w.dirty = false
	return nil
}

// settle finishes the requests waiting for an fsync with its result: their
// segment, or err.
func (l *headLog) settle(err error) {
	w := &l.writerState
	for _, r := range w.waiting {
		if err != nil {
			r.finish(0, err)
		} else {
			r.finish(r.seg, nil)
		}
	}
	clear(w.waiting)
	w.waiting = w.waiting[:0]
}

// roll fsyncs and closes the current segment and creates the next one. The
// requests written to the old segment are settled once it is fsynced and the
// new one is current (or failed to be created: they are durable either way).
func (l *headLog) roll() error {
	w := &l.writerState
	if err := l.syncSegment(); err != nil {
		return err
	}
	defer l.settle(nil)
	old := w.f
	w.f = nil
	if err := old.Close(); err != nil {
		// Its data is fsynced; a close error cannot lose it.
		l.logger.Warn("embedded: head log: close segment", "file", old.Name(), "err", err)
	}
	next := l.current.Load() + 1
	f, err := l.createSegment(next)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	w.w.Reset(f)
	l.mu.Lock()
	l.segs = append(l.segs, headSegment{num: next})
	l.mu.Unlock()
	l.current.Store(next)
	return nil
}

// fail makes the log unusable: after a failed write or fsync what the file
// holds is unknown (Linux may drop the dirty pages and report the error only
// once), so no later fsync could vouch for it. Later requests fail with err.
func (l *headLog) fail(err error) {
	w := &l.writerState
	if w.failed != nil {
		return
	}
	w.failed = err
	l.settle(err)
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
	l.logger.Error("embedded: head log: unusable until restart: appends fail from now on", "err", err)
}

// finish is the writer's last act: everything it took was fsynced in
// process, so it closes the file and returns Close's result.
func (l *headLog) finish() error {
	w := &l.writerState
	var err error
	if w.f != nil {
		if cerr := w.f.Close(); cerr != nil && w.failed == nil {
			err = headIOError("close", w.f.Name(), cerr)
		}
		w.f = nil
	}
	if w.failed != nil {
		return unusable(w.failed)
	}
	return err
}
