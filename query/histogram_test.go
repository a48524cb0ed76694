package query_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// mixedSeries is a series that changes kind sample by sample: floats (one with
// a start timestamp), integer histograms (one with a start timestamp, the
// third a counter reset), a float histogram, a float again, and in the next
// bucket custom-buckets histograms, the second a counter reset. Its samples are written as raw cells
// (cellenc's codecs) over float samples written by write.Writer, which
// registers and indexes the series.
var mixedSeries = labels.FromStrings("__name__", "mixed", "host", "h1", "job", "node")

// mixedSample is one sample of mixedSeries: a float (h and fh nil) or a
// histogram.
type mixedSample struct {
	t, st int64
	v     float64
	h     *histogram.Histogram
	fh    *histogram.FloatHistogram
}

func mixedSamples() []mixedSample {
	reset := tsdbutil.GenerateTestHistogram(0)
	return []mixedSample{
		{t: 1000, v: 1},
		{t: 2000, st: 1500, v: 2},
		{t: 3000, h: tsdbutil.GenerateTestHistogram(1)},
		{t: 4000, st: 2500, h: tsdbutil.GenerateTestHistogram(2)},
		{t: 5000, h: reset},
		{t: 6000, fh: tsdbutil.GenerateTestFloatHistogram(3)},
		{t: 7000, v: math.Float64frombits(0x7ff0000000000002)}, // a stale marker
		{t: hour + 1000, h: tsdbutil.GenerateTestCustomBucketsHistogram(1)},
		{t: hour + 2000, h: tsdbutil.GenerateTestCustomBucketsHistogram(0)}, // a counter reset
		{t: hour + 3000, h: tsdbutil.GenerateTestCustomBucketsHistogram(1)},
	}
}

