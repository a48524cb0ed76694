// Package hbaseadmin does for benchmarks and tests what gohbase cannot: it flushes and
// major-compacts tables of the test HBase, through `testing/hbase/hbase.sh compact`
// (HBase's own Java Admin client, see testing/hbase/FlushCompact.java), and measures the
// HFiles a table occupies on disk, which it can because the test HBase keeps its
// hbase.rootdir on the local filesystem.
//
// It works only with an HBase that testing/hbase/hbase.sh started, and only from the
// source tree (it runs the script next to this package). hbase.sh answers for the
// instance of its run directory: HBTSDB_HBASE_RUN if set, else its default, so a test
// against an instance started with its own HBTSDB_HBASE_RUN must run with the same
// variable (RootDir checks it).
//
// Like every test helper it stays out of production code: nothing outside testing/
// and _test.go files imports it.
package hbaseadmin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Script is the path of testing/hbase/hbase.sh in the source tree this package was
// built from.
func Script() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("hbaseadmin: cannot locate the source tree")
	}
	script := filepath.Join(filepath.Dir(file), "..", "hbase", "hbase.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("hbaseadmin: %w", err)
	}
	return script, nil
}

// run runs hbase.sh with args and returns its stdout, trimmed. Its stderr is quoted in
// the error when it fails.
func run(ctx context.Context, args ...string) (string, error) {
	script, err := Script()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hbaseadmin: hbase.sh %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Compact flushes and major-compacts the tables (full HBase names, e.g. "tsdb-data")
// of the HBase at ZooKeeper address zk, one after the other. It returns when the
// compactions are done and the HFiles they replaced are archived, so that HFiles then
// counts only live files: at most one per store. It has no time budget of its own
// (FlushCompact fails when a compaction stops making progress); ctx bounds it.
func Compact(ctx context.Context, zk string, tables ...string) error {
	if len(tables) == 0 {
		return nil
	}
	_, err := run(ctx, append([]string{"compact", zk}, tables...)...)
	return err
}

// RootDir returns the local directory of the hbase.rootdir of the HBase at ZooKeeper
// address zk. It fails when hbase.sh's run directory holds another instance (or none).
func RootDir(ctx context.Context, zk string) (string, error) {
	running, err := run(ctx, "zk")
	if err != nil {
		return "", err
	}
	if running != zk {
		return "", fmt.Errorf("hbaseadmin: the HBase of hbase.sh's run directory has ZooKeeper %s, not %s: set HBTSDB_HBASE_RUN to the run directory of the HBase at %s", running, zk, zk)
	}
	return run(ctx, "rootdir")
}

// Files describes the HFiles of a table.
type Files struct {
	// Bytes is the sum of their sizes.
	Bytes int64
	// Count is the number of HFiles, Stores the number of (region, family) store
	// directories they are in (empty ones included).
	Count, Stores int
	// FamilyBytes is Bytes by column family.
	FamilyBytes map[string]int64
}

// HFiles sums the HFiles of table (its full name) under root, an hbase.rootdir that
// RootDir returned: every file of the store directories
// <root>/data/default/<table>/<region>/<family>/. The region's .regioninfo, the
// table's and regions' .tmp directories, recovered edits and the WAL are not counted.
// Right after a compaction, files it replaced may still be there: call it after
// Compact, which waits until they are archived.
func HFiles(root, table string) (Files, error) {
	f := Files{FamilyBytes: make(map[string]int64)}
	tableDir := filepath.Join(root, "data", "default", table)
	regions, err := os.ReadDir(tableDir)
	if err != nil {
		return f, fmt.Errorf("hbaseadmin: HFiles of %s: %w", table, err)
	}
	for _, region := range regions {
		if !region.IsDir() || hidden(region.Name()) {
			continue
		}
		stores, err := os.ReadDir(filepath.Join(tableDir, region.Name()))
		if err != nil {
			return f, fmt.Errorf("hbaseadmin: HFiles of %s: %w", table, err)
		}
		for _, store := range stores {
			if !store.IsDir() || hidden(store.Name()) || store.Name() == "recovered.edits" {
				continue
			}
			f.Stores++
			dir := filepath.Join(tableDir, region.Name(), store.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				return f, fmt.Errorf("hbaseadmin: HFiles of %s: %w", table, err)
			}
			for _, file := range files {
				if !file.Type().IsRegular() || hidden(file.Name()) {
					continue
				}
				info, err := file.Info()
				if errors.Is(err, fs.ErrNotExist) {
					continue // archived since the listing
				}
				if err != nil {
					return f, fmt.Errorf("hbaseadmin: HFiles of %s: %w", table, err)
				}
				f.Bytes += info.Size()
				f.FamilyBytes[store.Name()] += info.Size()
				f.Count++
			}
		}
	}
	return f, nil
}

// hidden reports whether a name is one of HBase's bookkeeping entries (.regioninfo,
// .tmp, .tabledesc, .filelist) rather than a region, a store or an HFile.
func hidden(name string) bool { return strings.HasPrefix(name, ".") }
