package schema_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/schema"
)

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
