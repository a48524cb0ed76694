package query

import (
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// listSample is a float sample as storage.Samples hands it out, for the
// reference iterator below.
type listSample struct{ s cellenc.Sample }

func (l listSample) T() int64                    { return l.s.T }
func (l listSample) ST() int64                   { return l.s.ST }
func (l listSample) F() float64                  { return l.s.V }
func (listSample) H() *histogram.Histogram       { return nil }
func (listSample) FH() *histogram.FloatHistogram { return nil }
func (listSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (l listSample) Copy() chunks.Sample         { return l }
func (s listSamples) Get(i int) chunks.Sample    { return listSample{s[i]} }
func (s listSamples) Len() int                   { return len(s) }

type listSamples []cellenc.Sample

// floatIterator over a series' rows does what Prometheus' list iterator does
// over their concatenation, for every sequence of Next and Seek calls: rows
// empty or not, seeks before, into, between and after them, repeated.
func TestFloatIteratorIsTheListIteratorOverTheConcatenatedRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var (
			rows []cellenc.RowSamples
			all  listSamples
			ts   int64
		)
		for range rng.IntN(4) {
			var row cellenc.RowSamples
			for range rng.IntN(5) {
				ts += 1 + rng.Int64N(3)
				s := cellenc.Sample{T: ts, V: rng.Float64(), ST: rng.Int64N(2)}
				row.Samples = append(row.Samples, s)
				all = append(all, s)
			}
			rows = append(rows, row)
			ts += rng.Int64N(4)
		}
		var got chunkenc.Iterator = &floatIterator{} // reused, as the engine does
		got = newFloatIterator(got, rows)
		want := storage.NewListSeriesIterator(all)
		for step := range 12 {
			var g, w chunkenc.ValueType
			op := "next"
			if rng.IntN(2) == 0 {
				g, w = got.Next(), want.Next()
			} else {
				target := rng.Int64N(ts + 3)
				op = "seek"
				g, w = got.Seek(target), want.Seek(target)
			}
			if g != w {
				t.Fatalf("round %d step %d (%s): %v, list iterator %v (rows %v)", round, step, op, g, w, rows)
			}
			if g == chunkenc.ValNone {
				continue
			}
			gt, gv := got.At()
			wt, wv := want.At()
			if gt != wt || gv != wv || got.AtT() != want.AtT() || got.AtST() != want.AtST() {
				t.Fatalf("round %d step %d (%s): at %d %v, list iterator at %d %v", round, step, op, gt, gv, wt, wv)
			}
			if _, h := got.AtHistogram(nil); h != nil {
				t.Fatalf("a float sample with a histogram")
			}
		}
	}
}
