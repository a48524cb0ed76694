// Package proc measures a server process from outside, as the benchmarks
// (bench/compare, bench/steady) do: its CPU time and peak RSS from /proc, when
// it has gone idle, and the disk its files take. Linux only.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every
// Linux architecture Go runs on (the kernel scales its internal HZ to it for /proc).
const clockTicks = 100

// CPUTime returns the CPU time (user + system) the process pid has used so far.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("proc: read stat of %d: %w", pid, err)
	}
	return parseStatCPU(b)
}

// parseStatCPU returns utime+stime from the contents of /proc/<pid>/stat (proc(5)):
// fields 14 and 15, counted after the command name, which is in parentheses and may
// itself hold spaces and parentheses (so the fields start after the last ')').
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc: stat %q: no ')' after the command", truncate(b))
	}
	// After ")": field 3 (state) is the first.
	f := strings.Fields(string(b[i+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("proc: stat %q: %d fields after the command, want more than %d", truncate(b), len(f), stime)
	}
	u, err := strconv.ParseUint(f[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("proc: stat utime %q: %w", f[utime], err)
	}
	s, err := strconv.ParseUint(f[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("proc: stat stime %q: %w", f[stime], err)
	}
	return time.Duration(u+s) * time.Second / clockTicks, nil
}

// ReadPidFile returns the pid in the file path (a start script's pid file:
// the number, maybe a newline).
func ReadPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("proc: pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("proc: pid file %s: %q: %w", path, b, err)
	}
	return pid, nil
}

// PeakRSS returns VmHWM, the process' peak resident set size, in bytes.
func PeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("proc: read status of %d: %w", pid, err)
	}
	return parseStatusKB(b, "VmHWM")
}

// parseStatusKB returns the field key ("VmHWM: 1234 kB") of /proc/<pid>/status in bytes.
func parseStatusKB(b []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != key {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("proc: status %s %q: want <n> kB", key, rest)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc: status %s %q: %w", key, rest, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("proc: status has no %s", key)
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Settle waits until the process uses under 5 % of a core for a second, at most
// limit, and returns its CPU time when that second began (the CPU it used until
// it went idle) and whether it went idle; at the limit, its CPU time then.
func Settle(ctx context.Context, pid int, limit time.Duration) (time.Duration, bool, error) {
	cpu, idle, err := SettleAll(ctx, []int{pid}, time.Second, limit)
	if err != nil {
		return 0, false, err
	}
	return cpu[0], idle, nil
}

// SettleAll waits until each of the processes pids has used under 5 % of a
// core over the last window (a JVM that wakes every few seconds for its
// background work needs a window longer than that), at most limit, polling
// every second (every window when shorter). It returns each one's CPU time
// when that window began (the CPU it used until they all went idle) and
// whether they went idle; at the limit, their CPU times then.
func SettleAll(ctx context.Context, pids []int, window, limit time.Duration) ([]time.Duration, bool, error) {
	step := min(window, time.Second)
	type sample struct {
		at  time.Time
		cpu []time.Duration
	}
	read := func() (sample, error) {
		s := sample{at: time.Now(), cpu: make([]time.Duration, len(pids))}
		for i, pid := range pids {
			var err error
			if s.cpu[i], err = CPUTime(pid); err != nil {
				return s, err
			}
		}
		return s, nil
	}
	first, err := read()
	if err != nil {
		return nil, false, err
	}
	history := []sample{first}
	deadline := first.at.Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(step):
		}
		now, err := read()
		if err != nil {
			return nil, false, err
		}
		history = append(history, now)
		// The newest sample at least a window old starts the window.
		start := -1
		for i, s := range history {
			if now.at.Sub(s.at) >= window-step/10 {
				start = i
			}
		}
		if start < 0 {
			continue
		}
		history = history[start:]
		idle := true
		for i := range pids {
			if now.cpu[i]-history[0].cpu[i] >= window/20 {
				idle = false
			}
		}
		if idle {
			return history[0].cpu, true, nil
		}
	}
	return history[len(history)-1].cpu, false, nil
}

// DirBytes is the apparent size of the regular files under dir.
func DirBytes(dir string) (int64, error) {
	var total int64
	err := WalkFileSizes(dir, func(_ string, _ fs.DirEntry, size int64) { total += size })
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}

// WalkFileSizes calls fn with the size of every regular file under dir. Files
// removed while the walk runs (a compaction, an archived WAL segment) are
// skipped, not errors.
func WalkFileSizes(dir string, fn func(path string, d fs.DirEntry, size int64)) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(path, d, info.Size())
		return nil
	})
}
