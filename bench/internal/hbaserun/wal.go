package hbaserun

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
)

// WALFiles returns the size of every WAL file under rootDir (an
// hbase.rootdir, Instance.RootDir), by file name: the region server's live
// WALs (WALs/<server>/) and the archived ones (oldWALs/), the master's
// procedure store's included. A WAL keeps its name when it is archived, so
// the name follows a file from WALs/ to oldWALs/.
func WALFiles(rootDir string) (map[string]int64, error) {
	sizes := map[string]int64{}
	err := proc.WalkFileSizes(rootDir, func(path string, d fs.DirEntry, size int64) {
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

// WALGrowth is how many WAL bytes were written between two WALFiles
// snapshots: each file's growth, a new file counting whole. A file gone by
// the second snapshot (an archived WAL the cleaner deleted) was written
// before the first, and counts nothing.
func WALGrowth(before, after map[string]int64) int64 {
	var n int64
	for name, size := range after {
		if grew := size - before[name]; grew > 0 {
			n += grew
		}
	}
	return n
}
