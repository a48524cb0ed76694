package embedded

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
)

// Free space. Pebble on a full disk does not fail a write: it retries its
// flushes and compactions, logs, and stalls every commit until space comes
// back, so a server on it answers nothing. The store keeps a reserve instead:
// a monitor reads the file system's free space every Options.SpaceCheckInterval,
// and while it is under Options.MinFreeBytes every write (Apply, Increment,
// CheckAndPut) and Ping fail at once with an error wrapping kv.ErrUnavailable
// that says how much is free — a 503 for remote write, which Prometheus
// retries, and /-/ready false — while reads go on. The reserve leaves Pebble
// room to flush what it holds; writes resume by themselves once space is freed.

// Defaults of the free-space reserve.
const (
	DefaultMinFreeBytes       = 256 << 20
	DefaultSpaceCheckInterval = time.Second
)

// spaceMonitor holds the last free-space reading.
type spaceMonitor struct {
	dir      string
	min      int64
	free     func(dir string) (int64, error)
	lowError atomic.Pointer[error] // nil: enough space
}

// freeBytes is the space available to unprivileged users on dir's file system.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// check reads the free space once and records whether it is under the reserve.
func (m *spaceMonitor) check() {
	free, err := m.free(m.dir)
	if err != nil || free >= m.min {
		m.lowError.Store(nil)
		return
	}
	e := fmt.Errorf("embedded: %s has %d bytes free, under the reserve of %d (--storage.min-free-bytes): "+
		"writes are refused until space is freed: %w", m.dir, free, m.min, kv.ErrUnavailable)
	m.lowError.Store(&e)
}

// err is the current low-space error, nil when there is enough space.
func (m *spaceMonitor) err() error {
	if m == nil {
		return nil
	}
	if e := m.lowError.Load(); e != nil {
		return *e
	}
	return nil
}

// run checks every interval until ctx ends.
func (m *spaceMonitor) run(ctx context.Context, interval time.Duration, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.check()
		}
	}
}
