package index

// Test hooks of package index.

// SeriesHash is the hash format 2 derives series IDs from.
var SeriesHash = seriesHash

// HashIDBit is set in every hash-derived series ID.
const HashIDBit = hashIDBit

// WithSeriesHash returns o with the hash of forward row keys replaced by h, for
// tests that force hash collisions.
func WithSeriesHash(o RegistryOptions, h func(forwardRow []byte) uint64) RegistryOptions {
	o.seriesHash = h
	return o
}
