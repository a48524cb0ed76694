package query

import (
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// Iterators. A series whose rows hold float samples only, without start
// timestamps — nearly every series — is iterated with Prometheus' list
// iterator (storage.NewListSeriesIterator: binary-search Seek) over its
// samples, which implement storage.Samples without allocating: Get returns a
// pointer into the slice. A series with native histograms or start timestamps
// in any of its rows is iterated by the same list iterator over mixedList, its
// float and histogram samples merged by timestamp.

// sampleList is the float samples of one series, ascending.
type sampleList []cellenc.Sample

// Get returns the i-th sample as a chunks.Sample without allocating: a
// floatSample is one pointer, which an interface holds as it is.
func (s sampleList) Get(i int) chunks.Sample { return floatSample{&s[i]} }
func (s sampleList) Len() int                { return len(s) }

// flatten concatenates the float samples of a series' rows (oldest first); one
// row is returned without a copy.
func flatten(rows []cellenc.RowSamples) sampleList {
	switch len(rows) {
	case 0:
		return nil
	case 1:
		return rows[0].Samples
	}
	n := 0
	for _, r := range rows {
		n += len(r.Samples)
	}
	out := make(sampleList, 0, n)
	for _, r := range rows {
		out = append(out, r.Samples...)
	}
	return out
}

// anyGeneral reports whether any of rows holds histograms or start timestamps.
func anyGeneral(rows []cellenc.RowSamples) bool {
	for i := range rows {
		if general(&rows[i]) {
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
func flattenMixed(rows []cellenc.RowSamples) mixedList {
	n := 0
	for i := range rows {
		n += rows[i].Len()
	}
	out := make(mixedList, 0, n)
	for r := range rows {
		b := &rows[r]
		for i, isHist := range b.InTimeOrder() {
			if !isHist {
				x := &b.Samples[i]
				out = append(out, mixedSample{t: x.T, st: x.ST, v: x.V})
				continue
			}
			h := &b.Histograms[i]
			out = append(out, mixedSample{t: h.T, st: h.ST, h: h.H, fh: h.FH})
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

// floatSample implements chunks.Sample for a float sample of a sampleList
// (values bit-exact).
type floatSample struct{ s *cellenc.Sample }

func (f floatSample) T() int64                    { return f.s.T }
func (f floatSample) ST() int64                   { return f.s.ST }
func (f floatSample) F() float64                  { return f.s.V }
func (floatSample) H() *histogram.Histogram       { return nil }
func (floatSample) FH() *histogram.FloatHistogram { return nil }
func (floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (f floatSample) Copy() chunks.Sample         { c := *f.s; return floatSample{&c} }
