package query

import (
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// Iterators. A series whose rows hold float samples only, without start
// timestamps — nearly every series — is iterated with Prometheus' list
// iterator (storage.NewListSeriesIterator: binary-search Seek) over its
// samples, which implement storage.Samples without allocating: Get returns a
// pointer into the slice. A series with native histograms or start timestamps
// in any of its rows is iterated by the same list iterator over mixedList, its
// float and histogram samples merged by timestamp.

// sampleList is the samples of one series, ascending.
type sampleList []sample

func (s sampleList) Get(i int) chunks.Sample { return &s[i] }
func (s sampleList) Len() int                { return len(s) }

// flatten concatenates the float samples of a series' rows (oldest first); one
// row is returned without a copy.
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

// general reports whether any of rows holds histograms or start timestamps.
func general(rows []bucketSamples) bool {
	for i := range rows {
		if rows[i].general() {
			return true
		}
	}
	return false
}

// newSampleIterator returns an iterator over samples, reusing it when it is
// one of ours.
func newSampleIterator(it chunkenc.Iterator, samples storage.Samples) chunkenc.Iterator {
	type resetter interface{ Reset(storage.Samples) }
	if r, ok := it.(resetter); ok {
		r.Reset(samples)
		return it
	}
	return storage.NewListSeriesIterator(samples)
}

// mixedSample is one sample of a series that holds histograms or start
// timestamps: a float (h and fh nil) or a histogram (one of them), with its
// start timestamp.
type mixedSample struct {
	t, st int64
	v     float64
	h     *histogram.Histogram
	fh    *histogram.FloatHistogram
}

// mixedList is the samples of such a series, both kinds merged, ascending.
type mixedList []mixedSample

func (s mixedList) Get(i int) chunks.Sample { return &s[i] }
func (s mixedList) Len() int                { return len(s) }

// flattenMixed merges the float and histogram samples of a series' rows
// (oldest first) into one list.
func flattenMixed(rows []bucketSamples) mixedList {
	n := 0
	for i := range rows {
		n += rows[i].len()
	}
	out := make(mixedList, 0, n)
	for r := range rows {
		b := &rows[r]
		fs, hs := b.samples, b.histograms
		for i, j := 0, 0; i < len(fs) || j < len(hs); {
			if i < len(fs) && (j >= len(hs) || fs[i].t < hs[j].T) {
				x := mixedSample{t: fs[i].t, v: fs[i].v}
				if b.sts != nil {
					x.st = b.sts[i]
				}
				out = append(out, x)
				i++
				continue
			}
			out = append(out, mixedSample{t: hs[j].T, st: hs[j].ST, h: hs[j].H, fh: hs[j].FH})
			j++
		}
	}
	return out
}

// mixedSample implements chunks.Sample. H and FH return copies, never the
// stored histogram: Prometheus' list iterator hands out what they return, and
// a caller may change or reuse it, which must not change what a later
// iteration of the series sees.

func (s *mixedSample) T() int64   { return s.t }
func (s *mixedSample) ST() int64  { return s.st }
func (s *mixedSample) F() float64 { return s.v }

func (s *mixedSample) H() *histogram.Histogram {
	if s.h == nil {
		return nil
	}
	return s.h.Copy()
}

func (s *mixedSample) FH() *histogram.FloatHistogram {
	switch {
	case s.h != nil:
		return s.h.ToFloat(nil)
	case s.fh != nil:
		return s.fh.Copy()
	}
	return nil
}

func (s *mixedSample) Type() chunkenc.ValueType {
	switch {
	case s.h != nil:
		return chunkenc.ValHistogram
	case s.fh != nil:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

func (s *mixedSample) Copy() chunks.Sample {
	return &mixedSample{t: s.t, st: s.st, v: s.v, h: s.H(), fh: s.FH()}
}

// sample implements chunks.Sample (a float sample; values bit-exact).

func (s *sample) T() int64                    { return s.t }
func (*sample) ST() int64                     { return 0 } // a sample with a start timestamp is a mixedSample
func (s *sample) F() float64                  { return s.v }
func (*sample) H() *histogram.Histogram       { return nil }
func (*sample) FH() *histogram.FloatHistogram { return nil }
func (*sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s *sample) Copy() chunks.Sample         { c := *s; return &c }
