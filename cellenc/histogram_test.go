package cellenc

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

// testHistograms are integer histograms of every shape the format must carry:
// Prometheus' test histograms (exponential, custom buckets, gauge), the extreme
// schemas, an empty one, and floats whose bits matter (stale NaN, -0).
func testHistograms() []*histogram.Histogram {
	var hs []*histogram.Histogram
	for i := range int64(20) {
		hs = append(hs, tsdbutil.GenerateTestHistogram(i), tsdbutil.GenerateTestCustomBucketsHistogram(i),
			tsdbutil.GenerateTestGaugeHistogram(i))
	}
	for _, hint := range []histogram.CounterResetHint{histogram.UnknownCounterReset, histogram.CounterReset, histogram.NotCounterReset} {
		hs = append(hs, tsdbutil.GenerateTestHistogramWithHint(3, hint))
	}
	stale := tsdbutil.GenerateTestHistogram(1)
	stale.Sum = math.Float64frombits(value.StaleNaN)
	negZero := tsdbutil.GenerateTestHistogram(2)
	negZero.Sum = math.Copysign(0, -1)
	lowest := tsdbutil.GenerateTestHistogram(4)
	lowest.Schema = histogram.ExponentialSchemaMin
	highest := tsdbutil.GenerateTestHistogram(5)
	highest.Schema = histogram.ExponentialSchemaMax
	return append(hs, stale, negZero, lowest, highest, &histogram.Histogram{})
}

func testFloatHistograms() []*histogram.FloatHistogram {
	var hs []*histogram.FloatHistogram
	for _, h := range testHistograms() {
		hs = append(hs, h.ToFloat(nil))
	}
	for i := range int64(20) {
		hs = append(hs, tsdbutil.GenerateTestFloatHistogram(i))
	}
	odd := tsdbutil.GenerateTestFloatHistogram(3)
	odd.PositiveBuckets[0] = 0.1 // not an integer count
	odd.Count = math.Inf(1)
	return append(hs, odd)
}

// Every histogram comes back bit for bit, hint included, and encodes again to
// the same bytes.
func TestHistogramValueRoundTrip(t *testing.T) {
	for i, h := range testHistograms() {
		if err := h.Validate(); err != nil {
			t.Fatalf("test histogram %d is invalid: %v", i, err)
		}
		b := AppendHistogramValue([]byte{0xEE}, h)[1:] // appends after what dst holds
		got, err := DecodeSampleValue(b)
		if err != nil {
			t.Fatalf("histogram %d (%s): %v", i, h, err)
		}
		if got.H == nil || got.FH != nil || !got.H.Equals(h) || got.H.CounterResetHint != h.CounterResetHint ||
			math.Float64bits(got.H.Sum) != math.Float64bits(h.Sum) {
			t.Fatalf("histogram %d: decoded %+v, want %+v", i, got, h)
		}
		if again := AppendHistogramValue(nil, got.H); !bytes.Equal(again, b) {
			t.Fatalf("histogram %d encodes to %x after a round trip, first %x", i, again, b)
		}
	}
	for i, h := range testFloatHistograms() {
		b := AppendFloatHistogramValue(nil, h)
		got, err := DecodeSampleValue(b)
		if err != nil {
			t.Fatalf("float histogram %d (%s): %v", i, h, err)
		}
		if got.FH == nil || got.H != nil || !got.FH.Equals(h) || got.FH.CounterResetHint != h.CounterResetHint {
			t.Fatalf("float histogram %d: decoded %+v, want %+v", i, got, h)
		}
		if again := AppendFloatHistogramValue(nil, got.FH); !bytes.Equal(again, b) {
			t.Fatalf("float histogram %d encodes to %x after a round trip, first %x", i, again, b)
		}
	}
}

// A float sample's 8 bytes and a histogram's value share the raw cells; the
// length tells them apart.
func TestDecodeSampleValueTellsFloatsFromHistograms(t *testing.T) {
	got, err := DecodeSampleValue(AppendRawValue(nil, math.Float64frombits(value.StaleNaN)))
	if err != nil || got.H != nil || got.FH != nil || math.Float64bits(got.F) != value.StaleNaN {
		t.Fatalf("a stale marker float: %+v, %v", got, err)
	}
	if n := len(AppendHistogramValue(nil, &histogram.Histogram{})); n != minHistogramValueLen {
		t.Fatalf("the empty histogram takes %d bytes, minHistogramValueLen says %d", n, minHistogramValueLen)
	}
}

