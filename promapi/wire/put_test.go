package wire

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// putSeeds are the interesting /api/put bodies of the bad-input corpus and the
// round-trip tests.
var putSeeds = []string{
	`{"metric":"sys.cpu.user","timestamp":1700000000,"value":42.5,"tags":{"host":"web01","cpu":"0"}}`,
	`[{"metric":"sys.cpu.user","timestamp":1700000060,"value":"43","tags":{"host":"web01","cpu":"0"}},
	  {"metric":"sys.cpu.user","timestamp":"1700000000123","value":-1.5e-3,"tags":{"host":"web02","cpu":"0"}},
	  {"metric":"sys.mem.free","timestamp":1700000000123,"value":9007199254740993,"tags":{"host":"web01"}},
	  {"metric":"sys.temp","timestamp":1700000000123,"value":-0.0,"tags":{"host":"web03"}}]`,
	`{"metric":"sys.cpu",`,
	`put sys.cpu 1700000000 1 host=a`,
	``,
	` [ ] `,
	`[1, null, "x", [], {}]`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":"NaN","tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":1e999,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":1}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":1,"tags":{}}`,
	`{"timestamp":1700000000,"value":1,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":"soon","value":1,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":-5,"value":1,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":5000000000,"value":1,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":"fast","tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":true,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"tags":{"host":"a"}}`,
	`{"metric":"sys.cpu","timestamp":1700000000,"value":1,"tags":{"cpu":0}}`,
	"{\"metric\":\"sys.cpu\",\"timestamp\":1700000000,\"value\":1,\"tags\":{\"host\":\"h\xff\"}}",
	`{"metric":"sys.cpu","timestamp":1700000000,"value":1,"tags":{"__name__":"other","host":"a"}}`,
	`[{"metric":"m","timestamp":1,"value":"x","tags":{"a":"b"}},{"metric":"m"}]`,
}

// FuzzDecodePut: DecodePut never panics, its errors say the input is invalid,
// and what it accepts is consistent: one PutDatapoint per datapoint, every
// response echo encodes as JSON, every valid datapoint is exactly one sample of
// Request (at a positive time, with a finite value, in a series named by its
// metric), and Reject marks the datapoints behind a rejection.
func FuzzDecodePut(f *testing.F) {
	for _, s := range putSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodePut(body)
		if err != nil {
			if !errors.Is(err, write.ErrInvalid) {
				t.Fatalf("DecodePut error %v does not wrap write.ErrInvalid", err)
			}
			return
		}
		checkDecoded(t, p.Request)
		if len(p.Datapoints) == 0 {
			t.Fatal("DecodePut accepted a body without datapoints")
		}
		valid := 0
		for i, dp := range p.Datapoints {
			if dp.Error == "" {
				valid++
			}
			if dp.Shown == nil {
				t.Errorf("datapoint %d: nothing to show", i)
			}
			if _, err := json.Marshal(dp.Shown); err != nil {
				t.Errorf("datapoint %d: its echo %#v does not encode: %v", i, dp.Shown, err)
			}
		}
		samples := 0
		seen := map[int]bool{}
		for s, series := range p.Request.Series {
			if series.Labels.Get("__name__") == "" || !utf8.ValidString(series.Labels.String()) {
				t.Errorf("series %d %s: no metric name, or not UTF-8", s, series.Labels)
			}
			if len(p.origin[s]) != len(series.Samples) {
				t.Fatalf("series %d: %d samples, %d datapoints behind them", s, len(series.Samples), len(p.origin[s]))
			}
			for k, x := range series.Samples {
				samples++
				i := p.origin[s][k]
				if seen[i] || p.Datapoints[i].Error != "" {
					t.Errorf("datapoint %d is behind two samples, or invalid and written", i)
				}
				seen[i] = true
				if x.T <= 0 || math.IsNaN(x.V) || math.IsInf(x.V, 0) {
					t.Errorf("series %d sample %d = %+v: time not positive or value not finite", s, k, x)
				}
			}
		}
		if samples != valid {
			t.Errorf("%d samples from %d valid datapoints", samples, valid)
		}
		if len(p.Request.Series) > 0 {
			p.Reject([]write.Rejection{{Series: 0, Sample: -1, Reason: "rejected"}, {Series: -1, Sample: 0, Reason: "metadata"}})
			for _, i := range p.origin[0] {
				if p.Datapoints[i].Error != "rejected" {
					t.Errorf("datapoint %d of a rejected series: error %q", i, p.Datapoints[i].Error)
				}
			}
		}
	})
}

// putMixedBody is TestDecodePut's body: valid datapoints of two series, one
// series in two spellings, and an invalid value.
const putMixedBody = `[
		{"metric":"sys.cpu","timestamp":1700000000,"value":42.5,"tags":{"host":"web01","cpu":"0"}},
		{"metric":"sys.cpu","timestamp":"1700000000123","value":"oops","tags":{"host":"web01","cpu":"0"}},
		{"metric":"sys.mem","timestamp":1700000000123,"value":9007199254740993,"tags":{"host":"web01"}},
		{"metric":"sys.cpu","timestamp":"1700000060","value":"-0","tags":{"cpu":"0","host":"web01"}}]`

