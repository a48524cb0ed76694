package opentsdb

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// FuzzParseForm: any m= and times parse to a request or a 400, never a
// panic, and a parsed request runs.
func FuzzParseForm(f *testing.F) {
	for _, m := range []string{"sum:1m-avg-zero:rate{counter,10,1}:m{host=a|b,dc=*}{role=regexp(^d)}", "none:m",
		"p99:0all-max:m{}{h=not_iliteral_or(A|b)}", "m}x{a=b}", "sum:rate{:m", "sum:m{a=b}{c=wildcard(*x*y)}"} {
		f.Add("1h-ago", "1356998400.500", m)
	}
	src := sliceSource{{Tags: map[string]string{"host": "a", "dc": "eu"}, ID: "A", Points: []Point{{base, 1}, {base + 60_000, 2}}}}
	f.Fuzz(func(t *testing.T, start, end, m string) {
		req, err := ParseForm(url.Values{"start": {start}, "end": {end}, "m": {m}}, time.UnixMilli(base+3600_000))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not a bad request", err, err)
			}
			return
		}
		if req.End-req.Start > 400*24*3600_000 || req.FillIntervals() > 100_000 {
			return // a long range only costs time; the handler bounds FillIntervals
		}
		if _, err := Run(context.Background(), src, req); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseLastAndLookup: any last-point or lookup request, GET or POST,
// parses to a request or a 400, never a panic, and a parsed lookup matches.
func FuzzParseLastAndLookup(f *testing.F) {
	for _, s := range []string{"m{host=a,dc=eu}", "m{host}", "{=v}", "*{k=}", "m{a=b,a=c", `{"queries":[{"metric":"m","tags":{"a":"b"}}],"backScan":"3"}`,
		`{"metric":null,"tags":[{"key":"k"}],"limit":1.5}`, "{}"} {
		f.Add(s, "3")
	}
	f.Fuzz(func(t *testing.T, s, n string) {
		isBadRequest := func(err error) {
			if _, ok := err.(*Error); err != nil && !ok {
				t.Fatalf("error %T %v is not a bad request", err, err)
			}
		}
		_, err := ParseLastForm(url.Values{"timeseries": {s}, "back_scan": {n}})
		isBadRequest(err)
		_, err = ParseLastJSON([]byte(s))
		isBadRequest(err)
		for _, req := range []func() (*LookupRequest, error){
			func() (*LookupRequest, error) { return ParseLookupForm(url.Values{"m": {s}, "limit": {n}}) },
			func() (*LookupRequest, error) { return ParseLookupJSON([]byte(s)) },
		} {
			r, err := req()
			isBadRequest(err)
			if err == nil {
				r.Match(map[string]string{"host": "a", "k": ""})
				r.Names()
			}
		}
	})
}
