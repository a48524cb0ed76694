package opentsdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Request is one /api/query request, validated: times resolved to
// milliseconds, aggregators, downsamplers and filters built.
type Request struct {
	// Start and End bound the answer, inclusive, in ms since the epoch.
	Start, End int64
	// MsResolution writes dps keys in milliseconds instead of seconds.
	MsResolution bool
	// ShowTSUIDs adds each group's series IDs ("tsuids").
	ShowTSUIDs bool
	// Arrays writes dps as [[timestamp, value], ...] instead of an object
	// (the "arrays" query string parameter, GET or POST).
	Arrays bool
	// Queries are the sub-queries, each answered with its own groups.
	Queries []SubQuery
}

// SubQuery is one metric query of a Request.
type SubQuery struct {
	// Metric is the metric name, hbtsdb's __name__; empty for a tsuids
	// sub-query, whose series name it.
	Metric string
	// TSUIDs, when not empty, are the series to aggregate (hbtsdb series IDs,
	// ParseTSUID), all of one metric, in place of Metric and Filters: one
	// group, or each series its own with the "none" aggregator.
	TSUIDs []uint64
	// Agg aggregates the series of a group.
	Agg *Aggregator
	// Downsample, when not nil, downsamples each series first.
	Downsample *Downsample
	// Rate turns each series (after downsampling) into per-second rates.
	Rate bool
	// RateOptions apply when Rate is set.
	RateOptions RateOptions
	// Filters select series; those with GroupBy split them into groups.
	Filters []*Filter
	// ExplicitTags keeps only series whose tag keys are exactly the filters'.
	ExplicitTags bool
	// Fill is the downsampler's fill policy (FillNone without one), which
	// decides how NaN is written.
	Fill FillPolicy
}

// Error is a bad request: Status (400) and OpenTSDB's message for it.
type Error struct {
	Status  int
	Message string
	// Details, when not empty, is OpenTSDB's "details" of the error: the
	// cause the message sums up.
	Details string
}

func (e *Error) Error() string { return e.Message }

func badRequest(format string, args ...any) error {
	return &Error{Status: 400, Message: fmt.Sprintf(format, args...)}
}

// errMissingContent is HttpJsonSerializer's answer to a POST without a body.
func errMissingContent() error {
	return &Error{Status: 400, Message: "Missing message content",
		Details: "Supply valid JSON formatted data in the body of your request"}
}

// badJSON is HttpJsonSerializer's answer to a body Jackson cannot map onto
// TSQuery: "Unable to parse the given JSON", the cause in the details.
func badJSON(cause error) error {
	return &Error{Status: 400, Message: "Unable to parse the given JSON", Details: cause.Error()}
}

