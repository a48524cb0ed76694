package hbaserun

import (
	"path/filepath"
	"testing"
)

func TestWALFilesCountsOnlyWALDirectoriesByFileName(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "WALs", "localhost,1,2", "localhost%2C1%2C2.100"), 300)
	writeFile(t, filepath.Join(root, "oldWALs", "localhost%2C1%2C2.50"), 200)
	writeFile(t, filepath.Join(root, "MasterData", "WALs", "m,1,2", "m%2C1%2C2.7"), 10)
	writeFile(t, filepath.Join(root, "data", "default", "tsdb-data", "abc", "r", "hfile"), 5000)
	writeFile(t, filepath.Join(root, "hbase.version"), 7)
	got, err := WALFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"localhost%2C1%2C2.100": 300, "localhost%2C1%2C2.50": 200, "m%2C1%2C2.7": 10}
	if len(got) != len(want) {
		t.Fatalf("WALFiles = %v, want %v", got, want)
	}
	for name, size := range want {
		if got[name] != size {
			t.Errorf("WALFiles[%s] = %d, want %d (all: %v)", name, got[name], size, got)
		}
	}
}

func TestWALGrowthFollowsArchivedFilesAndIgnoresDeletedOnes(t *testing.T) {
	before := map[string]int64{
		"wal.1": 1000, // grows by 500, then is archived under the same name
		"wal.0": 800,  // archived long ago; the cleaner deletes it meanwhile
	}
	after := map[string]int64{
		"wal.1": 1500,
		"wal.2": 4000, // rolled during the ingest: counts whole
	}
	if got := WALGrowth(before, after); got != 4500 {
		t.Errorf("WALGrowth = %d, want 4500", got)
	}
	if got := WALGrowth(after, after); got != 0 {
		t.Errorf("WALGrowth of an unchanged snapshot = %d, want 0", got)
	}
}
