package wire

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hbtsdb/hbtsdb/write"
)

// putOracleBodies are the bodies DecodePut and the oracle are compared on:
// every body of put_test.go, what tcollector, scollector and bench/opentsdb
// send, and the forms the scanner leaves to encoding/json or refuses.
func putOracleBodies() []string {
	bodies := slices.Concat(putSeeds, []string{putMixedBody, string(tcollectorBody()), string(benchOpenTSDBBody())})
	for _, cases := range []putBodyCases{putErrorCases, putRefusedCases} {
		for _, tc := range cases {
			bodies = append(bodies, tc.body)
		}
	}
	return append(bodies,
		// scollector: Go's encoding/json, HTML characters escaped.
		`[{"metric":"os.cpu","timestamp":1700000000,"value":12345,"tags":{"host":"ny-web01"}},`+
			`{"metric":"os.mem.used","timestamp":1700000000,"value":3.5e+09,"tags":{"host":"ny-web01"}},`+
			`{"metric":"app.latency","timestamp":1700000000,"value":0.25,"tags":{"host":"ny-web01","path":"/a\u0026b\u003c"}}]`,
		// The same series in two spellings, one after the other.
		`[{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"1","b":"2"}},{"metric":"m","timestamp":1700000001,"value":2,"tags":{"b":"2","a":"1"}},`+
			`{"metric":"m","timestamp":1700000002,"value":3,"tags": {"a":"1","b":"2"}},{"metric":"m","timestamp":1700000003,"value":4,"tags":{"a":"1","b":"2"}}]`,
		// Member names encoding/json matches without regard to case, or unescaped.
		`{"Metric":"m","TIMESTAMP":1700000000,"Value":1,"Tags":{"a":"b"}}`,
		`{"metric":"m","timeſtamp":1700000000,"value":1,"tagſ":{"a":"b"}}`,
		`{"met\u0072ic":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"}}`,
		`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"},"métric":"x","other":{"tags":[1,{"x":null}]}}`,
		// Repeated members: encoding/json keeps the last, merges tags objects.
		`{"metric":"m","metric":"n","timestamp":1700000000,"value":1,"tags":{"a":"b"}}`,
		`{"metric":"m","metric":null,"timestamp":1700000000,"value":1,"tags":{"a":"b"}}`,
		`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"},"tags":{"c":"d"}}`,
		`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"},"tags":null}`,
		`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b","a":"c"}}`,
		`{"metric":"m","timestamp":1,"timestamp":1700000000,"value":1,"value":2,"tags":{"a":"b"}}`,
		// Members of the wrong type, and nulls.
		`[{"metric":5,"timestamp":1700000000,"value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1700000000,"value":1,"tags":[]},`+
			`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":true}},{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":null}},`+
			`{"metric":null,"timestamp":null,"value":null,"tags":null},null,"x",5,true,[{"metric":"m"}],{"metric":{"a":1},"tags":"x"}]`,
		// Values and timestamps of every kind.
		`[{"metric":"m","timestamp":1700000000,"value":"1e3","tags":{"a":"b"}},{"metric":"m","timestamp":1700000000,"value":true,"tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":1700000000,"value":{"a" : 1},"tags":{"a":"b"}},{"metric":"m","timestamp":1700000000,"value":[1],"tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":1700000000,"value":"0x1p-2","tags":{"a":"b"}},{"metric":"m","timestamp":1700000000,"value":"Inf","tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":1700000000,"value":" 1","tags":{"a":"b"}},{"metric":"m","timestamp":1700000000,"value":"","tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":"+5","value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":1.7e9,"value":1,"tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":17000000000000000000000,"value":1,"tags":{"a":"b"}},{"metric":"m","timestamp":"\u0031700000000","value":"\u0031","tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":1700000000123,"value":1e-400,"tags":{"a":"b"}},{"metric":"m","timestamp":99999999999999,"value":1,"tags":{"a":"b"}},`+
			`{"metric":"m","timestamp":"null","value":"null","tags":{"a":"b"}},{"metric":"m","timestamp":false,"value":-0.0E+1,"tags":{"a":"b"}}]`,
		// Escapes and characters beyond ASCII in names, tags and values.
		`[{"metric":"sys.\u00e9t\u00e9","timestamp":1700000000,"value":1,"tags":{"h\u00f4te":"caf\u00e9","x":"\"\\\/\b\f\n\r\t"}},`+
			`{"metric":"sys.été","timestamp":1700000000,"value":2,"tags":{"hôte":"café","x":"\"\\/\b\f\n\r\t"}},`+
			`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"\uD83D\uDE00","b":"\u0000"}},`+
			`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"},"x":"\udfff"},`+
			`{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"},"x":"\ud800\ud800\udc00"}]`,
		// Whitespace: bytes.TrimSpace's (Unicode's) at the ends, JSON's inside.
		"\f\u00a0[ {\"metric\" :\t\"m\" ,\n\"timestamp\"\r: 1700000000, \"value\": 1 , \"tags\" : { \"a\" : \"b\" } } , {} ]\u0085\v",
		`[{}]`, `[null]`, `{}`, `[{},{"metric":"m"}]`,
		// Not JSON.
		`[1,]`, `[{"metric":"m",}]`, `{"a" 1}`, `{"a":1,,}`, "[\"a\tb\"]", `["\x"]`, `["\u12"]`, `[01]`, `[1.]`, `[-]`, `[1e]`,
		`[1e+]`, `[tru]`, `[nul]`, `{"metric":"m"}]`, `[{"metric":"m"}`, `[{"metric":"m"} {}]`, `[{"tags":{"a":"b"}]}`,
		`{"tags":{"a":"b",}}`, `{"tags":{"a":1,}}`, `{"tags":{"a"}}`, `{"value":-01}`, `{"value":.5}`, `{"x":[1 2]}`,
		nested(maxNestingDepth-2), nested(maxNestingDepth-1),
	)
}

