package schema_test

import (
	"bytes"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

func TestSaltIsFNV1aOfTheHostModuloBuckets(t *testing.T) {
	r := newRand()
	for range 1000 {
		host := randString(r)
		buckets := 1 + r.IntN(schema.MaxSalts)
		h := fnv.New32a()
		h.Write([]byte(host))
		if got, want := schema.Salt(host, buckets), byte(h.Sum32()%uint32(buckets)); got != want {
			t.Fatalf("Salt(%q, %d) = %d, want %d", host, buckets, got, want)
		}
	}
	if got := schema.Salt("web-1", 1); got != 0 {
		t.Errorf("with one bucket the salt is %d, want 0", got)
	}
	if got := schema.Salt("web-1", 0); got != 0 {
		t.Errorf("with zero buckets (taken as one) the salt is %d, want 0", got)
	}
}

func TestBucketStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ts    int64
		width time.Duration
		want  int64
	}{
		{"the epoch starts bucket 0", 0, time.Hour, 0},
		{"a timestamp on a boundary starts its bucket", 7_200_000, time.Hour, 7_200_000},
		{"the last millisecond of a bucket stays in it", 7_199_999, time.Hour, 3_600_000},
		{"a timestamp rounds down", 1_700_000_123_456, time.Hour, 1_699_999_200_000},
		{"a negative timestamp rounds down too", -1, time.Hour, -3_600_000},
		{"the largest timestamp has a bucket", kv.MaxTimestamp, 24 * time.Hour, kv.MaxTimestamp - kv.MaxTimestamp%86_400_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schema.BucketStart(tc.ts, tc.width); got != tc.want {
				t.Errorf("BucketStart(%d, %s) = %d, want %d", tc.ts, tc.width, got, tc.want)
			}
		})
	}
}

func TestDataRowKeyLayout(t *testing.T) {
	k := schema.DataKey{Salt: 7, Host: "h\x00", Metric: "up", SeriesID: 0x0102030405060708, BucketStart: 3_600_000}
	want := []byte("\x07h\x01\x01\x00up\x00\x01\x02\x03\x04\x05\x06\x07\x08")
	want = append(want, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc9, 0x11, 0x7f) // ^0x36ee80, 3600000
	got := schema.DataRowKey(nil, k)
	if !bytes.Equal(got, want) {
		t.Fatalf("DataRowKey = %q, want %q", got, want)
	}
	if n := schema.DataRowKeyLen(k); n != len(want) {
		t.Errorf("DataRowKeyLen = %d, want %d", n, len(want))
	}
	back, err := schema.ParseDataRowKey(got)
	if err != nil || back != k {
		t.Errorf("ParseDataRowKey = %+v, %v; want %+v", back, err, k)
	}
}

// randDataKeys returns keys over few hosts, metrics and IDs, so that many keys share
// a host, a (host, metric) or a series.
func randDataKeys(n, saltCount int) []schema.DataKey {
	r := newRand()
	hosts := []string{"a", "a\x00b", "a\x00", "a\x01", "ab", "\xff", ""}
	metrics := []string{"up", "up\x00", "u", "", "\x01"}
	for range 6 {
		hosts = append(hosts, randString(r))
		metrics = append(metrics, randString(r))
	}
	keys := make([]schema.DataKey, n)
	for i := range keys {
		host := hosts[r.IntN(len(hosts))]
		keys[i] = schema.DataKey{
			Salt:        schema.Salt(host, saltCount),
			Host:        host,
			Metric:      metrics[r.IntN(len(metrics))],
			SeriesID:    []uint64{1, 2, 255, 256, 1 << 56, math.MaxUint64}[r.IntN(6)],
			BucketStart: []int64{0, 3_600_000, 7_200_000, 1 << 40, math.MaxInt64}[r.IntN(5)],
		}
	}
	return keys
}

// compareTuples is the order data rows must have: salt, host, metric, series ID,
// then newest bucket first.
func compareTuples(a, b schema.DataKey) int {
	if c := cmpOrdered(a.Salt, b.Salt); c != 0 {
		return c
	}
	if c := cmpOrdered(a.Host, b.Host); c != 0 {
		return c
	}
	if c := cmpOrdered(a.Metric, b.Metric); c != 0 {
		return c
	}
	if c := cmpOrdered(a.SeriesID, b.SeriesID); c != 0 {
		return c
	}
	return cmpOrdered(b.BucketStart, a.BucketStart)
}

