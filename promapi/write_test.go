package promapi

// End-to-end tests of the write endpoints: real protobuf messages and snappy
// framing (or JSON) over real HTTP, into the real write pipeline on the embedded
// store and on the real HBase, read back from the store.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// badCase is one request of the bad-input corpus.
type badCase struct {
	name   string
	method string // POST if empty
	path   string // /api/v1/write if empty
	header map[string]string
	body   func(e *env) []byte
	// chunked sends the body without a Content-Length.
	chunked bool
	status  int
	want    func(e *env) string // the exact response body
	// written is how many samples the request must have stored (its valid part);
	// 0: rejected whole, and then no cell of the store may change.
	written int
	// samplesHeader is the 2.0 X-Prometheus-Remote-Write-Samples-Written value
	// expected, "" for none.
	samplesHeader string
}

func text(s string) func(*env) string { return func(*env) string { return s } }

func v1Body(series ...prompb.TimeSeries) func(*env) []byte {
	return func(e *env) []byte {
		b, _ := (&prompb.WriteRequest{Timeseries: series}).Marshal()
		return snappy.Encode(nil, b)
	}
}

// at returns a sample at offset from the env's clock.
func (e *env) at(offset time.Duration, v float64) prompb.Sample {
	return prompb.Sample{Timestamp: e.now.Add(offset).UnixMilli(), Value: v}
}

// v1At is a 1.0 body of one series with raw labels and one sample at offset.
func v1At(offset time.Duration, pairs ...string) func(*env) []byte {
	return func(e *env) []byte {
		return v1Body(prompb.TimeSeries{Labels: v1Labels(pairs...), Samples: []prompb.Sample{e.at(offset, 1)}})(e)
	}
}

