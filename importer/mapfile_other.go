//go:build !unix

package importer

import "os"

// mapFile reads the file at path whole (where memory maps are not
// available); release does nothing.
func mapFile(path string) (data []byte, release func(), err error) {
	data, err = os.ReadFile(path)
	return data, func() {}, err
}
