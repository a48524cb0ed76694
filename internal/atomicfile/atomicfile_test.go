package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.json")
	for _, content := range []string{"first\n", "second, longer\n", "3\n"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("after Write(%q): %q, %v", content, b, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the directory holds %v (%v), want the file alone", entries, err)
	}
}

func TestWriteIntoAMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "cp.json")
	err := Write(path, []byte("x"))
	if err == nil || !strings.HasPrefix(err.Error(), "atomicfile: open "+filepath.Dir(path)+"/cp.json.tmp") {
		t.Fatalf("Write into a missing directory: %v", err)
	}
}