func TestDataRowKeysRoundTripAndSortAsTuples(t *testing.T) {
	keys := randDataKeys(500, 4)
	enc := make([][]byte, len(keys))
	for i, k := range keys {
		enc[i] = schema.DataRowKey(nil, k)
		back, err := schema.ParseDataRowKey(enc[i])
		if err != nil || back != k {
			t.Fatalf("ParseDataRowKey(DataRowKey(%+v)) = %+v, %v", k, back, err)
		}
		id, bs, err := schema.ParseDataRowTail(enc[i])
		if err != nil || id != k.SeriesID || bs != k.BucketStart {
			t.Fatalf("ParseDataRowTail(%q) = %d, %d, %v", enc[i], id, bs, err)
		}
	}
	for i := range keys {
		for j := range keys {
			if got, want := sign(bytes.Compare(enc[i], enc[j])), compareTuples(keys[i], keys[j]); got != want {
				t.Fatalf("keys %+v and %+v: byte order %d, tuple order %d", keys[i], keys[j], got, want)
			}
		}
	}
}

func TestDataRowPrefixesSelectExactlyTheirRows(t *testing.T) {
	keys := randDataKeys(400, 3)
	// The prefix ends of the scan ranges must hold the same rows as the prefixes.
	sorted := make([][]byte, len(keys))
	for i, k := range keys {
		sorted[i] = schema.DataRowKey(nil, k)
	}
	slices.SortFunc(sorted, bytes.Compare)
	for _, k := range keys {
		prefixes := []struct {
			name   string
			prefix []byte
			same   func(o schema.DataKey) bool
		}{
			{"host", schema.HostPrefix(nil, k.Salt, k.Host), func(o schema.DataKey) bool {
				return o.Salt == k.Salt && o.Host == k.Host
			}},
			{"host and metric", schema.HostMetricPrefix(nil, k.Salt, k.Host, k.Metric), func(o schema.DataKey) bool {
				return o.Salt == k.Salt && o.Host == k.Host && o.Metric == k.Metric
			}},
			{"series", schema.SeriesPrefix(nil, k.Salt, k.Host, k.Metric, k.SeriesID), func(o schema.DataKey) bool {
				return o.Salt == k.Salt && o.Host == k.Host && o.Metric == k.Metric && o.SeriesID == k.SeriesID
			}},
		}
		for _, p := range prefixes {
			for _, o := range keys {
				if got := bytes.HasPrefix(schema.DataRowKey(nil, o), p.prefix); got != p.same(o) {
					t.Fatalf("%s prefix of %+v matches %+v: %v", p.name, k, o, got)
				}
			}
			// The rows with the prefix are one contiguous run of the sorted keys.
			stop := kv.PrefixEnd(p.prefix)
			for _, key := range sorted {
				in := bytes.Compare(key, p.prefix) >= 0 && (stop == nil || bytes.Compare(key, stop) < 0)
				if in != bytes.HasPrefix(key, p.prefix) {
					t.Fatalf("%s scan range of %+v and its prefix disagree on %q", p.name, k, key)
				}
			}
		}
	}
}

func TestHostPrefixesOfPrefixHostsAreDisjoint(t *testing.T) {
	a := schema.DataRowKey(nil, schema.DataKey{Host: "a", Metric: "m", SeriesID: 1})
	ab := schema.DataRowKey(nil, schema.DataKey{Host: "a\x00b", Metric: "m", SeriesID: 1})
	for _, c := range []struct {
		name   string
		prefix []byte
		key    []byte
	}{
		{`host "a" against a row of "a\x00b"`, schema.HostPrefix(nil, 0, "a"), ab},
		{`host "a\x00b" against a row of "a"`, schema.HostPrefix(nil, 0, "a\x00b"), a},
		{`series of "a" against a row of "a\x00b"`, schema.SeriesPrefix(nil, 0, "a", "m", 1), ab},
		{`metric "m" of host "a" against a row of "a\x00b"`, schema.HostMetricPrefix(nil, 0, "a", "m"), ab},
	} {
		if bytes.HasPrefix(c.key, c.prefix) {
			t.Errorf("%s: prefix %q matches %q", c.name, c.prefix, c.key)
		}
	}
}

