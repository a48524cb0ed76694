package cellenc_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

func TestExemplarValueRoundTripsBitExact(t *testing.T) {
	nanPayload := math.Float64frombits(0x7ff8000000000abc)
	for _, tc := range []struct {
		name string
		e    exemplar.Exemplar
		want []byte
	}{
		{
			name: "a trace exemplar with a timestamp",
			e:    exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "ab"), Value: 1.5, Ts: 0x0102030405060708, HasTs: true},
			want: []byte{0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 1, 8, 't', 'r', 'a', 'c', 'e', '_', 'i', 'd', 2, 'a', 'b'},
		},
		{
			name: "no labels and no timestamp of its own",
			e:    exemplar.Exemplar{Labels: labels.EmptyLabels(), Value: math.Copysign(0, -1), Ts: 7},
			want: []byte{0x00, 0, 0, 0, 0, 0, 0, 0, 7, 0x80, 0, 0, 0, 0, 0, 0, 0, 0},
		},
		{
			name: "a NaN payload and two labels",
			e:    exemplar.Exemplar{Labels: labels.FromStrings("span_id", "s", "trace_id", "t"), Value: nanPayload, Ts: 1, HasTs: true},
		},
		{
			name: "a label value of 200 bytes (two-byte length)",
			e:    exemplar.Exemplar{Labels: labels.FromStrings("x", string(bytes.Repeat([]byte{'v'}, 200))), Value: math.Inf(-1), Ts: 9, HasTs: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := cellenc.AppendExemplarValue([]byte("prefix"), tc.e)
			if string(b[:6]) != "prefix" {
				t.Fatalf("the prefix was overwritten: %q", b)
			}
			b = b[6:]
			if tc.want != nil && !bytes.Equal(b, tc.want) {
				t.Errorf("value % x, want % x", b, tc.want)
			}
			if n := cellenc.ExemplarValueLen(tc.e); n != len(b) {
				t.Errorf("ExemplarValueLen = %d, encoded %d bytes", n, len(b))
			}
			got, err := cellenc.DecodeExemplarValue(b)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(got.Value) != math.Float64bits(tc.e.Value) || got.Ts != tc.e.Ts || got.HasTs != tc.e.HasTs || !labels.Equal(got.Labels, tc.e.Labels) {
				t.Errorf("decoded %+v (bits %x), want %+v (bits %x)", got, math.Float64bits(got.Value), tc.e, math.Float64bits(tc.e.Value))
			}
		})
	}
}

func TestDecodeExemplarValueRejectsMalformed(t *testing.T) {
	good := cellenc.AppendExemplarValue(nil, exemplar.Exemplar{Labels: labels.FromStrings("a", "1", "b", "2"), Value: 1, Ts: 5, HasTs: true})
	unsorted := append(append([]byte{}, good[:17]...), 2, 1, 'b', 1, '2', 1, 'a', 1, '1')
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"empty", nil, "cellenc: exemplar value of 0 bytes is too short: malformed"},
		{"only the fixed part", good[:17], "cellenc: exemplar value of 17 bytes is too short: malformed"},
		{"unknown flag bits", append([]byte{0x03}, good[1:]...), "cellenc: exemplar value flags 0x03 has unknown bits: malformed"},
		{"a label cut short", good[:len(good)-1], "cellenc: exemplar value label 1 value: length overruns the value: malformed"},
		{"a trailing byte", append(append([]byte{}, good...), 0), "cellenc: exemplar value has 1 trailing bytes: malformed"},
		{"unsorted labels", unsorted, `cellenc: exemplar value label 1 name "a" is empty, unsorted or repeated: malformed`},
		{"a label count beyond the value", append(append([]byte{}, good[:17]...), 0x7f), "cellenc: exemplar value label count: malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cellenc.DecodeExemplarValue(tc.value)
			if err == nil || err.Error() != tc.want || !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("error %v, want %q wrapping ErrMalformed", err, tc.want)
			}
		})
	}
}
