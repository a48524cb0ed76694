package cellenc_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

func TestEncodeRollupWindowsLayout(t *testing.T) {
	// Pinned bytes: a change of the layout breaks stored rollups. These
	// windows have no counter fields (HasCounters false: decoded from a cell
	// written before them), so they are written as before the counter part;
	// TestEncodeRollupCountersLayout pins the part.
	w := cellenc.RollupWindow{End: 300_000, Count: 2, Sum: 3, Min: 1, Max: 2, FirstT: 1000, FirstV: 1, LastT: 300_000, LastV: 2, StaleT: -1}
	got := cellenc.EncodeRollupWindows(nil, 0, 5*time.Minute, []cellenc.RollupWindow{w})
	want := []byte{
		0x01,             // one window
		0xe0, 0xa7, 0x12, // End - bucketStart = 300000
		0x66,       // flags: samples, Min = FirstV, Max = LastV, no resets
		0x04,       // Count - 0 = 2, zigzag
		0xd0, 0x0f, // FirstT - (End - 5m) = 1000, minus 0, zigzag
		0x00,             // End - LastT = 0, minus 0
		0x02, 0x3f, 0xf0, // FirstV 1 ^ 0: no leading zero byte, 2 significant bytes
		0x02, 0x7f, 0xf0, // LastV 2 ^ FirstV 1
		0x02, 0x40, 0x08, // Sum 3 ^ 0
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeRollupWindows = % x\nwant                 % x", got, want)
	}
	// The next window, one resolution later, with the same count and sum: its
	// end is a byte, its phase a delta, its sum a byte. A stale window with no
	// sample is its end, flags and End-StaleT.
	w2 := w
	w2.End, w2.FirstT, w2.LastT, w2.StaleT = 600_000, 300_001, 599_000, 599_999
	w3 := cellenc.RollupWindow{End: 900_000, StaleT: 600_001}
	got = cellenc.EncodeRollupWindows(got[:0], 0, 5*time.Minute, []cellenc.RollupWindow{w, w2, w3})
	tail := []byte{
		0x00, 0x67, 0x00, // w2: the next window, flags as w's and stale, same count
		0xcd, 0x0f, 0xd0, 0x0f, // FirstT offset 1 (1 - 1000 = -999), End - LastT 1000 (+1000)
		0x02, 0x7f, 0xf0, 0x02, 0x7f, 0xf0, 0x00, // FirstV 1 ^ prev LastV 2, LastV 2 ^ 1, Sum 3 ^ 3
		0x01,                         // stale marker 1 ms before End
		0x00, 0x01, 0xdf, 0xa7, 0x12, // w3: the next window, stale only, End-StaleT = 299999
	}
	if want := append(append([]byte{0x03}, want[1:]...), tail...); !bytes.Equal(got, want) {
		t.Fatalf("EncodeRollupWindows of 3 windows = % x\nwant                             % x", got, want)
	}
}

// roundTrip encodes ws, decodes them and checks they come back to the bit.
func roundTrip(t *testing.T, bucketStart int64, res time.Duration, ws []cellenc.RollupWindow) {
	t.Helper()
	enc := cellenc.EncodeRollupWindows(nil, bucketStart, res, ws)
	got, err := cellenc.DecodeRollupWindows(nil, enc, bucketStart, res)
	if err != nil {
		t.Fatalf("DecodeRollupWindows(EncodeRollupWindows(%s)): %v", fmtWindows(ws), err)
	}
	if len(got) != len(ws) {
		t.Fatalf("round trip of %d windows gave %d: %s", len(ws), len(got), fmtWindows(got))
	}
	for i := range ws {
		if !sameWindow(got[i], ws[i]) {
			t.Fatalf("round trip of window %d: %s\nwant %s", i, fmtWindow(got[i]), fmtWindow(ws[i]))
		}
	}
}

