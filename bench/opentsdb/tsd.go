package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// tsdScript starts and stops a real OpenTSDB (its header says how).
const tsdScript = "testing/opentsdb/opentsdb.sh"

// tsd is an OpenTSDB TSD that testing/opentsdb/opentsdb.sh runs in a run
// directory of its own (HBTSDB_OPENTSDB_RUN), on tables of its own prefix in
// the benchmark's HBase.
type tsd struct {
	root   string // the module root
	runDir string
	prefix string // of its four tables: <prefix>tsdb, <prefix>tsdb-uid, ...
	URL    string // http://127.0.0.1:<port>
	Pid    int    // the TSD's JVM
}

// startTSD starts OpenTSDB (the script's version, 2.4.1) with a JVM heap of
// heap on the HBase at zk, on tables named with prefix, and returns it once
// /api/version answers. A start that fails (or is cancelled) stops whatever it
// left running.
func startTSD(ctx context.Context, log *slog.Logger, root, runDir, heap, zk, prefix string) (*tsd, error) {
	t := &tsd{root: root, runDir: runDir, prefix: prefix}
	log.Info("starting OpenTSDB ("+tsdScript+" start; resolves the jars once)", "run_dir", runDir, "tables", prefix+"tsdb*")
	env := append(t.env(), "OPENTSDB_HEAP="+heap, "OPENTSDB_TABLE_PREFIX="+prefix)
	url, err := server.ScriptEnv(ctx, root, env, tsdScript, "start", zk)
	if err == nil {
		t.URL = url
		t.Pid, err = t.jvmPid()
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("opentsdb: start: %w", err), t.stop())
	}
	return t, nil
}

func (t *tsd) env() []string { return []string{"HBTSDB_OPENTSDB_RUN=" + t.runDir} }

// jvmPid is the TSD's pid from the script's pid file, checked to be a JVM:
// the script execs setsid java in a background subshell, whose pid it
// records; were setsid to fork, that pid would not be the JVM's.
func (t *tsd) jvmPid() (int, error) {
	pid, err := proc.ReadPidFile(filepath.Join(t.runDir, "pid"))
	if err != nil {
		return 0, fmt.Errorf("opentsdb: TSD pid: %w", err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return 0, fmt.Errorf("opentsdb: TSD process %d: %w", pid, err)
	}
	if c := strings.TrimSpace(string(comm)); c != "java" {
		return 0, fmt.Errorf("opentsdb: TSD pid %d is %q, not the JVM: its CPU cannot be measured", pid, c)
	}
	return pid, nil
}

// keepLog copies the TSD's log to path (the script's stop removes its run
// directory); a missing log is not an error.
func (t *tsd) keepLog(path string) error {
	b, err := os.ReadFile(filepath.Join(t.runDir, "logs", "opentsdb.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opentsdb: read the TSD log: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("opentsdb: keep the TSD log: %w", err)
	}
	return nil
}

// stop stops the TSD, drops its tables and removes its run directory
// (opentsdb.sh stop), also after a cancelled run: it does not take the run's
// context.
func (t *tsd) stop() error {
	if _, err := server.ScriptEnv(context.Background(), t.root, t.env(), tsdScript, "stop"); err != nil {
		return fmt.Errorf("opentsdb: stop: %w", err)
	}
	return nil
}
