package wire

import (
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hbtsdb/hbtsdb/cellenc"
)

// maxNestingDepth is encoding/json's bound on nested arrays and objects
// (encoding/json/scanner.go): a body nested deeper is not JSON to it, so not
// to DecodePut either.
const maxNestingDepth = 10000

// scanFlags say what the strings of a datapoint held, for the checks that
// need the datapoint's whole text.
type scanFlags uint8

const (
	// sawNonASCII: a byte from 0x80 up; the datapoint must be valid UTF-8.
	sawNonASCII scanFlags = 1 << iota
	// sawSurrogate: a \uXXXX escape of a UTF-16 surrogate; the datapoint must
	// not hold a lone one.
	sawSurrogate
)

// putMember is a member of a datapoint object, as encoding/json would match
// its name to putInput's fields.
type putMember uint8

const (
	memberMetric putMember = 1 << iota
	memberTimestamp
	memberValue
	memberTags
	memberOther   // any other name: skipped, as encoding/json ignores it
	memberUnusual // a name encoding/json matches to a field only without regard to case
)

// putDecoder decodes an /api/put body in one pass, validating it as
// encoding/json does (RFC 8259: the same whitespace, number grammar, escapes,
// control characters refused in strings, bytes not UTF-8 taken, nesting up to
// maxNestingDepth) while it decodes the datapoints.
type putDecoder struct {
	// text is the body, trimmed and copied: every string of the result is a
	// substring of it or decoded from it.
	text  string
	pos   int       // the next byte to read
	depth int       // arrays and objects open at pos
	flags scanFlags // of the datapoint being decoded

	datapoints []PutDatapoint
	// tagSets are the tags decoded so far by their object's JSON text;
	// lastTags those of the latest datapoint. noTags are missing tags.
	tagSets  map[string]*putTags
	lastTags *putTags
	noTags   *putTags
	pairs    []tagPair // scratch for the tags being decoded
	series   putSeries
}

func newPutDecoder(text string) *putDecoder {
	// About 100 bytes a datapoint as collectors write them; the tables grow
	// for smaller ones.
	n := len(text)/96 + 1
	return &putDecoder{
		text:       text,
		datapoints: make([]PutDatapoint, 0, n),
		tagSets:    map[string]*putTags{},
		noTags:     newPutTags("", nil, 0),
		series:     newPutSeries(n),
	}
}

// put is the decoded body.
func (d *putDecoder) put() *Put {
	p := &Put{Datapoints: d.datapoints}
	p.Request.Series, p.origin = d.series.request()
	return p
}

// decodeBody decodes the body, one datapoint object or an array of them
// (HttpJsonSerializer.parsePutV1), and reports whether it is JSON.
func (d *putDecoder) decodeBody() bool {
	if d.text[0] == '{' {
		return d.element() && d.atEnd()
	}
	return d.array(d.element) && d.atEnd()
}

// atEnd reports whether nothing but whitespace follows.
func (d *putDecoder) atEnd() bool {
	d.skipSpace()
	return d.pos == len(d.text)
}

// element decodes the datapoint at d.pos, an object or any other JSON value,
// and reports whether it is JSON. The datapoints of the shape clients send
// are decoded here; the others, and those that are not UTF-8, by
// encoding/json (decodePutDatapointJSON), so that they fail or succeed with
// its results and words.
func (d *putDecoder) element() bool {
	start, depth := d.pos, d.depth
	d.flags = 0
	f, ok := d.datapoint()
	if !ok {
		d.pos, d.depth = start, depth
		if !d.skipValue() {
			return false
		}
	}
	raw := d.text[start:d.pos]
	if !ok || d.flags&sawNonASCII != 0 && !utf8.ValidString(raw) {
		var shown any
		var errMsg string
		if f, shown, errMsg = decodePutDatapointJSON(raw); errMsg != "" {
			d.fail(shown, errMsg)
			return true
		}
	} else if d.flags&sawSurrogate != 0 {
		if shown, errMsg, bad := loneSurrogateError(raw); bad {
			d.fail(shown, errMsg)
			return true
		}
	}
	d.add(&f)
	return true
}

// add checks a decoded datapoint and adds it, and its sample if it is valid.
func (d *putDecoder) add(f *putFields) {
	shown, t, v, errMsg := f.check()
	i := len(d.datapoints)
	d.datapoints = append(d.datapoints, PutDatapoint{Shown: shown, Error: errMsg})
	if errMsg == "" {
		d.series.add(i, f.metric, f.tags, cellenc.Sample{T: t, V: v})
	}
}

// fail adds a datapoint that could not be decoded.
func (d *putDecoder) fail(shown any, errMsg string) {
	d.datapoints = append(d.datapoints, PutDatapoint{Shown: shown, Error: errMsg})
}

