package wire

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/valyala/fastjson"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// Import is a decoded body of one of VictoriaMetrics' import formats
// (DecodeVMImport, DecodePromText): the samples as a write.Request, and for each
// sample the body line it came from, so that what the writer rejects can be
// reported by line.
type Import struct {
	// Request holds every sample of the body that is stored: not the NaN values,
	// which are skipped as VictoriaMetrics skips them (see DecodeVMImport).
	Request write.Request
	// Lines is how many lines the body has (blank ones included).
	Lines int
	// SkippedNaN counts the NaN values (null, NaN and their spellings) that
	// were skipped.
	SkippedNaN int
	// seriesLine[i] is the 1-based line of Request.Series[i] when all its samples
	// come from one line; sampleLines[i][j] the line of its sample j otherwise.
	seriesLine  []int
	sampleLines [][]int
}

// Line is the 1-based body line of sample j of Request.Series[i] (j < 0: of the
// series' first sample).
func (d *Import) Line(i, j int) int {
	if d.sampleLines != nil && d.sampleLines[i] != nil {
		if j < 0 {
			j = 0
		}
		return d.sampleLines[i][j]
	}
	return d.seriesLine[i]
}

// DecodeVMImport decodes a body of VictoriaMetrics' POST /api/v1/import: JSON
// lines, one series each,
//
//	{"metric":{"__name__":"up","job":"node"},"values":[1,0.5,null],"timestamps":[1700000000000,1700000015000,1700000030000]}
//
// (https://docs.victoriametrics.com/victoriametrics/single-server-victoriametrics/#json-line-format),
// parsed as VictoriaMetrics v1.148 parses them (lib/protoparser/vmimport, with the
// same JSON parser, valyala/fastjson), except that numbers are read with
// strconv.ParseFloat, correctly rounded, where VictoriaMetrics' fastfloat can be
// one ulp off: timestamps are integer milliseconds;
// a value is a JSON number, a bare NaN, Inf, +Inf or -Inf (any case, as vmctl
// writes them), null, or one of the strings "Inf", "inf", "Infinity",
// "infinity", "NaN", "nan", "null", "Null", each optionally with a leading "-".
// Blank lines and a trailing "\r" are ignored; other keys of a line are ignored.
//
// NaN values (null, NaN and their spellings) are skipped and counted in
// SkippedNaN, as VictoriaMetrics does: its import cannot express a staleness
// marker, and its storage keeps no other NaN ("Skip NaNs other than Prometheus
// staleness marker", lib/storage). ±Inf are stored.
//
// Where VictoriaMetrics logs a bad line and skips it, DecodeVMImport refuses the
// whole body with an error wrapping write.ErrInvalid that names the first bad
// line and says what is wrong with VictoriaMetrics' words, e.g.
//
//	line 3: `timestamps` array size must match `values` array size; got 2; want 3
//
// and nothing of the body is written. A line must have a non-empty "metric"
// object whose values are strings, and non-empty "values" and "timestamps"
// arrays of one length. Label names and values are validated by the writer
// (empty names, missing __name__, limits), which promapi asks before writing.
func DecodeVMImport(body []byte) (Import, error) {
	var (
		d   Import
		p   fastjson.Parser
		b   labels.ScratchBuilder
		row vmRow
	)
	for len(body) > 0 {
		d.Lines++
		line := body
		if n := bytes.IndexByte(body, '\n'); n >= 0 {
			line, body = body[:n], body[n+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := row.parse(&p, &b, line); err != nil {
			return Import{}, fmt.Errorf("%w: line %d: %v", write.ErrInvalid, d.Lines, err)
		}
		samples := make([]cellenc.Sample, 0, len(row.values))
		for k, v := range row.values {
			if math.IsNaN(v) {
				d.SkippedNaN++
				continue
			}
			samples = append(samples, cellenc.Sample{T: row.timestamps[k], V: v})
		}
		if len(samples) == 0 {
			continue
		}
		d.Request.Series = append(d.Request.Series, write.Series{Labels: row.labels, Samples: samples})
		d.seriesLine = append(d.seriesLine, d.Lines)
	}
	return d, nil
}

// vmRow is one JSON line being parsed; its slices are reused from line to line.
type vmRow struct {
	labels     labels.Labels
	values     []float64
	timestamps []int64
}

// parse parses one JSON line into r, with VictoriaMetrics' error texts
// (vmimport.Row.unmarshal).
func (r *vmRow) parse(p *fastjson.Parser, b *labels.ScratchBuilder, line []byte) error {
	r.values, r.timestamps = r.values[:0], r.timestamps[:0]
	v, err := p.ParseBytes(line)
	if err != nil {
		return fmt.Errorf("cannot parse json line: %w", err)
	}
	mv := v.Get("metric")
	if mv == nil || mv.Type() != fastjson.TypeObject {
		return fmt.Errorf("missing `metric` object")
	}
	metric, _ := mv.Object()
	b.Reset()
	metric.Visit(func(key []byte, lv *fastjson.Value) {
		if err != nil {
			return
		}
		s, serr := lv.StringBytes()
		if serr != nil {
			err = fmt.Errorf("cannot unmarshal `metric`: cannot parse value for tag %q: %v", key, serr)
			return
		}
		b.Add(string(key), string(s))
	})
	if err != nil {
		return err
	}
	if metric.Len() == 0 {
		return fmt.Errorf("missing tags")
	}
	b.Sort()
	r.labels = b.Labels()
	values := v.GetArray("values")
	if len(values) == 0 {
		return fmt.Errorf("missing `values` array")
	}
	for i, jv := range values {
		f, err := vmFloat(jv)
		if err != nil {
			return fmt.Errorf("cannot unmarshal value at position %d: %w", i, err)
		}
		r.values = append(r.values, f)
	}
	timestamps := v.GetArray("timestamps")
	if len(timestamps) == 0 {
		return fmt.Errorf("missing `timestamps` array")
	}
	for i, jv := range timestamps {
		ts, err := jv.Int64()
		if err != nil {
			return fmt.Errorf("cannot unmarshal timestamp at position %d: %w", i, err)
		}
		r.timestamps = append(r.timestamps, ts)
	}
	if len(r.timestamps) != len(r.values) {
		return fmt.Errorf("`timestamps` array size must match `values` array size; got %d; want %d", len(r.timestamps), len(r.values))
	}
	return nil
}

// vmFloat is a value of the "values" array as VictoriaMetrics reads it: a number
// (fastjson also takes bare NaN and Inf), else null or a special string.
func vmFloat(v *fastjson.Value) (float64, error) {
	if v.Type() == fastjson.TypeNumber {
		// strconv, not fastjson's Float64: fastfloat is not correctly rounded
		// for long mantissas with large exponents (-1.0000000580276502e-200
		// reads back one ulp off), and an export must read back bit for bit.
		// ParseFloat also reads the bare NaN and Inf forms fastjson takes.
		if f, err := strconv.ParseFloat(string(v.MarshalTo(nil)), 64); err == nil {
			return f, nil
		}
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return math.NaN(), nil
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		s := string(b)
		neg := strings.HasPrefix(s, "-")
		switch strings.TrimPrefix(s, "-") {
		case "infinity", "Infinity", "Inf", "inf":
			if neg {
				return math.Inf(-1), nil
			}
			return math.Inf(1), nil
		case "null", "Null", "nan", "NaN":
			return math.NaN(), nil
		}
		return 0, fmt.Errorf("unsupported string: %q", strings.TrimPrefix(s, "-"))
	default:
		return 0, fmt.Errorf("unsupported value type: %s; value=%q", v.Type(), v.String())
	}
}
