package query

import (
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// Iterators. A series whose rows hold float samples only, without start
// timestamps — nearly every series — is iterated by floatIterator over its
// rows' samples in place: what Prometheus' list iterator
// (storage.NewListSeriesIterator: binary-search Seek) does over their
// concatenation, without the copy and with typed calls instead of one
// interface call per sample and field. A series with native histograms or
// start timestamps in any of its rows is iterated by the list iterator over
// mixedList, its float and histogram samples merged by timestamp.

// floatIterator iterates over the float samples of a series' rows, oldest row
// first, each ascending and the rows disjoint in time (a row is a bucket), as
// storage.NewListSeriesIterator iterates over their concatenation: Next steps
// one sample, Seek never moves back and stays put on a sample at or after its
// target, and both stay exhausted once exhausted.
type floatIterator struct {
	rows []cellenc.RowSamples
	r    int // current row; len(rows) once exhausted
	i    int // current sample of rows[r]; -1 before the first Next or Seek
}

func newFloatIterator(it chunkenc.Iterator, rows []cellenc.RowSamples) chunkenc.Iterator {
	f, ok := it.(*floatIterator)
	if !ok {
		f = new(floatIterator)
	}
	*f = floatIterator{rows: rows, i: -1}
	return f
}

// settle moves past the ends of rows to the next sample, and reports whether
// there is one.
func (f *floatIterator) settle() bool {
	for f.r < len(f.rows) && f.i >= len(f.rows[f.r].Samples) {
		f.r++
		f.i = 0
	}
	return f.r < len(f.rows)
}

func (f *floatIterator) Next() chunkenc.ValueType {
	if f.r >= len(f.rows) {
		return chunkenc.ValNone
	}
	f.i++
	if !f.settle() {
		return chunkenc.ValNone
	}
	return chunkenc.ValFloat
}

// millis is int64 (a timestamp in ms) under another name, for Seek: go vet's
// stdmethods check takes any Seek(int64, ...) for a wrong io.Seeker, and
// chunkenc.Iterator's Seek is not one.
type millis = int64

func (f *floatIterator) Seek(t millis) chunkenc.ValueType {
	f.i = max(f.i, 0)
	if !f.settle() {
		return chunkenc.ValNone
	}
	s := f.rows[f.r].Samples
	if s[f.i].T >= t {
		return chunkenc.ValFloat
	}
	// Rows that end before t are passed whole; in the row that does not,
	// the first sample at or after t is searched.
	for len(s) == 0 || s[len(s)-1].T < t {
		f.r++
		f.i = 0
		if f.r >= len(f.rows) {
			return chunkenc.ValNone
		}
		s = f.rows[f.r].Samples
	}
	f.i += sort.Search(len(s)-f.i, func(k int) bool { return s[f.i+k].T >= t })
	return chunkenc.ValFloat
}

func (f *floatIterator) At() (int64, float64) {
	s := &f.rows[f.r].Samples[f.i]
	return s.T, s.V
}

func (f *floatIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return f.AtT(), nil
}

func (f *floatIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return f.AtT(), nil
}

func (f *floatIterator) AtT() int64  { return f.rows[f.r].Samples[f.i].T }
func (f *floatIterator) AtST() int64 { return f.rows[f.r].Samples[f.i].ST }
func (*floatIterator) Err() error    { return nil }

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
