package embedded_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/testing/testenv"
)

// TestFullDiskRefusesWritesAtOnce: on a small tmpfs (mounted by the test, as
// root; testenv.MountTmpfs, which fails under make test where it cannot), a store whose file system gets under its free-space reserve refuses
// writes and Ping at once with kv.ErrUnavailable naming the free space, keeps
// answering reads, and takes writes again once space is freed.
func TestFullDiskRefusesWritesAtOnce(t *testing.T) {
	mnt := testenv.MountTmpfs(t, "64m")
	ctx := context.Background()
	st, err := embedded.Open(ctx, filepath.Join(mnt, "store"), embedded.Options{SweepInterval: -1,
		MinFreeBytes: 16 << 20, SpaceCheckInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	put := []kv.Mutation{kv.Put([]byte("r"), "f", []byte("q"), 1, []byte("v"))}
	if err := st.Apply(ctx, "t", put); err != nil {
		t.Fatalf("Apply with space: %v", err)
	}

	// Fill the file system to 8 MiB free, under the 16 MiB reserve.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 64<<20-8<<20-2<<20)); err != nil && !strings.Contains(err.Error(), "no space") {
		t.Fatal(err)
	}
	f.Close()
	var pingErr error
	for pingErr == nil { // the monitor sees it within a few checks
		time.Sleep(10 * time.Millisecond)
		pingErr = st.Ping(ctx)
	}
	if !errors.Is(pingErr, kv.ErrUnavailable) || !strings.Contains(pingErr.Error(), "under the reserve of 16777216 (--storage.min-free-bytes): writes are refused until space is freed") {
		t.Errorf("Ping on a full disk: %v", pingErr)
	}
	for _, write := range []func() error{
		func() error { return st.Apply(ctx, "t", put) },
		func() error { _, err := st.Increment(ctx, "t", []byte("r"), "f", []byte("n"), 1); return err },
		func() error {
			_, err := st.CheckAndPut(ctx, "t", nil, kv.Put([]byte("r"), "f", []byte("c"), 1, []byte("v")))
			return err
		},
	} {
		if err := write(); !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "bytes free, under the reserve") {
			t.Errorf("a write on a full disk: %v", err)
		}
	}
	if row, err := st.Get(ctx, "t", []byte("r")); err != nil || len(row.Cells) != 1 {
		t.Errorf("a read on a full disk: %v, %v", row, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for st.Ping(ctx) != nil {
		time.Sleep(10 * time.Millisecond)
	}
	if err := st.Apply(ctx, "t", put); err != nil {
		t.Errorf("Apply once space is freed: %v", err)
	}
}

// TestStoreFilesArePrivate: the directory the store creates is 0700 and every
// file in it 0600, whatever the umask: it holds what writers sent.
func TestStoreFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	st, err := embedded.Open(ctx, dir, embedded.Options{SweepInterval: -1, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureTable(ctx, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "f"}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, "t", []kv.Mutation{kv.Put([]byte("r"), "f", []byte("q"), 1, []byte("v"))}); err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(ctx); err != nil { // sstables too
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("store directory: %v, %v; want 0700", info.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("read %s: %v (%d entries)", dir, err, len(entries))
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
}
