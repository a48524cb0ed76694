package embedded

import (
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// File modes. A store holds what its writers sent, so it is private to the user
// that runs tsdb: a directory the store creates is 0700, and every file Pebble
// creates is made 0600 (Pebble creates them 0666 less the umask, usually 0644).
const (
	dirMode  = 0o700
	fileMode = 0o600
)

// privateFS is vfs.Default with the files it creates made private.
type privateFS struct{ vfs.FS }

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return f, private(name, f, err)
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, category, opts...)
	return f, private(name, f, err)
}

func (p privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	return f, private(newname, f, err)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	return c, private(name, c, err)
}

// private makes the file a call just created or opened (f, err) 0600 and
// returns the call's error; if that fails, it closes the file and returns why.
func private(name string, f io.Closer, err error) error {
	if err != nil {
		return err
	}
	if err := os.Chmod(name, fileMode); err != nil {
		f.Close()
		return fmt.Errorf("embedded: make %s private: %w", name, err)
	}
	return nil
}
