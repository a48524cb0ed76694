package cellenc

import "github.com/prometheus/prometheus/model/histogram"

// Sample is one float sample: T in milliseconds since the Unix epoch, V bit-exact
// (a Prometheus stale marker keeps its NaN payload), and ST its start timestamp
// (remote write 2.0's start_timestamp, a counter's created time), 0 when
// unknown. It is the unit the raw codec (raw.go) stores and every read path
// returns, shared by write/ and query/.
type Sample struct {
	T  int64
	V  float64
	ST int64
}

// HistogramSample is one native histogram sample: T in milliseconds since the
// Unix epoch and exactly one of H (an integer histogram) and FH (a float
// histogram). Histogram samples live in the same raw cells as float samples
// (histogram.go) and, after compaction, in Prometheus' histogram chunks; a
// series may hold both kinds, one per timestamp. Readers keep them in their own
// slice beside the float samples, so the float paths stay 16 bytes a sample.
type HistogramSample struct {
	T  int64
	ST int64 // start timestamp, 0 when unknown (see Sample)
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}
