package cellenc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// mixedSeries is a series of floats and histograms at 15 s from `from`, one
// per timestamp: kind picks each sample's kind by its index (0 float, 1
// integer histogram, 2 float histogram, 3 a float stale marker, 4 a histogram
// stale marker).
func mixedSeries(from int64, n int, kind func(i int) int) ([]cellenc.Sample, []cellenc.HistogramSample) {
	var (
		fs []cellenc.Sample
		hs []cellenc.HistogramSample
	)
	for i := range n {
		t := from + int64(i)*15_000
		switch kind(i) {
		case 0:
			fs = append(fs, cellenc.Sample{T: t, V: float64(i)})
		case 1:
			hs = append(hs, cellenc.HistogramSample{T: t, ST: int64(i % 2), H: tsdbutil.GenerateTestHistogram(int64(i))})
		case 2:
			hs = append(hs, cellenc.HistogramSample{T: t, FH: tsdbutil.GenerateTestCustomBucketsFloatHistogram(int64(i))})
		case 3:
			fs = append(fs, cellenc.Sample{T: t, V: staleNaN})
		case 4:
			hs = append(hs, cellenc.HistogramSample{T: t, H: &histogram.Histogram{Sum: staleNaN}})
		}
	}
	return fs, hs
}

func TestAggregateWindowsWithHistograms(t *testing.T) {
	const m = 60_000
	h := func(t int64, i int64) cellenc.HistogramSample {
		return cellenc.HistogramSample{T: t, H: tsdbutil.GenerateTestHistogram(i)}
	}
	staleH := func(t int64) cellenc.HistogramSample {
		return cellenc.HistogramSample{T: t, FH: &histogram.FloatHistogram{Sum: staleNaN}}
	}
	for _, tc := range []struct {
		name string
		fs   []cellenc.Sample
		hs   []cellenc.HistogramSample
		want []cellenc.RollupWindow
	}{
		{
			name: "histograms only",
			hs:   []cellenc.HistogramSample{h(1, 1), h(2, 2), h(m+1, 3)},
			want: []cellenc.RollupWindow{{End: m, StaleT: -1, HasCounters: true, Histograms: 2, LastH: h(2, 2)}, {End: 2 * m, StaleT: -1, HasCounters: true, Histograms: 1, LastH: h(m+1, 3)}},
		},
		{
			name: "a histogram stale marker ends the window stale",
			fs:   []cellenc.Sample{{T: 1, V: 5}},
			hs:   []cellenc.HistogramSample{h(2, 1), staleH(3)},
			want: []cellenc.RollupWindow{{End: m, Count: 1, Sum: 5, Min: 5, Max: 5, FirstT: 1, FirstV: 5, LastT: 1, LastV: 5, StaleT: 3, Integers: true, HasCounters: true, Histograms: 1, LastH: h(2, 1)}},
		},
		{
			name: "a histogram after a float stale marker",
			fs:   []cellenc.Sample{{T: 1, V: 5}, {T: 2, V: staleNaN}},
			hs:   []cellenc.HistogramSample{h(3, 1)},
			want: []cellenc.RollupWindow{{End: m, Count: 1, Sum: 5, Min: 5, Max: 5, FirstT: 1, FirstV: 5, LastT: 1, LastV: 5, StaleT: -1, Integers: true, HasCounters: true, Histograms: 1, LastH: h(3, 1)}},
		},
		{
			name: "only a histogram stale marker",
			hs:   []cellenc.HistogramSample{staleH(m + 5)},
			want: []cellenc.RollupWindow{{End: 2 * m, StaleT: m + 5, HasCounters: true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cellenc.AggregateWindows(tc.fs, tc.hs, time.Minute)
			if len(got) != len(tc.want) {
				t.Fatalf("got %s, want %s", fmtWindows(got), fmtWindows(tc.want))
			}
			for i := range got {
				if !sameWindow(got[i], tc.want[i]) {
					t.Errorf("window %d = %s, want %s", i, fmtWindow(got[i]), fmtWindow(tc.want[i]))
				}
			}
			roundTrip(t, 0, time.Minute, got)
		})
	}
}

// TestHistogramWindowsRoundTripAndMerge: random series of both kinds give
// windows that encode and decode bit for bit, and whose parts merge into the
// whole, at every resolution.
func TestHistogramWindowsRoundTripAndMerge(t *testing.T) {
	r := newRand()
	const from = int64(1_700_000_000_000 / 86_400_000 * 86_400_000)
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
		for range 100 {
			weights := []int{r.IntN(5), r.IntN(5), r.IntN(5), r.IntN(2), r.IntN(2)}
			kind := func(int) int {
				total := 0
				for _, w := range weights {
					total += w
				}
				if total == 0 {
					return 1
				}
				x := r.IntN(total)
				for k, w := range weights {
					if x < w {
						return k
					}
					x -= w
				}
				return 0
			}
			fs, hs := mixedSeries(from, 240, kind)
			ws := cellenc.AggregateWindows(fs, hs, res)
			roundTrip(t, from, res, ws)
			// Split at every sample of the first window: the halves merge into it.
			end := ws[0].End
			for k := int64(1); k < res.Milliseconds()/15_000; k++ {
				cut := from + k*15_000
				a := cellenc.AggregateWindows(before(fs, cut), beforeH(hs, cut), res)
				b := cellenc.AggregateWindows(from2(fs, cut, end), from2H(hs, cut, end), res)
				if len(a) == 0 || len(b) == 0 || a[0].End != end || b[0].End != end {
					continue
				}
				if got := a[0].Merge(b[0]); !sameAggregate(got, ws[0]) || got.Histograms != ws[0].Histograms || !sameLastH(got.LastH, ws[0].LastH) {
					t.Fatalf("%s: merge at %d = %s, want %s", res, cut, fmtWindow(got), fmtWindow(ws[0]))
				}
			}
		}
	}
}