// datapoint decodes the object at d.pos if it has the shape clients send:
// "metric" a string or null, "timestamp" and "value" any value (kept as
// text), "tags" an object of strings and nulls or null, each at most once and
// spelt so, in any order, and any other members, which are skipped as
// encoding/json and Jackson (@JsonIgnoreProperties(ignoreUnknown = true))
// skip them. It returns false for anything else, JSON or not.
func (d *putDecoder) datapoint() (f putFields, ok bool) {
	f = putFields{noTimestamp: true, tags: d.noTags}
	if d.peek() != '{' {
		return f, false
	}
	var seen putMember
	ok = d.object(func(name string, escaped bool) bool {
		m := putMemberOf(name)
		switch {
		case escaped, m == memberUnusual:
			// encoding/json matches the name unescaped, without regard to case.
			return false
		case m != memberOther && seen&m != 0:
			// encoding/json keeps the last of repeated members, merging
			// repeated tags objects.
			return false
		}
		seen |= m
		var ok bool
		switch m {
		case memberMetric:
			f.metric, ok = d.metric()
		case memberTimestamp:
			f.timestamp, f.noTimestamp, ok = d.scalar()
		case memberValue:
			f.value, _, ok = d.scalar()
		case memberTags:
			f.tags, ok = d.tags()
		default:
			ok = d.skipValue()
		}
		return ok
	})
	return f, ok
}

// putMemberOf is the member a name is. encoding/json matches a name to a
// field exactly, or else without regard to case under Unicode's folding
// ("ſ" is an "s"): a name matched only so is memberUnusual, and so is any
// name that is not ASCII.
func putMemberOf(name string) putMember {
	switch name {
	case "metric":
		return memberMetric
	case "timestamp":
		return memberTimestamp
	case "value":
		return memberValue
	case "tags":
		return memberTags
	}
	for i := range len(name) {
		if name[i] >= utf8.RuneSelf {
			return memberUnusual
		}
	}
	for _, field := range [...]string{"metric", "timestamp", "value", "tags"} {
		if strings.EqualFold(name, field) {
			return memberUnusual
		}
	}
	return memberOther
}

// metric decodes the metric: a string, or null for none ("Metric name was
// empty"). Any other value is left to encoding/json, which refuses it.
func (d *putDecoder) metric() (string, bool) {
	switch d.peek() {
	case '"':
		return d.stringValue()
	case 'n':
		return "", d.literal("null")
	}
	return "", false
}

// scalar decodes a member kept as text, the timestamp or the value: a
// string's content; null as missing (as encoding/json leaves a RawMessage of
// "null", which DecodePut takes for missing); any other value's JSON text,
// which parses as a number if it is one.
func (d *putDecoder) scalar() (text string, missing, ok bool) {
	switch d.peek() {
	case '"':
		text, ok = d.stringValue()
		return text, false, ok
	case 'n':
		if d.literal("null") {
			return "", true, true
		}
		return "", false, false
	}
	start := d.pos
	if !d.skipValue() {
		return "", false, false
	}
	return d.text[start:d.pos], false, true
}

// tags decodes the tags: an object, or null for none. Any other value is
// left to encoding/json, which refuses it.
func (d *putDecoder) tags() (*putTags, bool) {
	switch d.peek() {
	case 'n':
		return d.noTags, d.literal("null")
	case '{':
		return d.tagsObject()
	}
	return nil, false
}

// tagsObject decodes the tags object at d.pos, or finds it decoded already:
// the tags of a datapoint are often those of the one before, and a JSON
// object ends where its text ends, so a text that starts with the tags of the
// datapoint before holds them. Its members are strings, or null, which
// encoding/json stores in a map as the empty string; any other value, or a
// name repeated, is left to encoding/json.
func (d *putDecoder) tagsObject() (*putTags, bool) {
	start := d.pos
	if t := d.lastTags; t != nil && strings.HasPrefix(d.text[start:], t.text) {
		d.pos += len(t.text)
		d.flags |= t.flags
		return t, true
	}
	outer := d.flags
	d.flags = 0
	ok := d.tagPairs()
	flags := d.flags
	d.flags |= outer
	if !ok {
		return nil, false
	}
	text := d.text[start:d.pos]
	t, ok := d.tagSets[text]
	if !ok {
		pairs := slices.Clone(d.pairs)
		if sortTagPairs(pairs) {
			return nil, false
		}
		t = newPutTags(text, pairs, flags)
		d.tagSets[text] = t
	}
	d.lastTags = t
	return t, true
}

// tagPairs decodes the tags object at d.pos into d.pairs, in body order.
func (d *putDecoder) tagPairs() bool {
	d.pairs = d.pairs[:0]
	return d.object(func(name string, escaped bool) bool {
		if escaped {
			name = unquote(name)
		}
		var value string
		var ok bool
		switch d.peek() {
		case '"':
			value, ok = d.stringValue()
		case 'n':
			ok = d.literal("null")
		}
		if ok {
			d.pairs = append(d.pairs, tagPair{name, value})
		}
		return ok
	})
}

