package hbaserun

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTablesWithPrefixAndTheirBytes(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "data", "default", "benchx-r1-tsdb-hbase-data", "r1", "r", "f1"), 100)
	writeFile(t, filepath.Join(root, "data", "default", "benchx-r1-tsdb-hbase-data", "r2", "r", "f2"), 50)
	writeFile(t, filepath.Join(root, "data", "default", "benchx-r1-tsdb-hbase-index", "r1", "i", "f"), 7)
	writeFile(t, filepath.Join(root, "data", "default", "benchx-r2-tsdb-hbase-data", "r1", "r", "f"), 1000)
	tables, err := TablesWithPrefix(root, "benchx-r1-tsdb-hbase-")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"benchx-r1-tsdb-hbase-data", "benchx-r1-tsdb-hbase-index"}; !slices.Equal(tables, want) {
		t.Fatalf("tables = %v, want %v", tables, want)
	}
	n, err := TableBytes(root, tables)
	if err != nil {
		t.Fatal(err)
	}
	if n != 157 {
		t.Errorf("TableBytes = %d, want 157", n)
	}
}
