package schema_test

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Every decoder has a fuzz target with the same two properties: it never panics, and
// what it accepts re-encodes to exactly the bytes it was given (so no two encodings
// decode to the same value, and keys built from decoded values find the same rows).
// Seeds are in testdata/fuzz/<FuzzName>/ as well as below; run one with
//
//	go test -run='^$' -fuzz='^FuzzParseDataRowKey$' -fuzztime=30s ./schema/

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"", "\x00", "abc\x00rest", "a\x01\x01b\x01\x02\x00", "\x01\x03\x00", "\x01", "\xff\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := schema.Unescape(b)
		if err != nil {
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("Unescape(%q) consumed %d bytes", b, n)
		}
		if enc := schema.AppendEscaped(nil, s); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("Unescape(%q) = %q, which re-encodes as %q", b[:n], s, enc)
		}
	})
}

func FuzzParseDataRowKey(f *testing.F) {
	f.Add(schema.DataRowKey(nil, schema.DataKey{Salt: 3, Host: "web-1", Metric: "up", SeriesID: 1, BucketStart: 1_699_999_200_000}))
	f.Add(schema.DataRowKey(nil, schema.DataKey{Host: "a\x00b", Metric: "\x01", SeriesID: math.MaxUint64, BucketStart: math.MaxInt64}))
	f.Add(schema.DataRowKey(nil, schema.DataKey{SeriesID: 1}))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := schema.ParseDataRowKey(b)
		if err != nil {
			return
		}
		if enc := schema.DataRowKey(nil, k); !bytes.Equal(enc, b) {
			t.Fatalf("ParseDataRowKey(%q) = %+v, which re-encodes as %q", b, k, enc)
		}
		if n := schema.DataRowKeyLen(k); n != len(b) {
			t.Fatalf("DataRowKeyLen(%+v) = %d, key has %d bytes", k, n, len(b))
		}
		id, bs, err := schema.ParseDataRowTail(b)
		if err != nil || id != k.SeriesID || bs != k.BucketStart {
			t.Fatalf("ParseDataRowTail(%q) = %d, %d, %v; ParseDataRowKey gave %+v", b, id, bs, err, k)
		}
		if !bytes.HasPrefix(b, schema.SeriesPrefix(nil, k.Salt, k.Host, k.Metric, k.SeriesID)) {
			t.Fatalf("key %q lacks its series prefix", b)
		}
	})
}

func FuzzParseIndexKey(f *testing.F) {
	f.Add(schema.IndexRowKey(nil, schema.IndexKey{Day: 19675, Name: "job", Value: "node"}))
	f.Add(schema.IndexRowKey(nil, schema.IndexKey{Day: math.MaxUint32, Name: "\x00", Value: "\x01\xff"}))
	f.Add([]byte("\x00\x00\x00\x01job\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := schema.ParseIndexRowKey(b)
		if err != nil {
			return
		}
		if enc := schema.IndexRowKey(nil, k); !bytes.Equal(enc, b) {
			t.Fatalf("ParseIndexRowKey(%q) = %+v, which re-encodes as %q", b, k, enc)
		}
		if !bytes.HasPrefix(b, schema.IndexLabelPrefix(nil, k.Day, k.Name)) {
			t.Fatalf("key %q lacks its label prefix", b)
		}
	})
}

func FuzzDecodeLabels(f *testing.F) {
	f.Add([]byte("__name__\x00up\x00instance\x00a\x01\x01b\x00job\x00node\x00"))
	f.Add([]byte("a\x00b\x00"))
	f.Add([]byte("b\x001\x00a\x002\x00"))
	f.Add([]byte("\x01\x02\x00\x01\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lbls, err := schema.DecodeLabels(b)
		if err != nil {
			return
		}
		enc, err := schema.AppendLabels(nil, lbls)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("DecodeLabels(%q) = %q, which re-encodes as %q, %v", b, lbls, enc, err)
		}
		if n := schema.LabelsLen(lbls); n != len(b) {
			t.Fatalf("LabelsLen(%q) = %d, encoding has %d bytes", lbls, n, len(b))
		}
		row := append([]byte{schema.SeriesForwardKind}, b...)
		back, err := schema.ParseSeriesForwardRow(row)
		if err != nil || !slices.Equal(back, lbls) {
			t.Fatalf("ParseSeriesForwardRow(%q) = %q, %v; want %q", row, back, err, lbls)
		}
	})
}

