package opentsdb

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteJSON writes results as OpenTSDB 2.4.1's HttpJsonSerializer does:
// [{"metric","tags","aggregateTags"[,"tsuids"],"dps":{"<ts>":v,...}}], the
// dps keys in seconds (a millisecond timestamp divided down, so that two
// samples in one second write one key twice, as OpenTSDB does) or, with
// req.MsResolution, in milliseconds; with req.Arrays dps is
// [[<ts>,v],...]. Integers are written as such ("5"), doubles as Java's
// Double.toString writes them ("1.0", "1.5E7"), NaN as "NaN" (Jackson quotes
// non-numeric numbers) or, with fill policy null, as null.
func WriteJSON(w io.Writer, results []Result, req *Request) error {
	b := make([]byte, 0, 4096)
	b = append(b, '[')
	for i, r := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"metric":`...)
		b = appendString(b, r.Metric)
		b = append(b, `,"tags":`...)
		b = appendTags(b, r.Tags)
		b = append(b, `,"aggregateTags":[`...)
		for j, k := range r.AggregateTags {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
		}
		b = append(b, ']')
		if req.ShowTSUIDs {
			b = append(b, `,"tsuids":[`...)
			for j, id := range r.TSUIDs {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, id)
			}
			b = append(b, ']')
		}
		open, end := byte('{'), byte('}')
		if req.Arrays {
			open, end = '[', ']'
		}
		b = append(b, `,"dps":`...)
		b = append(b, open)
		for j, p := range r.Points {
			if j > 0 {
				b = append(b, ',')
			}
			ts := p.T
			if !req.MsResolution {
				ts /= 1000
			}
			if req.Arrays {
				b = append(b, '[')
				b = strconv.AppendInt(b, ts, 10)
				b = append(b, ',')
			} else {
				b = append(b, '"')
				b = strconv.AppendInt(b, ts, 10)
				b = append(b, `":`...)
			}
			switch {
			case r.Ints != nil && r.Ints[j]:
				b = strconv.AppendInt(b, int64(p.V), 10)
			case math.IsNaN(p.V) && r.Fill == FillNull:
				b = append(b, "null"...)
			default:
				b = AppendJavaDouble(b, p.V)
			}
			if req.Arrays {
				b = append(b, ']')
			}
		}
		b = append(b, end, '}')
		if len(b) > 64<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, ']')
	_, err := w.Write(b)
	return err
}

// WriteError writes OpenTSDB's error body,
// {"error":{"code":N,"message":"...","details":"..."}}, as
// HttpJsonSerializer.formatErrorV1 does (details only when not empty; the
// Java stack trace OpenTSDB adds is left out).
func WriteError(w io.Writer, code int, message, details string) error {
	b := []byte(`{"error":{"code":`)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	if details != "" {
		b = append(b, `,"details":`...)
		b = appendString(b, details)
	}
	b = append(b, "}}"...)
	_, err := w.Write(b)
	return err
}

// appendTags writes tags as a JSON object, keys sorted.
func appendTags(b []byte, tags map[string]string) []byte {
	b = append(b, '{')
	for j, k := range sortedKeys(tags) {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, tags[k])
	}
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// AppendJavaDouble writes v as Jackson writes a double: Java's
// Double.toString (shortest digits; plain notation with at least one
// fractional digit for 1e-3 <= |v| < 1e7, otherwise d.dddE±n), NaN and
// infinities quoted.
func AppendJavaDouble(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Infinity"`...)
	case v == 0:
		if math.Signbit(v) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	a := math.Abs(v)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return append(b, s...)
	}
	s := strconv.FormatFloat(v, 'e', -1, 64) // "1.5e+07", "1e-04"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	b = append(b, mant...)
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(e), 10)
}