func date(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// histogramAt is how a rejection names the histogram sample at ms.
func histogramAt(ms int64) string {
	return fmt.Sprintf("histogram at timestamp %d (%s)", ms, date(ms))
}

func rejected(reason string) string {
	return "invalid write request: 1 samples rejected, 0 written: " + reason + "\n"
}

func putDetails(datapoint, errMsg string, failed, success int) string {
	return fmt.Sprintf(`{"errors":[{"datapoint":%s,"error":%q}],"failed":%d,"success":%d}`+"\n", datapoint, errMsg, failed, success)
}

func putErrorBody(status int, msg string) string {
	return fmt.Sprintf(`{"error":{"code":%d,"message":%q}}`+"\n", status, msg)
}

const putGeneric400 = `{"error":{"code":400,"message":"One or more data points had errors","details":"Please see the TSD logs or append \"details\" to the put request"}}` + "\n"

func putBody(s string) func(*env) []byte { return func(*env) []byte { return []byte(s) } }

// nowSec is the env's clock in Unix seconds, as a datapoint's timestamp.
func (e *env) nowSec() int64 { return e.now.Unix() }

func badCorpus() []badCase {
	long := strings.Repeat("v", 129)
	longName := strings.Repeat("n", 65)
	framed := func(*env) []byte {
		var b bytes.Buffer
		w := snappy.NewBufferedWriter(&b)
		w.Write([]byte("anything"))
		w.Close()
		return b.Bytes()
	}
	putDP := func(e *env, rest string) string {
		return fmt.Sprintf(`{"metric":"sys.cpu","timestamp":%d%s}`, e.nowSec(), rest)
	}
	putShown := func(e *env, value, tags string) string {
		return fmt.Sprintf(`{"metric":"sys.cpu","timestamp":%d,"value":%q,"tags":%s}`, e.nowSec(), value, tags)
	}
	return []badCase{
		// Remote write: framing and negotiation.
		{name: "body that is protobuf but not snappy-compressed", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				b, _ := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: v1Labels("__name__", "cpu"), Samples: []prompb.Sample{e.at(0, 1)}}}}).Marshal()
				return b
			},
			status: 400, want: text("invalid write request: body is not snappy block-compressed: snappy: corrupt input\n")},
		{name: "truncated snappy block", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				b := v1At(0, "__name__", "cpu", "host", "h1")(e)
				return b[:len(b)/2]
			},
			status: 400, want: text("invalid write request: body is not snappy block-compressed: snappy: corrupt input\n")},
		{name: "snappy framed format", header: remoteHeaders(ctV1), body: framed,
			status: 400, want: text("invalid write request: body is in snappy's framed format; remote write requires the block format\n")},
		{name: "snappy garbage that is not protobuf", header: remoteHeaders(ctV1),
			body:   func(*env) []byte { return snappy.Encode(nil, []byte("\xff\xff\xff\xff not a protobuf")) },
			status: 400, want: text("invalid write request: body is not a protobuf prometheus.WriteRequest: proto: illegal wireType 7\n")},
		{name: "2.0 snappy garbage that is not protobuf", header: remoteHeaders(ctV2),
			body:   func(*env) []byte { return snappy.Encode(nil, []byte("\xff\xff\xff\xff not a protobuf")) },
			status: 400, want: text("invalid write request: body is not a protobuf io.prometheus.write.v2.Request: proto: illegal wireType 7\n"),
			samplesHeader: "0"},
		{name: "wrong Content-Type", header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "snappy"},
			body:   v1At(0, "__name__", "cpu"),
			status: 415, want: text("unsupported media type: Content-Type \"application/json\"; remote write takes application/x-protobuf\n")},
		{name: "unsupported proto message", header: map[string]string{"Content-Type": "application/x-protobuf;proto=io.prometheus.write.v3.Request", "Content-Encoding": "snappy"},
			body:   v1At(0, "__name__", "cpu"),
			status: 415, want: text("unsupported media type: proto message \"io.prometheus.write.v3.Request\" is not accepted; only prometheus.WriteRequest, io.prometheus.write.v2.Request\n")},
		{name: "malformed Content-Type", header: map[string]string{"Content-Type": "application/x-protobuf;proto", "Content-Encoding": "snappy"},
			body:   v1At(0, "__name__", "cpu"),
			status: 415, want: text("unsupported media type: Content-Type \"application/x-protobuf;proto\": mime: invalid media parameter\n")},
		{name: "2.0 body sent as 1.0", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(v2In{labels: ls("__name__", "cpu"), samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}}}))
			},
			status: 400, want: text("invalid write request: body is an io.prometheus.write.v2.Request (it has symbols or timeseries in fields 4 and 5), " +
				"but Content-Type says prometheus.WriteRequest; send it with Content-Type application/x-protobuf;proto=io.prometheus.write.v2.Request\n")},
		{name: "1.0 body sent as 2.0", header: remoteHeaders(ctV2), body: v1At(0, "__name__", "cpu"),
			status: 400, want: text("invalid write request: body is a prometheus.WriteRequest (it has fields 1 to 3, which 2.0 reserves), " +
				"but Content-Type says io.prometheus.write.v2.Request\n"), samplesHeader: "0"},
		{name: "wrong Content-Encoding", header: map[string]string{"Content-Type": ctV1, "Content-Encoding": "gzip"},
			body:   v1At(0, "__name__", "cpu"),
			status: 415, want: text("unsupported media type: Content-Encoding \"gzip\" is not accepted; remote write requires snappy\n")},
		{name: "empty body", header: remoteHeaders(ctV1), body: func(*env) []byte { return nil },
			status: 400, want: text("invalid write request: empty request body\n")},
		{name: "Content-Length over the body limit", header: remoteHeaders(ctV1),
			body:   func(*env) []byte { return make([]byte, 70_000) },
			status: 413, want: text("request body too large: Content-Length 70000 bytes is over the limit of 65536 bytes (--write.max-body-bytes)\n")},
		{name: "chunked body over the body limit", header: remoteHeaders(ctV1), chunked: true,
			body:   func(*env) []byte { return make([]byte, 70_000) },
			status: 413, want: text("request body too large: request body is over the limit of 65536 bytes (--write.max-body-bytes)\n")},
		{name: "decoded length over the decompressed limit", header: remoteHeaders(ctV1),
			body:   func(*env) []byte { return snappy.Encode(nil, make([]byte, 300_000)) },
			status: 400, want: text("invalid write request: snappy-decoded body of 300000 bytes is over the limit of 262144 bytes (--write.max-decompressed-bytes)\n")},
		{name: "GET instead of POST", method: http.MethodGet, body: func(*env) []byte { return nil },
			status: 405, want: text("")},

		// Remote write: series and samples the writer rejects.
		{name: "series without __name__", header: remoteHeaders(ctV1), body: v1At(0, "host", "h1"),
			status: 400, want: text(rejected(`metric name (label __name__) is missing in series {host="h1"}`))},
		{name: "empty label name", header: remoteHeaders(ctV1), body: v1At(0, "__name__", "cpu", "", "x"),
			status: 400, want: text(rejected(`label name "" is empty in series {""="x", __name__="cpu"}`))},
		{name: "duplicate label names", header: remoteHeaders(ctV1), body: v1At(0, "__name__", "cpu", "host", "a", "host", "a"),
			status: 400, want: text(rejected(`label name "host" appears more than once in series {__name__="cpu", host="a", host="a"}`))},
		{name: "label value that is not UTF-8", header: remoteHeaders(ctV1), body: v1At(0, "__name__", "cpu", "host", "h\xff"),
			status: 400, want: text(rejected(`value of label "host" is not valid UTF-8 in series {__name__="cpu", host="h\xff"}`))},
		{name: "label name that is not UTF-8", header: remoteHeaders(ctV1), body: v1At(0, "__name__", "cpu", "h\xffst", "a"),
			status: 400, want: text(rejected(`label name "h\xffst" is not valid UTF-8 in series {__name__="cpu", "h\xffst"="a"}`))},
		{name: "label value too long", header: remoteHeaders(ctV1), body: v1At(0, "__name__", "cpu", "host", long),
			status: 400, want: text(rejected(fmt.Sprintf(`value of label "host" is 129 bytes long, over the limit of 128, in series {__name__="cpu", host=%q…}`, long[:128])))},
		{name: "label name too long", header: remoteHeaders(ctV1), body: v1At(0, "__name__", "cpu", longName, "a"),
			status: 400, want: text(rejected(fmt.Sprintf(`label name %q is 65 bytes long, over the limit of 64, in series {__name__="cpu", %s="a"}`, longName, longName)))},
		{name: "too many labels", header: remoteHeaders(ctV1),
			body:   v1At(0, "__name__", "cpu", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6", "g", "7", "h", "8"),
			status: 400, want: text(rejected(`series {__name__="cpu", a="1", b="2", c="3", d="4", e="5", f="6", g="7", h="8"} has 9 labels, over the limit of 8`))},
		{name: "too many series", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				var ss []prompb.TimeSeries
				for i := range 6 {
					ss = append(ss, prompb.TimeSeries{Labels: v1Labels("__name__", "cpu", "i", strconv.Itoa(i)), Samples: []prompb.Sample{e.at(0, 1)}})
				}
				return v1Body(ss...)(e)
			},
			status: 400, want: text("invalid write request: 6 series in the request, over the limit of 5\n")},
		{name: "too many samples", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				var s []prompb.Sample
				for i := range 21 {
					s = append(s, e.at(time.Duration(i-30)*time.Second, 1))
				}
				return v1Body(prompb.TimeSeries{Labels: v1Labels("__name__", "cpu"), Samples: s})(e)
			},
			status: 400, want: text("invalid write request: 21 samples in the request, over the limit of 20\n")},
		{name: "timestamp in the future", header: remoteHeaders(ctV1), body: v1At(11*time.Minute, "__name__", "cpu"),
			status: 400, want: func(e *env) string {
				ts := e.now.Add(11 * time.Minute).UnixMilli()
				return rejected(fmt.Sprintf(`timestamp %d (%s) is more than 10m ahead of the server's clock (%s) in series {__name__="cpu"}`,
					ts, date(ts), date(e.now.UnixMilli())))
			}},
		{name: "timestamp older than the max age", header: remoteHeaders(ctV1), body: v1At(-25*time.Hour, "__name__", "cpu"),
			status: 400, want: func(e *env) string {
				ts := e.now.Add(-25 * time.Hour).UnixMilli()
				return rejected(fmt.Sprintf(`timestamp %d (%s) is older than the max age of 1d (before %s) in series {__name__="cpu"}`,
					ts, date(ts), date(e.now.Add(-24*time.Hour).UnixMilli())))
			}},
		{name: "negative timestamp", header: remoteHeaders(ctV1),
			body:   v1Body(prompb.TimeSeries{Labels: v1Labels("__name__", "cpu"), Samples: []prompb.Sample{{Timestamp: -1, Value: 1}}}),
			status: 400, want: text(rejected(`timestamp -1 is negative (before 1970-01-01T00:00:00Z) in series {__name__="cpu"}`))},
		{name: "1.0 histogram whose spans do not match its buckets", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				return v1Body(prompb.TimeSeries{Labels: v1Labels("__name__", "lat"), Histograms: []prompb.Histogram{prompb.FromIntHistogram(e.now.UnixMilli(),
					&histogram.Histogram{Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1}})}})(e)
			},
			status: 400, want: func(e *env) string {
				return rejected(histogramAt(e.now.UnixMilli()) + `: positive side: spans need 2 buckets, have 1 buckets: histogram spans specify different number of buckets than provided in series {__name__="lat"}`)
			}},
		{name: "1.0 histogram with a negative bucket count", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				return v1Body(prompb.TimeSeries{Labels: v1Labels("__name__", "lat"), Histograms: []prompb.Histogram{prompb.FromIntHistogram(e.now.UnixMilli(),
					&histogram.Histogram{Count: 1, Sum: 1, NegativeSpans: []histogram.Span{{Offset: 0, Length: 2}}, NegativeBuckets: []int64{1, -2}})}})(e)
			},
			status: 400, want: func(e *env) string {
				return rejected(histogramAt(e.now.UnixMilli()) + `: negative side: bucket number 2 has observation count of -1: histogram has a bucket whose observation count is negative in series {__name__="lat"}`)
			}},
		{name: "1.0 float histogram with custom bounds and an exponential schema", header: remoteHeaders(ctV1),
			body: func(e *env) []byte {
				return v1Body(prompb.TimeSeries{Labels: v1Labels("__name__", "lat"), Histograms: []prompb.Histogram{prompb.FromFloatHistogram(e.now.UnixMilli(),
					&histogram.FloatHistogram{Schema: 3, Count: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []float64{1}, CustomValues: []float64{1}})}})(e)
			},
			status: 400, want: func(e *env) string {
				return rejected(histogramAt(e.now.UnixMilli()) + `: histogram with exponential schema must not have custom bounds in series {__name__="lat"}`)
			}},

		// Remote write 2.0: symbols, histograms.
		{name: "2.0 label reference outside the symbols table", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(&writev2.Request{Symbols: []string{"", "__name__", "cpu"},
					Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 7}, Samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}}}}})
			},
			status: 400, want: text("invalid write request: timeseries[0]: labels_refs[1] = 7 is outside the symbols table of 3 symbols\n"), samplesHeader: "0"},
		{name: "2.0 labels_refs of odd length", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(&writev2.Request{Symbols: []string{"", "__name__", "cpu"},
					Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 1}, Samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}}}}})
			},
			status: 400, want: text("invalid write request: timeseries[0]: labels_refs has odd length 3; it must hold name/value pairs\n"), samplesHeader: "0"},
		{name: "2.0 symbols[0] not empty", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(&writev2.Request{Symbols: []string{"__name__", "cpu"},
					Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{0, 1}, Samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}}}}})
			},
			status: 400, want: text("invalid write request: symbols[0] is \"__name__\"; the first element of the symbols table must be the empty string\n"), samplesHeader: "0"},
		{name: "2.0 help reference outside the symbols table", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(&writev2.Request{Symbols: []string{"", "__name__", "cpu"},
					Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}},
						Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: 3}}}})
			},
			status: 400, want: text("invalid write request: timeseries[0]: metadata help_ref = 3 is outside the symbols table of 3 symbols\n"), samplesHeader: "0"},
		{name: "2.0 histogram with a schema out of range, beside a valid series", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(
					v2In{labels: ls("__name__", "lat"), histograms: []writev2.Histogram{writev2.FromIntHistogram(0, e.now.UnixMilli(), &histogram.Histogram{Schema: -5})}},
					v2In{labels: ls("__name__", "cpu", "host", "ok"), samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}}}))
			},
			status: 400, want: func(e *env) string {
				return "invalid write request: 1 samples rejected, 1 written: " + histogramAt(e.now.UnixMilli()) +
					`: histogram has an invalid schema, which must be between -4 and 8 for exponential buckets, or -53 for custom buckets, got schema -5 in series {__name__="lat"}` + "\n"
			},
			written: 1, samplesHeader: "1"},
		{name: "2.0 histogram whose count is smaller than its buckets", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(v2In{labels: ls("__name__", "lat"), histograms: []writev2.Histogram{writev2.FromIntHistogram(0, e.now.UnixMilli(),
					&histogram.Histogram{Count: 1, Sum: 3, ZeroCount: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{2}})}}))
			},
			status: 400, want: func(e *env) string {
				return rejected(histogramAt(e.now.UnixMilli()) + `: 3 observations found in buckets, but the Count field is 1: histogram's observation count should equal the number of observations found in the buckets (in absence of NaN) in series {__name__="lat"}`)
			},
			samplesHeader: "0"},
		{name: "2.0 custom buckets with too few bounds", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(v2In{labels: ls("__name__", "lat"), histograms: []writev2.Histogram{writev2.FromFloatHistogram(0, e.now.UnixMilli(),
					&histogram.FloatHistogram{Schema: -53, Count: 2, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{1, 1}})}}))
			},
			status: 400, want: func(e *env) string {
				return rejected(histogramAt(e.now.UnixMilli()) + `: custom buckets: only 0 custom bounds defined which is insufficient to cover total span length of 2: histogram custom bounds are too few in series {__name__="lat"}`)
			},
			samplesHeader: "0"},
		{name: "2.0 histogram with a NaN zero threshold", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(v2In{labels: ls("__name__", "lat"), histograms: []writev2.Histogram{writev2.FromIntHistogram(0, e.now.UnixMilli(),
					&histogram.Histogram{ZeroThreshold: math.NaN()})}}))
			},
			status: 400, want: func(e *env) string {
				return rejected(histogramAt(e.now.UnixMilli()) + ` has an invalid zero threshold NaN (it must be a number >= 0) in series {__name__="lat"}`)
			},
			samplesHeader: "0"},
		{name: "2.0 histogram at the timestamp of a float sample of its series", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(v2In{labels: ls("__name__", "dup"), samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}},
					histograms: []writev2.Histogram{writev2.FromIntHistogram(0, e.now.UnixMilli(), &histogram.Histogram{})}}))
			},
			status: 400, want: func(e *env) string {
				return "invalid write request: 1 samples rejected, 1 written: " + histogramAt(e.now.UnixMilli()) +
					` duplicates a float sample at the same timestamp in series {__name__="dup"}` + "\n"
			},
			written: 1, samplesHeader: "1"},
		{name: "2.0 exemplar label reference outside the symbols table", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(&writev2.Request{Symbols: []string{"", "__name__", "cpu"},
					Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}},
						Exemplars: []writev2.Exemplar{{LabelsRefs: []uint32{1, 9}, Timestamp: e.now.UnixMilli(), Value: 1}}}}})
			},
			status: 400, want: text("invalid write request: timeseries[0]: exemplars[0]: labels_refs[1] = 9 is outside the symbols table of 3 symbols\n"), samplesHeader: "0"},
		{name: "2.0 partial write: one invalid series of two", header: remoteHeaders(ctV2),
			body: func(e *env) []byte {
				return v2Bytes(v2Request(
					v2In{labels: ls("__name__", "cpu", "host", "good"), samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}, {Timestamp: e.now.UnixMilli() - 1000, Value: 2}}},
					v2In{labels: ls("host", "bad"), samples: []writev2.Sample{{Timestamp: e.now.UnixMilli(), Value: 1}}}))
			},
			status: 400, want: text("invalid write request: 1 samples rejected, 2 written: metric name (label __name__) is missing in series {host=\"bad\"}\n"),
			written: 2, samplesHeader: "2"},

		// OpenTSDB /api/put.
		{name: "put: JSON that does not parse", path: "/api/put", body: putBody(`{"metric":"sys.cpu",`),
			status: 400, want: text(putErrorBody(400, "Unable to parse the given JSON: unexpected end of JSON input"))},
		{name: "put: content that is not JSON", path: "/api/put", body: putBody(`put sys.cpu 1700000000 1 host=a`),
			status: 400, want: text(putErrorBody(400, `Unable to parse the given JSON: content starts with 'p', not with an object or an array`))},
		{name: "put: empty body", path: "/api/put", body: putBody(""),
			status: 400, want: text(putErrorBody(400, "Missing message content"))},
		{name: "put: empty array", path: "/api/put", body: putBody(" [ ] "),
			status: 400, want: text(putErrorBody(400, "No datapoints found in content"))},
		{name: "put: NaN value", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":"NaN","tags":{"host":"a"}`)) },
			status: 400, want: func(e *env) string {
				return putDetails(putShown(e, "NaN", `{"host":"a"}`), fmt.Sprintf("value is NaN or Infinite: NaN for metric=sys.cpu timestamp=%d", e.nowSec()), 1, 0)
			}},
		{name: "put: value that overflows to infinity", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":1e999,"tags":{"host":"a"}`)) },
			status: 400, want: func(e *env) string {
				return putDetails(putShown(e, "1e999", `{"host":"a"}`), fmt.Sprintf("value is NaN or Infinite: 1e999 for metric=sys.cpu timestamp=%d", e.nowSec()), 1, 0)
			}},
		{name: "put: missing tags", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":1`)) },
			status: 400, want: func(e *env) string { return putDetails(putShown(e, "1", `{}`), "Missing tags", 1, 0) }},
		{name: "put: empty tags", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":1,"tags":{}`)) },
			status: 400, want: func(e *env) string { return putDetails(putShown(e, "1", `{}`), "Missing tags", 1, 0) }},
		{name: "put: missing metric", path: "/api/put?details",
			body: func(e *env) []byte {
				return []byte(fmt.Sprintf(`{"timestamp":%d,"value":1,"tags":{"host":"a"}}`, e.nowSec()))
			},
			status: 400, want: func(e *env) string {
				return putDetails(fmt.Sprintf(`{"metric":"","timestamp":%d,"value":"1","tags":{"host":"a"}}`, e.nowSec()), "Metric name was empty", 1, 0)
			}},
		{name: "put: timestamp that is not a number", path: "/api/put?details",
			body:   putBody(`{"metric":"sys.cpu","timestamp":"soon","value":1,"tags":{"host":"a"}}`),
			status: 400, want: text(putDetails(`{"metric":"sys.cpu","timestamp":0,"value":"1","tags":{"host":"a"}}`, "Invalid timestamp", 1, 0))},
		{name: "put: negative timestamp", path: "/api/put?details",
			body:   putBody(`{"metric":"sys.cpu","timestamp":-5,"value":1,"tags":{"host":"a"}}`),
			status: 400, want: text(putDetails(`{"metric":"sys.cpu","timestamp":-5,"value":"1","tags":{"host":"a"}}`, "Invalid timestamp", 1, 0))},
		{name: "put: timestamp neither seconds nor milliseconds", path: "/api/put?details",
			body:   putBody(`{"metric":"sys.cpu","timestamp":5000000000,"value":1,"tags":{"host":"a"}}`),
			status: 400, want: text(putDetails(`{"metric":"sys.cpu","timestamp":5000000000,"value":"1","tags":{"host":"a"}}`,
				"bad timestamp=5000000000: not Unix seconds (below 2^32) nor milliseconds (1000000000000 to 9999999999999)", 1, 0))},
		{name: "put: string value that is not a number", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":"fast","tags":{"host":"a"}`)) },
			status: 400, want: func(e *env) string {
				return putDetails(putShown(e, "fast", `{"host":"a"}`), "Unable to parse value to a number", 1, 0)
			}},
		{name: "put: boolean value", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":true,"tags":{"host":"a"}`)) },
			status: 400, want: func(e *env) string {
				return putDetails(putShown(e, "true", `{"host":"a"}`), "Unable to parse value to a number", 1, 0)
			}},
		{name: "put: missing value", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"tags":{"host":"a"}`)) },
			status: 400, want: func(e *env) string { return putDetails(putShown(e, "", `{"host":"a"}`), "Empty value", 1, 0) }},
		{name: "put: tag value that is not a string", path: "/api/put?details",
			body:   putBody(`{"metric":"sys.cpu","timestamp":1700000000,"value":1,"tags":{"cpu":0}}`),
			status: 400, want: text(putDetails(`{"metric":"sys.cpu","timestamp":1700000000,"value":1,"tags":{"cpu":0}}`,
				"Unable to parse the datapoint: json: cannot unmarshal number into Go struct field putInput.tags of type string", 1, 0))},
		{name: "put: datapoint that is not UTF-8", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":1,"tags":{"host":"h`+"\xff"+`"}`)) },
			status: 400, want: func(e *env) string {
				return putDetails(strconv.Quote(putDP(e, `,"value":1,"tags":{"host":"h`+"\uFFFD"+`"}`)), "datapoint is not valid UTF-8", 1, 0)
			}},
		{name: "put: tag value too long (the writer's limit)", path: "/api/put?details",
			body:   func(e *env) []byte { return []byte(putDP(e, `,"value":1,"tags":{"host":"`+long+`"}`)) },
			status: 400, want: func(e *env) string {
				return putDetails(putShown(e, "1", `{"host":"`+long+`"}`),
					fmt.Sprintf(`value of label "host" is 129 bytes long, over the limit of 128, in series {__name__="sys.cpu", host=%q…}`, long[:128]), 1, 0)
			}},
		{name: "put: timestamp older than the max age, as a summary", path: "/api/put?summary",
			body:   putBody(`{"metric":"sys.cpu","timestamp":1000000000,"value":1,"tags":{"host":"a"}}`),
			status: 400, want: text(`{"failed":1,"success":0}` + "\n")},
		{name: "put: a failed datapoint without details", path: "/api/put",
			body:   putBody(`{"metric":"sys.cpu","timestamp":1700000000,"value":"x","tags":{"host":"a"}}`),
			status: 400, want: text(putGeneric400)},
		{name: "put: array with one bad datapoint writes the others", path: "/api/put?details",
			body: func(e *env) []byte {
				return []byte(fmt.Sprintf(`[{"metric":"sys.cpu","timestamp":%[1]d,"value":1,"tags":{"host":"p1"}},
					{"metric":"sys.cpu","timestamp":%[1]d,"value":"oops","tags":{"host":"p2"}},
					{"metric":"sys.mem","timestamp":%[2]d,"value":"2.5","tags":{"host":"p1"}}]`, e.nowSec(), e.now.UnixMilli()))
			},
			status: 400, want: func(e *env) string {
				return putDetails(fmt.Sprintf(`{"metric":"sys.cpu","timestamp":%d,"value":"oops","tags":{"host":"p2"}}`, e.nowSec()),
					"Unable to parse value to a number", 1, 2)
			},
			written: 2},
		{name: "put: Content-Encoding it does not take", path: "/api/put", header: map[string]string{"Content-Encoding": "br"},
			body:   putBody(`{}`),
			status: 415, want: text(putErrorBody(415, `unsupported media type: Content-Encoding "br" is not accepted; /api/put takes gzip or none`))},
		{name: "put: gzip header on a body that is not gzip", path: "/api/put", header: map[string]string{"Content-Encoding": "gzip"},
			body:   putBody(`{"metric":"sys.cpu"}`),
			status: 400, want: text(putErrorBody(400, "body is not gzip-compressed: gzip: invalid header"))},
		{name: "put: body over the limit", path: "/api/put",
			body:   func(*env) []byte { return bytes.Repeat([]byte(" "), 70_000) },
			status: 413, want: text(putErrorBody(413, "request body too large: Content-Length 70000 bytes is over the limit of 65536 bytes (--write.max-body-bytes)"))},
	}
}

