package opentsdb

import (
	"net/url"
	"slices"
	"testing"
)

func TestLookupPairsMatchAsTimeSeriesLookupsRegex(t *testing.T) {
	series := map[string]map[string]string{
		"a": {"host": "web01", "dc": "eu"},
		"b": {"host": "web02", "dc": "us"},
		"c": {"host": "db01", "dc": "eu", "rack": "r1"},
	}
	for _, c := range []struct {
		m    string
		want []string
	}{
		{"m", []string{"a", "b", "c"}},
		{"m{host=web01}", []string{"a"}},
		{"m{host=web01,host=db01}", []string{"a", "c"}},   // a key's pairs are ORed
		{"m{host=web01,dc=us}", nil},                      // keys are ANDed
		{"m{rack=*}", []string{"c"}},                      // the key must be there
		{"m{rack=}", []string{"c"}},                       // an empty value is any value
		{"m{host=*,host=web01}", []string{"a", "b", "c"}}, // a wildcard of the key wins
		{"m{*=eu}", []string{"a", "c"}},                   // any key with the value
		{"m{=us}", []string{"b"}},                         // an empty key is any key
		{"m{*=eu,*=r1,host=db01}", []string{"c"}},         // value-only pairs ORed, then ANDed with the keys
		{"m{*=*}", []string{"a", "b", "c"}},               // both sides any
	} {
		req, err := ParseLookupForm(url.Values{"m": {c.m}})
		if err != nil {
			t.Fatalf("%s: %v", c.m, err)
		}
		var got []string
		for _, k := range []string{"a", "b", "c"} {
			if req.Match(series[k]) {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s matches %v, want %v", c.m, got, c.want)
		}
	}
}

func TestLookupAndLastParseAsOpenTSDB(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"lookup without m", lookupErr(url.Values{"limit": {"1"}}), "Missing parameter <code>m</code>"},
		{"lookup of {}", lookupErr(url.Values{"m": {"{}"}}), "Unable to parse query"},
		{"lookup with a bad limit", lookupErr(url.Values{"m": {"m"}, "limit": {"1.5"}}), "Unable to convert 'limit' to a valid number"},
		{"lookup of a lone brace", lookupErr(url.Values{"m": {"m{a=b"}}), "Unable to parse query"},
		{"last without timeseries", lastErr(url.Values{"resolve": {""}}), "Missing sub queries"},
		{"last with back_scan over 32 bits", lastErr(url.Values{"timeseries": {"m{a=b}"}, "back_scan": {"9999999999"}}),
			"Unable to parse back_scan parameter"},
		{"last with a negative back_scan", lastErr(url.Values{"timeseries": {"m{a=b}"}, "back_scan": {"-1"}}),
			"Backscan must be zero or a positive number"},
		{"last with an empty metric", lastErr(url.Values{"timeseries": {""}}), "Metric cannot be null or empty"},
		{"last with a duplicate tag", lastErr(url.Values{"timeseries": {"m{a=b,a=c}"}}),
			"When parsing tag 'a=c': duplicate tag: a=c, tags=map[a:b]"},
	} {
		e, ok := c.err.(*Error)
		if !ok || e.Status != 400 || e.Message != c.want {
			t.Errorf("%s: error %#v, want 400 %q", c.name, c.err, c.want)
		}
	}
	req, err := ParseLastJSON([]byte(`{"queries":[{"metric":"m","tags":{"a":"b"}}],"resolveNames":true,"backScan":"3"}`))
	if err != nil || !req.Resolve || req.BackScan != 3 || req.Queries[0].Metric != "m" || req.Queries[0].Tags["a"] != "b" {
		t.Errorf("ParseLastJSON = %+v, %v, want back scan 3 (a string, as Jackson coerces it), resolving, m{a=b}", req, err)
	}
}

func lookupErr(v url.Values) error { _, err := ParseLookupForm(v); return err }
func lastErr(v url.Values) error   { _, err := ParseLastForm(v); return err }

func TestJavaNumberIsCellParseValueToString(t *testing.T) {
	for v, want := range map[float64]string{5: "5", -3: "-3", 2.5: "2.5", 0.1: "0.1", 1e-4: "1.0E-4", 12345678.5: "1.23456785E7"} {
		if got := JavaNumber(v); got != want {
			t.Errorf("JavaNumber(%v) = %s, want %s", v, got, want)
		}
	}
}