// ParseForm reads a GET query string's parameters (url.Values) as QueryRpc's
// parseQuery does: start (required), end, ms, show_tsuids and one or more m.
// now is the time of "now" and "-ago".
func ParseForm(form map[string][]string, now time.Time) (*Request, error) {
	get := func(k string) (string, bool) {
		v, ok := form[k]
		if !ok || len(v) == 0 {
			return "", ok
		}
		return v[len(v)-1], true
	}
	start, ok := get("start")
	if !ok {
		return nil, badRequest("Missing parameter <code>start</code>")
	}
	end, _ := get("end")
	req := &Request{}
	_, req.MsResolution = form["ms"]
	_, req.ShowTSUIDs = form["show_tsuids"]
	_, req.Arrays = form["arrays"]
	for _, k := range []string{"exp", "timezone", "use_calendar"} {
		if _, ok := form[k]; ok {
			return nil, badRequest("parameter %s is not supported by hbtsdb's /api/query", k)
		}
	}
	var subs []jsonSubQuery
	// tsuid= sub-queries come first, as parseQuery reads them first.
	for _, q := range form["tsuid"] {
		s, err := parseTSUIDParam(q)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	for _, m := range form["m"] {
		s, err := parseM(m)
		if err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	if len(subs) == 0 {
		return nil, badRequest("Missing sub queries")
	}
	return req.finish(jsonTime(start), jsonTime(end), dedupe(subs), now)
}

// jsonQuery is TSQuery's JSON form (the fields hbtsdb reads).
type jsonQuery struct {
	Start        jsonTime       `json:"start"`
	End          jsonTime       `json:"end"`
	Queries      []jsonSubQuery `json:"queries"`
	MsResolution bool           `json:"msResolution"`
	ShowTSUIDs   bool           `json:"showTSUIDs"`
	Timezone     string         `json:"timezone"`
	UseCalendar  bool           `json:"useCalendar"`
}

// jsonSubQuery is TSSubQuery's JSON form (the fields hbtsdb reads).
type jsonSubQuery struct {
	Aggregator   string            `json:"aggregator"`
	Metric       string            `json:"metric"`
	TSUIDs       []string          `json:"tsuids"`
	Rate         bool              `json:"rate"`
	RateOptions  *jsonRateOptions  `json:"rateOptions"`
	Downsample   string            `json:"downsample"`
	Tags         map[string]string `json:"tags"`
	Filters      []jsonFilter      `json:"filters"`
	ExplicitTags bool              `json:"explicitTags"`

	// filters are the sub-query's filters, built: from m=, or from the JSON
	// "filters" or "tags", whichever comes last (TSSubQuery.setTags replaces
	// the filters, setFilters the tags' filters, as Jackson calls them in
	// the body's order).
	filters []*Filter
}

// UnmarshalJSON reads a sub-query and builds its filters, as Jackson's
// TSSubQuery does while it reads: a filter it cannot build makes the body
// unreadable.
func (s *jsonSubQuery) UnmarshalJSON(b []byte) error {
	type plain jsonSubQuery
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = jsonSubQuery(p)
	var fromFilters, fromTags []*Filter
	for _, f := range s.Filters {
		nf, err := buildFilter(f.Type, f.Tagk, f.Filter, f.GroupBy || f.GroupBySnake)
		if err != nil {
			return err
		}
		fromFilters = append(fromFilters, nf)
	}
	var err error
	for _, k := range sortedKeys(s.Tags) {
		if fromTags, err = addFilter(fromTags, k, s.Tags[k], true); err != nil {
			return err
		}
	}
	switch last := lastKey(b, "filters", "tags"); {
	case last == "tags" && s.Tags != nil:
		s.filters = fromTags
	case last == "filters" && s.Filters != nil:
		s.filters = fromFilters
	}
	return nil
}

// lastKey returns which of the keys comes last among the top-level keys of
// the JSON object b ("" for none).
func lastKey(b []byte, keys ...string) string {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	last := ""
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return last
		}
		if k, ok := t.(string); ok && slices.Contains(keys, k) {
			last = k
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return last
		}
	}
	return last
}

// jsonFilter is TagVFilter.Builder's JSON form.
type jsonFilter struct {
	Type         string `json:"type"`
	Tagk         string `json:"tagk"`
	Filter       string `json:"filter"`
	GroupBy      bool   `json:"groupBy"`
	GroupBySnake bool   `json:"group_by"`
}

// jsonRateOptions takes RateOptions' defaults for missing fields and, as
// Jackson does for RateOptions' longs, takes counterMax and resetValue as
// integers, numbers with a fraction (truncated) or numeric strings.
type jsonRateOptions RateOptions

