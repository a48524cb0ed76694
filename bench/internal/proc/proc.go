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
// limit, and returns its CPU time then and whether it went idle.
func Settle(ctx context.Context, pid int, limit time.Duration) (time.Duration, bool, error) {
	deadline := time.Now().Add(limit)
	prev, err := CPUTime(pid)
	if err != nil {
		return 0, false, err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := CPUTime(pid)
		if err != nil {
			return 0, false, err
		}
		if now-prev < 50*time.Millisecond {
			return now, true, nil
		}
		prev = now
	}
	return prev, false, nil
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
