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
	"slices"
	"syscall"
	"time"
)

// serverKind is one of the servers compared: how to start it on a data directory and a
// loopback port, how to ask whether it is ready, and how to ask it to flush.
type serverKind struct {
	name  string // the column header, e.g. "Prometheus v0.316.0 receiver"
	short string // for progress lines and file names: tsdb, prometheus, victoriametrics
	bin   string
	args  func(s startSpec) []string
	ready string // a path answering 200 once the server takes writes and queries
	flush string // a path that flushes buffered data; "" when there is none
	// flushDelay is how long after the flush its data is on disk: the disk measure
	// after the ingest waits for it.
	flushDelay time.Duration
	isPeer     bool // counts for the ratio column's best peer
	prepare    func(dir string) error
	// hbase is the HBase a tsdb (HBase) server stores into; nil for the others.
	hbase *hbaseInstance
}

// startSpec is where one run of a server keeps its data and listens.
type startSpec struct {
	dir  string // a fresh data directory
	addr string // a free loopback host:port
	// tablePrefix is the HBase table prefix of a tsdb (HBase) server: a new one
	// every round, so that each starts on empty tables.
	tablePrefix string
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

// start runs k on the fresh data directory dir (and, on HBase, tables named with
// tablePrefix), its output going to logPath, and waits up to timeout until it is ready.
func (k *serverKind) start(ctx context.Context, dir, tablePrefix, logPath string, timeout time.Duration) (*running, error) {
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
	cmd := exec.Command(k.bin, k.args(startSpec{dir: dir, addr: addr, tablePrefix: tablePrefix})...)
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
	err := walkFileSizes(dir, func(_ string, _ fs.DirEntry, size int64) { total += size })
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}

// walkFileSizes calls fn with the size of every regular file under dir. Files
// removed while the walk runs (a compaction, an archived WAL segment) are
// skipped, not errors.
func walkFileSizes(dir string, fn func(path string, d fs.DirEntry, size int64)) error {
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

// binaries are the servers' binaries and what else starting them needs.
type binaries struct {
	tsdb, tsdbBase            string // tsdbBase: -tsdb-base-bin, "" without it
	tsdbArgs                  []string
	prom, promVersion         string
	victoria, victoriaVersion string
	hbase                     *hbaseInstance // nil without -hbase, -hbase-run or -hbase-zk
}

// serverKinds returns the servers named, in the order each round runs them:
// tsdb (embedded), its baseline, tsdb (HBase), its baseline, Prometheus,
// VictoriaMetrics.
func serverKinds(b binaries, names []string) []*serverKind {
	tsdbEmbedded := func(name, short, bin string) *serverKind {
		return &serverKind{
			name: name, short: short, bin: bin,
			args: func(s startSpec) []string {
				return append([]string{"serve", "--storage=embedded:" + s.dir, "--listen=" + s.addr}, b.tsdbArgs...)
			},
			ready: "/-/ready",
		}
	}
	tsdbHBase := func(name, short, bin string) *serverKind {
		return &serverKind{
			name: name, short: short, bin: bin, hbase: b.hbase,
			args: func(s startSpec) []string {
				return append([]string{"serve", "--storage=hbase:" + b.hbase.zk, "--hbase.table-prefix=" + s.tablePrefix,
					"--listen=" + s.addr}, b.tsdbArgs...)
			},
			ready: "/-/ready",
		}
	}
	all := []*serverKind{
		tsdbEmbedded("tsdb (embedded)", "tsdb", b.tsdb),
		tsdbEmbedded("tsdb (embedded) base", "tsdb-base", b.tsdbBase),
		tsdbHBase("tsdb (HBase)", "tsdb-hbase", b.tsdb),
		tsdbHBase("tsdb (HBase) base", "tsdb-hbase-base", b.tsdbBase),
		{
			name: "Prometheus " + b.promVersion + " receiver", short: "prometheus", bin: b.prom, isPeer: true,
			prepare: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "..", "prometheus.yml"), []byte("scrape_configs: []\n"), 0o644)
			},
			args: func(s startSpec) []string {
				return []string{
					"--web.enable-remote-write-receiver",
					"--storage.tsdb.path=" + s.dir,
					"--config.file=" + filepath.Join(s.dir, "..", "prometheus.yml"),
					"--web.listen-address=" + s.addr,
					"--log.level=warn",
				}
			},
			ready: "/-/ready",
		},
		{
			name: "VictoriaMetrics " + b.victoriaVersion, short: "victoriametrics", bin: b.victoria, isPeer: true,
			args: func(s startSpec) []string {
				return []string{
					"-storageDataPath=" + s.dir,
					"-httpListenAddr=" + s.addr,
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
	var kinds []*serverKind
	for _, k := range all {
		if slices.Contains(names, k.short) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}
