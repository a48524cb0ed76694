//go:build !slicelabels && !dedupelabels

package wire

import "unsafe"

// bodyString views bytes of a request body as a string without copying. It is
// only handed to labels.ScratchBuilder.Add, whose Labels() copies what it was
// given into the labels' own memory in this (the default, stringlabels) build of
// Prometheus' labels package; the body outlives the builder's use of it.
func bodyString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