// nested is a datapoint with n arrays nested in one of its members, in an
// array: n+2 levels.
func nested(n int) string {
	return `[{"metric":"m","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"timestamp":1700000000,"value":1,"tags":{"a":"b"}}]`
}

// diffPut says how DecodePut's answer differs from the oracle's, "" if it
// does not: the error's text and its wrapping write.ErrInvalid, the
// datapoints (echo and error), the request (labels, samples bit for bit) and
// which datapoint is behind each sample.
func diffPut(got *Put, gotErr error, want *Put, wantErr error) string {
	switch {
	case (gotErr == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, oracle %v", gotErr, wantErr)
	case gotErr != nil:
		if gotErr.Error() != wantErr.Error() || errors.Is(gotErr, write.ErrInvalid) != errors.Is(wantErr, write.ErrInvalid) {
			return fmt.Sprintf("error %q, oracle %q", gotErr, wantErr)
		}
		if got != nil {
			return "a Put with an error"
		}
		return ""
	}
	if len(got.Datapoints) != len(want.Datapoints) {
		return fmt.Sprintf("%d datapoints, oracle %d", len(got.Datapoints), len(want.Datapoints))
	}
	for i := range got.Datapoints {
		if !reflect.DeepEqual(got.Datapoints[i], want.Datapoints[i]) {
			return fmt.Sprintf("datapoint %d = %#v\noracle %#v", i, got.Datapoints[i], want.Datapoints[i])
		}
	}
	if !sameRequest(got.Request, want.Request) {
		return fmt.Sprintf("request %+v\noracle %+v", got.Request, want.Request)
	}
	if !reflect.DeepEqual(got.origin, want.origin) {
		return fmt.Sprintf("origin %v, oracle %v", got.origin, want.origin)
	}
	return ""
}

func TestDecodePutMatchesOracle(t *testing.T) {
	for _, body := range putOracleBodies() {
		got, gotErr := DecodePut([]byte(body))
		want, wantErr := oracleDecodePut([]byte(body))
		if d := diffPut(got, gotErr, want, wantErr); d != "" {
			t.Errorf("DecodePut(%.300q): %s", body, d)
		}
	}
}

// FuzzDecodePutMatchesOracle: on any body, DecodePut answers what the
// encoding/json decoder it replaced answers (put_oracle_test.go).
func FuzzDecodePutMatchesOracle(f *testing.F) {
	for _, body := range putOracleBodies() {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := DecodePut(body)
		want, wantErr := oracleDecodePut(body)
		if d := diffPut(got, gotErr, want, wantErr); d != "" {
			t.Errorf("DecodePut(%q): %s", body, d)
		}
	})
}
