package schema_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/util/kahansum"

	"github.com/hbtsdb/hbtsdb/schema"
)

var (
	staleNaN = math.Float64frombits(value.StaleNaN)
	negZero  = math.Copysign(0, -1)
	// nanPayload is a quiet NaN with a payload that is neither Go's NaN nor a
	// stale marker: rollups must keep it to the bit.
	nanPayload = math.Float64frombits(0x7ff8_0000_dead_beef)
)

// sameFloat reports whether a and b have the same bits.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// sameWindow reports whether a and b are equal to the bit, NaN payloads and the
// sign of zero included.
func sameWindow(a, b schema.RollupWindow) bool {
	return a.End == b.End && a.Count == b.Count && a.FirstT == b.FirstT && a.LastT == b.LastT && a.StaleT == b.StaleT &&
		sameFloat(a.Sum, b.Sum) && sameFloat(a.Min, b.Min) && sameFloat(a.Max, b.Max) &&
		sameFloat(a.FirstV, b.FirstV) && sameFloat(a.LastV, b.LastV) && sameFloat(a.Resets, b.Resets) &&
		a.Histograms == b.Histograms && sameLastH(a.LastH, b.LastH) && a.Integers == b.Integers &&
		a.HasCounters == b.HasCounters && a.Changes == b.Changes && slices.EqualFunc(a.ResetValues, b.ResetValues, sameFloat) &&
		a.PrevT == b.PrevT && sameFloat(a.PrevV, b.PrevV)
}

// sameLastH compares two windows' last histograms by their raw cell values
// (every field, bit for bit).
func sameLastH(a, b schema.HistogramSample) bool {
	if a.H == nil && a.FH == nil || b.H == nil && b.FH == nil {
		return a.H == nil && a.FH == nil && b.H == nil && b.FH == nil
	}
	return a.T == b.T && bytes.Equal(schema.AppendHistogramSampleValue(nil, a), schema.AppendHistogramSampleValue(nil, b))
}

// sameAggregate is sameWindow for two computations of a window: Sum and
// Resets are sums, and which NaN payload a sum of two NaNs carries depends on
// the order of the operands, which the Go compiler may swap (it does with
// -race), so those two only need to be NaN on both sides.
func sameAggregate(a, b schema.RollupWindow) bool {
	sameSum := func(x, y float64) bool { return sameFloat(x, y) || math.IsNaN(x) && math.IsNaN(y) }
	a2, b2 := a, b
	if sameSum(a.Sum, b.Sum) {
		a2.Sum, b2.Sum = 0, 0
	}
	if sameSum(a.Resets, b.Resets) {
		a2.Resets, b2.Resets = 0, 0
	}
	return sameWindow(a2, b2)
}

// fmtWindow writes w with its floats as bits, so that a failure shows payloads.
func fmtWindow(w schema.RollupWindow) string {
	f := func(v float64) string { return fmt.Sprintf("%v(%#x)", v, math.Float64bits(v)) }
	h := ""
	if w.Histograms > 0 {
		h = fmt.Sprintf(" Histograms:%d LastH:%d=%x", w.Histograms, w.LastH.T, schema.AppendHistogramSampleValue(nil, w.LastH))
	}
	c := ""
	if w.HasCounters {
		rs := make([]string, len(w.ResetValues))
		for i, v := range w.ResetValues {
			rs[i] = f(v)
		}
		c = fmt.Sprintf(" Changes:%d ResetValues:[%s] Prev:%d=%s", w.Changes, strings.Join(rs, " "), w.PrevT, f(w.PrevV))
	} else if w.Changes != 0 || w.ResetValues != nil || w.PrevT != 0 || w.PrevV != 0 {
		c = fmt.Sprintf(" no counters but Changes:%d ResetValues:%v Prev:%d=%s", w.Changes, w.ResetValues, w.PrevT, f(w.PrevV))
	}
	return fmt.Sprintf("{End:%d Count:%d Sum:%s Min:%s Max:%s First:%d=%s Last:%d=%s Resets:%s StaleT:%d Integers:%t%s%s}",
		w.End, w.Count, f(w.Sum), f(w.Min), f(w.Max), w.FirstT, f(w.FirstV), w.LastT, f(w.LastV), f(w.Resets), w.StaleT, w.Integers, c, h)
}

func fmtWindows(ws []schema.RollupWindow) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmtWindow(w)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestRollupTableNames(t *testing.T) {
	for res, want := range map[time.Duration]string{
		5 * time.Minute:  "rollup-5m",
		time.Hour:        "rollup-1h",
		90 * time.Minute: "rollup-1h30m",
		24 * time.Hour:   "rollup-1d",
	} {
		if got := schema.RollupTable(res); got != want {
			t.Errorf("RollupTable(%s) = %q, want %q", res, got, want)
		}
	}
	if schema.FamilyRollup != "a" {
		t.Errorf("FamilyRollup = %q", schema.FamilyRollup)
	}
}

