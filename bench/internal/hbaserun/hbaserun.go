// Package hbaserun runs the benchmarks' HBase: a standalone HBase (master,
// region server and ZooKeeper in one JVM) that testing/hbase/hbase.sh starts
// in a run directory of its own (HBTSDB_HBASE_RUN), and what the benchmarks
// measure of it: the JVM's pid (for its CPU from /proc), the files of tables,
// their flush and major compaction; and dropping the tables of a prefix.
package hbaserun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
	"github.com/hbtsdb/hbtsdb/kv/backend"
)

// Instance is the HBase a tsdb (HBase) server writes to. ZK is always known;
// RunDir (hbase.sh's HBTSDB_HBASE_RUN) only for an instance started by Start or
// found by Attach, and with it the JVM's pid and the local hbase.rootdir, from
// which the JVM's CPU, the WAL written and the tables' disk are measured.
type Instance struct {
	ZK      string
	RunDir  string // "" for an HBase known by its ZooKeeper address only: no JVM or disk figures
	Started bool   // started by this run (Start): Stop stops it
}

// Start starts a standalone HBase in runDir with testing/hbase/hbase.sh (root is
// the module root) and returns it once gohbase can create a table in it.
func Start(ctx context.Context, log *slog.Logger, root, runDir string) (*Instance, error) {
	log.Info("starting HBase (testing/hbase/hbase.sh start; resolves the jars once)", "run_dir", runDir)
	zk, err := script(ctx, root, runDir, "start")
	if err != nil {
		// A start that failed or was cancelled (Ctrl-C) may have left the JVM
		// running in its own session: stop whatever runs in runDir.
		if _, serr := script(context.Background(), root, runDir, "stop"); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, err
	}
	return &Instance{ZK: zk, RunDir: runDir, Started: true}, nil
}

// Attach returns the HBase that hbase.sh runs in runDir.
func Attach(ctx context.Context, root, runDir string) (*Instance, error) {
	zk, err := script(ctx, root, runDir, "status")
	if err != nil {
		return nil, fmt.Errorf("-hbase-run %s: no running HBase there: %w", runDir, err)
	}
	return &Instance{ZK: zk, RunDir: runDir}, nil
}

// Flags are a benchmark's HBase flags: -hbase (Start, in RunDir or, without it,
// DefaultRunDir), -hbase-run alone (RunDir: the HBase hbase.sh already runs
// there) or -hbase-zk (ZK: any running HBase, without JVM and disk figures).
type Flags struct {
	Start         bool
	RunDir        string
	ZK            string
	DefaultRunDir string
}

// Register binds -hbase, -hbase-run and -hbase-zk to f.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&f.Start, "hbase", false, "also run tsdb on HBase (\"tsdb (HBase)\"): start a standalone HBase with "+
		"testing/hbase/hbase.sh in -hbase-run (default <workdir>/hbase) and stop it at the end")
	fs.StringVar(&f.RunDir, "hbase-run", "", "with -hbase: where to start HBase; without: use the HBase that hbase.sh "+
		"already runs in this HBTSDB_HBASE_RUN directory (its JVM's CPU and its disk are measured)")
	fs.StringVar(&f.ZK, "hbase-zk", "", "run tsdb (HBase) against the running HBase at this ZooKeeper host:port "+
		"(no JVM CPU or disk figures: use -hbase-run for those)")
}

// Any reports whether the flags name an HBase.
func (f Flags) Any() bool { return f.Start || f.RunDir != "" || f.ZK != "" }

// Validate refuses -hbase-zk with -hbase or -hbase-run.
func (f Flags) Validate() error {
	if f.ZK != "" && (f.Start || f.RunDir != "") {
		return fmt.Errorf("-hbase-zk names a running HBase: not with -hbase or -hbase-run")
	}
	return nil
}

// Open starts the HBase of -hbase or finds that of -hbase-run or -hbase-zk (root
// is the module root); nil when the flags name none.
func Open(ctx context.Context, log *slog.Logger, root string, f Flags) (*Instance, error) {
	switch {
	case f.Start:
		runDir := f.RunDir
		if runDir == "" {
			runDir = f.DefaultRunDir
		}
		return Start(ctx, log, root, runDir)
	case f.RunDir != "":
		return Attach(ctx, root, f.RunDir)
	case f.ZK != "":
		return &Instance{ZK: f.ZK}, nil
	}
	return nil, nil
}

// DropTables drops every table of prefix in the HBase at zk.
func DropTables(ctx context.Context, zk, prefix string) (err error) {
	st, err := backend.Open(ctx, backend.Address{Kind: backend.HBase, Quorum: zk}, backend.Options{HBaseTablePrefix: prefix})
	if err != nil {
		return fmt.Errorf("drop tables %s*: %w", prefix, err)
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	names, err := st.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("drop tables %s*: %w", prefix, err)
	}
	for _, name := range names {
		if err := st.DropTable(ctx, name); err != nil {
			return fmt.Errorf("drop table %s%s: %w", prefix, name, err)
		}
	}
	return nil
}

// Stop stops an HBase this run started (and removes its data); it does nothing
// to one it did not start.
func (h *Instance) Stop(root string) error {
	if h == nil || !h.Started {
		return nil
	}
	_, err := script(context.Background(), root, h.RunDir, "stop")
	return err
}

// script runs testing/hbase/hbase.sh for the instance in runDir and returns the
// last line it printed.
func script(ctx context.Context, root, runDir string, args ...string) (string, error) {
	return server.ScriptEnv(ctx, root, []string{"HBTSDB_HBASE_RUN=" + runDir}, "testing/hbase/hbase.sh", args...)
}

// Measured reports whether the JVM and the disk can be measured.
func (h *Instance) Measured() bool { return h.RunDir != "" }

// JVMPid is the pid of the HBase JVM (master, region server and ZooKeeper in one
// process), from hbase.sh's pid file.
func (h *Instance) JVMPid() (int, error) {
	pid, err := proc.ReadPidFile(filepath.Join(h.RunDir, "pid"))
	if err != nil {
		return 0, fmt.Errorf("hbase: JVM pid: %w", err)
	}
	return pid, nil
}

// RootDir is the local directory of hbase.rootdir (hbase.sh rootdir).
func (h *Instance) RootDir() string { return filepath.Join(h.RunDir, "root") }

// Compact flushes and major-compacts tables (full HBase names) and waits until it
// is done (hbase.sh compact), so that their files hold what they store and
// nothing else.
func (h *Instance) Compact(ctx context.Context, root string, tables []string) error {
	_, err := script(ctx, root, h.RunDir, append([]string{"compact", h.ZK}, tables...)...)
	return err
}

// TablesWithPrefix returns the HBase tables of the default namespace whose names
// start with prefix, from the directories under rootDir/data/default.
func TablesWithPrefix(rootDir, prefix string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(rootDir, "data", "default"))
	if err != nil {
		return nil, fmt.Errorf("hbase: list tables: %w", err)
	}
	var tables []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			tables = append(tables, e.Name())
		}
	}
	return tables, nil
}

// TableBytes is the apparent size of the files of tables (their HFiles, region
// info and recovered edits, if any).
func TableBytes(rootDir string, tables []string) (int64, error) {
	var total int64
	for _, t := range tables {
		n, err := proc.DirBytes(filepath.Join(rootDir, "data", "default", t))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
