package schema_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Every decoder has a fuzz target with the same two properties: it never panics, and
// what it accepts re-encodes to exactly the bytes it was given (so no two encodings
// decode to the same value, and keys built from decoded values find the same rows).
// Seeds are in testdata/fuzz/<FuzzName>/ as well as below; run one with
//
//	go test -run='^$' -fuzz='^FuzzParseDataRowKey$' -fuzztime=30s ./schema/

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"", "\x00", "abc\x00rest", "a\x01\x01b\x01\x02\x00", "\x01\x03\x00", "\x01", "\xff\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := schema.Unescape(b)
		if err != nil {
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("Unescape(%q) consumed %d bytes", b, n)
		}
		if enc := schema.AppendEscaped(nil, s); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("Unescape(%q) = %q, which re-encodes as %q", b[:n], s, enc)
		}
	})
}

func FuzzParseDataRowKey(f *testing.F) {
	f.Add(schema.DataRowKey(nil, schema.DataKey{Salt: 3, Host: "web-1", Metric: "up", SeriesID: 1, BucketStart: 1_699_999_200_000}))
	f.Add(schema.DataRowKey(nil, schema.DataKey{Host: "a\x00b", Metric: "\x01", SeriesID: math.MaxUint64, BucketStart: math.MaxInt64}))
	f.Add(schema.DataRowKey(nil, schema.DataKey{SeriesID: 1}))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := schema.ParseDataRowKey(b)
		if err != nil {
			return
		}
		if enc := schema.DataRowKey(nil, k); !bytes.Equal(enc, b) {
			t.Fatalf("ParseDataRowKey(%q) = %+v, which re-encodes as %q", b, k, enc)
		}
		if n := schema.DataRowKeyLen(k); n != len(b) {
			t.Fatalf("DataRowKeyLen(%+v) = %d, key has %d bytes", k, n, len(b))
		}
		id, bs, err := schema.ParseDataRowTail(b)
		if err != nil || id != k.SeriesID || bs != k.BucketStart {
			t.Fatalf("ParseDataRowTail(%q) = %d, %d, %v; ParseDataRowKey gave %+v", b, id, bs, err, k)
		}
		if !bytes.HasPrefix(b, schema.SeriesPrefix(nil, k.Salt, k.Host, k.Metric, k.SeriesID)) {
			t.Fatalf("key %q lacks its series prefix", b)
		}
	})
}

func FuzzParseIndexKey(f *testing.F) {
	f.Add(schema.IndexRowKey(nil, schema.IndexKey{Day: 19675, Name: "job", Value: "node"}))
	f.Add(schema.IndexRowKey(nil, schema.IndexKey{Day: math.MaxUint32, Name: "\x00", Value: "\x01\xff"}))
	f.Add([]byte("\x00\x00\x00\x01job\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := schema.ParseIndexRowKey(b)
		if err != nil {
			return
		}
		if enc := schema.IndexRowKey(nil, k); !bytes.Equal(enc, b) {
			t.Fatalf("ParseIndexRowKey(%q) = %+v, which re-encodes as %q", b, k, enc)
		}
		if !bytes.HasPrefix(b, schema.IndexLabelPrefix(nil, k.Day, k.Name)) {
			t.Fatalf("key %q lacks its label prefix", b)
		}
	})
}

func FuzzDecodeLabels(f *testing.F) {
	f.Add([]byte("__name__\x00up\x00instance\x00a\x01\x01b\x00job\x00node\x00"))
	f.Add([]byte("a\x00b\x00"))
	f.Add([]byte("b\x001\x00a\x002\x00"))
	f.Add([]byte("\x01\x02\x00\x01\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lbls, err := schema.DecodeLabels(b)
		if err != nil {
			return
		}
		enc, err := schema.AppendLabels(nil, lbls)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("DecodeLabels(%q) = %q, which re-encodes as %q, %v", b, lbls, enc, err)
		}
		if n := schema.LabelsLen(lbls); n != len(b) {
			t.Fatalf("LabelsLen(%q) = %d, encoding has %d bytes", lbls, n, len(b))
		}
		row := append([]byte{schema.SeriesForwardKind}, b...)
		back, err := schema.ParseSeriesForwardRow(row)
		if err != nil || !slices.Equal(back, lbls) {
			t.Fatalf("ParseSeriesForwardRow(%q) = %q, %v; want %q", row, back, err, lbls)
		}
	})
}