// chunkedReader hides a body's length from net/http, which then sends it chunked.
type chunkedReader struct{ io.Reader }

func TestBadInputCorpus(t *testing.T) {
	corpus := badCorpus()
	if len(corpus) < 30 {
		t.Fatalf("the corpus has %d cases, want at least 30", len(corpus))
	}
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, testLimits, testHTTPLimits)
			for _, tc := range corpus {
				t.Run(tc.name, func(t *testing.T) {
					before := e.cells(t)
					storedBefore := countSamples(e.stored(t))
					method, path := tc.method, tc.path
					if method == "" {
						method = http.MethodPost
					}
					if path == "" {
						path = "/api/v1/write"
					}
					var body io.Reader = bytes.NewReader(tc.body(e))
					if tc.chunked {
						body = chunkedReader{body}
					}
					req, err := http.NewRequest(method, e.srv.URL+path, body)
					if err != nil {
						t.Fatal(err)
					}
					for k, v := range tc.header {
						req.Header.Set(k, v)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if want := tc.want(e); resp.StatusCode != tc.status || string(got) != want {
						t.Errorf("got %d\n%s\nwant %d\n%s", resp.StatusCode, got, tc.status, want)
					}
					if h := resp.Header.Get(headerSamplesWritten); h != tc.samplesHeader {
						t.Errorf("%s = %q, want %q", headerSamplesWritten, h, tc.samplesHeader)
					}
					if tc.written == 0 {
						if after := e.cells(t); after != before {
							t.Errorf("a request rejected whole changed the store: %d cells before, %d after", before, after)
						}
					} else if n := countSamples(e.stored(t)) - storedBefore; n != tc.written {
						t.Errorf("the request stored %d samples, want %d", n, tc.written)
					}
				})
			}
		})
	}
}