func before(fs []cellenc.Sample, t int64) []cellenc.Sample {
	var out []cellenc.Sample
	for _, s := range fs {
		if s.T < t {
			out = append(out, s)
		}
	}
	return out
}

func beforeH(hs []cellenc.HistogramSample, t int64) []cellenc.HistogramSample {
	var out []cellenc.HistogramSample
	for _, s := range hs {
		if s.T < t {
			out = append(out, s)
		}
	}
	return out
}

func from2(fs []cellenc.Sample, t, end int64) []cellenc.Sample {
	var out []cellenc.Sample
	for _, s := range fs {
		if s.T >= t && s.T <= end {
			out = append(out, s)
		}
	}
	return out
}

func from2H(hs []cellenc.HistogramSample, t, end int64) []cellenc.HistogramSample {
	var out []cellenc.HistogramSample
	for _, s := range hs {
		if s.T >= t && s.T <= end {
			out = append(out, s)
		}
	}
	return out
}

func TestDecodeRollupWindowsRejectsBadHistograms(t *testing.T) {
	const m = 60_000
	h := cellenc.HistogramSample{T: 10, H: tsdbutil.GenerateTestHistogram(1)}
	valid := cellenc.EncodeRollupWindows(nil, 0, time.Minute, []cellenc.RollupWindow{{End: m, StaleT: -1, Histograms: 3, LastH: h}})
	hv := cellenc.AppendHistogramSampleValue(nil, h)
	// One window ending m of histograms only (flags 0), then its histogram part.
	section := func(idx, count, off uint64, v []byte) []byte {
		b := binary.AppendUvarint([]byte{0x01}, m)
		b = append(b, 0x00, 0x01)
		for _, x := range []uint64{idx, count, off, uint64(len(v))} {
			b = binary.AppendUvarint(b, x)
		}
		return append(b, v...)
	}
	if got := section(0, 3, m-10, hv); !bytes.Equal(got, valid) {
		t.Fatalf("test encoding % x, EncodeRollupWindows % x", got, valid)
	}
	stale := cellenc.AppendHistogramSampleValue(nil, cellenc.HistogramSample{H: &histogram.Histogram{Sum: staleNaN}})
	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"window index out of range", section(1, 3, m-10, hv), "cellenc: rollup cell of bucket 0: bad histogram window at byte 12: malformed"},
		{"count 0", section(0, 0, m-10, hv), "cellenc: rollup cell of bucket 0: bad histogram window at byte 12: malformed"},
		{"last histogram outside the window", section(0, 3, m, hv),
			"cellenc: rollup cell of bucket 0: inconsistent last histogram at 0 of the window ending 60000 at byte 54: malformed"},
		{"a stale marker as the last histogram", section(0, 3, m-10, stale),
			"cellenc: rollup cell of bucket 0: inconsistent last histogram at 10 of the window ending 60000 at byte 38: malformed"},
		{"a float as the last histogram", section(0, 3, m-10, cellenc.AppendRawValue(nil, 1)),
			"cellenc: rollup cell of bucket 0: bad last histogram (<nil>) at byte 12: malformed"},
		{"no window with histograms", append(section(0, 3, m-10, hv)[:5], 0x00), "cellenc: rollup cell of bucket 0: short integer bitmap at byte 6: malformed"},
		{"an empty window", []byte{0x01, 0xe0, 0xd4, 0x03, 0x00}, "cellenc: rollup cell of bucket 0: empty window ending 60000: malformed"},
	} {
		_, err := cellenc.DecodeRollupWindows(nil, tc.b, 0, time.Minute)
		if !errors.Is(err, schema.ErrMalformed) || err.Error() != tc.msg {
			t.Errorf("%s: DecodeRollupWindows(% x) = %v, want %q wrapping ErrMalformed", tc.name, tc.b, err, tc.msg)
		}
	}
}