func TestRollupWindowsRoundTripBitExact(t *testing.T) {
	const bucket = int64(1_700_000_000_000 / 3_600_000 * 3_600_000)
	const m5 = int64(300_000)
	odd := []float64{nanPayload, math.NaN(), staleNaN, negZero, 0, math.Inf(1), math.Inf(-1),
		math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e-300, 42}
	var ws []cellenc.RollupWindow
	end := bucket + m5
	for i, v := range odd {
		ws = append(ws, cellenc.RollupWindow{End: end, Count: uint64(i + 1), Sum: v, Min: odd[(i+1)%len(odd)],
			Max: odd[(i+2)%len(odd)], FirstT: end - m5 + 1, FirstV: odd[(i+3)%len(odd)], LastT: end,
			LastV: odd[(i+4)%len(odd)], Resets: odd[(i+5)%len(odd)], StaleT: -1})
		end += m5
	}
	// A window ending in a stale marker, and windows holding only stale markers.
	ws[3].LastT, ws[3].StaleT = ws[3].End-2, ws[3].End-1
	// Windows of integers, the first and past the eighth (the bitmap's
	// second byte).
	ws[0].Integers, ws[9].Integers = true, true
	ws = append(ws, cellenc.RollupWindow{End: end, StaleT: end - m5 + 1}, cellenc.RollupWindow{End: end + m5, StaleT: end + m5})
	roundTrip(t, bucket, 5*time.Minute, ws)

	// A sample at the bucket's first millisecond is in the window ending there.
	roundTrip(t, bucket, 5*time.Minute, cellenc.AggregateWindows([]cellenc.Sample{{T: bucket, V: nanPayload}}, nil, 5*time.Minute))
	// One part of a day's window per 1h bucket.
	roundTrip(t, bucket, 24*time.Hour, cellenc.AggregateWindows([]cellenc.Sample{{T: bucket + 1, V: negZero}, {T: bucket + 2, V: staleNaN}}, nil, 24*time.Hour))
	roundTrip(t, bucket, time.Hour, nil)

	// Random series, every resolution.
	r := newRand()
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		for range 200 {
			samples := randomSeries(r, bucket, bucket+3_600_000)
			roundTrip(t, bucket, res, cellenc.AggregateWindows(samples, nil, res))
		}
	}
}