func countSamples(m map[string][]cellenc.Sample) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

func TestRemoteWriteV1RoundTrip(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
			t0 := e.now.Add(-time.Hour).UnixMilli()
			want := map[string][]cellenc.Sample{
				`{__name__="up", instance="host1:9100", job="node"}`: {{T: t0, V: 1}, {T: t0 + 15_000, V: 0}, {T: t0 + 30_000, V: math.Float64frombits(0x7ff0000000000002)}},
				`{__name__="temp", host="h\"2", room="a b"}`:         {{T: t0, V: 5e-324}, {T: t0 + 1, V: math.Inf(1)}, {T: t0 + 2, V: math.Inf(-1)}, {T: t0 + 3, V: math.NaN()}, {T: t0 + 4, V: 1e-300}},
			}
			// (-0 is not among them: proto3 encoders, Prometheus' included, do not
			// send a double equal to 0, so -0 arrives as +0.)
			msg := &prompb.WriteRequest{}
			for _, lbls := range []labels.Labels{ls("__name__", "up", "job", "node", "instance", "host1:9100"), ls("__name__", "temp", "host", `h"2`, "room", "a b")} {
				ts := prompb.TimeSeries{Labels: prompb.FromLabels(lbls, nil)}
				for _, s := range want[lbls.String()] {
					ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: s.T, Value: s.V})
				}
				msg.Timeseries = append(msg.Timeseries, ts)
			}
			for range 3 { // a retried request stores one copy
				if r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, msg)); r.status != 204 || r.body != "" {
					t.Fatalf("write: %d %q", r.status, r.body)
				}
			}
			got := e.stored(t)
			if len(got) != len(want) {
				t.Errorf("stored %d series, want %d: %v", len(got), len(want), got)
			}
			for k, w := range want {
				if !sameSamples(got[k], w) {
					t.Errorf("series %s: stored %v, want %v", k, got[k], w)
				}
			}
		})
	}
}

