// Package server starts and stops the servers the benchmarks measure — tsdb
// (embedded or on HBase), VictoriaMetrics, Prometheus — as subprocesses on
// fresh data directories and free loopback ports, and finds their binaries:
// tsdb built from the working tree, the others from the repository's build
// scripts (bench/victoriametrics.sh, testing/prometheus/prometheus.sh).
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Kind is one kind of server: how to start it on a data directory and a loopback
// port, how to ask whether it is ready, and how to ask it to flush.
type Kind struct {
	Name  string // the column header, e.g. "Prometheus v0.316.0 receiver"
	Short string // for progress lines and file names: tsdb, prometheus, victoriametrics
	Bin   string
	Args  func(s StartSpec) []string
	Ready string // a path answering 200 once the server takes writes and queries
	Flush string // a path that flushes buffered data; "" when there is none
	// FlushDelay is how long after the flush its data is on disk: the disk measure
	// after the ingest waits for it.
	FlushDelay time.Duration
	// Prepare, when set, runs before each start with the data directory.
	Prepare func(dir string) error
}

// StartSpec is where one run of a server keeps its data and listens.
type StartSpec struct {
	Dir  string // a fresh data directory
	Addr string // a free loopback host:port
	// TablePrefix is the HBase table prefix of a tsdb (HBase) server: a new one
	// every run, so that each starts on empty tables.
	TablePrefix string
}

// Running is a started server.
type Running struct {
	Kind *Kind
	Base string // http://127.0.0.1:<port>
	Dir  string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // the Wait error, once done is closed
}

// FreeAddr returns a loopback address with a port nobody listens on right now.
func FreeAddr() (string, error) {
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

// Start runs k on the fresh data directory dir (and, on HBase, tables named with
// tablePrefix), its output going to logPath, and waits up to timeout until it is ready.
func (k *Kind) Start(ctx context.Context, dir, tablePrefix, logPath string, timeout time.Duration) (*Running, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: create data directory: %w", k.Short, err)
	}
	if k.Prepare != nil {
		if err := k.Prepare(dir); err != nil {
			return nil, fmt.Errorf("%s: prepare %s: %w", k.Short, dir, err)
		}
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: create log: %w", k.Short, err)
	}
	cmd := exec.Command(k.Bin, k.Args(StartSpec{Dir: dir, Addr: addr, TablePrefix: tablePrefix})...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: start %s: %w", k.Short, k.Bin, err)
	}
	r := &Running{Kind: k, cmd: cmd, Base: "http://" + addr, Dir: dir, log: logf, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	if err := r.waitReady(ctx, timeout); err != nil {
		r.Stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", k.Short, err, logPath)
	}
	return r, nil
}

// Pid is the server's process ID.
func (r *Running) Pid() int { return r.cmd.Process.Pid }

// Exited is closed once the server's process has exited.
func (r *Running) Exited() <-chan struct{} { return r.done }

func (r *Running) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.Base+r.Kind.Ready, nil)
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
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err() // the run was cancelled (Ctrl-C)
			}
			return fmt.Errorf("not ready at %s%s after %s", r.Base, r.Kind.Ready, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FlushData asks the server to write what it buffers to disk, when it has a way.
func (r *Running) FlushData(ctx context.Context) error {
	if r.Kind.Flush == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.Base+r.Kind.Flush, nil)
	if err != nil {
		return fmt.Errorf("%s: flush request: %w", r.Kind.Short, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: flush: %w", r.Kind.Short, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: flush: %s: %s", r.Kind.Short, resp.Status, body)
	}
	return nil
}

// Stop sends SIGTERM, waits up to 30 s, then kills the process.
func (r *Running) Stop() error {
	_, err := r.StopWithin(30 * time.Second)
	return err
}

// StopWithin sends SIGTERM and waits up to limit for the process to exit, then
// kills it (an error). It returns the time from SIGTERM to the exit (to the
// kill when it did not exit); 0 when the process had exited already.
func (r *Running) StopWithin(limit time.Duration) (time.Duration, error) {
	defer r.log.Close()
	select {
	case <-r.done:
		return 0, nil
	default:
	}
	t0 := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("%s: SIGTERM: %w", r.Kind.Short, err)
	}
	select {
	case <-r.done:
		return time.Since(t0), nil
	case <-time.After(limit):
		r.cmd.Process.Kill()
		<-r.done
		return time.Since(t0), fmt.Errorf("%s: did not stop within %s of SIGTERM; killed", r.Kind.Short, limit)
	}
}

