package opentsdb

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestFiltersMatchAsOpenTSDB(t *testing.T) {
	cases := []struct {
		name         string
		typ, filter  string
		tagv         string
		hasTag, want bool
	}{
		{"literal_or matches one of its values", "literal_or", "web01|web02", "web02", true, true},
		{"literal_or is case-sensitive", "literal_or", "web01|web02", "WEB02", true, false},
		{"literal_or fails without the tag", "literal_or", "web01", "", false, false},
		{"iliteral_or ignores case", "iliteral_or", "Web01|web02", "WEB01", true, true},
		{"not_literal_or refuses its values", "not_literal_or", "web01|web02", "web01", true, false},
		{"not_literal_or takes other values", "not_literal_or", "web01|web02", "web03", true, true},
		{"not_literal_or passes a series without the tag (TagVNotLiteralOrFilter.match)", "not_literal_or", "web01", "", false, true},
		{"not_iliteral_or ignores case", "not_iliteral_or", "WEB01", "web01", true, false},
		{"wildcard prefix", "wildcard", "web*", "web01", true, true},
		{"wildcard prefix is case-sensitive", "wildcard", "web*", "WEB01", true, false},
		{"wildcard suffix", "wildcard", "*.example.com", "web01.example.com", true, true},
		{"wildcard infix", "wildcard", "web*com", "web01.example.com", true, true},
		{"wildcard infix needs both ends", "wildcard", "web*com", "web01.example.net", true, false},
		{"wildcard * matches any value", "wildcard", "*", "x", true, true},
		{"wildcard * needs the tag", "wildcard", "*", "", false, false},
		{"iwildcard ignores case", "iwildcard", "WEB*", "web01", true, true},
		{"regexp finds anywhere (Matcher.find)", "regexp", "eb0[12]", "web01", true, true},
		{"regexp refuses", "regexp", "^eb", "web01", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := NewFilter(c.typ, "host", c.filter, false)
			if err != nil {
				t.Fatal(err)
			}
			tags := map[string]string{}
			if c.hasTag {
				tags["host"] = c.tagv
			}
			if got := f.Match(tags); got != c.want {
				t.Fatalf("Match(%v) = %v, want %v", tags, got, c.want)
			}
		})
	}
}