func TestRemoteWriteV2RoundTrip(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
			t0 := e.now.Add(-time.Minute).UnixMilli()
			series := []v2In{
				{labels: ls("__name__", "http_requests_total", "code", "200", "instance", "web-1"),
					samples: []writev2.Sample{{Timestamp: t0, Value: 10}, {Timestamp: t0 + 15_000, Value: 12.5}},
					typ:     writev2.Metadata_METRIC_TYPE_COUNTER, help: "Requests served.", unit: "requests"},
				{labels: ls("__name__", "http_requests_total", "code", "500", "instance", "web-1"),
					samples: []writev2.Sample{{Timestamp: t0, Value: 1, StartTimestamp: t0 - 60_000}},
					typ:     writev2.Metadata_METRIC_TYPE_COUNTER, help: "Requests served.", unit: "requests"},
				{labels: ls("__name__", "queue_depth", "instance", "web-1"),
					samples: []writev2.Sample{{Timestamp: t0, Value: math.Float64frombits(0x7ff0000000000002)}}},
			}
			msg := v2Request(series...)
			if len(msg.Symbols) == 0 || msg.Symbols[0] != "" {
				t.Fatalf("writev2's symbol table: %q", msg.Symbols)
			}
			// The same request twice (stored once): the second time with a
			// Content-Type spelled as RFC 9110 allows.
			for _, ct := range []string{ctV2, "Application/X-Protobuf; Proto=io.prometheus.write.v2.Request"} {
				h := remoteHeaders(ctV2)
				h["Content-Type"] = ct
				r := post(t, e.srv.URL+"/api/v1/write", h, marshalV2(t, msg))
				if r.status != 204 || r.header.Get(headerSamplesWritten) != "4" || r.header.Get(headerHistogramsWritten) != "0" ||
					r.header.Get(headerExemplarsWritten) != "0" {
					t.Fatalf("write with Content-Type %q: %d %q, written headers %q %q %q", ct, r.status, r.body, r.header.Get(headerSamplesWritten),
						r.header.Get(headerHistogramsWritten), r.header.Get(headerExemplarsWritten))
				}
			}
			got := e.stored(t)
			if len(got) != len(series) {
				t.Errorf("stored %d series, want %d", len(got), len(series))
			}
			for _, s := range series {
				var w []cellenc.Sample
				for _, x := range s.samples {
					w = append(w, cellenc.Sample{T: x.Timestamp, V: x.Value})
				}
				if !sameSamples(got[s.labels.String()], w) {
					t.Errorf("series %s: stored %v, want %v", s.labels, got[s.labels.String()], w)
				}
			}
			// The metadata, once per metric.
			ctx := context.Background()
			row, err := e.st.Get(ctx, schema.TableMeta, schema.MetadataRow(nil, "http_requests_total"))
			if err != nil {
				t.Fatal(err)
			}
			md := map[string]string{}
			for _, c := range row.Cells {
				md[string(c.Qualifier)] = string(c.Value)
			}
			if md[schema.QualifierMetadataType] != "counter" || md[schema.QualifierMetadataHelp] != "Requests served." ||
				md[schema.QualifierMetadataUnit] != "requests" {
				t.Errorf("metadata of http_requests_total = %v", md)
			}
		})
	}
}

