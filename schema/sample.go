package schema

// Sample is one float sample: T in milliseconds since the Unix epoch, V bit-exact
// (a Prometheus stale marker keeps its NaN payload). It is the unit the raw codec
// (raw.go) stores and every read path returns, shared by write/ and query/.
type Sample struct {
	T int64
	V float64
}