func TestDecodePut(t *testing.T) {
	p, err := DecodePut([]byte(putMixedBody))
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := labels.FromStrings("__name__", "sys.cpu", "cpu", "0", "host", "web01"), labels.FromStrings("__name__", "sys.mem", "host", "web01")
	want := write.Request{Series: []write.Series{
		{Labels: cpu, Samples: []cellenc.Sample{{T: 1_700_000_000_000, V: 42.5}, {T: 1_700_000_060_000, V: math.Copysign(0, -1)}}},
		{Labels: mem, Samples: []cellenc.Sample{{T: 1_700_000_000_123, V: 9007199254740992}}}, // 2^53+1 rounds to even
	}}
	if !sameRequest(p.Request, want) {
		t.Errorf("request = %+v\nwant %+v", p.Request, want)
	}
	wantPoints := []PutDatapoint{
		{Shown: putDatapoint{Metric: "sys.cpu", Timestamp: 1700000000, Value: "42.5", Tags: map[string]string{"host": "web01", "cpu": "0"}}},
		{Shown: putDatapoint{Metric: "sys.cpu", Timestamp: 1700000000123, Value: "oops", Tags: map[string]string{"host": "web01", "cpu": "0"}},
			Error: "Unable to parse value to a number"},
		{Shown: putDatapoint{Metric: "sys.mem", Timestamp: 1700000000123, Value: "9007199254740993", Tags: map[string]string{"host": "web01"}}},
		{Shown: putDatapoint{Metric: "sys.cpu", Timestamp: 1700000060, Value: "-0", Tags: map[string]string{"host": "web01", "cpu": "0"}}},
	}
	if !reflect.DeepEqual(p.Datapoints, wantPoints) {
		t.Errorf("datapoints = %+v\nwant %+v", p.Datapoints, wantPoints)
	}

	// The writer rejects sample 1 of series 0 (the fourth datapoint), then all of series 1.
	p.Reject([]write.Rejection{{Series: 0, Sample: 1, Reason: "too old"}, {Series: 1, Sample: -1, Reason: "bad series"},
		{Series: -1, Sample: 0, Reason: "metadata"}, {Series: 2, Sample: 0, Reason: "no such series"}})
	var errs []string
	for _, dp := range p.Datapoints {
		errs = append(errs, dp.Error)
	}
	if want := []string{"", "Unable to parse value to a number", "bad series", "too old"}; !reflect.DeepEqual(errs, want) {
		t.Errorf("errors after Reject = %q, want %q", errs, want)
	}
}

// putBodyCases are bodies and what DecodePut says of them: the error of a
// body refused whole (putErrorCases) or the first datapoint's error
// (putRefusedCases).
type putBodyCases []struct{ body, want string }

var putErrorCases = putBodyCases{
	{"", "invalid write request: Missing message content"},
	{" \n\t", "invalid write request: Missing message content"},
	{" [ ] ", "invalid write request: No datapoints found in content"},
	{`{"metric":"sys.cpu",`, "invalid write request: Unable to parse the given JSON: unexpected end of JSON input"},
	{`{"metric":"sys.cpu"} {}`, "invalid write request: Unable to parse the given JSON: invalid character '{' after top-level value"},
	{`put sys.cpu 1700000000 1 host=a`, "invalid write request: Unable to parse the given JSON: content starts with 'p', not with an object or an array"},
}

func TestDecodePutErrors(t *testing.T) {
	for _, tc := range putErrorCases {
		p, err := DecodePut([]byte(tc.body))
		if p != nil || err == nil || err.Error() != tc.want || !errors.Is(err, write.ErrInvalid) {
			t.Errorf("DecodePut(%q) = %v, %v; want %q wrapping write.ErrInvalid", tc.body, p, err, tc.want)
		}
	}
}

var putRefusedCases = putBodyCases{
	{`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"a\ud800"}}`,
		`Unable to parse the datapoint: invalid Unicode escape \ud800 (a lone UTF-16 surrogate)`},
	{`{"metric":"m\udc00x","timestamp":1700000000,"value":1,"tags":{"host":"a"}}`,
		`Unable to parse the datapoint: invalid Unicode escape \udc00 (a lone UTF-16 surrogate)`},
	{`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"\uD83D\u0041"}}`,
		`Unable to parse the datapoint: invalid Unicode escape \uD83D (a lone UTF-16 surrogate)`},
	{`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":""}}`, `Invalid tag value for tag "host": empty string`},
	{`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"":"a"}}`, `Invalid tag name: empty string`},
	{`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"\\ud800 \uD83D\uDE00"}}`, ``},
}

// TestDecodePutRefusesWhatOpenTSDBRefuses: a lone UTF-16 surrogate escape
// (which encoding/json turns into U+FFFD) and a tag with an empty name or
// value (which would be stored as no tag) fail their datapoint; a valid pair
// of surrogates is a character like any other.
func TestDecodePutRefusesWhatOpenTSDBRefuses(t *testing.T) {
	for _, tc := range putRefusedCases {
		p, err := DecodePut([]byte(tc.body))
		if err != nil {
			t.Fatalf("DecodePut(%s): %v", tc.body, err)
		}
		if got := p.Datapoints[0].Error; got != tc.want {
			t.Errorf("DecodePut(%s): datapoint error %q, want %q", tc.body, got, tc.want)
		}
		if n := len(p.Request.Series); (tc.want == "") != (n == 1) {
			t.Errorf("DecodePut(%s): %d series in the request", tc.body, n)
		}
	}
	p, _ := DecodePut([]byte(`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"host":"\\ud800 \uD83D\uDE00"}}`))
	if got := p.Request.Series[0].Labels.Get("host"); got != `\ud800 😀` {
		t.Errorf("host = %q", got)
	}
}
