package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/hbtsdb/hbtsdb/kv"
)

// gateFS is a vfs.FS whose sstable reads, once armed, block until released:
// a background job of Pebble that reads a table after the gate is armed stops
// there, and DB.Close, which waits for its background jobs, would wait with it.
type gateFS struct {
	vfs.FS
	armed   atomic.Bool
	blocked chan string   // the name of the first table a read blocked on
	release chan struct{} // closed to let blocked reads go on
	once    sync.Once
}

func newGateFS() *gateFS {
	return &gateFS{blocked: make(chan string, 1), release: make(chan struct{})}
}

// wait blocks a read of the file name if the gate is armed and name is a table.
func (g *gateFS) wait(name string) {
	if !g.armed.Load() || !strings.HasSuffix(name, ".sst") {
		return
	}
	select {
	case g.blocked <- filepath.Base(name):
	default:
	}
	<-g.release
}

func (g *gateFS) open() { g.once.Do(func() { close(g.release) }) }

func (g *gateFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	g.wait(name)
	f, err := g.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return &gateFile{File: f, name: name, gate: g}, nil
}

type gateFile struct {
	vfs.File
	name string
	gate *gateFS
}

func (f *gateFile) ReadAt(p []byte, off int64) (int, error) {
	f.gate.wait(f.name)
	return f.File.ReadAt(p, off)
}

// A store full of range deletions did not exit within 3 minutes of
// SIGTERM, busy in Pebble's table statistics, which DB.Close waits for and
// nothing cancels (tuning.go). The store turns them off; then, once the last
// write is flushed, nothing reads a table any more, so Close has nothing to wait
// for. The first case shows the gate catches the statistics job when it runs.
func TestCloseDoesNotWaitForTableStatistics(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tableStats bool
	}{
		{"with Pebble's table statistics on, a job reads the flushed range deletions and Close would wait for it", true},
		{"with the store's options nothing reads a table after the last flush, so Close returns", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := newGateFS()
			defer gate.open()
			st := openStore(t, t.TempDir(), Options{SweepInterval: -1, MinFreeBytes: -1, tunePebble: func(o *pebble.Options) {
				gate.FS = o.FS
				o.FS = gate
				if tc.tableStats {
					o.DisableTableStats = false
				}
			}})
			ensure(t, st, kv.TableSpec{Name: "t", Families: []kv.FamilySpec{{Name: "r"}}})
			// Rows of 200 cells in the bottom level, then a delete of each row's
			// family that spares its middle cell: two range deletions per row, in
			// a flushed table above the cells they cover.
			const rows, perRow = 50, 200
			var muts []kv.Mutation
			for r := range rows {
				for c := range perRow {
					muts = append(muts, put(fmt.Sprintf("row-%03d", r), "r", fmt.Sprintf("q%03d", c), int64(c), "v"))
				}
			}
			mustApply(t, st, "t", muts...)
			if err := st.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			muts = muts[:0]
			for r := range rows {
				row := []byte(fmt.Sprintf("row-%03d", r))
				muts = append(muts, kv.Put(row, "r", []byte("q100"), 1000, []byte("kept")), kv.DeleteFamily(row, "r", 999))
			}
			before := st.Tombstones()
			mustApply(t, st, "t", muts...)
			if got, want := delta(before, st.Tombstones()), (kv.Tombstones{Range: 2 * rows}); got != want {
				t.Fatalf("the deletes left %+v, want %+v", got, want)
			}
			gate.armed.Store(true)
			if err := st.db.Flush(); err != nil {
				t.Fatal(err)
			}

			if tc.tableStats {
				name := <-gate.blocked
				if !strings.HasSuffix(name, ".sst") {
					t.Fatalf("blocked on %s, want a table", name)
				}
				gate.open()
				if err := st.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				return
			}
			closed := make(chan error, 1)
			go func() { closed <- st.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case name := <-gate.blocked:
				gate.open()
				<-closed
				t.Fatalf("a background job read table %s after the last flush: Close waits for it", name)
			}
		})
	}
}

// delta is what a store's tombstone counts grew by from before to after.
func delta(before, after kv.Tombstones) kv.Tombstones {
	return kv.Tombstones{Point: after.Point - before.Point, Range: after.Range - before.Range}
}