func FuzzDecodeRawQualifier(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, uint32(3600))
	f.Add([]byte{0, 0x36, 0xee, 0x7f}, uint32(3600))
	f.Add([]byte{0, 0x36, 0xee, 0x80}, uint32(3600))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(86400))
	f.Fuzz(func(t *testing.T, q []byte, widthSeconds uint32) {
		width := time.Duration(widthSeconds) * time.Second
		off, err := schema.DecodeRawQualifier(q, width)
		if err != nil {
			return
		}
		if off < 0 || off >= width.Milliseconds() {
			t.Fatalf("DecodeRawQualifier(%x, %s) = offset %d outside the bucket", q, width, off)
		}
		enc, err := schema.AppendRawQualifier(nil, off, width)
		if err != nil || !bytes.Equal(enc, q) {
			t.Fatalf("DecodeRawQualifier(%x, %s) = %d, which re-encodes as %x, %v", q, width, off, enc, err)
		}
	})
}

func FuzzDecodeRawValue(f *testing.F) {
	f.Add([]byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 2}) // the stale marker
	f.Add([]byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) // 1.5
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := schema.DecodeRawValue(b)
		if err != nil {
			return
		}
		if enc := schema.AppendRawValue(nil, v); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeRawValue(%x) = %v, which re-encodes as %x", b, v, enc)
		}
	})
}

func FuzzDecodeSettings(f *testing.F) {
	f.Add([]byte("1"), []byte("3600000"), []byte("16"), []byte("host,instance"))
	f.Add([]byte("1"), []byte("60000"), []byte("1"), []byte("node"))
	f.Add([]byte("2"), []byte(""), []byte(""), []byte(""))
	f.Add([]byte("01"), []byte("3600000"), []byte("+16"), []byte("host,"))
	f.Add([]byte("1"), []byte("3600000"), []byte("16"), []byte("1host"))
	f.Fuzz(func(t *testing.T, formatVersion, bucketWidth, saltBuckets, hostLabels []byte) {
		cells := []kv.Cell{
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierFormatVersion), Value: formatVersion},
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierBucketWidth), Value: bucketWidth},
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierSaltBuckets), Value: saltBuckets},
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierHostLabels), Value: hostLabels},
		}
		s, err := schema.DecodeSettings(cells)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("DecodeSettings accepted invalid settings %+v: %v", s, err)
		}
		for i, c := range schema.SettingsCells(s) {
			if string(c.Qualifier) != string(cells[i].Qualifier) || !bytes.Equal(c.Value, cells[i].Value) {
				t.Fatalf("DecodeSettings(%q, %q, %q, %q) = %+v, which re-encodes %s as %q",
					formatVersion, bucketWidth, saltBuckets, hostLabels, s, c.Qualifier, c.Value)
			}
		}
	})
}

func FuzzParseSettings(f *testing.F) {
	f.Add("format_version=1 bucket_width_ms=3600000 salt_buckets=16 host_labels=host,instance")
	f.Add("format_version=1 bucket_width_ms=60000 salt_buckets=1 host_labels=node ")
	f.Add("format_version=1 bucket_width_ms=60000 salt_buckets=1 host_labels=a=b")
	f.Add("format_version=2")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := schema.ParseSettings(text)
		if err != nil {
			return
		}
		if got := s.String(); got != text {
			t.Fatalf("ParseSettings(%q) = %+v, which re-encodes as %q", text, s, got)
		}
	})
}