func (o *jsonRateOptions) UnmarshalJSON(b []byte) error {
	var p struct {
		Counter    bool      `json:"counter"`
		CounterMax *jsonLong `json:"counterMax"`
		ResetValue *jsonLong `json:"resetValue"`
		DropResets bool      `json:"dropResets"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	r := DefaultRateOptions()
	r.Counter, r.DropResets = p.Counter, p.DropResets
	if p.CounterMax != nil {
		r.CounterMax = int64(*p.CounterMax)
	}
	if p.ResetValue != nil {
		r.ResetValue = int64(*p.ResetValue)
	}
	*o = jsonRateOptions(r)
	return nil
}

// jsonLong is a Java long as Jackson reads one: a JSON integer, a number
// with a fraction (truncated toward zero) or a string holding either.
type jsonLong int64

func (l *jsonLong) UnmarshalJSON(b []byte) error {
	text := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
	}
	if v, err := strconv.ParseInt(text, 10, 64); err == nil {
		*l = jsonLong(v)
		return nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("cannot read %s as a long", b)
	}
	*l = jsonLong(javaLong(f))
	return nil
}

// jsonTime is a time given as a JSON string or number, as Jackson reads
// either into TSQuery's String fields.
type jsonTime string

func (t *jsonTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*t = ""
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = jsonTime(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*t = jsonTime(n.String())
	return nil
}

// ParseJSON reads a POST body: TSQuery's JSON form, as
// HttpJsonSerializer.parseQueryV1 reads it (identical sub-queries once).
func ParseJSON(body []byte, now time.Time) (*Request, error) {
	if len(body) == 0 {
		return nil, errMissingContent()
	}
	var q jsonQuery
	if err := json.Unmarshal(body, &q); err != nil {
		return nil, badJSON(err)
	}
	if q.Timezone != "" || q.UseCalendar {
		return nil, badRequest("timezone and useCalendar (calendar downsampling) are not supported by hbtsdb's /api/query")
	}
	req := &Request{MsResolution: q.MsResolution, ShowTSUIDs: q.ShowTSUIDs}
	return req.finish(q.Start, q.End, dedupe(q.Queries), now)
}

// dedupe keeps the first of identical sub-queries, as parseQuery and
// parseQueryV1 put them through a LinkedHashSet: TSSubQuery.equals compares
// the aggregator, metric, tsuids, downsampler, rate and its options, the
// filters (each by its type, tag key and values, not its group-by) and
// explicitTags.
func dedupe(subs []jsonSubQuery) []jsonSubQuery {
	seen := map[string]bool{}
	out := subs[:0:0]
	for _, s := range subs {
		k := s.identity()
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out
}

// identity is what TSSubQuery.equals compares, as a string.
func (s *jsonSubQuery) identity() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q %q %t %t", s.Aggregator, s.Metric, s.TSUIDs, s.Downsample, s.Rate, s.ExplicitTags)
	if s.RateOptions != nil {
		fmt.Fprintf(&b, " %+v", *s.RateOptions)
	}
	for _, f := range s.filters {
		b.WriteByte(' ')
		b.WriteString(f.identity())
	}
	return b.String()
}

// finish is TSQuery.validateAndSetQuery.
func (req *Request) finish(start, end jsonTime, subs []jsonSubQuery, now time.Time) (*Request, error) {
	if start == "" {
		return nil, badRequest("Missing start time")
	}
	var err error
	if req.Start, err = ParseTime(string(start), now); err != nil {
		return nil, err
	}
	if end != "" {
		if req.End, err = ParseTime(string(end), now); err != nil {
			return nil, err
		}
	} else {
		req.End = now.UnixMilli()
	}
	if req.End <= req.Start {
		return nil, badRequest("End time [%d] must be greater than the start time [%d]", req.End, req.Start)
	}
	if len(subs) == 0 {
		return nil, badRequest("Missing queries")
	}
	for _, s := range subs {
		sq, err := s.build()
		if err != nil {
			return nil, err
		}
		req.Queries = append(req.Queries, *sq)
	}
	return req, nil
}

// build is TSSubQuery.validateAndSetQuery.
func (s jsonSubQuery) build() (*SubQuery, error) {
	if s.Aggregator == "" {
		return nil, badRequest("Missing the aggregation function")
	}
	agg, ok := LookupAggregator(s.Aggregator)
	if !ok {
		return nil, badRequest("No such aggregation function: %s", s.Aggregator)
	}
	if len(s.TSUIDs) == 0 && s.Metric == "" {
		return nil, badRequest("Missing the metric or tsuids, provide at least one")
	}
	sq := &SubQuery{Metric: s.Metric, Agg: agg, Rate: s.Rate, RateOptions: DefaultRateOptions(),
		ExplicitTags: s.ExplicitTags, Filters: s.filters}
	if len(s.TSUIDs) > 0 {
		// TsdbQuery: tsuids take precedence over the metric and its filters.
		ids, err := parseTSUIDs(s.TSUIDs)
		if err != nil {
			return nil, err
		}
		sq.Metric, sq.TSUIDs, sq.ExplicitTags, sq.Filters = "", ids, false, nil
	}
	if s.RateOptions != nil {
		sq.RateOptions = RateOptions(*s.RateOptions)
	}
	var err error
	if s.Downsample != "" {
		if sq.Downsample, err = ParseDownsample(s.Downsample); err != nil {
			return nil, err
		}
		sq.Fill = sq.Downsample.Fill
	}
	return sq, nil
}

// parseM is QueryRpc.parseMTypeSubQuery:
// agg:[interval-agg[-fill]:][rate[{counter[,max[,reset]]}]:]metric[{tags}[{filters}]].
func parseM(m string) (jsonSubQuery, error) {
	var s jsonSubQuery
	if m == "" {
		return s, badRequest("The query string was empty")
	}
	parts, err := splitSubQuery(m)
	if err != nil {
		return s, err
	}
	s.Aggregator = parts[0]
	metric, filters, err := parseTagFilters(parts[len(parts)-1])
	if err != nil {
		return s, badRequest("%v", err)
	}
	s.Metric, s.filters = metric, filters
	for _, p := range parts[1 : len(parts)-1] {
		if ok, err := s.rateOrDownsample(p); ok || err != nil {
			if err != nil {
				return s, err
			}
			continue
		}
		switch lp := strings.ToLower(p); {
		case lp == "explicit_tags":
			s.ExplicitTags = true
		case lp == "pre-agg", strings.HasPrefix(lp, "rollup_"), strings.HasPrefix(lp, "percentiles"),
			strings.HasPrefix(lp, "show-histogram-buckets"):
			return s, badRequest("%s in m=%s is not supported by hbtsdb's /api/query", p, m)
		}
	}
	return s, nil
}

// splitSubQuery splits an m= or tsuid= parameter at its colons into two to
// five parts, as parseMTypeSubQuery and parseTsuidTypeSubQuery do (both name
// the parameter m= in the error).
func splitSubQuery(q string) ([]string, error) {
	parts := strings.Split(q, ":")
	if len(parts) < 2 || len(parts) > 5 {
		which := "too many"
		if len(parts) < 2 {
			which = "not enough"
		}
		return nil, badRequest("Invalid parameter m=%s (%s :-separated parts)", q, which)
	}
	return parts, nil
}

// rateOrDownsample reads a middle part of m= or tsuid= that is a rate
// ("rate", "rate{...}") or a downsampler (it starts with a digit), and says
// whether it was one.
func (s *jsonSubQuery) rateOrDownsample(p string) (bool, error) {
	switch {
	case strings.HasPrefix(strings.ToLower(p), "rate"):
		s.Rate = true
		if strings.Contains(p, "{") {
			o, err := ParseRateOptions(p)
			if err != nil {
				return true, err
			}
			jo := jsonRateOptions(o)
			s.RateOptions = &jo
		}
		return true, nil
	case p != "" && p[0] >= '0' && p[0] <= '9':
		s.Downsample = p
		return true, nil
	}
	return false, nil
}

// ParseRateOptions is QueryRpc.parseRateOptions: "rate",
// "rate{counter[,counterMax[,resetValue]]}" or "rate{dropcounter,...}".
func ParseRateOptions(spec string) (RateOptions, error) {
	if len(spec) == 4 {
		return DefaultRateOptions(), nil
	}
	if len(spec) < 6 {
		return RateOptions{}, badRequest("Invalid rate options specification: %s", spec)
	}
	parts := strings.Split(spec[5:len(spec)-1], ",")
	if len(parts) < 1 || len(parts) > 3 {
		return RateOptions{}, badRequest("Incorrect number of values in rate options specification, must be "+
			"counter[,counter max value,reset value], recieved: %d parts", len(parts))
	}
	o := DefaultRateOptions()
	o.Counter = strings.HasSuffix(parts[0], "counter")
	o.DropResets = parts[0] == "dropcounter"
	if len(parts) >= 2 && parts[1] != "" {
		v, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return RateOptions{}, badRequest("Max value of counter was not a number, received '%s'", parts[1])
		}
		o.CounterMax = v
	}
	if len(parts) >= 3 && parts[2] != "" {
		v, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			return RateOptions{}, badRequest("Reset value of counter was not a number, received '%s'", parts[2])
		}
		o.ResetValue = v
	}
	return o, nil
}

// ParseDownsample is DownsamplingSpecification's parser:
// "<interval>-<aggregator>[-<fill policy>]", the interval a duration
// (ParseDuration) or "0all". Calendar intervals ("1dc") are refused.
func ParseDownsample(spec string) (*Downsample, error) {
	parts := strings.Split(spec, "-")
	if len(parts) < 2 {
		return nil, badRequest("Invalid downsampling specifier '%s': must provide at least interval and function", spec)
	}
	if len(parts) > 3 {
		return nil, badRequest("Invalid downsampling specifier '%s': must consist of interval, function, and optional fill policy", spec)
	}
	d := &Downsample{}
	switch {
	case strings.Contains(parts[0], "all"):
		d.All = true
	case strings.HasSuffix(parts[0], "c"):
		return nil, badRequest("Invalid downsampling specifier '%s': calendar intervals are not supported by hbtsdb", spec)
	default:
		iv, err := ParseDuration(parts[0])
		if err != nil {
			return nil, err
		}
		d.Interval = iv
	}
	agg, ok := LookupAggregator(parts[1])
	if !ok {
		return nil, badRequest("No such downsampling function: %s", parts[1])
	}
	if agg.Name == "none" {
		return nil, badRequest("cannot use the NONE aggregator for downsampling")
	}
	d.Agg = agg
	if len(parts) == 3 {
		f, ok := fillNames[strings.ToLower(parts[2])]
		if !ok {
			if strings.EqualFold(parts[2], "scalar") {
				return nil, badRequest("fill policy scalar is not supported by hbtsdb")
			}
			return nil, badRequest("Unrecognized fill policy: %s", parts[2]) // FillPolicy.fromString
		}
		d.Fill = f
	}
	return d, nil
}

// ParseDuration is DateTime.parseDuration: a positive integer and a unit
// (ms, s, m, h, d, w, n = 30 days, y = 365 days), in milliseconds.
func ParseDuration(s string) (int64, error) {
	if s == "" {
		return 0, badRequest("Cannot parse null or empty duration")
	}
	unit := 0
	for unit < len(s) && s[unit] >= '0' && s[unit] <= '9' {
		unit++
	}
	if unit >= len(s) {
		return 0, badRequest("Invalid duration, must have an integer and unit: %s", s)
	}
	n, err := strconv.ParseInt(s[:unit], 10, 64)
	if err != nil {
		return 0, badRequest("Invalid duration (number): %s", s)
	}
	if n <= 0 {
		return 0, badRequest("Zero or negative duration: %s", s)
	}
	var mult int64
	switch strings.ToLower(s)[len(s)-1] {
	case 's':
		if len(s) >= 2 && s[len(s)-2] == 'm' {
			return n, nil
		}
		mult = 1
	case 'm':
		mult = 60
	case 'h':
		mult = 3600
	case 'd':
		mult = 3600 * 24
	case 'w':
		mult = 3600 * 24 * 7
	case 'n':
		mult = 3600 * 24 * 30
	case 'y':
		mult = 3600 * 24 * 365
	default:
		return 0, badRequest("Invalid duration (suffix): %s", s)
	}
	mult *= 1000
	if float64(n)*float64(mult) > math.MaxInt64 {
		return 0, badRequest("Duration must be < Long.MAX_VALUE ms: %s", s)
	}
	return n * mult, nil
}

var (
	msSuffix   = regexp.MustCompile(`^[0-9]+ms$`)
	dottedMS   = regexp.MustCompile(`^[0-9]{10}\.[0-9]{1,3}$`)
	absFormats = map[int][2]string{ // length -> layout without '-', with '-'
		10: {"2006/01/02", "2006/01/02"},
		16: {"2006/01/02 15:04", "2006/01/02-15:04"},
		19: {"2006/01/02 15:04:05", "2006/01/02-15:04:05"},
	}
)

// ParseTime is DateTime.parseDateTimeString in UTC, in milliseconds: "now",
// "<duration>-ago", "<n>ms", Unix seconds (up to 10 digits) or milliseconds,
// "<seconds>.<ms>", or "yyyy/MM/dd[ HH:mm[:ss]]" (a '-' may join date and time).
func ParseTime(s string, now time.Time) (int64, error) {
	ls := strings.ToLower(s)
	switch {
	case msSuffix.MatchString(s):
		v, err := javaParseLong(strings.TrimSuffix(s, "ms"))
		if err != nil {
			return 0, badRequest("Invalid time: %s. %v", s, err)
		}
		return v, nil
	case ls == "now":
		return now.UnixMilli(), nil
	case strings.HasSuffix(ls, "-ago"):
		d, err := ParseDuration(s[:len(s)-4])
		if err != nil {
			return 0, err
		}
		return now.UnixMilli() - d, nil
	case strings.ContainsAny(s, "/:"):
		layouts, ok := absFormats[len(s)]
		if !ok {
			return 0, badRequest("Invalid absolute date: %s", s)
		}
		layout := layouts[0]
		if strings.Contains(s, "-") {
			layout = layouts[1]
		}
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			return 0, badRequest("Invalid date: %s. %v", s, err)
		}
		return t.UnixMilli(), nil
	}
	digits := s
	if strings.Contains(s, ".") {
		if !dottedMS.MatchString(s) {
			return 0, badRequest("Invalid time: %s. Millisecond timestamps must be in the format "+
				"<seconds>.<ms> where the milliseconds are limited to 3 digits", s)
		}
		digits = strings.Replace(s, ".", "", 1)
	}
	v, err := javaParseLong(digits)
	if err != nil {
		return 0, badRequest("Invalid time: %s. %v", s, err)
	}
	if v < 0 {
		return 0, badRequest("Invalid time: %s. Negative timestamps are not supported.", s)
	}
	if len(s) <= 10 {
		v *= 1000
	}
	return v, nil
}

// javaParseLong is OpenTSDB's Tags.parseLong, with its messages: an optional
// sign and decimal digits that fit a long.
func javaParseLong(s string) (int64, error) {
	n := len(s)
	if n == 0 {
		return 0, fmt.Errorf("Empty string")
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		if n == 1 {
			return 0, fmt.Errorf("Just a sign, no value: %s", s)
		} else if n > 20 {
			return 0, fmt.Errorf("Value too long: %s", s)
		}
		i = 1
	} else if n > 19 {
		return 0, fmt.Errorf("Value too long: %s", s)
	}
	var v int64 // negated, to reach MinInt64
	for ; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return 0, fmt.Errorf("Invalid character '%c' in %s", r, s)
		}
		next := v*10 - int64(c-'0')
		if v < math.MinInt64/10 || next > v*10 {
			return 0, fmt.Errorf("Overflow in %s", s)
		}
		v = next
	}
	switch {
	case s[0] == '-':
		return v, nil
	case v == math.MinInt64:
		return 0, fmt.Errorf("Overflow in %s", s)
	}
	return -v, nil
}
