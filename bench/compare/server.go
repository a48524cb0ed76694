package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// serverKind is one of the servers compared: how to start it on a data directory and a
// loopback port, how to ask whether it is ready, and how to ask it to flush.
type serverKind struct {
	name  string // the column header, e.g. "Prometheus v0.316.0 receiver"
	short string // for progress lines and file names: tsdb, prometheus, victoriametrics
	bin   string
	args  func(dir, addr string) []string
	ready string // a path answering 200 once the server takes writes and queries
	flush string // a path that flushes buffered data; "" when there is none
	// flushDelay is how long after the flush its data is on disk: the disk measure
	// after the ingest waits for it.
	flushDelay time.Duration
	isPeer     bool // counts for the ratio column's best peer
	prepare    func(dir string) error
}

// running is a started server.
type running struct {
	kind *serverKind
	cmd  *exec.Cmd
	base string // http://127.0.0.1:<port>
	dir  string
	log  *os.File
	done chan struct{}
	err  error // the Wait error, once done is closed
}

// freeAddr returns a loopback address with a port nobody listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("server: find a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("server: find a free port: %w", err)
	}
	return addr, nil
}

// start runs k on the fresh data directory dir, its output going to logPath, and waits
// up to timeout until it is ready.
func (k *serverKind) start(ctx context.Context, dir, logPath string, timeout time.Duration) (*running, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: create data directory: %w", k.short, err)
	}
	if k.prepare != nil {
		if err := k.prepare(dir); err != nil {
			return nil, fmt.Errorf("%s: prepare %s: %w", k.short, dir, err)
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: create log: %w", k.short, err)
	}
	cmd := exec.Command(k.bin, k.args(dir, addr)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: start %s: %w", k.short, k.bin, err)
	}
	r := &running{kind: k, cmd: cmd, base: "http://" + addr, dir: dir, log: logf, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	if err := r.waitReady(ctx, timeout); err != nil {
		r.stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", k.short, err, logPath)
	}
	return r, nil
}

func (r *running) pid() int { return r.cmd.Process.Pid }

func (r *running) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+r.kind.ready, nil)
		if err != nil {
			return fmt.Errorf("readiness request: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.done:
			return fmt.Errorf("exited before it was ready: %v", r.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready at %s%s after %s", r.base, r.kind.ready, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// flushData asks the server to write what it buffers to disk, when it has a way.
func (r *running) flushData(ctx context.Context) error {
	if r.kind.flush == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+r.kind.flush, nil)
	if err != nil {
		return fmt.Errorf("%s: flush request: %w", r.kind.short, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: flush: %w", r.kind.short, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: flush: %s: %s", r.kind.short, resp.Status, body)
	}
	return nil
}

// stop sends SIGTERM, waits up to 30 s, then kills the process.
func (r *running) stop() error {
	defer r.log.Close()
	select {
	case <-r.done:
		return nil
	default:
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: SIGTERM: %w", r.kind.short, err)
	}
	select {
	case <-r.done:
		return nil
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
		return fmt.Errorf("%s: did not stop within 30s of SIGTERM; killed", r.kind.short)
	}
}

// dirBytes is the apparent size of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked (a compaction, a WAL segment)
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
		total += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}

// serverKinds returns the three servers, in the order each round runs them.
func serverKinds(tsdbBin, promBin, promVersion, vmBin, vmVersion string) []*serverKind {
	return []*serverKind{
		{
			name: "tsdb (embedded)", short: "tsdb", bin: tsdbBin,
			args: func(dir, addr string) []string {
				return []string{"serve", "--storage=embedded:" + dir, "--listen=" + addr}
			},
			ready: "/-/ready",
		},
		{
			name: "Prometheus " + promVersion + " receiver", short: "prometheus", bin: promBin, isPeer: true,
			prepare: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "..", "prometheus.yml"), []byte("scrape_configs: []\n"), 0o644)
			},
			args: func(dir, addr string) []string {
				return []string{
					"--web.enable-remote-write-receiver",
					"--storage.tsdb.path=" + dir,
					"--config.file=" + filepath.Join(dir, "..", "prometheus.yml"),
					"--web.listen-address=" + addr,
					"--log.level=warn",
				}
			},
			ready: "/-/ready",
		},
		{
			name: "VictoriaMetrics " + vmVersion, short: "victoriametrics", bin: vmBin, isPeer: true,
			args: func(dir, addr string) []string {
				return []string{
					"-storageDataPath=" + dir,
					"-httpListenAddr=" + addr,
					"-search.disableCache",
					"-search.latencyOffset=0s",
					"-loggerLevel=WARN",
				}
			},
			ready: "/health",
			flush: "/internal/force_flush",
			// force_flush makes the data searchable in in-memory parts; those reach disk
			// every -inmemoryDataFlushInterval (5 s by default; 11 s waits out two).
			flushDelay: 11 * time.Second,
		},
	}
}
