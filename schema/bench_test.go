package schema_test

import (
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// The write path builds a row key, a qualifier and a value per sample; these must
// stay allocation-free given a buffer.

var benchKey = schema.DataKey{
	Host:        "web-01.eu-west-1.example.com",
	Metric:      "node_cpu_seconds_total",
	SeriesID:    123_456_789,
	BucketStart: 1_699_999_200_000,
}

func BenchmarkDataRowKey(b *testing.B) {
	buf := make([]byte, 0, 256)
	k := benchKey
	k.Salt = schema.Salt(k.Host, schema.DefaultSaltsHBase)
	b.ReportAllocs()
	for b.Loop() {
		buf = schema.DataRowKey(buf[:0], k)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkSaltAndDataRowKey is the whole cost of a row key when the salt is not
// cached: hashing the host, then encoding.
func BenchmarkSaltAndDataRowKey(b *testing.B) {
	buf := make([]byte, 0, 256)
	k := benchKey
	b.ReportAllocs()
	for b.Loop() {
		k.Salt = schema.Salt(k.Host, schema.DefaultSaltsHBase)
		buf = schema.DataRowKey(buf[:0], k)
	}
}

func BenchmarkRawSampleCell(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	ts := int64(1_700_000_123_456)
	for b.Loop() {
		bs := schema.BucketStart(ts, time.Hour)
		buf, _ = schema.AppendRawQualifier(buf[:0], ts-bs, time.Hour)
		buf = cellenc.AppendRawValue(buf, 0.25)
	}
}

func BenchmarkParseDataRowKey(b *testing.B) {
	key := schema.DataRowKey(nil, benchKey)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.ParseDataRowKey(key); err != nil {
			b.Fatal(err)
		}
	}
}

var benchLabels = []schema.Label{
	{"__name__", "node_cpu_seconds_total"}, {"cpu", "7"}, {"instance", "web-01.eu-west-1.example.com:9100"},
	{"job", "node"}, {"mode", "idle"},
}

func BenchmarkSeriesForwardRow(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = schema.SeriesForwardRow(buf[:0], benchLabels)
	}
}

func BenchmarkDecodeLabels(b *testing.B) {
	enc, err := schema.AppendLabels(nil, benchLabels)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.DecodeLabels(enc); err != nil {
			b.Fatal(err)
		}
	}
}