// skipValue moves past the JSON value at d.pos and reports whether it is one.
func (d *putDecoder) skipValue() bool {
	switch c := d.peek(); {
	case c == '{':
		return d.skipObject()
	case c == '[':
		return d.skipArray()
	case c == '"':
		_, _, ok := d.scanString()
		return ok
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return false
}

func (d *putDecoder) skipObject() bool {
	return d.object(func(string, bool) bool { return d.skipValue() })
}

func (d *putDecoder) skipArray() bool {
	return d.array(d.skipValue)
}

// array walks the array at d.pos: element is called at the start of each
// element, past which it must move. It reports whether the array is JSON.
func (d *putDecoder) array(element func() bool) bool {
	return d.container(']', element)
}

// object walks the object at d.pos: member is called with each member's name
// (its content, escapes left in) at the start of the member's value, past
// which it must move. It reports whether the object is JSON.
func (d *putDecoder) object(member func(name string, escaped bool) bool) bool {
	return d.container('}', func() bool {
		if d.peek() != '"' {
			return false
		}
		name, escaped, ok := d.scanString()
		d.skipSpace()
		if !ok || !d.consume(':') {
			return false
		}
		d.skipSpace()
		return member(name, escaped)
	})
}

// container walks the array or object at d.pos, whose last byte is end:
// item is called at the start of each element or member, past which it must
// move, and the commas between them and the end are checked.
func (d *putDecoder) container(end byte, item func() bool) bool {
	if !d.open() {
		return false
	}
	d.skipSpace()
	if d.consume(end) {
		d.depth--
		return true
	}
	for {
		if !item() {
			return false
		}
		d.skipSpace()
		switch d.next() {
		case ',':
			d.skipSpace()
		case end:
			d.depth--
			return true
		default:
			return false
		}
	}
}

// stringValue decodes the JSON string at d.pos.
func (d *putDecoder) stringValue() (string, bool) {
	s, escaped, ok := d.scanString()
	if escaped {
		s = unquote(s)
	}
	return s, ok
}

// plainStringByte marks the bytes that stand for themselves in a JSON
// string: ASCII from 0x20 up but the quote and the backslash.
var plainStringByte = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// scanString moves past the JSON string at d.pos (a '"') and returns its
// content between the quotes, still escaped, and whether it holds an escape.
// As encoding/json it takes any byte from 0x20 up, UTF-8 or not, and refuses
// control characters and escapes JSON lacks.
func (d *putDecoder) scanString() (content string, escaped, ok bool) {
	s := d.text
	start := d.pos + 1
	for i := start; i < len(s); {
		c := s[i]
		switch {
		case plainStringByte[c]:
			i++
		case c == '"':
			d.pos = i + 1
			return s[start:i], escaped, true
		case c == '\\':
			n := d.escape(i)
			if n == 0 {
				return "", false, false
			}
			escaped = true
			i += n
		case c < 0x20:
			return "", false, false
		default:
			d.flags |= sawNonASCII
			i++
		}
	}
	return "", false, false
}

// escape is the length of the escape at d.text[i] (a '\\'), 0 if JSON has no
// such escape.
func (d *putDecoder) escape(i int) int {
	s := d.text
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		r, ok := hex4(s, i+2)
		if !ok {
			return 0
		}
		if utf16.IsSurrogate(r) {
			d.flags |= sawSurrogate
		}
		return 6
	}
	return 0
}

// unquote decodes the escapes of a JSON string's content (valid JSON), as
// encoding/json does: a surrogate pair is its character, a lone surrogate
// U+FFFD.
func unquote(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b = append(b, s[i])
			i++
			continue
		}
		c := s[i+1]
		i += 2
		switch c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, _ := hex4(s, i)
			i += 4
			if utf16.IsSurrogate(r) {
				lo := rune(-1)
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if x, ok := hex4(s, i+2); ok {
						lo = x
					}
				}
				if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
					r = pair
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
		default: // '"', '\\', '/'
			b = append(b, c)
		}
	}
	return string(b)
}

// number moves past the JSON number at d.pos: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *putDecoder) number() bool {
	s, i := d.text, d.pos
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if i = digits(s, i+1); s[i-1] == '.' {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	d.pos = i
	return true
}

// digits is the index after the ASCII digits at s[i:].
func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// literal moves past lit (true, false or null) if it is at d.pos.
func (d *putDecoder) literal(lit string) bool {
	if !strings.HasPrefix(d.text[d.pos:], lit) {
		return false
	}
	d.pos += len(lit)
	return true
}

func (d *putDecoder) skipSpace() {
	for d.pos < len(d.text) {
		switch d.text[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek is the byte at d.pos, 0 at the end.
func (d *putDecoder) peek() byte {
	if d.pos < len(d.text) {
		return d.text[d.pos]
	}
	return 0
}

// next is the byte at d.pos, 0 at the end, and moves past it.
func (d *putDecoder) next() byte {
	c := d.peek()
	if d.pos < len(d.text) {
		d.pos++
	}
	return c
}

// consume moves past c if it is at d.pos.
func (d *putDecoder) consume(c byte) bool {
	if d.pos >= len(d.text) || d.text[d.pos] != c {
		return false
	}
	d.pos++
	return true
}

// open enters the array or object at d.pos, within encoding/json's bound.
func (d *putDecoder) open() bool {
	d.pos++
	d.depth++
	return d.depth <= maxNestingDepth
}
