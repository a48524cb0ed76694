//go:build slicelabels || dedupelabels

package wire

// bodyString copies: these builds of Prometheus' labels package keep the strings
// they are given, which must then not point into a reused request body.
func bodyString(b []byte) string { return string(b) }
