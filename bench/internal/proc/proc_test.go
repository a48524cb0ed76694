package proc

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStatCPUReadsUtimePlusStime(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want time.Duration
	}{
		{"a plain command", "1234 (tsdb) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 12 0 100 0 0",
			2800 * time.Millisecond},
		{"a command with spaces and parentheses", "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0",
			100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.stat))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseStatCPURejectsTruncatedStat(t *testing.T) {
	for _, stat := range []string{"", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a 3 0"} {
		if _, err := parseStatCPU([]byte(stat)); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded, want an error", stat)
		}
	}
}

func TestCPUTimeOfThisProcessGrows(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for x := 0; time.Now().Before(deadline); x++ {
		if now, err := CPUTime(os.Getpid()); err != nil {
			t.Fatal(err)
		} else if now > before {
			return
		}
	}
	t.Errorf("CPU time stayed at %s after 5 s of spinning", before)
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\ttsdb\nVmPeak:\t  900 kB\nVmHWM:\t   91234 kB\nVmRSS:\t   80000 kB\n"
	got, err := parseStatusKB([]byte(status), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(91234 * 1024); got != want {
		t.Errorf("got %d, want %d", got, want)
	}
	if _, err := parseStatusKB([]byte("Name:\tx\n"), "VmHWM"); err == nil {
		t.Error("a status without VmHWM parsed, want an error")
	}
}

func TestSettleAllReturnsOnceEveryProcessIsIdle(t *testing.T) {
	var pids []int
	for range 2 {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skipf("no sleep command: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	cpu, idle, err := SettleAll(context.Background(), pids, 200*time.Millisecond, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !idle || len(cpu) != 2 {
		t.Errorf("SettleAll of two sleeping processes = %v, idle %v; want two CPU times, idle", cpu, idle)
	}
}
