package query

import (
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// Samples are iterated with Prometheus' list iterator (storage.
// NewListSeriesIterator: binary-search Seek) over a series' samples, which
// implement storage.Samples without allocating: Get returns a pointer into the
// slice.

// sampleList is the samples of one series, ascending.
type sampleList []sample

func (s sampleList) Get(i int) chunks.Sample { return &s[i] }
func (s sampleList) Len() int                { return len(s) }

// flatten concatenates the samples of a series' rows (oldest first); one row
// is returned without a copy.
func flatten(rows []bucketSamples) sampleList {
	switch len(rows) {
	case 0:
		return nil
	case 1:
		return rows[0].samples
	}
	n := 0
	for _, r := range rows {
		n += len(r.samples)
	}
	out := make(sampleList, 0, n)
	for _, r := range rows {
		out = append(out, r.samples...)
	}
	return out
}

// newSampleIterator returns an iterator over samples, reusing it when it is
// one of ours.
func newSampleIterator(it chunkenc.Iterator, samples sampleList) chunkenc.Iterator {
	type resetter interface{ Reset(storage.Samples) }
	if r, ok := it.(resetter); ok {
		r.Reset(samples)
		return it
	}
	return storage.NewListSeriesIterator(samples)
}

// sample implements chunks.Sample (a float sample; values bit-exact).

func (s *sample) T() int64                    { return s.t }
func (*sample) ST() int64                     { return 0 } // start timestamps are not stored
func (s *sample) F() float64                  { return s.v }
func (*sample) H() *histogram.Histogram       { return nil }
func (*sample) FH() *histogram.FloatHistogram { return nil }
func (*sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s *sample) Copy() chunks.Sample         { c := *s; return &c }