func FuzzParseSeriesReverseRow(f *testing.F) {
	f.Add(schema.SeriesReverseRow(nil, 1))
	f.Add(schema.SeriesReverseRow(nil, 0))
	f.Add([]byte(schema.SeriesCounterRow))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := schema.ParseSeriesReverseRow(b)
		if err != nil {
			return
		}
		if enc := schema.SeriesReverseRow(nil, id); !bytes.Equal(enc, b) || id == 0 {
			t.Fatalf("ParseSeriesReverseRow(%x) = %d, which re-encodes as %x", b, id, enc)
		}
	})
}

// rollupFuzzResolutions are the resolutions FuzzDecodeRollupWindows decodes with:
// one shorter than the default bucket width, one equal, one longer.
var rollupFuzzResolutions = []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}

func FuzzDecodeRollupWindows(f *testing.F) {
	const bucket = int64(1_700_000_000_000 / 3_600_000 * 3_600_000)
	stale := math.Float64frombits(value.StaleNaN)
	for i, samples := range [][]schema.Sample{
		{{T: bucket, V: 1}, {T: bucket + 1, V: 2}, {T: bucket + 300_000, V: 0}, {T: bucket + 300_001, V: stale}},
		{{T: bucket + 10, V: stale}},
		{{T: bucket + 10, V: math.NaN()}, {T: bucket + 20, V: math.Inf(-1)}, {T: bucket + 3_599_999, V: math.Copysign(0, -1)}},
		nil,
	} {
		res := rollupFuzzResolutions[i%len(rollupFuzzResolutions)]
		f.Add(schema.EncodeRollupWindows(nil, bucket, res, schema.AggregateWindows(samples, nil, res)), bucket, uint8(i))
	}
	// Windows with native histograms (their count and last one).
	hs := []schema.HistogramSample{
		{T: bucket + 5, H: tsdbutil.GenerateTestHistogram(1)},
		{T: bucket + 400_000, ST: bucket - 1, FH: tsdbutil.GenerateTestCustomBucketsFloatHistogram(2)},
		{T: bucket + 400_001, H: &histogram.Histogram{Sum: stale}},
	}
	for i, res := range rollupFuzzResolutions {
		fs := []schema.Sample{{T: bucket + 1, V: 1}, {T: bucket + 300_000, V: 2}}
		f.Add(schema.EncodeRollupWindows(nil, bucket, res, schema.AggregateWindows(fs, hs, res)), bucket, uint8(i))
	}
	f.Add([]byte{}, int64(0), uint8(0))
	f.Add([]byte{1, 0x80, 0}, int64(0), uint8(1))
	f.Add([]byte{1, 1, 2, 1, 1, 0, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0}, int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, bucketStart int64, resIndex uint8) {
		res := rollupFuzzResolutions[int(resIndex)%len(rollupFuzzResolutions)]
		ws, err := schema.DecodeRollupWindows(nil, b, bucketStart, res)
		if err != nil {
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("DecodeRollupWindows(%x) failed without ErrMalformed: %v", b, err)
			}
			return
		}
		if enc := schema.EncodeRollupWindows(nil, bucketStart, res, ws); !bytes.Equal(enc, b) {
			t.Fatalf("DecodeRollupWindows(%x, %d, %s) = %+v, which re-encodes as %x", b, bucketStart, res, ws, enc)
		}
		// Decoding appends: what dst held before (a previous cell's windows, which
		// may end where these do) neither changes the result nor is checked.
		prev := []schema.RollupWindow{{End: math.MaxInt64, StaleT: -1}}
		got, err := schema.DecodeRollupWindows(prev, b, bucketStart, res)
		if err != nil || len(got) != len(ws)+1 || !sameWindow(got[0], prev[0]) {
			t.Fatalf("DecodeRollupWindows(%x) after a window = %d windows, %v; want %d", b, len(got), err, len(ws)+1)
		}
		for i := range ws {
			if !sameWindow(got[i+1], ws[i]) {
				t.Fatalf("DecodeRollupWindows(%x) after a window: window %d = %+v, want %+v", b, i, got[i+1], ws[i])
			}
		}
	})
}