func TestStoreDownIsRetriableAndAcknowledgesNothing(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, tc := range []struct {
			name    string
			breakIt func(t *testing.T, e *env)
			status  int
			inBody  string
		}{
			{"store closed", func(t *testing.T, e *env) { e.st.Close() }, 503, "store closed"},
			{"data table dropped", func(t *testing.T, e *env) {
				if err := e.st.DropTable(context.Background(), schema.TableData); err != nil {
					t.Fatal(err)
				}
			}, 500, "table not found"},
		} {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
				tc.breakIt(t, e)
				now := e.now.UnixMilli()
				r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV2), marshalV2(t, v2Request(
					v2In{labels: ls("__name__", "up", "host", "a"), samples: []writev2.Sample{{Timestamp: now, Value: 1}}})))
				if r.status != tc.status || !strings.Contains(r.body, tc.inBody) || r.header.Get(headerSamplesWritten) != "0" {
					t.Errorf("2.0: %d %q, Samples-Written %q; want %d naming %q and 0 written", r.status, r.body,
						r.header.Get(headerSamplesWritten), tc.status, tc.inBody)
				}
				r = post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					v1Series(ls("__name__", "up", "host", "b"), prompb.Sample{Timestamp: now, Value: 1})}}))
				if r.status != tc.status || !strings.Contains(r.body, tc.inBody) {
					t.Errorf("1.0: %d %q, want %d naming %q", r.status, r.body, tc.status, tc.inBody)
				}
				r = post(t, e.srv.URL+"/api/put?details", nil, []byte(fmt.Sprintf(`{"metric":"up","timestamp":%d,"value":1,"tags":{"host":"c"}}`, now)))
				if r.status != tc.status || !strings.Contains(r.body, tc.inBody) || !strings.HasPrefix(r.body, fmt.Sprintf(`{"error":{"code":%d,`, tc.status)) {
					t.Errorf("/api/put: %d %q, want %d naming %q", r.status, r.body, tc.status, tc.inBody)
				}
			})
		}
	}
}