func TestSeriesRowRangeHoldsTheBucketsAskedFor(t *testing.T) {
	const width = time.Hour
	const salt, host, metric, id = 3, "h", "m", 42
	var keys [][]byte
	for b := int64(0); b < 10; b++ {
		keys = append(keys, schema.DataRowKey(nil, schema.DataKey{Salt: salt, Host: host, Metric: metric, SeriesID: id, BucketStart: b * int64(width/time.Millisecond)}))
	}
	// Neighbouring series must stay out.
	keys = append(keys,
		schema.DataRowKey(nil, schema.DataKey{Salt: salt, Host: host, Metric: metric, SeriesID: id + 1}),
		schema.DataRowKey(nil, schema.DataKey{Salt: salt, Host: host, Metric: metric, SeriesID: id - 1, BucketStart: 1 << 40}))
	for _, tc := range []struct {
		name     string
		min, max int64 // in buckets
	}{
		{"one bucket", 4, 4},
		{"a span of buckets", 2, 7},
		{"from the first bucket", 0, 3},
		{"all buckets", 0, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := int64(width / time.Millisecond)
			start, stop := schema.SeriesRowRange(salt, host, metric, id, tc.min*ms, tc.max*ms)
			for _, key := range keys {
				in := bytes.Compare(key, start) >= 0 && bytes.Compare(key, stop) < 0
				k, err := schema.ParseDataRowKey(key)
				if err != nil {
					t.Fatal(err)
				}
				want := k.SeriesID == id && k.BucketStart >= tc.min*ms && k.BucketStart <= tc.max*ms
				if in != want {
					t.Errorf("row of series %d bucket %d in range: %v, want %v", k.SeriesID, k.BucketStart/ms, in, want)
				}
			}
		})
	}
}

func TestParseDataRowKeyRejectsMalformedKeys(t *testing.T) {
	valid := schema.DataRowKey(nil, schema.DataKey{Salt: 1, Host: "h", Metric: "m", SeriesID: 9, BucketStart: 3_600_000})
	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"an empty key", nil},
		{"a key cut in its tail", valid[:len(valid)-1]},
		{"a key with a byte too many", append(slices.Clone(valid), 0)},
		{"a host without terminator", []byte("\x01hhhhhhhhhhhhhhhhhhhhhhhh")},
		{"a bad escape in the host", append([]byte("\x01h\x01\x05\x00m\x00"), make([]byte, 16)...)},
		{"series ID 0", schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 0})},
		{"a negative bucket start", schema.DataRowKey(nil, schema.DataKey{Host: "h", Metric: "m", SeriesID: 1, BucketStart: -1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k, err := schema.ParseDataRowKey(tc.key); !errors.Is(err, schema.ErrMalformed) {
				t.Errorf("ParseDataRowKey(%q) = %+v, %v; want ErrMalformed", tc.key, k, err)
			}
		})
	}
}

func TestDataRowKeyAllocatesNothingGivenCapacity(t *testing.T) {
	k := schema.DataKey{Salt: 5, Host: "web-01.example.com", Metric: "node_cpu_seconds_total", SeriesID: 12345, BucketStart: 1_700_000_000_000}
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() { buf = schema.DataRowKey(buf[:0], k) }); n != 0 {
		t.Errorf("DataRowKey allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = schema.Salt(k.Host, 16) }); n != 0 {
		t.Errorf("Salt allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		buf, _ = schema.AppendRawQualifier(buf[:0], 1234, time.Hour)
		buf = cellenc.AppendRawValue(buf, 1.5)
	}); n != 0 {
		t.Errorf("raw cell encoders allocate %v times per call", n)
	}
	lbls := []schema.Label{{"__name__", "up"}, {"instance", "web-01:9100"}, {"job", "node"}}
	if n := testing.AllocsPerRun(100, func() { buf, _ = schema.SeriesForwardRow(buf[:0], lbls) }); n != 0 {
		t.Errorf("SeriesForwardRow allocates %v times per call for sorted labels", n)
	}
	ik := schema.IndexKey{Day: 19000, Name: "job", Value: "node"}
	if n := testing.AllocsPerRun(100, func() { buf = schema.IndexRowKey(buf[:0], ik) }); n != 0 {
		t.Errorf("IndexRowKey allocates %v times per call", n)
	}
}