// A start timestamp rides along with either kind: 8 more bytes, the rest of
// the value unchanged, and without one the value is what it always was.
func TestSampleValueStartTimestamps(t *testing.T) {
	for _, st := range []int64{0, 1, -1, 1_700_000_000_000, math.MaxInt64, math.MinInt64} {
		f := Sample{T: 5, V: math.Float64frombits(value.StaleNaN), ST: st}
		b := AppendSampleValue([]byte{0xEE}, f)[1:]
		if want := map[bool]int{false: RawValueSTLen, true: RawValueLen}[st == 0]; len(b) != want {
			t.Fatalf("float with ST %d: %d bytes, want %d", st, len(b), want)
		}
		got, err := DecodeSampleValue(b)
		if err != nil || got.ST != st || math.Float64bits(got.F) != value.StaleNaN || got.H != nil || got.FH != nil {
			t.Fatalf("float with ST %d: %+v, %v", st, got, err)
		}
		for i, h := range testHistograms() {
			plain := AppendHistogramValue(nil, h)
			b := AppendHistogramSampleValue([]byte{0xEE}, HistogramSample{ST: st, H: h})[1:]
			if st == 0 && !bytes.Equal(b, plain) {
				t.Fatalf("histogram %d without ST: %x, want %x", i, b, plain)
			}
			if st != 0 && (len(b) != len(plain)+8 || b[0] != plain[0]|histogramWithST || !bytes.Equal(b[10:], plain[2:])) {
				t.Fatalf("histogram %d with ST %d: %x, want %x with the ST after kind and hint", i, st, b, plain)
			}
			got, err := DecodeSampleValue(b)
			if err != nil || got.ST != st || got.H == nil || !got.H.Equals(h) || got.H.CounterResetHint != h.CounterResetHint {
				t.Fatalf("histogram %d with ST %d: %+v, %v", i, st, got, err)
			}
		}
		for i, h := range testFloatHistograms() {
			got, err := DecodeSampleValue(AppendHistogramSampleValue(nil, HistogramSample{ST: st, FH: h}))
			if err != nil || got.ST != st || got.FH == nil || !got.FH.Equals(h) {
				t.Fatalf("float histogram %d with ST %d: %+v, %v", i, st, got, err)
			}
		}
	}
}

func TestDecodeSampleValueRefusesMalformed(t *testing.T) {
	valid := AppendHistogramValue(nil, tsdbutil.GenerateTestHistogram(1))
	badSchema := tsdbutil.GenerateTestHistogram(1)
	badSchema.Schema = 9
	mismatched := tsdbutil.GenerateTestHistogram(1)
	mismatched.PositiveSpans[0].Length++ // spans claim a bucket the list lacks
	negative := tsdbutil.GenerateTestHistogram(1)
	negative.PositiveBuckets[0] = -5 // a negative count
	customWithZero := tsdbutil.GenerateTestCustomBucketsHistogram(1)
	customWithZero.ZeroCount = 1
	overlong := append([]byte{histogramKindInt, 0, 0x80, 0x00}, valid[3:]...) // schema 0 in two bytes
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"empty", nil},
		{"9 bytes", make([]byte, 9)},
		{"unknown kind", append([]byte{0x07}, valid[1:]...)},
		{"unknown hint", append([]byte{histogramKindInt, 9}, valid[2:]...)},
		{"truncated", valid[:len(valid)-1]},
		{"trailing bytes", append(valid[:len(valid):len(valid)], 0)},
		{"schema 9", AppendHistogramValue(nil, badSchema)},
		{"spans and buckets disagree", AppendHistogramValue(nil, mismatched)},
		{"negative bucket count", AppendHistogramValue(nil, negative)},
		{"custom buckets with a zero count", AppendHistogramValue(nil, customWithZero)},
		{"a non-minimal varint", overlong},
		{"a float with a start timestamp of 0", make([]byte, RawValueSTLen)},
		{"a histogram with a start timestamp of 0", append([]byte{histogramKindInt | histogramWithST, 0}, append(make([]byte, 8), valid[2:]...)...)},
		{"a list longer than the value", append([]byte{histogramKindFloat, 0, 0}, append(make([]byte, 32), 0xff, 0xff, 0xff, 0x0f)...)},
	} {
		if got, err := DecodeSampleValue(tc.value); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %+v, %v; want ErrMalformed", tc.name, got, err)
		}
	}
}

// FuzzDecodeSampleValue: no input panics, and whatever decodes encodes back to
// the same bytes (one encoding per value).
func FuzzDecodeSampleValue(f *testing.F) {
	for _, h := range testHistograms()[:10] {
		f.Add(AppendHistogramValue(nil, h))
	}
	for _, h := range testFloatHistograms()[:10] {
		f.Add(AppendFloatHistogramValue(nil, h))
	}
	f.Add(AppendRawValue(nil, 1.5))
	f.Add(AppendSampleValue(nil, Sample{T: 2, V: 1.5, ST: 1}))
	f.Add(AppendHistogramSampleValue(nil, HistogramSample{T: 9, ST: 7, H: testHistograms()[0]}))
	f.Add(AppendHistogramSampleValue(nil, HistogramSample{T: 9, ST: -7, FH: testFloatHistograms()[0]}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeSampleValue(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		var again []byte
		switch {
		case v.H != nil || v.FH != nil:
			again = AppendHistogramSampleValue(nil, HistogramSample{ST: v.ST, H: v.H, FH: v.FH})
		default:
			again = AppendSampleValue(nil, Sample{V: v.F, ST: v.ST})
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, v, again)
		}
	})
}