func TestOpenTSDBPutRoundTrip(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, b, write.DefaultLimits(), WriteLimits{})
			sec := e.now.Add(-time.Hour).Unix()
			ms := e.now.Add(-30*time.Minute).UnixMilli() + 123
			one := fmt.Sprintf(`{"metric":"sys.cpu.user","timestamp":%d,"value":42.5,"tags":{"host":"web01","cpu":"0"}}`, sec)
			if r := post(t, e.srv.URL+"/api/put", nil, []byte(one)); r.status != 204 || r.body != "" {
				t.Fatalf("one datapoint: %d %q", r.status, r.body)
			}
			many := fmt.Sprintf(`[
				{"metric":"sys.cpu.user","timestamp":%[1]d,"value":"43","tags":{"host":"web01","cpu":"0"}},
				{"metric":"sys.cpu.user","timestamp":"%[2]d","value":-1.5e-3,"tags":{"host":"web02","cpu":"0"}},
				{"metric":"sys.mem.free","timestamp":%[2]d,"value":9007199254740993,"tags":{"host":"web01"}},
				{"metric":"sys.temp","timestamp":%[2]d,"value":-0.0,"tags":{"host":"web03"}}]`, sec+60, ms)
			if r := post(t, e.srv.URL+"/api/put?summary", map[string]string{"Content-Encoding": "gzip"}, gzipped(t, many)); r.status != 200 ||
				r.body != `{"failed":0,"success":4}`+"\n" {
				t.Fatalf("gzip array with ?summary: %d %q", r.status, r.body)
			}
			if r := post(t, e.srv.URL+"/api/put?details", nil, []byte(one)); r.status != 200 ||
				r.body != `{"errors":[],"failed":0,"success":1}`+"\n" {
				t.Fatalf("again with ?details: %d %q", r.status, r.body)
			}
			want := map[string][]cellenc.Sample{
				`{__name__="sys.cpu.user", cpu="0", host="web01"}`: {{T: sec * 1000, V: 42.5}, {T: (sec + 60) * 1000, V: 43}},
				`{__name__="sys.cpu.user", cpu="0", host="web02"}`: {{T: ms, V: -1.5e-3}},
				`{__name__="sys.mem.free", host="web01"}`:          {{T: ms, V: 9007199254740992}}, // 2^53+1 rounds to even
				`{__name__="sys.temp", host="web03"}`:              {{T: ms, V: math.Copysign(0, -1)}},
			}
			got := e.stored(t)
			if len(got) != len(want) {
				t.Errorf("stored %d series, want %d: %v", len(got), len(want), got)
			}
			for k, w := range want {
				if !sameSamples(got[k], w) {
					t.Errorf("series %s: stored %v, want %v", k, got[k], w)
				}
			}
		})
	}
}

