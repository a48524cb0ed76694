package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/kv/backend"
)

// hbaseInstance is the HBase a tsdb (HBase) server writes to. zk is always known;
// runDir (hbase.sh's HBTSDB_HBASE_RUN) only for an instance started by -hbase or
// named by -hbase-run, and with it the JVM's pid and the local hbase.rootdir, from
// which the JVM's CPU, the WAL written and the tables' disk are measured.
type hbaseInstance struct {
	zk      string
	runDir  string // "" for -hbase-zk: no JVM or disk figures
	started bool   // started by this run (-hbase): stopped at the end
}

// startHBase starts a standalone HBase in runDir with testing/hbase/hbase.sh and
// returns it once gohbase can create a table in it.
func startHBase(ctx context.Context, log *slog.Logger, root, runDir string) (*hbaseInstance, error) {
	log.Info("starting HBase (testing/hbase/hbase.sh start; resolves the jars once)", "run_dir", runDir)
	zk, err := hbaseScript(ctx, root, runDir, "start")
	if err != nil {
		return nil, err
	}
	return &hbaseInstance{zk: zk, runDir: runDir, started: true}, nil
}

// attachHBase returns the HBase that hbase.sh runs in runDir.
func attachHBase(ctx context.Context, root, runDir string) (*hbaseInstance, error) {
	zk, err := hbaseScript(ctx, root, runDir, "status")
	if err != nil {
		return nil, fmt.Errorf("-hbase-run %s: no running HBase there: %w", runDir, err)
	}
	return &hbaseInstance{zk: zk, runDir: runDir}, nil
}

// dropTables drops every table of prefix in the HBase at zk.
func dropTables(ctx context.Context, zk, prefix string) (err error) {
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

// stop stops an HBase this run started (and removes its data).
func (h *hbaseInstance) stop(root string) error {
	if h == nil || !h.started {
		return nil
	}
	_, err := hbaseScript(context.Background(), root, h.runDir, "stop")
	return err
}

// hbaseScript runs testing/hbase/hbase.sh for the instance in runDir.
func hbaseScript(ctx context.Context, root, runDir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "testing/hbase/hbase.sh"), args...)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	cmd.Env = append(os.Environ(), "HBTSDB_HBASE_RUN="+runDir)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("testing/hbase/hbase.sh %s: %w", strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// measured reports whether the JVM and the disk can be measured.
func (h *hbaseInstance) measured() bool { return h.runDir != "" }

// jvmPid is the pid of the HBase JVM (master, region server and ZooKeeper in one
// process), from hbase.sh's pid file.
func (h *hbaseInstance) jvmPid() (int, error) {
	b, err := os.ReadFile(filepath.Join(h.runDir, "pid"))
	if err != nil {
		return 0, fmt.Errorf("hbase: JVM pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("hbase: JVM pid file %q: %w", b, err)
	}
	return pid, nil
}

// rootDir is the local directory of hbase.rootdir (hbase.sh rootdir).
func (h *hbaseInstance) rootDir() string { return filepath.Join(h.runDir, "root") }

// compact flushes and major-compacts tables (full HBase names) and waits until it
// is done (hbase.sh compact), so that their files hold what they store and
// nothing else.
func (h *hbaseInstance) compact(ctx context.Context, root string, tables []string) error {
	_, err := hbaseScript(ctx, root, h.runDir, append([]string{"compact", h.zk}, tables...)...)
	return err
}

// walFiles returns the size of every WAL file under rootDir, by file name: the
// region server's live WALs (WALs/<server>/) and the archived ones (oldWALs/),
// the master's procedure store's included. A WAL keeps its name when it is
// archived, so the name follows a file from WALs/ to oldWALs/.
func walFiles(rootDir string) (map[string]int64, error) {
	sizes := map[string]int64{}
	err := walkFileSizes(rootDir, func(path string, d fs.DirEntry, size int64) {
		if inWALDir(rootDir, path) {
			sizes[d.Name()] = size
		}
	})
	if err != nil {
		return nil, fmt.Errorf("hbase: WAL files under %s: %w", rootDir, err)
	}
	return sizes, nil
}

// inWALDir reports whether path (under rootDir) is in a WALs or oldWALs directory.
func inWALDir(rootDir, path string) bool {
	rel, err := filepath.Rel(rootDir, path)
	if err != nil {
		return false
	}
	for _, part := range strings.Split(filepath.Dir(rel), string(filepath.Separator)) {
		if part == "WALs" || part == "oldWALs" {
			return true
		}
	}
	return false
}

// walGrowth is how many WAL bytes were written between two walFiles snapshots:
// each file's growth, a new file counting whole. A file gone by the second
// snapshot (an archived WAL the cleaner deleted) was written before the first,
// and counts nothing.
func walGrowth(before, after map[string]int64) int64 {
	var n int64
	for name, size := range after {
		if grew := size - before[name]; grew > 0 {
			n += grew
		}
	}
	return n
}

// tablesWithPrefix returns the HBase tables of the default namespace whose names
// start with prefix, from the directories under rootDir/data/default.
func tablesWithPrefix(rootDir, prefix string) ([]string, error) {
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

// tableBytes is the apparent size of the files of tables (their HFiles, region
// info and recovered edits, if any).
func tableBytes(rootDir string, tables []string) (int64, error) {
	var total int64
	for _, t := range tables {
		n, err := dirBytes(filepath.Join(rootDir, "data", "default", t))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// hbaseRound is what one round of a tsdb (HBase) server cost its HBase.
type hbaseRound struct {
	jvmCPU     time.Duration // HBase JVM CPU from the first request to the last answer
	jvmCPUIdle time.Duration // until tsdb and then the JVM went idle after the ingest
	jvmSettled bool
	walBytes   int64 // WAL bytes written from before the ingest until idle
	tableBytes int64 // the round's tables after a flush and major compaction
	tables     int
}
