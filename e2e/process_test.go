package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is a server subprocess (tsdb or Prometheus) whose output goes to a log
// file and is kept in memory, so the test can wait for log lines and show the tail
// when something fails.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	out     *logBuffer
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done
}

// startProcess starts bin with args, its output in dir/<name>.log. The process is
// killed when the test ends if it still runs, and its log tail is shown if the test
// failed.
func startProcess(t *testing.T, name, dir, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create %s: %v", logPath, err)
	}
	p := &process{name: name, logPath: logPath, out: &logBuffer{file: f}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	t.Logf("started %s (pid %d): %s %s", name, p.cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	go func() {
		p.waitErr = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("last lines of %s's log:\n%s", name, p.tail(40))
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// alive fails the test if the process has exited.
func (p *process) alive(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Fatalf("%s exited early (%v); last lines of its log:\n%s", p.name, p.waitErr, p.tail(40))
	}
}

// stop sends SIGTERM and waits for the process to exit, as long as it runs and its
// log grows or has grown within stallTimeout (Prometheus may flush its remote-write
// queues silently for up to flushDeadline); after that it kills the process. It
// returns an error unless the process exited with status 0 without being killed.
func (p *process) stop() error {
	if p.exited() {
		return fmt.Errorf("%s had exited already: %v", p.name, p.waitErr)
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	if err := p.waitUntil(p.name+" to exit after SIGTERM", 50*time.Millisecond, func() (bool, error) {
		return p.exited(), nil
	}); err != nil {
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%w; killed it", err)
	}
	if p.waitErr != nil {
		return fmt.Errorf("%s exited after SIGTERM with %v (after %s)", p.name, p.waitErr, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// tail returns the last n lines of the process' output.
func (p *process) tail(n int) string {
	lines := p.out.lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// logSize is the length of a process' output so far, in bytes: the progress of a
// process that is starting or stopping.
type logSize int

func (n logSize) String() string { return fmt.Sprintf("its log at %d bytes", int(n)) }

// waitUntil calls check every interval until it reports done. It keeps waiting as
// long as the process runs and its log grows (waitForProgress), and fails at once
// when check fails or when the process has exited without check reporting done.
func (p *process) waitUntil(what string, interval time.Duration, check func() (done bool, err error)) error {
	return waitForProgress(what, interval, func() (logSize, bool, error) {
		size := logSize(p.out.size())
		done, err := check()
		if err != nil || done {
			return size, done, err
		}
		if p.exited() {
			return size, false, fmt.Errorf("%s exited (%v)", p.name, p.waitErr)
		}
		return size, false, nil
	})
}

// waitForLine waits until a line of output satisfies match and returns it; it fails
// the test when the process exits first or its log stops growing for stallTimeout.
func (p *process) waitForLine(t *testing.T, what string, match func(line string) bool) string {
	t.Helper()
	var found string
	err := p.waitUntil(p.name+"'s "+what, 50*time.Millisecond, func() (bool, error) {
		for _, l := range p.out.lines() {
			if match(l) {
				found = l
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v; last lines of its log:\n%s", err, p.tail(40))
	}
	return found
}

// waitReady polls url until it answers 200; it fails the test when the process
// exits first or its log stops growing for stallTimeout.
func (p *process) waitReady(t *testing.T, url string) {
	t.Helper()
	last := ""
	err := p.waitUntil(p.name+" to be ready at "+url, 200*time.Millisecond, func() (bool, error) {
		// A poll that gets no answer in time just polls again.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true, nil
		}
		last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(body))
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v (last answer: %s); last lines of its log:\n%s", err, last, p.tail(40))
	}
}

// logBuffer is an io.Writer that appends to a file and keeps the output in memory.
type logBuffer struct {
	mu   sync.Mutex
	file *os.File
	buf  bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	b.file.Write(p) // best effort: the in-memory copy is what tests read
	return len(p), nil
}

// lines returns the complete lines written so far.
func (b *logBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	return strings.Split(s, "\n")
}

// size returns the number of bytes written so far.
func (b *logBuffer) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// contains reports whether the output so far contains s.
func (b *logBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

// freePort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
// Use it only for servers that cannot listen on port 0 and report the port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// httpGet fetches url and returns the body; a status other than 200 is an error.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s: %s", url, resp.Status, truncate(string(body), 500))
	}
	return body, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
