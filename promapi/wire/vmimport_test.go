package wire

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/write"
)

// TestDecodeVMImportReadsVictoriaMetricsValueForms: every spelling
// VictoriaMetrics reads, NaNs skipped and counted, lines numbered with blank
// ones counted, keys in any order.
func TestDecodeVMImportReadsVictoriaMetricsValueForms(t *testing.T) {
	body := "\n" +
		`{"timestamps":[1,2,3,4,5,6,7,8],"metric":{"job":"j","__name__":"a"},"values":[NaN,+Inf,-inf,"Infinity","-Infinity","inf",null,2.5e-3]}` + "\r\n" +
		`{"metric":{"__name__":"b"},"values":["nan","-NaN","null","Null"],"timestamps":[1,2,3,4]}` + "\n" +
		`{"metric":{"__name__":"c"},"values":[-0,1e308,5e-324],"timestamps":[-1,0,9223372036854775807]}`
	d, err := DecodeVMImport([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	inf := math.Inf(1)
	want := []struct {
		labels  string
		line    int
		samples []cellenc.Sample
	}{
		{`{__name__="a", job="j"}`, 2, []cellenc.Sample{{T: 2, V: inf}, {T: 3, V: -inf}, {T: 4, V: inf}, {T: 5, V: -inf}, {T: 6, V: inf}, {T: 8, V: 2.5e-3}}},
		{`{__name__="c"}`, 4, []cellenc.Sample{{T: -1, V: math.Copysign(0, -1)}, {T: 0, V: 1e308}, {T: math.MaxInt64, V: 5e-324}}},
	}
	if d.Lines != 4 || d.SkippedNaN != 6 || len(d.Request.Series) != len(want) {
		t.Fatalf("decoded %d lines, %d NaN skipped, %d series; want 4, 6, 2", d.Lines, d.SkippedNaN, len(d.Request.Series))
	}
	for i, w := range want {
		s := d.Request.Series[i]
		same := len(s.Samples) == len(w.samples)
		for j := range s.Samples {
			same = same && s.Samples[j].T == w.samples[j].T && math.Float64bits(s.Samples[j].V) == math.Float64bits(w.samples[j].V)
		}
		if s.Labels.String() != w.labels || d.Line(i, 0) != w.line || !same {
			t.Errorf("series %d: %s from line %d with %v, want %s from line %d with %v", i, s.Labels, d.Line(i, 0), s.Samples, w.labels, w.line, w.samples)
		}
	}
}

func TestDecodePromTextGroupsSamplesAndNumbersLines(t *testing.T) {
	body := "# TYPE x counter\nx{a=\"1\"} 1 10\n\nx{a=\"2\"} NaN\nx{a=\"1\"} 2 20\ny 3\n"
	d, err := DecodePromText([]byte(body), 99)
	if err != nil {
		t.Fatal(err)
	}
	if d.Lines != 6 || d.SkippedNaN != 1 || len(d.Request.Series) != 2 {
		t.Fatalf("decoded %d lines, %d NaN skipped, %d series; want 6, 1, 2", d.Lines, d.SkippedNaN, len(d.Request.Series))
	}
	x, y := d.Request.Series[0], d.Request.Series[1]
	if x.Labels.String() != `{__name__="x", a="1"}` || !slices.Equal(x.Samples, []cellenc.Sample{{T: 10, V: 1}, {T: 20, V: 2}}) ||
		d.Line(0, 0) != 2 || d.Line(0, 1) != 5 {
		t.Errorf("x: %s %v from lines %d, %d", x.Labels, x.Samples, d.Line(0, 0), d.Line(0, 1))
	}
	if y.Labels.String() != `{__name__="y"}` || !slices.Equal(y.Samples, []cellenc.Sample{{T: 99, V: 3}}) || d.Line(1, -1) != 6 {
		t.Errorf("y: %s %v from line %d", y.Labels, y.Samples, d.Line(1, -1))
	}
}

// checkImport checks what every decoder of an import guarantees: errors wrap
// write.ErrInvalid; series have samples and sorted labels; every sample's line
// is within the body; nothing aliases the body.
func checkImport(t *testing.T, body []byte, d Import, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, write.ErrInvalid) {
			t.Fatalf("error %v does not wrap write.ErrInvalid", err)
		}
		return
	}
	checkDecoded(t, d.Request)
	before := make([]string, len(d.Request.Series))
	for i, s := range d.Request.Series {
		before[i] = s.Labels.String()
		for j := range s.Samples {
			if l := d.Line(i, j); l < 1 || l > d.Lines {
				t.Fatalf("series %d sample %d: line %d of a body of %d lines", i, j, l, d.Lines)
			}
		}
	}
	for i := range body {
		body[i] = 'X'
	}
	for i, s := range d.Request.Series {
		if s.Labels.String() != before[i] {
			t.Fatalf("series %d changed with the body: %s, was %s", i, s.Labels, before[i])
		}
	}
}

var vmSeeds = []string{
	`{"metric":{"__name__":"a"},"values":[1,null,"Inf"],"timestamps":[1,2,3]}`,
	"{\"metric\":{\"__name__\":\"a\",\"b\":\"\\u00fc\"},\"values\":[NaN],\"timestamps\":[1]}\n\n{bad",
	`{"metric":{},"values":[1],"timestamps":[1]}`,
	`{"metric":{"a":1},"values":[1],"timestamps":[1]}`,
	`{"metric":{"__name__":"a"},"values":[1,2],"timestamps":[1]}`,
}

func FuzzDecodeVMImport(f *testing.F) {
	for _, s := range vmSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeVMImport(body)
		checkImport(t, body, d, err)
	})
}

func FuzzDecodePromText(f *testing.F) {
	for _, s := range []string{"# HELP a b\n# TYPE a gauge\na{b=\"c\"} 1 2\na 3\n", "a{b=\"c\" 1\n", "a 1 x\n", "a NaN\n\n\na +Inf -5\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodePromText(body, 1)
		checkImport(t, body, d, err)
	})
}