// v2Bytes is a 2.0 body, for corpus entries (which have no *testing.T).
func v2Bytes(req *writev2.Request) []byte {
	b, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, b)
}

// recordHandler keeps the records logged.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordHandler) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.records
	h.records = nil
	return r
}

func TestOneLogLinePerRejectedRequest(t *testing.T) {
	b := schematest.Backends()[0] // the embedded store: this is about logging
	rec := &recordHandler{}
	e := newEnvLogging(t, b.Store(t), b.Settings, testLimits, testHTTPLimits, slog.New(rec))
	rec.take() // whatever opening logged

	var bad []prompb.TimeSeries
	for i := range 5 {
		bad = append(bad, prompb.TimeSeries{Labels: v1Labels("host", strconv.Itoa(i)),
			Samples: []prompb.Sample{e.at(-time.Second, 1), e.at(0, 2)}})
	}
	if r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), v1Body(bad...)(e)); r.status != 400 {
		t.Fatalf("5 series without a name: %d %q", r.status, r.body)
	}
	if r := post(t, e.srv.URL+"/api/put", nil, []byte(`[{"metric":"m","timestamp":1,"value":"x","tags":{"a":"b"}},{"metric":"m"}]`)); r.status != 400 {
		t.Fatalf("two bad datapoints: %d %q", r.status, r.body)
	}
	e.st.Close()
	if r := post(t, e.srv.URL+"/api/v1/write", remoteHeaders(ctV1), v1At(0, "__name__", "up")(e)); r.status != 503 {
		t.Fatalf("store closed: %d %q", r.status, r.body)
	}
	got := rec.take()
	if len(got) != 3 {
		for _, r := range got {
			t.Logf("%s %s", r.Level, r.Message)
		}
		t.Fatalf("logged %d lines for 3 failed requests (10 bad samples among them), want 3", len(got))
	}
	for i, want := range []slog.Level{slog.LevelWarn, slog.LevelWarn, slog.LevelError} {
		if got[i].Level != want {
			t.Errorf("line %d (%s) at %s, want %s", i, got[i].Message, got[i].Level, want)
		}
	}
}

// TestOversizedBodyGetsTheAnswerNotAReset: a sender that writes a whole body
// far over --write.max-body-bytes (8 MiB, more than loopback's socket buffers
// hold) reads the 413, on every write endpoint: the server discards the body
// before closing (closeConnection), where closing on the unread bytes would
// reset the connection under the sender's write.
func TestOversizedBodyGetsTheAnswerNotAReset(t *testing.T) {
	e := newEnv(t, schematest.Backends()[0], testLimits, testHTTPLimits)
	body := make([]byte, 8<<20)
	for _, tc := range []struct {
		path   string
		header map[string]string
		want   string
	}{
		{"/api/v1/write", remoteHeaders(ctV1), "request body too large: Content-Length 8388608 bytes is over the limit of 65536 bytes (--write.max-body-bytes)\n"},
		{"/api/v1/import", nil, "request body too large: Content-Length 8388608 bytes is over the limit of 65536 bytes (--write.max-body-bytes)\n"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp := post(t, e.srv.URL+tc.path, tc.header, body)
			if resp.status != http.StatusRequestEntityTooLarge || resp.body != tc.want {
				t.Errorf("got %d %q, want 413 %q", resp.status, resp.body, tc.want)
			}
		})
	}
}