// writeMixed writes mixedSeries into a fresh store of backend b and returns a
// reader of it.
func writeMixed(t *testing.T, b schematest.Backend) (*query.Reader, kv.Store) {
	t.Helper()
	ctx := context.Background()
	b.TableOptions.RawRetention = 0
	st := b.Store(t)
	reg, post := index.NewRegistry(st, index.RegistryOptions{}), index.NewPostings(st, index.PostingsOptions{})
	w, err := write.New(st, b.Settings, reg, post, write.Options{})
	if err != nil {
		t.Fatal(err)
	}
	samples := mixedSamples()
	// Floats first, for the index, the registry and the rows' t: cells; the
	// raw cells below replace them.
	req := write.Request{Series: []write.Series{{Labels: mixedSeries}}}
	for _, s := range samples {
		req.Series[0].Samples = append(req.Series[0].Samples, cellenc.Sample{T: s.t})
	}
	if res, err := w.Write(ctx, &req); err != nil || res.SamplesWritten != len(samples) {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	ids := make([]uint64, 1)
	if err := reg.Lookup(ctx, []labels.Labels{mixedSeries}, ids); err != nil || ids[0] == 0 {
		t.Fatalf("Lookup = %v, %v", ids, err)
	}
	var muts []kv.Mutation
	for _, s := range samples {
		width := b.Settings.BucketWidth
		bucket := schema.BucketStart(s.t, width)
		row := schema.DataRowKey(nil, schema.DataKey{Salt: schema.Salt("h1", b.Settings.Salts), Host: "h1",
			Metric: "mixed", SeriesID: ids[0], BucketStart: bucket})
		q, err := schema.AppendRawQualifier(nil, s.t-bucket, width)
		if err != nil {
			t.Fatal(err)
		}
		// The writer stored the floats as late samples (1970 is long past):
		// the same cells, at their bucket's last millisecond (schema/late.go).
		muts = append(muts, kv.Put(row, schema.FamilyRaw, q, schema.LateCellTimestamp(bucket, width), s.value()))
	}
	if err := st.Apply(ctx, schema.TableData, muts); err != nil {
		t.Fatal(err)
	}
	return query.NewReader(st, b.Settings, reg, post), st
}

// compactStore seals every bucket of st into chunk cells (the compactor).
func compactStore(t *testing.T, st kv.Store, b schematest.Backend) {
	t.Helper()
	c, err := compact.NewCompactor(st, b.Settings, compact.Options{
		Now: func() time.Time { return time.UnixMilli(kv.MaxTimestamp) }})
	if err != nil {
		t.Fatal(err)
	}
	if stats, err := c.Compact(context.Background()); err != nil || stats.Rows == 0 {
		t.Fatalf("Compact = %+v, %v", stats, err)
	}
}

// value is the sample's raw cell value, and its canonical form: what a read
// must hand back, bit for bit.
func (s mixedSample) value() []byte {
	if s.h == nil && s.fh == nil {
		return cellenc.AppendSampleValue(nil, cellenc.Sample{T: s.t, V: s.v, ST: s.st})
	}
	return cellenc.AppendHistogramSampleValue(nil, cellenc.HistogramSample{T: s.t, ST: s.st, H: s.h, FH: s.fh})
}

// readIterator renders what an iterator hands out as "t/st/type/value"
// lines, value the canonical raw cell value in hex.
func readIterator(t *testing.T, it chunkenc.Iterator) string {
	t.Helper()
	var out []string
	for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
		out = append(out, atIterator(t, it, typ))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

func atIterator(t *testing.T, it chunkenc.Iterator, typ chunkenc.ValueType) string {
	t.Helper()
	s := mixedSample{t: it.AtT(), st: it.AtST()}
	switch typ {
	case chunkenc.ValFloat:
		_, s.v = it.At()
	case chunkenc.ValHistogram:
		_, s.h = it.AtHistogram(nil)
	case chunkenc.ValFloatHistogram:
		_, s.fh = it.AtFloatHistogram(nil)
	}
	return s.String(typ)
}

func (s mixedSample) String(typ chunkenc.ValueType) string {
	return fmt.Sprintf("%d/%d/%s/%x", s.t, s.st, typ, s.value())
}

func (s mixedSample) typ() chunkenc.ValueType {
	switch {
	case s.h != nil:
		return chunkenc.ValHistogram
	case s.fh != nil:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

func wantMixed(samples []mixedSample) string {
	var out []string
	for _, s := range samples {
		out = append(out, s.String(s.typ()))
	}
	return strings.Join(out, "\n")
}

// Select hands out every sample of a series that changes kind, in time order,
// floats and histograms bit-exact with their start timestamps, across buckets,
// from raw cells and from the chunk cells compaction writes,
// the histograms' counter-reset hints as Prometheus' head sets them (the
// second of two integer histograms in a row is "not a reset"); Seek lands on
// either kind.
func TestSelectMixedSeries(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			r, st := writeMixed(t, b)
			samples := mixedSamples()
			for _, i := range []int{3, 9} {
				samples[i].h = samples[i].h.Copy()
				samples[i].h.CounterResetHint = histogram.NotCounterReset
			}
			for _, layout := range []string{"raw", "compacted"} {
				if layout == "compacted" {
					compactStore(t, st, b)
				}
				for _, plan := range []query.Plan{query.PlanIndex, query.PlanHostScan} {
					for _, tc := range []struct {
						name       string
						mint, maxt int64
						want       []mixedSample
					}{
						{"everything", 0, 2 * hour, samples},
						{"cut to histograms", 2500, 6500, samples[2:6]},
						// As in Prometheus' head, 4000 is the second histogram of a
						// chunk that started before the range.
						{"from the second histogram of a chunk", 3500, 6500, samples[3:6]},
						{"one bucket's floats", 0, 2000, samples[:2]},
					} {
						q, err := r.WithOptions(query.Options{Plan: plan}).Querier(tc.mint, tc.maxt)
						if err != nil {
							t.Fatal(err)
						}
						ss := q.Select(context.Background(), true, nil, m(labels.MatchEqual, "host", "h1"), m(labels.MatchEqual, "__name__", "mixed"))
						if !ss.Next() {
							t.Fatalf("%s, plan %v: no series (%v)", tc.name, plan, ss.Err())
						}
						var it chunkenc.Iterator
						for range 2 { // the second time through a reused iterator
							it = ss.At().Iterator(it)
							if got, want := readIterator(t, it), wantMixed(tc.want); got != want {
								t.Errorf("%s, %s, plan %v:\n%s\nwant\n%s", tc.name, layout, plan, got, want)
							}
						}
						if ss.Next() {
							t.Errorf("%s: a second series %s", tc.name, ss.At().Labels())
						}
						q.Close()
					}
				}
			}

			q, err := r.Querier(0, 2*hour)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ss := q.Select(context.Background(), true, nil, m(labels.MatchEqual, "__name__", "mixed"))
			if !ss.Next() {
				t.Fatal(ss.Err())
			}
			it := ss.At().Iterator(nil)
			for _, step := range []struct {
				seek int64
				want mixedSample
			}{{3500, samples[3]}, {3000, samples[3]}, {5500, samples[5]}, {6001, samples[6]}, {hour, samples[7]}} {
				typ := it.Seek(step.seek)
				if got, want := atIterator(t, it, typ), step.want.String(step.want.typ()); got != want {
					t.Errorf("Seek(%d) = %s, want %s", step.seek, got, want)
				}
			}
			if typ := it.Seek(2 * hour); typ != chunkenc.ValNone {
				t.Errorf("Seek past the end = %s, want none", typ)
			}
			// An integer histogram read as a float histogram is its float form;
			// what a caller does to a histogram it got changes nothing stored.
			it = ss.At().Iterator(it)
			if typ := it.Seek(3000); typ != chunkenc.ValHistogram {
				t.Fatalf("Seek(3000) = %s", typ)
			}
			_, fh := it.AtFloatHistogram(nil)
			if want := samples[2].h.ToFloat(nil); !fh.Equals(want) {
				t.Errorf("AtFloatHistogram = %s, want %s", fh, want)
			}
			_, h := it.AtHistogram(nil)
			h.Count, h.PositiveBuckets[0] = 1e6, 1e6
			_, again := it.AtHistogram(nil)
			if !again.Equals(samples[2].h) {
				t.Errorf("a histogram changed by its reader: %s, want %s", again, samples[2].h)
			}
			buf := samples[4].h.Copy()
			if _, into := it.AtHistogram(buf); !into.Equals(samples[2].h) {
				t.Errorf("AtHistogram(buf) = %s, want %s", into, samples[2].h)
			}
		})
	}
}

// The chunk querier (remote read's streamed chunks) encodes a series that
// changes kind into Prometheus' chunk encodings: a new chunk at every change
// of kind, on a counter reset and at a bucket boundary; the ST encodings for
// kinds that carry start timestamps in the bucket. Decoded, the chunks give
// the samples back as Prometheus' head would: values bit-exact, the first
// histogram of a chunk with an unknown counter-reset hint and the others with
// "not a reset".
func TestChunkQuerierMixedSeries(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			r, _ := writeMixed(t, b)
			q, err := r.ChunkQuerier(0, 2*hour)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ss := q.Select(context.Background(), true, nil, m(labels.MatchEqual, "__name__", "mixed"))
			if !ss.Next() {
				t.Fatal(ss.Err())
			}
			samples := mixedSamples()
			hint := func(s mixedSample, hint histogram.CounterResetHint) mixedSample {
				s.h = s.h.Copy()
				s.h.CounterResetHint = hint
				return s
			}
			want := []struct {
				enc     chunkenc.Encoding
				samples []mixedSample
			}{
				{chunkenc.EncXOR2, samples[0:2]},
				{chunkenc.EncHistogramST, []mixedSample{hint(samples[2], histogram.UnknownCounterReset), hint(samples[3], histogram.NotCounterReset)}},
				{chunkenc.EncHistogramST, samples[4:5]}, // the counter reset
				{chunkenc.EncFloatHistogram, samples[5:6]},
				{chunkenc.EncXOR2, samples[6:7]},
				{chunkenc.EncHistogram, samples[7:8]}, // the next bucket
				{chunkenc.EncHistogram, []mixedSample{samples[8], hint(samples[9], histogram.NotCounterReset)}}, // a reset
			}
			it := ss.At().Iterator(nil)
			for i, w := range want {
				if !it.Next() {
					t.Fatalf("chunk %d: none (%v)", i, it.Err())
				}
				c := it.At()
				if c.Chunk.Encoding() != w.enc || c.MinTime != w.samples[0].t || c.MaxTime != w.samples[len(w.samples)-1].t {
					t.Errorf("chunk %d: %s [%d, %d], want %s [%d, %d]", i, c.Chunk.Encoding(), c.MinTime, c.MaxTime,
						w.enc, w.samples[0].t, w.samples[len(w.samples)-1].t)
				}
				// Through the bytes, as a client gets them.
				chk, err := chunkenc.FromData(c.Chunk.Encoding(), bytes.Clone(c.Chunk.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := readIterator(t, chk.Iterator(nil)), wantMixed(w.samples); got != want {
					t.Errorf("chunk %d holds\n%s\nwant\n%s", i, got, want)
				}
			}
			if it.Next() {
				t.Errorf("a chunk more: %s [%d, %d]", it.At().Chunk.Encoding(), it.At().MinTime, it.At().MaxTime)
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Last hands out the newest n samples of both kinds, newest first, each kind
// in its own list.
func TestLastMixedSeries(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			r, _ := writeMixed(t, b)
			samples := mixedSamples()
			for _, n := range []int{1, 3, 5, len(samples), 100} {
				want := reversed(samples)[:min(n, len(samples))]
				got, err := r.Last(context.Background(), "h1", "mixed", n)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || !labels.Equal(got[0].Labels, mixedSeries) {
					t.Fatalf("Last(%d) = %+v", n, got)
				}
				var floats, hists []string
				for _, w := range want { // newest first
					if w.typ() == chunkenc.ValFloat {
						floats = append(floats, w.String(w.typ()))
					} else {
						hists = append(hists, w.String(w.typ()))
					}
				}
				var gotFloats, gotHists []string
				for _, s := range got[0].Samples {
					gotFloats = append(gotFloats, mixedSample{t: s.T, st: s.ST, v: s.V}.String(chunkenc.ValFloat))
				}
				for _, h := range got[0].Histograms {
					s := mixedSample{t: h.T, st: h.ST, h: h.H, fh: h.FH}
					gotHists = append(gotHists, s.String(s.typ()))
				}
				if g, w := strings.Join(gotFloats, "\n"), strings.Join(floats, "\n"); g != w {
					t.Errorf("Last(%d) floats:\n%s\nwant\n%s", n, g, w)
				}
				if g, w := strings.Join(gotHists, "\n"), strings.Join(hists, "\n"); g != w {
					t.Errorf("Last(%d) histograms:\n%s\nwant\n%s", n, g, w)
				}
			}
		})
	}
}

func reversed(s []mixedSample) []mixedSample {
	out := make([]mixedSample, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}
