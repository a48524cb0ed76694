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
	return private(p.FS.Create(name, category))(name)
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return private(p.FS.OpenReadWrite(name, category, opts...))(name)
}

func (p privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return private(p.FS.ReuseForWrite(oldname, newname, category))(newname)
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	return private(p.FS.Lock(name))(name)
}

// private makes the file a call just created or opened (f, err) 0600; on a
// failure it closes the file and returns the error.
func private[F io.Closer](f F, err error) func(name string) (F, error) {
	return func(name string) (F, error) {
		if err != nil {
			return f, err
		}
		if err := os.Chmod(name, fileMode); err != nil {
			f.Close()
			var zero F
			return zero, fmt.Errorf("embedded: make %s private: %w", name, err)
		}
		return f, nil
	}
}