// FuzzDecodeDecimalChunk: decoding never panics and fails only with
// ErrMalformed; what decodes is ascending, within [mint, maxt], and encodes
// back (when it has a decimal form, which every decoded value has unless it is
// beyond the encoder's scale) to a chunk that decodes to the same samples.
func FuzzDecodeDecimalChunk(f *testing.F) {
	for _, ss := range [][]schema.Sample{
		{{T: 0, V: 1}},
		{{T: 10, V: 1.5}, {T: 25, V: 2.25}, {T: 40, V: 3}},
		{{T: 1_700_000_000_000, V: 1e12}, {T: 1_700_000_015_000, V: -7}, {T: 1_700_000_031_000, V: 0.001}},
	} {
		b, ok := schema.AppendDecimalChunk(nil, ss)
		if !ok {
			f.Fatalf("seed %v has no decimal form", ss)
		}
		f.Add(b[1:], int64(0), int64(math.MaxInt64))
	}
	f.Fuzz(func(t *testing.T, b []byte, mint, maxt int64) {
		got, n, err := schema.DecodeDecimalChunk(nil, b, mint, maxt)
		if err != nil {
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("DecodeDecimalChunk(%x) failed without ErrMalformed: %v", b, err)
			}
			return
		}
		all, total, err := schema.DecodeDecimalChunk(nil, b, math.MinInt64, math.MaxInt64)
		if err != nil || total != n || len(all) != n || len(got) > n {
			t.Fatalf("DecodeDecimalChunk(%x): %d of %d samples in range, %d in all (%d), %v", b, len(got), n, len(all), total, err)
		}
		for i, s := range all {
			if s.T < 0 || i > 0 && s.T <= all[i-1].T {
				t.Fatalf("DecodeDecimalChunk(%x): sample %d at %d", b, i, s.T)
			}
		}
		for _, s := range got {
			if s.T < mint || s.T > maxt {
				t.Fatalf("DecodeDecimalChunk(%x, %d, %d) returned a sample at %d", b, mint, maxt, s.T)
			}
		}
		enc, ok := schema.AppendDecimalChunk(nil, all)
		if !ok {
			return
		}
		again, _, err := schema.DecodeDecimalChunk(nil, enc[1:], math.MinInt64, math.MaxInt64)
		if err != nil || len(again) != len(all) {
			t.Fatalf("re-encoding %x: %d samples, %v", b, len(again), err)
		}
		for i := range all {
			if again[i].T != all[i].T || math.Float64bits(again[i].V) != math.Float64bits(all[i].V) {
				t.Fatalf("re-encoding %x: sample %d is %v@%d, want %v@%d", b, i, again[i].V, again[i].T, all[i].V, all[i].T)
			}
		}
	})
}