func TestMParsesAsQueryRpc(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	req, err := ParseForm(url.Values{"start": {"1h-ago"}, "end": {"1356998400"}, "ms": {""},
		"m": {"sum:1m-avg-zero:rate{counter,1000,5}:sys.cpu{host=web01|web02,dc=*}{role=iwildcard(DB*)}"}}, now)
	if err == nil {
		t.Fatalf("end before start must fail, got %+v", req)
	}
	if want := "End time [1356998400000] must be greater than the start time [1699996400000]"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	req, err = ParseForm(url.Values{"start": {"2013/01/01-00:00:00"}, "end": {"1356998460.500"}, "ms": {""},
		"m": {"sum:1m-avg-zero:rate{counter,1000,5}:sys.cpu{host=web01|web02,dc=*}{role=iwildcard(DB*)}"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if req.Start != 1356998400000 || req.End != 1356998460500 || !req.MsResolution {
		t.Fatalf("start %d end %d ms %v", req.Start, req.End, req.MsResolution)
	}
	q := req.Queries[0]
	if q.Metric != "sys.cpu" || q.Agg.Name != "sum" || !q.Rate || q.Downsample.Interval != 60000 ||
		q.Downsample.Agg.Name != "avg" || q.Fill != FillZero {
		t.Fatalf("sub-query %+v", q)
	}
	if want := (RateOptions{Counter: true, CounterMax: 1000, ResetValue: 5}); q.RateOptions != want {
		t.Fatalf("rate options %+v, want %+v", q.RateOptions, want)
	}
	var got []string
	for _, f := range q.Filters {
		got = append(got, f.Tagk+"="+f.Type+"("+f.Filter+")"+map[bool]string{true: " groupBy", false: ""}[f.GroupBy])
	}
	want := []string{"role=iwildcard(DB*)", "dc=wildcard(*) groupBy", "host=literal_or(web01|web02) groupBy"}
	if strings.Join(sortedCopy(got), ";") != strings.Join(sortedCopy(want), ";") {
		t.Fatalf("filters %v, want %v", got, want)
	}
}

func sortedCopy(s []string) []string {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return sortedKeys(m)
}

func TestBadRequestsNameTheProblem(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	cases := []struct {
		name string
		form url.Values
		want string
	}{
		{"no start", url.Values{"m": {"sum:m"}}, "Missing parameter <code>start</code>"},
		{"no m", url.Values{"start": {"1h-ago"}}, "Missing sub queries"},
		{"one part", url.Values{"start": {"1h-ago"}, "m": {"sum"}}, "Invalid parameter m=sum (not enough :-separated parts)"},
		{"six parts", url.Values{"start": {"1h-ago"}, "m": {"a:b:c:d:e:f"}}, "Invalid parameter m=a:b:c:d:e:f (too many :-separated parts)"},
		{"unknown aggregator", url.Values{"start": {"1h-ago"}, "m": {"total:m"}}, "No such aggregation function: total"},
		{"bad downsampler", url.Values{"start": {"1h-ago"}, "m": {"sum:1m:m"}},
			"Invalid downsampling specifier '1m': must provide at least interval and function"},
		{"unknown fill", url.Values{"start": {"1h-ago"}, "m": {"sum:1m-avg-fuzzy:m"}},
			"Unrecognized fill policy: fuzzy"},
		{"bad duration unit", url.Values{"start": {"1h-ago"}, "m": {"sum:1q-avg:m"}}, "Invalid duration (suffix): 1q"},
		{"bad rate options", url.Values{"start": {"1h-ago"}, "m": {"sum:rate{counter,,,}:m"}},
			"Incorrect number of values in rate options specification, must be counter[,counter max value,reset value], recieved: 4 parts"},
		{"counter max not a number", url.Values{"start": {"1h-ago"}, "m": {"sum:rate{counter,x}:m"}},
			"Max value of counter was not a number, received 'x'"},
		{"bad relative time", url.Values{"start": {"1x-ago"}, "m": {"sum:m"}}, "Invalid duration (suffix): 1x"},
		{"bad absolute date", url.Values{"start": {"2013/01/01 00"}, "m": {"sum:m"}}, "Invalid absolute date: 2013/01/01 00"},
		{"dotted ms with 4 digits", url.Values{"start": {"1356998400.1234"}, "m": {"sum:m"}},
			"Invalid time: 1356998400.1234. Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits"},
		{"missing closing brace", url.Values{"start": {"1h-ago"}, "m": {"sum:m{host=a"}}, "Missing '}' at the end of: m{host=a"},
		{"unknown filter type", url.Values{"start": {"1h-ago"}, "m": {"sum:m{host=fuzzy(a)}"}},
			"When parsing tag 'host=fuzzy(a)': Could not find a tag value filter of the type: fuzzy"},
		{"calendar downsampling", url.Values{"start": {"1h-ago"}, "m": {"sum:1dc-avg:m"}},
			"Invalid downsampling specifier '1dc-avg': calendar intervals are not supported by hbtsdb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseForm(c.form, now)
			if err == nil {
				t.Fatal("no error")
			}
			e, ok := err.(*Error)
			if !ok || e.Status != 400 || e.Message != c.want {
				t.Fatalf("error %#v, want 400 %q", err, c.want)
			}
		})
	}
}

func TestJSONBodyParsesAsTSQuery(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	req, err := ParseJSON([]byte(`{"start":1356998400,"end":"1356998460000","msResolution":true,"showTSUIDs":true,
		"queries":[{"aggregator":"avg","metric":"m","downsample":"10s-max-null","rate":true,
		"rateOptions":{"counter":true,"dropResets":true},"tags":{"host":"web*"},
		"filters":[{"type":"regexp","tagk":"dc","filter":"^eu","groupBy":true}]}]}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if req.Start != 1356998400000 || req.End != 1356998460000 || !req.MsResolution || !req.ShowTSUIDs {
		t.Fatalf("request %+v", req)
	}
	q := req.Queries[0]
	if want := (RateOptions{Counter: true, CounterMax: 1<<63 - 1, DropResets: true}); q.RateOptions != want {
		t.Fatalf("rate options %+v, want %+v (counterMax defaults to Long.MAX_VALUE)", q.RateOptions, want)
	}
	if q.Fill != FillNull || q.Downsample.Interval != 10000 || len(q.Filters) != 1 || q.Filters[0].Type != "regexp" {
		t.Fatalf("sub-query %+v filters %+v: want the regexp only, as filters come after tags", q, q.Filters)
	}
	t.Run("tags after filters replace them, as TSSubQuery.setTags does", func(t *testing.T) {
		req, err := ParseJSON([]byte(`{"start":1356998400,"queries":[{"aggregator":"sum","metric":"m",
			"filters":[{"type":"regexp","tagk":"dc","filter":"^eu","groupBy":true}],"tags":{"host":"web*"}}]}`), now)
		if err != nil {
			t.Fatal(err)
		}
		if fs := req.Queries[0].Filters; len(fs) != 1 || fs[0].Type != "wildcard" || !fs[0].GroupBy {
			t.Fatalf("filters %+v, want the tags' group-by wildcard only", fs)
		}
	})
	t.Run("identical sub-queries are answered once, as through parseQueryV1's LinkedHashSet", func(t *testing.T) {
		req, err := ParseJSON([]byte(`{"start":1356998400,"queries":[{"aggregator":"sum","metric":"m","tags":{"host":"a|b"}},
			{"aggregator":"sum","metric":"m","tags":{"host":"b|a"}},{"aggregator":"sum","metric":"m","tags":{"host":"c"}}]}`), now)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(req.Queries); n != 2 {
			t.Fatalf("%d sub-queries, want 2: a|b and b|a are one literal set", n)
		}
	})
	for _, c := range []struct{ body, want, details string }{
		{`{"start":"1h-ago","queries":[{"aggregator":"sum"}]}`, "Missing the metric or tsuids, provide at least one", ""},
		{`{"start":"1h-ago","queries":[]}`, "Missing queries", ""},
		{``, "Missing message content", "Supply valid JSON formatted data in the body of your request"},
		{`{"start":`, "Unable to parse the given JSON", "unexpected end of JSON input"},
		{`{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","filters":[{"type":"Regexp","tagk":"h","filter":"x"}]}]}`,
			"Unable to parse the given JSON", "Could not find a tag value filter of the type: Regexp"},
		{`{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","rateOptions":{"counterMax":"x"}}]}`,
			"Unable to parse the given JSON", `cannot read "x" as a long`},
	} {
		_, err = ParseJSON([]byte(c.body), now)
		e, ok := err.(*Error)
		if !ok || e.Status != 400 || e.Message != c.want || e.Details != c.details {
			t.Errorf("%s: error %#v, want 400 %q (details %q)", c.body, err, c.want, c.details)
		}
	}
}

func TestJavaDoubleFormat(t *testing.T) {
	for v, want := range map[float64]string{1: "1.0", 2.5: "2.5", 1e7: "1.0E7", 12345678.9: "1.23456789E7",
		0.001: "0.001", 0.0001: "1.0E-4", -3: "-3.0", 0: "0.0"} {
		if got := string(AppendJavaDouble(nil, v)); got != want {
			t.Errorf("%v: %s, want %s", v, got, want)
		}
	}
}