// TSDBEmbedded is tsdb serve on the embedded store in the data directory, with
// more flags args.
func TSDBEmbedded(name, short, bin string, args []string) Kind {
	return Kind{
		Name: name, Short: short, Bin: bin,
		Args: func(s StartSpec) []string {
			return append([]string{"serve", "--storage=embedded:" + s.Dir, "--listen=" + s.Addr}, args...)
		},
		Ready: "/-/ready",
	}
}

// TSDBHBase is tsdb serve on the HBase at ZooKeeper zk, on the tables of the
// start's prefix, with more flags args.
func TSDBHBase(name, short, bin, zk string, args []string) Kind {
	return Kind{
		Name: name, Short: short, Bin: bin,
		Args: func(s StartSpec) []string {
			return append([]string{"serve", "--storage=hbase:" + zk, "--hbase.table-prefix=" + s.TablePrefix,
				"--listen=" + s.Addr}, args...)
		},
		Ready: "/-/ready",
	}
}

// VictoriaMetrics is VictoriaMetrics single-node (bin, of version), with its
// query result cache off (-search.disableCache, as tsdb and Prometheus cache no
// results) and -search.latencyOffset=0s (so that it answers the newest samples
// as they do). Its flush is /internal/force_flush, which makes the data
// searchable in in-memory parts; those reach disk every
// -inmemoryDataFlushInterval (5 s by default; FlushDelay waits out two).
func VictoriaMetrics(bin, version string) Kind {
	return Kind{
		Name: "VictoriaMetrics " + version, Short: "victoriametrics", Bin: bin,
		Args: func(s StartSpec) []string {
			return []string{
				"-storageDataPath=" + s.Dir,
				"-httpListenAddr=" + s.Addr,
				"-search.disableCache",
				"-search.latencyOffset=0s",
				"-loggerLevel=WARN",
			}
		},
		Ready:      "/health",
		Flush:      "/internal/force_flush",
		FlushDelay: 11 * time.Second,
	}
}

// ModuleRoot is the directory of the go.mod of the module the go command runs in.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the hbtsdb module: run from the repository (go run ./bench/...)")
	}
	return filepath.Dir(gomod), nil
}

// WorkDir returns a benchmark's work directory: dir when given (-workdir),
// else a new temporary directory named with pattern (os.MkdirTemp). remove
// removes a new one unless keep; it leaves a given one alone.
func WorkDir(dir, pattern string, keep bool) (_ string, remove func(), _ error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, fmt.Errorf("create work directory: %w", err)
	}
	if keep {
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// BuildTSDB builds ./cmd/tsdb of the module at root into out: a release build,
// without -race, as users run it.
func BuildTSDB(ctx context.Context, log *slog.Logger, root, out string) error {
	log.Info("building tsdb from the working tree (release build, no -race)", "out", out)
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/tsdb")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/tsdb: %w", err)
	}
	return nil
}

// Script runs one of the repository's scripts (path relative to root),
// its progress on stderr, and returns the last line it printed on stdout.
func Script(ctx context.Context, root, path string, args ...string) (string, error) {
	return ScriptEnv(ctx, root, nil, path, args...)
}

// ScriptEnv is Script with env ("NAME=value") added to this process'
// environment, e.g. the run directory of testing/hbase/hbase.sh
// (HBTSDB_HBASE_RUN) or testing/opentsdb/opentsdb.sh (HBTSDB_OPENTSDB_RUN).
func ScriptEnv(ctx context.Context, root string, env []string, path string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, path), args...)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// LocateVictoriaMetrics returns the VictoriaMetrics binary and its version,
// building it once (bench/victoriametrics.sh, cached under ~/.cache/hbtsdb).
func LocateVictoriaMetrics(ctx context.Context, log *slog.Logger, root string) (bin, version string, err error) {
	log.Info("locating VictoriaMetrics (bench/victoriametrics.sh; builds it once, a few minutes cold)")
	if bin, err = Script(ctx, root, "bench/victoriametrics.sh", "build"); err != nil {
		return "", "", err
	}
	if version, err = Script(ctx, root, "bench/victoriametrics.sh", "version"); err != nil {
		return "", "", err
	}
	return bin, version, nil
}