func TestDecodeRollupWindowsAppends(t *testing.T) {
	// The parts of a 1d window in two consecutive 1h buckets end at the same
	// time: decoding the second after the first must not call that disorder.
	const bucket = int64(19_000 * 86_400_000)
	a := cellenc.AggregateWindows([]cellenc.Sample{{T: bucket + 10, V: 1}}, nil, 24*time.Hour)
	b := cellenc.AggregateWindows([]cellenc.Sample{{T: bucket + 3_600_010, V: 2}}, nil, 24*time.Hour)
	ws, err := cellenc.DecodeRollupWindows(nil, cellenc.EncodeRollupWindows(nil, bucket, 24*time.Hour, a), bucket, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ws, err = cellenc.DecodeRollupWindows(ws, cellenc.EncodeRollupWindows(nil, bucket+3_600_000, 24*time.Hour, b), bucket+3_600_000, 24*time.Hour)
	if err != nil || len(ws) != 2 || !sameWindow(ws[0], a[0]) || !sameWindow(ws[1], b[0]) {
		t.Fatalf("decoding two parts of one window: %s, %v", fmtWindows(ws), err)
	}
	if m := ws[0].Merge(ws[1]); m.Count != 2 || m.FirstV != 1 || m.LastV != 2 || m.Sum != 3 {
		t.Errorf("merged parts = %s", fmtWindow(m))
	}
}

func TestDecodeRollupWindowsRejectsMalformed(t *testing.T) {
	const res = 5 * time.Minute
	valid := cellenc.EncodeRollupWindows(nil, 0, res, []cellenc.RollupWindow{
		{End: 300_000, Count: 1, Sum: 1, Min: 1, Max: 1, FirstT: 1, FirstV: 1, LastT: 1, LastV: 1, StaleT: 2},
	})
	if ws, err := cellenc.DecodeRollupWindows(nil, valid, 0, res); err != nil || len(ws) != 1 {
		t.Fatalf("the valid value % x: %v, %v", valid, ws, err)
	}
	// window builds one window of 5m ending at 300000 with the given flags and
	// body (after the flags byte).
	window := func(flags byte, body ...byte) []byte {
		return append([]byte{0x01, 0xe0, 0xa7, 0x12, flags}, body...)
	}
	floats := []byte{0x01, 0x3f, 0, 0, 0, 0, 0} // 0x3f00000000000000, then five floats equal to the previous
	samples := func(count, first, last byte) []byte {
		return append([]byte{count, first, last}, floats...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"empty", nil, "cellenc: rollup cell of bucket 0: bad varint at byte 0: malformed"},
		{"window count only", []byte{0x01}, "cellenc: rollup cell of bucket 0: bad varint at byte 1: malformed"},
		{"more windows than bytes", []byte{0x05, 0x01}, "cellenc: rollup cell claims 5 windows in 2 bytes: malformed"},
		{"overlong window count", []byte{0x80, 0x00}, "cellenc: rollup cell of bucket 0: bad varint at byte 0: malformed"},
		{"overlong end", []byte{0x01, 0xe0, 0xa7, 0x92, 0x00, 0x01, 0x01}, "cellenc: rollup cell of bucket 0: bad varint at byte 1: malformed"},
		{"huge varint", []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01, 0x00},
			"cellenc: rollup cell of bucket 0: bad varint at byte 1: malformed"},
		{"no flags", []byte{0x01, 0xe0, 0xa7, 0x12}, "cellenc: rollup cell of bucket 0: value ends at byte 4: malformed"},
		{"flags 0", window(0), "cellenc: rollup cell of bucket 0: empty window ending 300000: malformed"},
		{"unknown flag", window(0x05, 0x01), "cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"count 0 with samples", window(0x02, samples(0, 1, 0)...), "cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"first sample before the window", window(0x02, samples(1, 0, 0)...), "cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"first after last", window(0x02, append([]byte{0x02, 0xe0, 0xa7, 0x12, 0x01}, floats...)...),
			"cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"last sample offset out of range", window(0x02, append([]byte{0x01, 0x01, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}, floats...)...),
			"cellenc: rollup cell of bucket 0: bad varint at byte 7: malformed"},
		{"stale before the window", window(0x01, 0xe0, 0xa7, 0x12), "cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"stale marker before the epoch", window(0x01, 0xe1, 0xa7, 0x12), // StaleT -1: "no stale marker"
			"cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"stale not after the last sample", window(0x03, append(samples(1, 1, 5), 0x05)...),
			"cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"float header of 9 bytes", window(0x02, 0x01, 0x01, 0x00, 0x09, 1, 2, 3, 4, 5, 6, 7, 8, 9),
			"cellenc: rollup cell of bucket 0: bad float header 0x9 at byte 8: malformed"},
		{"float header of 0 bytes", window(0x02, 0x01, 0x01, 0x00, 0x10),
			"cellenc: rollup cell of bucket 0: bad float header 0x10 at byte 8: malformed"},
		{"float cut short", window(0x02, 0x01, 0x01, 0x00, 0x02, 0x3f),
			"cellenc: rollup cell of bucket 0: bad float header 0x2 at byte 8: malformed"},
		{"float with a leading zero byte", window(0x02, 0x01, 0x01, 0x00, 0x02, 0x00, 0x3f, 0, 0, 0, 0, 0),
			"cellenc: rollup cell of bucket 0: float of bytes 003f at byte 8 is not canonical: malformed"},
		{"float with a trailing zero byte", window(0x02, 0x01, 0x01, 0x00, 0x02, 0x3f, 0x00, 0, 0, 0, 0, 0),
			"cellenc: rollup cell of bucket 0: float of bytes 3f00 at byte 8 is not canonical: malformed"},
		{"window end not a multiple of the resolution", []byte{0x01, 0x02, 0x01, 0x01},
			"cellenc: rollup cell of bucket 0: inconsistent window ending 2: malformed"},
		{"a derived flag not set", window(0x42, 0x02, 0x02, 0x00, 0x02, 0x3f, 0xf0, 0x00, 0x02, 0x3f, 0xf0, 0x00, 0x00),
			"cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"two derived flags for one field", window(0x56, 0x02, 0x02, 0x00, 0x02, 0x3f, 0xf0, 0x00, 0x00, 0x00),
			"cellenc: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"trailing bytes", append(slices.Clone(valid), 0x00), "cellenc: rollup cell of bucket 0: short integer bitmap at byte 18: malformed"},
		{"an empty integer bitmap", append(slices.Clone(valid), 0x00, 0x00), "cellenc: rollup cell of bucket 0: empty integer bitmap at byte 19: malformed"},
		{"an integer bit past the windows", append(slices.Clone(valid), 0x00, 0x02), "cellenc: rollup cell of bucket 0: integer bit of window 1, which has no float samples at byte 19: malformed"},
	} {
		ws, err := cellenc.DecodeRollupWindows(nil, tc.b, 0, res)
		if !errors.Is(err, schema.ErrMalformed) || err.Error() != tc.msg {
			t.Errorf("%s: DecodeRollupWindows(% x) = %s, %v\nwant %s", tc.name, tc.b, fmtWindows(ws), err, tc.msg)
		}
	}
}

func TestRollupPartsAcrossBucketsThroughTheCodec(t *testing.T) {
	// A day's window written as 24 hourly cells, decoded and merged, is the
	// day's aggregate (Sum and Resets within mergeTolerance).
	r := newRand()
	const day = int64(86_400_000)
	from := 19_000 * day
	for range 50 {
		// The window (from, from+day]: its last millisecond is the first of the
		// next day's first bucket, whose cell holds a window ending at its start.
		samples := randomSeries(r, from+1, from+day+1)
		if r.IntN(2) == 0 {
			samples = append(samples, cellenc.Sample{T: from + day, V: 1})
		}
		samples = slices.DeleteFunc(samples, func(s cellenc.Sample) bool { return s.T > from+day })
		samples = slices.CompactFunc(samples, func(a, b cellenc.Sample) bool { return a.T == b.T })
		want := cellenc.AggregateWindows(samples, nil, 24*time.Hour)
		var parts []cellenc.RollupWindow
		buckets := 0
		for h := range int64(25) {
			bs := from + h*3_600_000
			var in []cellenc.Sample
			for _, s := range samples {
				if schema.BucketStart(s.T, time.Hour) == bs {
					in = append(in, s)
				}
			}
			if len(in) > 0 {
				buckets++
			}
			var err error
			enc := cellenc.EncodeRollupWindows(nil, bs, 24*time.Hour, cellenc.AggregateWindows(in, nil, 24*time.Hour))
			if parts, err = cellenc.DecodeRollupWindows(parts, enc, bs, 24*time.Hour); err != nil {
				t.Fatalf("bucket %d: %v", h, err)
			}
		}
		if len(want) != 1 || len(parts) == 0 {
			t.Fatalf("%d windows, %d parts", len(want), len(parts))
		}
		got := parts[0]
		for _, p := range parts[1:] {
			got = got.Merge(p)
		}
		checkMerged(t, fmt.Sprintf("%d parts of a day", len(parts)), got, want[0], samples, len(parts))
		if len(parts) != buckets {
			t.Fatalf("%d parts from %d buckets with samples", len(parts), buckets)
		}
	}
}