// FuzzDecodeChunkCell: decoding a chunk cell's value never panics and fails
// only with ErrMalformed; what decodes is ascending across both kinds, and,
// when it fits one bucket, BucketCell encodes it back to a cell that decodes
// to the same samples (schema/chunk.go says what a chunk keeps of a histogram:
// every count and sum, not the layout of empty buckets nor every hint).
func FuzzDecodeChunkCell(f *testing.F) {
	const day = int64(24 * time.Hour / time.Millisecond)
	stale := math.Float64frombits(value.StaleNaN)
	at := func(i int) int64 { return int64(i) * 15_000 }
	var seeds [][]byte
	add := func(fs []schema.Sample, hs []schema.HistogramSample) {
		c, err := schema.BucketCell(fs, hs, 0, 24*time.Hour)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, c.Value)
	}
	var ih, fh, ch, sth []schema.HistogramSample
	for i := range 12 {
		ih = append(ih, schema.HistogramSample{T: at(i), H: tsdbutil.GenerateTestHistogram(int64(i % 5))})
		fh = append(fh, schema.HistogramSample{T: at(i), FH: tsdbutil.GenerateTestGaugeFloatHistogram(int64(i))})
		ch = append(ch, schema.HistogramSample{T: at(i), H: tsdbutil.GenerateTestCustomBucketsHistogram(int64(i))})
		sth = append(sth, schema.HistogramSample{T: at(i), ST: 1, FH: tsdbutil.GenerateTestFloatHistogram(int64(i))})
	}
	add(nil, ih)
	add(nil, fh)
	add(nil, ch)
	add(nil, sth)
	add(nil, append(ih[:3:3], schema.HistogramSample{T: at(3), H: &histogram.Histogram{Sum: stale}}))
	add([]schema.Sample{{T: at(20), V: 1.5, ST: 3}, {T: at(21), V: stale}}, nil)
	add([]schema.Sample{{T: at(20), V: math.Pi}, {T: at(21), V: 2}}, ih)
	add([]schema.Sample{{T: at(20), V: 1}, {T: at(21), V: 2}}, fh)
	for _, s := range seeds {
		f.Add(s, int64(0), int64(math.MaxInt64))
	}
	f.Add([]byte{schema.EncChunks, 1, 2, 0, 0}, int64(0), int64(100))
	f.Fuzz(func(t *testing.T, b []byte, mint, maxt int64) {
		got, err := schema.DecodeChunkCellSamples(schema.ChunkCellSamples{}, b, mint, maxt)
		if err != nil {
			if !errors.Is(err, schema.ErrMalformed) {
				t.Fatalf("DecodeChunkCellSamples(%x) failed without ErrMalformed: %v", b, err)
			}
			return
		}
		all, err := schema.DecodeChunkCellSamples(schema.ChunkCellSamples{}, b, math.MinInt64, math.MaxInt64)
		if errors.Is(err, schema.ErrMalformed) {
			return // a histogram outside [mint, maxt] is not decoded, nor checked
		}
		if err != nil || all.Total != got.Total || len(all.Samples)+len(all.Histograms) != all.Total ||
			len(got.Samples)+len(got.Histograms) > got.Total {
			t.Fatalf("DecodeChunkCellSamples(%x): %d+%d of %d samples in range, %d+%d of %d in all, %v", b,
				len(got.Samples), len(got.Histograms), got.Total, len(all.Samples), len(all.Histograms), all.Total, err)
		}
		for _, s := range got.Samples {
			if s.T < mint || s.T > maxt {
				t.Fatalf("DecodeChunkCellSamples(%x, %d, %d) returned a sample at %d", b, mint, maxt, s.T)
			}
		}
		for _, s := range got.Histograms {
			if s.T < mint || s.T > maxt {
				t.Fatalf("DecodeChunkCellSamples(%x, %d, %d) returned a histogram at %d", b, mint, maxt, s.T)
			}
		}
		inDay := func(t int64) bool { return t >= 0 && t < day }
		for _, s := range all.Samples {
			if !inDay(s.T) || !inDay(s.ST) {
				return
			}
		}
		for _, s := range all.Histograms {
			if !inDay(s.T) || !inDay(s.ST) {
				return
			}
		}
		if all.Total > schema.MaxChunkSamples {
			return
		}
		c, err := schema.BucketCell(all.Samples, all.Histograms, 0, 24*time.Hour)
		if err != nil {
			if errors.Is(err, kv.ErrInvalidArgument) && strings.Contains(err.Error(), "a float and a histogram sample at") {
				t.Fatalf("DecodeChunkCellSamples(%x) gave a float and a histogram at one timestamp", b)
			}
			return // e.g. Prometheus' appender refusing a histogram it decoded
		}
		again, err := schema.DecodeChunkCellSamples(schema.ChunkCellSamples{}, c.Value, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("re-encoding %x as %x: %v", b, c.Value, err)
		}
		if err := sameSamples(all.Samples, again.Samples, all.Histograms, again.Histograms); err != nil {
			t.Fatalf("re-encoding %x as %x: %v", b, c.Value, err)
		}
	})
}