func TestWindowEnd(t *testing.T) {
	const r = 5 * time.Minute
	for _, tc := range []struct{ t, want int64 }{
		{0, 0},
		{1, 300_000},
		{299_999, 300_000},
		{300_000, 300_000}, // closed on the right
		{300_001, 600_000},
		{-1, 0},
		{-299_999, 0},
		{-300_000, -300_000},
		{-300_001, -300_000},
	} {
		if got := schema.WindowEnd(tc.t, r); got != tc.want {
			t.Errorf("WindowEnd(%d, 5m) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

func TestRollupQualifier(t *testing.T) {
	const day = int64(86_400_000)
	row := 19_000 * day
	for _, bs := range []int64{row, row + 3_600_000, row + day - 60_000} {
		q := schema.AppendRollupQualifier(nil, bs)
		if len(q) != 4 || schema.RollupRowStart(bs) != row {
			t.Fatalf("qualifier of bucket %d = %x, row start %d; want 4 bytes and %d", bs, q, schema.RollupRowStart(bs), row)
		}
		got, err := schema.DecodeRollupQualifier(q, row)
		if err != nil || got != bs {
			t.Errorf("DecodeRollupQualifier(%x) = %d, %v; want %d", q, got, err, bs)
		}
	}
	if q := schema.AppendRollupQualifier([]byte{0xff}, row+3_600_000); !bytes.Equal(q, []byte{0xff, 0x00, 0x36, 0xee, 0x80}) {
		t.Errorf("AppendRollupQualifier of the bucket at 01:00 = %x, want ff0036ee80", q)
	}
	for _, tc := range []struct {
		q   []byte
		msg string
	}{
		{nil, "schema: rollup qualifier of 0 bytes, want 4: malformed"},
		{[]byte{0, 0, 1}, "schema: rollup qualifier of 3 bytes, want 4: malformed"},
		{[]byte{0, 0, 0, 0, 0}, "schema: rollup qualifier of 5 bytes, want 4: malformed"},
		{[]byte{0x05, 0x26, 0x5c, 0x00}, "schema: rollup qualifier offset 86400000 outside the day: malformed"},
		{[]byte{0xff, 0xff, 0xff, 0xff}, "schema: rollup qualifier offset 4294967295 outside the day: malformed"},
	} {
		_, err := schema.DecodeRollupQualifier(tc.q, row)
		if !errors.Is(err, schema.ErrMalformed) || err.Error() != tc.msg {
			t.Errorf("DecodeRollupQualifier(%x) = %v, want %s", tc.q, err, tc.msg)
		}
	}
}

func TestParseRollups(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want []schema.Rollup
		text string // FormatRollups(want)
	}{
		{"", nil, "none"},
		{"none", nil, "none"},
		{"  none ", nil, "none"},
		{schema.DefaultRollupsString, schema.DefaultRollups(), "5m:90d,1h:5y"},
		{"1h:5y,5m:90d", []schema.Rollup{{5 * time.Minute, 90 * day}, {time.Hour, 5 * 365 * day}}, "5m:90d,1h:5y"},
		{" 5m:90d , 1h:0 ", []schema.Rollup{{5 * time.Minute, 90 * day}, {time.Hour, 0}}, "5m:90d,1h:0"},
		{"1d:0s", []schema.Rollup{{day, 0}}, "1d:0"},
		{"90m:2w", []schema.Rollup{{90 * time.Minute, 14 * day}}, "1h30m:2w"},
		// Parsing does not validate: duplicates and zero resolutions are
		// ValidateRollups' to refuse.
		{"5m:1d,5m:2d", []schema.Rollup{{5 * time.Minute, day}, {5 * time.Minute, 2 * day}}, "5m:1d,5m:2d"},
		{"0:1d", []schema.Rollup{{0, day}}, "0s:1d"},
	} {
		got, err := schema.ParseRollups(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRollups(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if text := schema.FormatRollups(got); text != tc.text {
			t.Errorf("FormatRollups(%v) = %q, want %q", got, text, tc.text)
		}
		if again, err := schema.ParseRollups(tc.text); err != nil || !slices.Equal(again, got) {
			t.Errorf("ParseRollups(FormatRollups(%v)) = %v, %v", got, again, err)
		}
	}
	if got := schema.FormatRollups(schema.DefaultRollups()); got != schema.DefaultRollupsString {
		t.Errorf("FormatRollups(DefaultRollups()) = %q, want DefaultRollupsString %q", got, schema.DefaultRollupsString)
	}
	for _, tc := range []struct{ in, msg string }{
		{"5m", `schema: rollup "5m" is not resolution:retention (as in "5m:90d,1h:5y")`},
		{"5m:90d,", `schema: rollup "" is not resolution:retention (as in "5m:90d,1h:5y")`},
		{"5m=90d", `schema: rollup "5m=90d" is not resolution:retention (as in "5m:90d,1h:5y")`},
		{"x:1d", `schema: rollup "x:1d": resolution: not a valid duration string: "x"`},
		{":1d", `schema: rollup ":1d": resolution: empty duration string`},
		{"5m:forever", `schema: rollup "5m:forever": retention: not a valid duration string: "forever"`},
		{"5m:1.5h", `schema: rollup "5m:1.5h": retention: unknown unit "." in duration "1.5h"`},
		{"5m: 90d", `schema: rollup "5m: 90d": retention: not a valid duration string: " 90d"`},
		{"5m:1d:2d", `schema: rollup "5m:1d:2d": retention: unknown unit "d:" in duration "1d:2d"`},
	} {
		got, err := schema.ParseRollups(tc.in)
		if err == nil || err.Error() != tc.msg {
			t.Errorf("ParseRollups(%q) = %v, %v; want error %s", tc.in, got, err, tc.msg)
		}
	}
}

func TestValidateRollups(t *testing.T) {
	day := 24 * time.Hour
	var nine []schema.Rollup
	for _, m := range []time.Duration{1, 2, 3, 4, 5, 6, 10, 12, 15} {
		nine = append(nine, schema.Rollup{Resolution: m * time.Minute, Retention: day})
	}
	for _, tc := range []struct {
		name   string
		rs     []schema.Rollup
		bucket time.Duration
		msg    string // "" for valid
	}{
		{"none", nil, time.Hour, ""},
		{"defaults", schema.DefaultRollups(), time.Hour, ""},
		{"forever", []schema.Rollup{{time.Minute, 0}}, time.Minute, ""},
		{"multiple of the bucket", []schema.Rollup{{5 * time.Minute, day}, {2 * time.Hour, 0}, {day, 0}}, time.Hour, ""},
		{"divides the bucket", []schema.Rollup{{15 * time.Minute, day}}, 2 * time.Hour, ""},
		{"no bucket to check against", []schema.Rollup{{90 * time.Minute, day}}, 0, ""},
		{"seconds", []schema.Rollup{{30 * time.Second, day}}, time.Hour,
			"schema: rollup resolution 30s must be a whole number of minutes that divides 24h"},
		{"not dividing a day", []schema.Rollup{{7 * time.Minute, day}}, 0,
			"schema: rollup resolution 7m must be a whole number of minutes that divides 24h"},
		{"zero", []schema.Rollup{{0, day}}, time.Hour,
			"schema: rollup resolution 0s must be a whole number of minutes that divides 24h"},
		{"longer than a day", []schema.Rollup{{48 * time.Hour, day}}, time.Hour,
			"schema: rollup resolution 2d must be a whole number of minutes that divides 24h"},
		{"neither divides nor multiple", []schema.Rollup{{90 * time.Minute, day}}, time.Hour,
			"schema: rollup resolution 1h30m must divide the bucket width 1h or be a multiple of it"},
		{"negative retention", []schema.Rollup{{5 * time.Minute, -time.Hour}}, time.Hour,
			"schema: rollup 5m: retention -1h0m0s is negative or not a whole number of seconds"},
		{"fractional retention", []schema.Rollup{{5 * time.Minute, 1500 * time.Millisecond}}, time.Hour,
			"schema: rollup 5m: retention 1.5s is negative or not a whole number of seconds"},
		{"descending", []schema.Rollup{{time.Hour, 0}, {5 * time.Minute, 0}}, time.Hour,
			"schema: rollup resolutions must be ascending and distinct, 5m after 1h"},
		{"duplicate", []schema.Rollup{{5 * time.Minute, day}, {5 * time.Minute, 2 * day}}, time.Hour,
			"schema: rollup resolutions must be ascending and distinct, 5m after 5m"},
		{"too many", nine, time.Hour, "schema: 9 rollups, more than 8"},
		{"every error", []schema.Rollup{{30 * time.Second, -time.Second}, {20 * time.Second, 0}}, time.Hour,
			"schema: rollup resolution 30s must be a whole number of minutes that divides 24h\n" +
				"schema: rollup 30s: retention -1s is negative or not a whole number of seconds\n" +
				"schema: rollup resolution 20s must be a whole number of minutes that divides 24h\n" +
				"schema: rollup resolutions must be ascending and distinct, 20s after 30s"},
	} {
		err := schema.ValidateRollups(tc.rs, tc.bucket)
		if tc.msg == "" && err != nil || tc.msg != "" && (err == nil || err.Error() != tc.msg) {
			t.Errorf("%s: ValidateRollups(%v, %s) = %v, want %q", tc.name, tc.rs, tc.bucket, err, tc.msg)
		}
	}
}

func TestEncodeRollupWindowsLayout(t *testing.T) {
	// Pinned bytes: a change of the layout breaks stored rollups. These
	// windows have no counter fields (HasCounters false: decoded from a cell
	// written before them), so they are written as before the counter part;
	// TestEncodeRollupCountersLayout pins the part.
	w := schema.RollupWindow{End: 300_000, Count: 2, Sum: 3, Min: 1, Max: 2, FirstT: 1000, FirstV: 1, LastT: 300_000, LastV: 2, StaleT: -1}
	got := schema.EncodeRollupWindows(nil, 0, 5*time.Minute, []schema.RollupWindow{w})
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
	w3 := schema.RollupWindow{End: 900_000, StaleT: 600_001}
	got = schema.EncodeRollupWindows(got[:0], 0, 5*time.Minute, []schema.RollupWindow{w, w2, w3})
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
func roundTrip(t *testing.T, bucketStart int64, res time.Duration, ws []schema.RollupWindow) {
	t.Helper()
	enc := schema.EncodeRollupWindows(nil, bucketStart, res, ws)
	got, err := schema.DecodeRollupWindows(nil, enc, bucketStart, res)
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
	var ws []schema.RollupWindow
	end := bucket + m5
	for i, v := range odd {
		ws = append(ws, schema.RollupWindow{End: end, Count: uint64(i + 1), Sum: v, Min: odd[(i+1)%len(odd)],
			Max: odd[(i+2)%len(odd)], FirstT: end - m5 + 1, FirstV: odd[(i+3)%len(odd)], LastT: end,
			LastV: odd[(i+4)%len(odd)], Resets: odd[(i+5)%len(odd)], StaleT: -1})
		end += m5
	}
	// A window ending in a stale marker, and windows holding only stale markers.
	ws[3].LastT, ws[3].StaleT = ws[3].End-2, ws[3].End-1
	// Windows of integers, the first and past the eighth (the bitmap's
	// second byte).
	ws[0].Integers, ws[9].Integers = true, true
	ws = append(ws, schema.RollupWindow{End: end, StaleT: end - m5 + 1}, schema.RollupWindow{End: end + m5, StaleT: end + m5})
	roundTrip(t, bucket, 5*time.Minute, ws)

	// A sample at the bucket's first millisecond is in the window ending there.
	roundTrip(t, bucket, 5*time.Minute, schema.AggregateWindows([]schema.Sample{{T: bucket, V: nanPayload}}, nil, 5*time.Minute))
	// One part of a day's window per 1h bucket.
	roundTrip(t, bucket, 24*time.Hour, schema.AggregateWindows([]schema.Sample{{T: bucket + 1, V: negZero}, {T: bucket + 2, V: staleNaN}}, nil, 24*time.Hour))
	roundTrip(t, bucket, time.Hour, nil)

	// Random series, every resolution.
	r := newRand()
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		for range 200 {
			samples := randomSeries(r, bucket, bucket+3_600_000)
			roundTrip(t, bucket, res, schema.AggregateWindows(samples, nil, res))
		}
	}
}

// TestSumsExact: a window knows whether its samples are all integers, which
// merging parts keeps, and SumsExact holds exactly when every window is of
// integers and their magnitudes add up to at most 2^53 (with a margin of 2:
// 2^52); the windows' sums then add to the samples' sum whatever the grouping.
func TestSumsExact(t *testing.T) {
	const res = 5 * time.Minute
	at := func(i int) int64 { return int64(i) * 60_000 }
	ints := schema.AggregateWindows([]schema.Sample{{T: at(1), V: 3}, {T: at(2), V: negZero}, {T: at(6), V: -7}, {T: at(7), V: staleNaN}}, nil, res)
	if len(ints) != 2 || !ints[0].Integers || !ints[1].Integers || !schema.SumsExact(ints) {
		t.Errorf("integer windows: %s, SumsExact %t", fmtWindows(ints), schema.SumsExact(ints))
	}
	for _, v := range []float64{0.1, math.Inf(1), math.NaN()} {
		ws := schema.AggregateWindows([]schema.Sample{{T: at(1), V: 3}, {T: at(2), V: v}, {T: at(6), V: 1}}, nil, res)
		if ws[0].Integers || !ws[1].Integers || schema.SumsExact(ws) {
			t.Errorf("with %v: %s, SumsExact %t", v, fmtWindows(ws), schema.SumsExact(ws))
		}
		if m := ws[1].Merge(ws[0]); m.Integers {
			t.Errorf("merged with %v: Integers", v)
		}
	}
	// Bounds: 2 × 2^50, then 2^50: 1.5 × 2^51, exact.
	big := schema.AggregateWindows([]schema.Sample{{T: at(1), V: 1 << 50}, {T: at(2), V: 1}, {T: at(6), V: -(1 << 50)}}, nil, res)
	if !big[0].Integers || !big[1].Integers || !schema.SumsExact(big) {
		t.Errorf("2^50, 1, -2^50: %s, SumsExact false", fmtWindows(big))
	}
	// And 2^51 more: over 2^52.
	big = append(big, schema.AggregateWindows([]schema.Sample{{T: at(11), V: 1 << 51}}, nil, res)...)
	if schema.SumsExact(big) {
		t.Errorf("2^50, 1, -2^50, 2^51: SumsExact true")
	}
	// A huge float is an integer, its sums are not exact.
	huge := schema.AggregateWindows([]schema.Sample{{T: at(1), V: 1e300 / 3}}, nil, res)
	if !huge[0].Integers || schema.SumsExact(huge) {
		t.Errorf("1e300/3: %s, SumsExact %t", fmtWindows(huge), schema.SumsExact(huge))
	}
}

func TestDecodeRollupWindowsAppends(t *testing.T) {
	// The parts of a 1d window in two consecutive 1h buckets end at the same
	// time: decoding the second after the first must not call that disorder.
	const bucket = int64(19_000 * 86_400_000)
	a := schema.AggregateWindows([]schema.Sample{{T: bucket + 10, V: 1}}, nil, 24*time.Hour)
	b := schema.AggregateWindows([]schema.Sample{{T: bucket + 3_600_010, V: 2}}, nil, 24*time.Hour)
	ws, err := schema.DecodeRollupWindows(nil, schema.EncodeRollupWindows(nil, bucket, 24*time.Hour, a), bucket, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ws, err = schema.DecodeRollupWindows(ws, schema.EncodeRollupWindows(nil, bucket+3_600_000, 24*time.Hour, b), bucket+3_600_000, 24*time.Hour)
	if err != nil || len(ws) != 2 || !sameWindow(ws[0], a[0]) || !sameWindow(ws[1], b[0]) {
		t.Fatalf("decoding two parts of one window: %s, %v", fmtWindows(ws), err)
	}
	if m := ws[0].Merge(ws[1]); m.Count != 2 || m.FirstV != 1 || m.LastV != 2 || m.Sum != 3 {
		t.Errorf("merged parts = %s", fmtWindow(m))
	}
}

func TestDecodeRollupWindowsRejectsMalformed(t *testing.T) {
	const res = 5 * time.Minute
	valid := schema.EncodeRollupWindows(nil, 0, res, []schema.RollupWindow{
		{End: 300_000, Count: 1, Sum: 1, Min: 1, Max: 1, FirstT: 1, FirstV: 1, LastT: 1, LastV: 1, StaleT: 2},
	})
	if ws, err := schema.DecodeRollupWindows(nil, valid, 0, res); err != nil || len(ws) != 1 {
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
		{"empty", nil, "schema: rollup cell of bucket 0: bad varint at byte 0: malformed"},
		{"window count only", []byte{0x01}, "schema: rollup cell of bucket 0: bad varint at byte 1: malformed"},
		{"more windows than bytes", []byte{0x05, 0x01}, "schema: rollup cell claims 5 windows in 2 bytes: malformed"},
		{"overlong window count", []byte{0x80, 0x00}, "schema: rollup cell of bucket 0: bad varint at byte 0: malformed"},
		{"overlong end", []byte{0x01, 0xe0, 0xa7, 0x92, 0x00, 0x01, 0x01}, "schema: rollup cell of bucket 0: bad varint at byte 1: malformed"},
		{"huge varint", []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01, 0x00},
			"schema: rollup cell of bucket 0: bad varint at byte 1: malformed"},
		{"no flags", []byte{0x01, 0xe0, 0xa7, 0x12}, "schema: rollup cell of bucket 0: value ends at byte 4: malformed"},
		{"flags 0", window(0), "schema: rollup cell of bucket 0: empty window ending 300000: malformed"},
		{"unknown flag", window(0x05, 0x01), "schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"count 0 with samples", window(0x02, samples(0, 1, 0)...), "schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"first sample before the window", window(0x02, samples(1, 0, 0)...), "schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"first after last", window(0x02, append([]byte{0x02, 0xe0, 0xa7, 0x12, 0x01}, floats...)...),
			"schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"last sample offset out of range", window(0x02, append([]byte{0x01, 0x01, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}, floats...)...),
			"schema: rollup cell of bucket 0: bad varint at byte 7: malformed"},
		{"stale before the window", window(0x01, 0xe0, 0xa7, 0x12), "schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"stale marker before the epoch", window(0x01, 0xe1, 0xa7, 0x12), // StaleT -1: "no stale marker"
			"schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"stale not after the last sample", window(0x03, append(samples(1, 1, 5), 0x05)...),
			"schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"float header of 9 bytes", window(0x02, 0x01, 0x01, 0x00, 0x09, 1, 2, 3, 4, 5, 6, 7, 8, 9),
			"schema: rollup cell of bucket 0: bad float header 0x9 at byte 8: malformed"},
		{"float header of 0 bytes", window(0x02, 0x01, 0x01, 0x00, 0x10),
			"schema: rollup cell of bucket 0: bad float header 0x10 at byte 8: malformed"},
		{"float cut short", window(0x02, 0x01, 0x01, 0x00, 0x02, 0x3f),
			"schema: rollup cell of bucket 0: bad float header 0x2 at byte 8: malformed"},
		{"float with a leading zero byte", window(0x02, 0x01, 0x01, 0x00, 0x02, 0x00, 0x3f, 0, 0, 0, 0, 0),
			"schema: rollup cell of bucket 0: float of bytes 003f at byte 8 is not canonical: malformed"},
		{"float with a trailing zero byte", window(0x02, 0x01, 0x01, 0x00, 0x02, 0x3f, 0x00, 0, 0, 0, 0, 0),
			"schema: rollup cell of bucket 0: float of bytes 3f00 at byte 8 is not canonical: malformed"},
		{"window end not a multiple of the resolution", []byte{0x01, 0x02, 0x01, 0x01},
			"schema: rollup cell of bucket 0: inconsistent window ending 2: malformed"},
		{"a derived flag not set", window(0x42, 0x02, 0x02, 0x00, 0x02, 0x3f, 0xf0, 0x00, 0x02, 0x3f, 0xf0, 0x00, 0x00),
			"schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"two derived flags for one field", window(0x56, 0x02, 0x02, 0x00, 0x02, 0x3f, 0xf0, 0x00, 0x00, 0x00),
			"schema: rollup cell of bucket 0: inconsistent window ending 300000: malformed"},
		{"trailing bytes", append(slices.Clone(valid), 0x00), "schema: rollup cell of bucket 0: short integer bitmap at byte 18: malformed"},
		{"an empty integer bitmap", append(slices.Clone(valid), 0x00, 0x00), "schema: rollup cell of bucket 0: empty integer bitmap at byte 19: malformed"},
		{"an integer bit past the windows", append(slices.Clone(valid), 0x00, 0x02), "schema: rollup cell of bucket 0: integer bit of window 1, which has no float samples at byte 19: malformed"},
	} {
		ws, err := schema.DecodeRollupWindows(nil, tc.b, 0, res)
		if !errors.Is(err, schema.ErrMalformed) || err.Error() != tc.msg {
			t.Errorf("%s: DecodeRollupWindows(% x) = %s, %v\nwant %s", tc.name, tc.b, fmtWindows(ws), err, tc.msg)
		}
	}
}

// randomSeries returns ascending samples in [from, to): a counter with resets,
// gaps of every length (within a window, across windows, across many), and now
// and then a NaN (of another payload too), a stale marker (a few in a row
// sometimes), ±Inf, -0 or a negative value.
func randomSeries(r *rand.Rand, from, to int64) []schema.Sample {
	var out []schema.Sample
	t := from + r.Int64N(600_000)
	if r.IntN(8) == 0 {
		t = from // the bucket's first millisecond
	}
	counter := float64(r.IntN(100))
	steps := []int64{1, 1000, 15_000, 60_000, 299_999, 300_000, 300_001, 3_600_000}
	for t < to {
		var v float64
		switch k := r.IntN(40); {
		case k == 0:
			v = math.NaN()
		case k == 1:
			v = nanPayload
		case k <= 4:
			v = staleNaN
		case k == 5:
			v = math.Inf(1)
		case k == 6:
			v = math.Inf(-1)
		case k == 7:
			v = negZero
		case k == 8:
			v = -counter
		case k <= 11:
			counter = float64(r.IntN(10)) // a counter reset
			v = counter
		default:
			counter += float64(r.IntN(1000)) + r.Float64()
			v = counter
		}
		out = append(out, schema.Sample{T: t, V: v})
		t += steps[r.IntN(len(steps))] + r.Int64N(2)*r.Int64N(50_000)
	}
	return out
}

// bruteForceWindows computes the windows of samples by the definitions: group
// by window, then per window what PromQL's range functions compute over the
// window's samples, stale markers excluded: sum_over_time (Kahan, as
// funcSumOverTime), min/max_over_time (compareOverTime: NaN only if every sample
// is NaN), the counter resets as extrapolatedRate adds them, and the stale
// marker that ends the window, if any; and the counter fields, by the code of
// changes() (funcChanges) and of extrapolatedRate's reset loop.
func bruteForceWindows(samples []schema.Sample, res time.Duration) []schema.RollupWindow {
	r := res.Milliseconds()
	byEnd := map[int64][]schema.Sample{}
	var ends []int64
	for _, s := range samples {
		end := (s.T + r - 1) / r * r // t >= 0 here
		if _, ok := byEnd[end]; !ok {
			ends = append(ends, end)
		}
		byEnd[end] = append(byEnd[end], s)
	}
	var out []schema.RollupWindow
	for _, end := range ends {
		in := byEnd[end]
		w := schema.RollupWindow{End: end, StaleT: -1, HasCounters: true}
		var floats []schema.Sample
		for _, s := range in {
			if !value.IsStaleNaN(s.V) {
				floats = append(floats, s)
			}
		}
		if last := in[len(in)-1]; value.IsStaleNaN(last.V) {
			w.StaleT = last.T
		}
		if len(floats) > 0 {
			w.Count = uint64(len(floats))
			var sum, c float64
			for _, f := range floats {
				sum, c = kahansum.Inc(f.V, sum, c)
			}
			if !math.IsInf(sum, 0) {
				sum += c
			}
			w.Sum = sum
			w.Integers = true
			for _, f := range floats {
				w.Integers = w.Integers && f.V == math.Trunc(f.V) && !math.IsInf(f.V, 0)
			}
			w.Min, w.Max = floats[0].V, floats[0].V
			for _, f := range floats {
				if f.V > w.Max || math.IsNaN(w.Max) {
					w.Max = f.V
				}
				if f.V < w.Min || math.IsNaN(w.Min) {
					w.Min = f.V
				}
			}
			prev := floats[0].V
			for _, f := range floats[1:] {
				if f.V < prev {
					w.Resets += prev
					w.ResetValues = append(w.ResetValues, prev)
				}
				if f.V != prev && !(math.IsNaN(f.V) && math.IsNaN(prev)) {
					w.Changes++
				}
				prev = f.V
			}
			if len(floats) >= 2 {
				w.PrevT, w.PrevV = floats[len(floats)-2].T, floats[len(floats)-2].V
			}
			w.FirstT, w.FirstV = floats[0].T, floats[0].V
			w.LastT, w.LastV = floats[len(floats)-1].T, floats[len(floats)-1].V
		}
		out = append(out, w)
	}
	return out
}

// aggregateAsBruteForce returns AggregateWindows' windows of resolution res
// for samples (series i of a test), failing t unless they are
// bruteForceWindows'.
func aggregateAsBruteForce(t *testing.T, samples []schema.Sample, res time.Duration, i int) []schema.RollupWindow {
	t.Helper()
	got := schema.AggregateWindows(samples, nil, res)
	want := bruteForceWindows(samples, res)
	if len(got) != len(want) {
		t.Fatalf("%s series %d: %d windows, want %d", res, i, len(got), len(want))
	}
	for j := range want {
		if !sameAggregate(got[j], want[j]) {
			t.Fatalf("%s series %d window %d:\n got %s\nwant %s", res, i, j, fmtWindow(got[j]), fmtWindow(want[j]))
		}
	}
	return got
}

func TestAggregateWindowsMatchesBruteForce(t *testing.T) {
	r := newRand()
	const from = int64(1_700_000_000_000 / 86_400_000 * 86_400_000)
	for _, res := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour} {
		for i := range 300 {
			aggregateAsBruteForce(t, randomSeries(r, from, from+6*3_600_000), res, i)
		}
	}
	if got := schema.AggregateWindows(nil, nil, time.Minute); got != nil {
		t.Errorf("AggregateWindows(nil) = %v", got)
	}
}

func TestAggregateWindowsCases(t *testing.T) {
	const m = 60_000
	for _, tc := range []struct {
		name    string
		samples []schema.Sample
		want    []schema.RollupWindow
	}{
		{"max and min skip NaN", []schema.Sample{{T: 1, V: math.NaN()}, {T: 2, V: 5}, {T: 3, V: nanPayload}, {T: 4, V: 3}},
			[]schema.RollupWindow{{End: m, Count: 4, Sum: math.NaN(), Min: 3, Max: 5, FirstT: 1, FirstV: math.NaN(), LastT: 4, LastV: 3, StaleT: -1,
				HasCounters: true, Changes: 3, PrevT: 3, PrevV: nanPayload}}},
		{"all NaN: the last NaN, as max_over_time", []schema.Sample{{T: 1, V: math.NaN()}, {T: 2, V: nanPayload}},
			[]schema.RollupWindow{{End: m, Count: 2, Sum: math.NaN(), Min: nanPayload, Max: nanPayload, FirstT: 1, FirstV: math.NaN(), LastT: 2, LastV: nanPayload, StaleT: -1,
				HasCounters: true, PrevT: 1, PrevV: math.NaN()}}}, // NaN after NaN: no change
		{"only a stale marker", []schema.Sample{{T: m + 5, V: staleNaN}},
			[]schema.RollupWindow{{End: 2 * m, StaleT: m + 5, HasCounters: true}}},
		{"stale markers in the middle are skipped, the reset counted across them",
			[]schema.Sample{{T: 1, V: 10}, {T: 2, V: staleNaN}, {T: 3, V: 4}, {T: m, V: staleNaN}},
			[]schema.RollupWindow{{End: m, Count: 2, Sum: 14, Min: 4, Max: 10, FirstT: 1, FirstV: 10, LastT: 3, LastV: 4, Resets: 10, StaleT: m, Integers: true,
				HasCounters: true, Changes: 1, ResetValues: []float64{10}, PrevT: 1, PrevV: 10}}},
		{"a sample after a stale marker clears it", []schema.Sample{{T: 1, V: staleNaN}, {T: 2, V: 1}},
			[]schema.RollupWindow{{End: m, Count: 1, Sum: 1, Min: 1, Max: 1, FirstT: 2, FirstV: 1, LastT: 2, LastV: 1, StaleT: -1, Integers: true, HasCounters: true}}},
		{"-0 and +0: the first is kept", []schema.Sample{{T: 1, V: negZero}, {T: 2, V: 0}},
			[]schema.RollupWindow{{End: m, Count: 2, Sum: 0, Min: negZero, Max: negZero, FirstT: 1, FirstV: negZero, LastT: 2, LastV: 0, StaleT: -1, Integers: true,
				HasCounters: true, PrevT: 1, PrevV: negZero}}}, // +0 after -0: no change
		{"Inf in the sum", []schema.Sample{{T: 1, V: 1}, {T: 2, V: math.Inf(1)}, {T: m, V: 2}},
			[]schema.RollupWindow{{End: m, Count: 3, Sum: math.Inf(1), Min: 1, Max: math.Inf(1), FirstT: 1, FirstV: 1, LastT: m, LastV: 2, Resets: math.Inf(1), StaleT: -1,
				HasCounters: true, Changes: 2, ResetValues: []float64{math.Inf(1)}, PrevT: 2, PrevV: math.Inf(1)}}},
		{"windows are closed on the right, empty ones absent", []schema.Sample{{T: 0, V: 1}, {T: 1, V: 2}, {T: 3 * m, V: 3}},
			[]schema.RollupWindow{
				{End: 0, Count: 1, Sum: 1, Min: 1, Max: 1, FirstT: 0, FirstV: 1, LastT: 0, LastV: 1, StaleT: -1, Integers: true, HasCounters: true},
				{End: m, Count: 1, Sum: 2, Min: 2, Max: 2, FirstT: 1, FirstV: 2, LastT: 1, LastV: 2, StaleT: -1, Integers: true, HasCounters: true},
				{End: 3 * m, Count: 1, Sum: 3, Min: 3, Max: 3, FirstT: 3 * m, FirstV: 3, LastT: 3 * m, LastV: 3, StaleT: -1, Integers: true, HasCounters: true},
			}},
		{"equal values are no change, a reset to the same value no reset",
			[]schema.Sample{{T: 1, V: 2}, {T: 2, V: 2}, {T: 3, V: 5}, {T: 4, V: 1}, {T: 5, V: 1}, {T: 6, V: 0}},
			[]schema.RollupWindow{{End: m, Count: 6, Sum: 11, Min: 0, Max: 5, FirstT: 1, FirstV: 2, LastT: 6, LastV: 0, Resets: 6, StaleT: -1, Integers: true,
				HasCounters: true, Changes: 3, ResetValues: []float64{5, 1}, PrevT: 5, PrevV: 1}}},
	} {
		got := schema.AggregateWindows(tc.samples, nil, time.Minute)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %s\nwant %s", tc.name, fmtWindows(got), fmtWindows(tc.want))
			continue
		}
		for i := range got {
			if math.IsNaN(got[i].Sum) && math.IsNaN(tc.want[i].Sum) {
				got[i].Sum = tc.want[i].Sum // which NaN depends on the order of the additions
			}
			if !sameWindow(got[i], tc.want[i]) {
				t.Errorf("%s: window %d = %s\nwant %s", tc.name, i, fmtWindow(got[i]), fmtWindow(tc.want[i]))
			}
		}
		if w := got[len(got)-1]; w.HasStale() != (w.StaleT >= 0) {
			t.Errorf("%s: HasStale %v with StaleT %d", tc.name, w.HasStale(), w.StaleT)
		}
	}
}

// Merge tolerances, with u = 2^-53 the unit roundoff of float64. Count, Min,
// Max, the first and last samples and the stale marker of merged parts are
// exact. Sum and Resets are not, and are checked within
//
//	Sum:    |merged - whole| <= 4·p·u·Σ|x|  over the samples x, p the number of
//	        parts merged: each part's Kahan-Neumaier sum is within 2u|S_part|
//	        (+ O(n u²)) of the exact sum, Merge's p-1 additions round by at most
//	        u·Σ|x| each, and the whole's own sum is within 2u|S|.
//	Resets: |merged - whole| <= 2·(k+p)·u·Σ|r|  over the k values r added at
//	        counter resets: merged and whole are plain sums of the same k terms
//	        in two orders, each within (k-1)·u·Σ|r| of the exact sum.
//
// An infinite value must be the same infinity, a NaN a NaN on both sides (its
// payload depends on the order of the additions).
const unitRoundoff = 1.0 / (1 << 53)

// tolerances returns the bounds above for merging p parts of samples.
func tolerances(samples []schema.Sample, p int) (sumBound, resetBound float64) {
	var sumScale, resetScale float64
	resets := 0
	var prev *schema.Sample
	for i, s := range samples {
		if value.IsStaleNaN(s.V) {
			continue
		}
		sumScale += math.Abs(s.V)
		if prev != nil && s.V < prev.V {
			resetScale += math.Abs(prev.V)
			resets++
		}
		prev = &samples[i]
	}
	return 4 * float64(p) * unitRoundoff * sumScale, 2 * float64(resets+p) * unitRoundoff * resetScale
}

func closeEnough(got, want, bound float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= bound
}

// checkMerged fails t unless merged equals whole: exactly but for Sum, and
// Resets when the windows have no counter fields, which must be within the
// tolerances of merging p parts of samples. (With counter fields, Resets is
// added again in order from the reset values: the whole's to the bit.)
func checkMerged(t *testing.T, what string, merged, whole schema.RollupWindow, samples []schema.Sample, p int) {
	t.Helper()
	sumBound, resetBound := tolerances(samples, p)
	exact := merged
	exact.Sum = whole.Sum
	if !merged.HasCounters {
		// Merged parts without counter fields add their Resets, not the
		// whole's reset values in order.
		exact.Resets = whole.Resets
	}
	if !sameWindow(exact, whole) || !closeEnough(merged.Sum, whole.Sum, sumBound) || !closeEnough(merged.Resets, whole.Resets, resetBound) {
		t.Fatalf("%s:\n got %s\nwant %s (sum within %g, resets within %g)\nsamples %v", what, fmtWindow(merged), fmtWindow(whole),
			sumBound, resetBound, samples)
	}
}

func TestMergeOfTwoHalvesEqualsTheWhole(t *testing.T) {
	r := newRand()
	const from = int64(1_700_000_000_000 / 86_400_000 * 86_400_000)
	splits := 0
	for _, res := range []time.Duration{5 * time.Minute, time.Hour, 24 * time.Hour} {
		for range 300 {
			samples := randomSeries(r, from, from+res.Milliseconds())
			if len(samples) == 0 {
				continue
			}
			// Keep the first window's samples, at most 100.
			end := schema.WindowEnd(samples[0].T, res)
			samples = slices.DeleteFunc(samples, func(s schema.Sample) bool { return schema.WindowEnd(s.T, res) != end })
			samples = samples[:min(len(samples), 100)]
			whole := schema.AggregateWindows(samples, nil, res)
			if len(whole) != 1 {
				t.Fatalf("%d windows from one window's samples", len(whole))
			}
			for k := 1; k < len(samples); k++ {
				a := schema.AggregateWindows(samples[:k], nil, res)
				b := schema.AggregateWindows(samples[k:], nil, res)
				checkMerged(t, fmt.Sprintf("%s: merge at %d of %d samples", res, k, len(samples)), a[0].Merge(b[0]), whole[0], samples, 2)
				splits++
			}
		}
	}
	if splits < 1000 {
		t.Fatalf("only %d splits tried", splits)
	}
}

func TestMergeCases(t *testing.T) {
	const m = 60_000
	agg := func(s ...schema.Sample) schema.RollupWindow { return schema.AggregateWindows(s, nil, time.Minute)[0] }
	for _, tc := range []struct {
		name string
		a, b []schema.Sample
	}{
		{"stale only, then samples", []schema.Sample{{T: 1, V: staleNaN}}, []schema.Sample{{T: 2, V: 5}}},
		{"samples, then stale only", []schema.Sample{{T: 1, V: 5}}, []schema.Sample{{T: 2, V: staleNaN}}},
		{"stale only twice", []schema.Sample{{T: 1, V: staleNaN}}, []schema.Sample{{T: 2, V: staleNaN}}},
		{"stale ends the first part", []schema.Sample{{T: 1, V: 5}, {T: 2, V: staleNaN}}, []schema.Sample{{T: 3, V: 1}}},
		{"reset at the boundary", []schema.Sample{{T: 1, V: 5}}, []schema.Sample{{T: 2, V: 1}, {T: m, V: 3}}},
		{"NaN then numbers", []schema.Sample{{T: 1, V: math.NaN()}}, []schema.Sample{{T: 2, V: 1}, {T: 3, V: nanPayload}}},
		{"numbers then NaN", []schema.Sample{{T: 1, V: 7}}, []schema.Sample{{T: 2, V: nanPayload}}},
		{"-0 then +0", []schema.Sample{{T: 1, V: negZero}}, []schema.Sample{{T: 2, V: 0}}},
	} {
		all := append(slices.Clone(tc.a), tc.b...)
		checkMerged(t, tc.name, agg(tc.a...).Merge(agg(tc.b...)), agg(all...), all, 2)
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
			samples = append(samples, schema.Sample{T: from + day, V: 1})
		}
		samples = slices.DeleteFunc(samples, func(s schema.Sample) bool { return s.T > from+day })
		samples = slices.CompactFunc(samples, func(a, b schema.Sample) bool { return a.T == b.T })
		want := schema.AggregateWindows(samples, nil, 24*time.Hour)
		var parts []schema.RollupWindow
		buckets := 0
		for h := range int64(25) {
			bs := from + h*3_600_000
			var in []schema.Sample
			for _, s := range samples {
				if schema.BucketStart(s.T, time.Hour) == bs {
					in = append(in, s)
				}
			}
			if len(in) > 0 {
				buckets++
			}
			var err error
			enc := schema.EncodeRollupWindows(nil, bs, 24*time.Hour, schema.AggregateWindows(in, nil, 24*time.Hour))
			if parts, err = schema.DecodeRollupWindows(parts, enc, bs, 24*time.Hour); err != nil {
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