func FuzzDecodeRawQualifier(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, uint32(3600))
	f.Add([]byte{0, 0x36, 0xee, 0x7f}, uint32(3600))
	f.Add([]byte{0, 0x36, 0xee, 0x80}, uint32(3600))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(86400))
	f.Fuzz(func(t *testing.T, q []byte, widthSeconds uint32) {
		width := time.Duration(widthSeconds) * time.Second
		off, err := schema.DecodeRawQualifier(q, width)
		if err != nil {
			return
		}
		if off < 0 || off >= width.Milliseconds() {
			t.Fatalf("DecodeRawQualifier(%x, %s) = offset %d outside the bucket", q, width, off)
		}
		enc, err := schema.AppendRawQualifier(nil, off, width)
		if err != nil || !bytes.Equal(enc, q) {
			t.Fatalf("DecodeRawQualifier(%x, %s) = %d, which re-encodes as %x, %v", q, width, off, enc, err)
		}
	})
}

func FuzzDecodeSettings(f *testing.F) {
	f.Add([]byte("1"), []byte("3600000"), []byte("16"), []byte("host,instance"))
	f.Add([]byte("1"), []byte("60000"), []byte("1"), []byte("node"))
	f.Add([]byte("2"), []byte(""), []byte(""), []byte(""))
	f.Add([]byte("01"), []byte("3600000"), []byte("+16"), []byte("host,"))
	f.Add([]byte("1"), []byte("3600000"), []byte("16"), []byte("1host"))
	f.Fuzz(func(t *testing.T, formatVersion, bucketWidth, saltCount, hostLabels []byte) {
		cells := []kv.Cell{
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierFormatVersion), Value: formatVersion},
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierBucketWidth), Value: bucketWidth},
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierSalts), Value: saltCount},
			{Family: schema.FamilyMeta, Qualifier: []byte(schema.QualifierHostLabels), Value: hostLabels},
		}
		s, err := schema.DecodeSettings(cells)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("DecodeSettings accepted invalid settings %+v: %v", s, err)
		}
		for i, c := range schema.SettingsCells(s) {
			if string(c.Qualifier) != string(cells[i].Qualifier) || !bytes.Equal(c.Value, cells[i].Value) {
				t.Fatalf("DecodeSettings(%q, %q, %q, %q) = %+v, which re-encodes %s as %q",
					formatVersion, bucketWidth, saltCount, hostLabels, s, c.Qualifier, c.Value)
			}
		}
	})
}

func FuzzParseSettings(f *testing.F) {
	f.Add("format_version=1 bucket_width_ms=3600000 salt_buckets=16 host_labels=host,instance")
	f.Add("format_version=1 bucket_width_ms=60000 salt_buckets=1 host_labels=node ")
	f.Add("format_version=1 bucket_width_ms=60000 salt_buckets=1 host_labels=a=b")
	f.Add("format_version=2")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := schema.ParseSettings(text)
		if err != nil {
			return
		}
		if got := s.String(); got != text {
			t.Fatalf("ParseSettings(%q) = %+v, which re-encodes as %q", text, s, got)
		}
	})
}

func FuzzParseSeriesReverseRow(f *testing.F) {
	f.Add(schema.SeriesReverseRow(nil, 1))
	f.Add(schema.SeriesReverseRow(nil, 0))
	f.Add([]byte(schema.SeriesCounterRow))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := schema.ParseSeriesReverseRow(b)
		if err != nil {
			return
		}
		if enc := schema.SeriesReverseRow(nil, id); !bytes.Equal(enc, b) || id == 0 {
			t.Fatalf("ParseSeriesReverseRow(%x) = %d, which re-encodes as %x", b, id, enc)
		}
	})
}
