// Package wire decodes the bodies of hbtsdb's write endpoints: bytes in,
// write.Request out. It owns the wire formats and nothing around them:
//
//   - DecodeV1: Prometheus remote write 1.0, prometheus.WriteRequest
//     (https://prometheus.io/docs/specs/remote_write_spec/), decoded by hand
//     straight into a write.Request. prompb's generated Unmarshal allocates a
//     string per label name and value, about ten allocations per sample;
//     decodeV1 takes one per series and accepts exactly what the generated code
//     accepts, which FuzzDecodeV1 checks against it.
//   - DecodeV2: remote write 2.0, io.prometheus.write.v2.Request
//     (https://prometheus.io/docs/specs/remote_write_spec_2_0/), whose strings are
//     interned in the symbols table, through the generated code, then checked
//     against the spec's Symbols rules and converted.
//   - DecodePut: OpenTSDB's POST /api/put JSON
//     (http://opentsdb.net/docs/build/html/api_http/put.html), each datapoint
//     checked with OpenTSDB 2.4's rules and error texts. A hand-written
//     scanner validates the body as encoding/json does and decodes the
//     datapoints clients send without reflection or a map per datapoint;
//     the rare others it hands to encoding/json one at a time, and
//     FuzzDecodePutMatchesOracle holds the whole to the encoding/json decoder
//     it replaced.
//   - DecodeVMImport: VictoriaMetrics' /api/v1/import JSON lines, parsed as
//     VictoriaMetrics parses them (valyala/fastjson; numbers correctly rounded);
//     DecodePromText: Prometheus' text format for /api/v1/import/prometheus,
//     through Prometheus' own textparse, a line at a time. Both refuse a body
//     whole at its first bad line, naming it, and skip NaN values as
//     VictoriaMetrics does; Import.Line maps a decoded sample back to its line,
//     so that what the writer would reject can be reported by line.
//
// Bodies arrive uncompressed: snappy and gzip, Content-Type negotiation, body
// limits, status codes and responses are promapi's (its write handlers), as
// Prometheus keeps storage/remote/codec.go apart from write_handler.go. This
// package never imports net/http or a store, and never writes: of package
// write it uses the types (Request, Series, Rejection) and ErrInvalid only.
//
// What the decoders leave to the writer: a decoded series may lack __name__,
// repeat a label name, hold invalid UTF-8 (remote write) or break a limit. The
// writer rejects such a series alone (write.Result.Rejected), so that the rest
// of the request is written, as both remote-write specs allow ("Receivers MAY
// write valid samples within a write request that also contains some invalid
// ... samples"). Native histograms and exemplars are decoded but not
// validated either: the histograms are converted by Prometheus' own prompb and
// writev2 converters (ToIntHistogram, ToFloatHistogram, ToExemplar), so that
// what the writer validates and stores is exactly what Prometheus' receiver
// would append; validation (histogram.Validate, schemas, exemplar label
// lengths) is the writer's. What every decoder guarantees of a request it
// returns: each series has at least one float sample, histogram sample or
// exemplar, and its labels (and its exemplars' labels) are sorted by name;
// the request does not alias the body, which the caller may reuse.
//
// Errors: a body that cannot be used at all (malformed protobuf or JSON, a 2.0
// message whose symbol references are broken, a 1.0 body sent as 2.0 or the
// reverse, an /api/put body without datapoints) is an error wrapping
// write.ErrInvalid, whose text is meant for the client (promapi sends it as
// is). Invalid datapoints of an /api/put body are not errors: each is reported
// in its PutDatapoint, as OpenTSDB answers them one by one. /api/put carries
// float samples only.
//
// Every decoder is fuzzed (FuzzDecodeV1, FuzzDecodeV2, FuzzDecodePut and
// FuzzDecodePutMatchesOracle, FuzzDecodeVMImport, FuzzDecodePromText): it must
// not panic, and what it accepts must keep the guarantees above.
package wire
