// Package promapi is hbtsdb's HTTP surface: the operational endpoints (/-/healthy,
// /-/ready, /metrics), the write endpoints (Prometheus remote write on POST
// /api/v1/write, OpenTSDB's POST /api/put), remote read, the Prometheus HTTP
// API, the native JSON API (/api/v1/last, /api/v1/metadata) and the query page
// at / (web/ui). It decodes requests, hands them to the layers below (the
// DB a Provider hands out for the request: a *db.DB in tsdb serve) and
// answers with their results; it holds no storage logic and never imports a
// storage backend.
//
// # Where things live
//
//   - promapi/wire: the write bodies' wire formats, bytes in and write.Request
//     out, with no HTTP and no store (wire.DecodeV1, wire.DecodeV2,
//     wire.DecodePut); fuzzed there. Its errors wrap write.ErrInvalid.
//   - Write endpoints, HTTP side: remotewrite.go (negotiation, the snappy
//     middleware, client_golang's handler, partial-write answers), put.go
//     (/api/put's responses), body.go (reading and decompressing bodies within
//     the limits), limits.go (WriteLimits, the concurrency bound),
//     writehandler.go.
//   - Read endpoints: readhandler.go, last.go, metadata.go, respond.go (ours, in
//     Prometheus' envelope), queryapi.go (Prometheus' web/api/v1), remoteread.go
//     (Prometheus' storage/remote read handler), read_bounds.go (the read
//     side's bounds), resolution.go (rollup resolution of PromQL queries),
//     exemplars.go (query_exemplars from the exemplar table), memory_guard.go
//     (the heap guard over every query and remote read), readstats.go (the
//     cells a query read, in its stats and in /metrics).
//   - Admin endpoints: admin.go (delete_series and clean_tombstones, served
//     only with Options.Admin; bad parameters bad_data 400, the store's
//     errors through statusOf).
//   - Around them: router.go (NewRouter: the routes, recoverPanics), store.go
//     (DB, Provider), joblabel.go (each request's pprof
//     job label), metrics.go and ingest_stats.go (the HTTP surface's metrics
//     and the ingest counts tsdb serve logs), errors.go (statusOf).
//
// # Errors and status codes
//
// There is no single mapping for every endpoint; there is one per kind:
//   - Write endpoints (/api/v1/write, /api/put): statusOf (errors.go) is the one
//     place where an error becomes a status code: every failure of those
//     requests, from the concurrency bound and the body limits to the decoders
//     and the writer, goes through it (failRemote and Store in remotewrite.go,
//     failPut in put.go; client_golang's handler only copies the status Store
//     sets). Only a method other than POST (405, the router) and a panic (500,
//     recoverPanics) are answered elsewhere. It maps promapi's own sentinel
//     errors (errors.go) and those of the layers below: errInvalidBody (a
//     body that cannot be read or decoded), write.ErrInvalid (a request the
//     writer refuses whole) and kv.ErrInvalidArgument 400,
//     errUnsupportedMedia 415, errContentTooLarge 413, errOverloaded 429,
//     context.Canceled 499, errStoreUnavailable (no store yet),
//     kv.ErrUnavailable, kv.ErrClosed and context.DeadlineExceeded 503,
//     anything else 500.
//   - Our read endpoints (/api/v1/last, /api/v1/metadata): the store's errors
//     become a Prometheus errorType in readHandler.fail (readhandler.go:
//     canceled 499, timeout 503, unavailable 503, internal 500), and bad
//     parameters are answered bad_data (400) where they are parsed (last.go,
//     metadata.go); respond.go holds the errorType-to-status table.
//   - The Prometheus API (query, series, labels, ...): Prometheus' web/api/v1
//     maps its own errors; ours only answers unavailable (503) before the store
//     is open (registerPrometheusAPI's ready wrapper, queryapi.go).
//   - Remote read: Prometheus' read handler answers its own errors; ours answers
//     503 in plain text before the store is open (remoteRead, remoteread.go).
//
// # Remote write (POST /api/v1/write)
//
// Both protocols are served on one path: remote write 1.0
// (https://prometheus.io/docs/specs/remote_write_spec/, prometheus.WriteRequest)
// and 2.0 (https://prometheus.io/docs/specs/remote_write_spec_2_0/,
// io.prometheus.write.v2.Request, chosen by Content-Type's proto parameter).
// Content negotiation and the 2.0 X-Prometheus-Remote-Write-*-Written response
// headers come from client_golang's remote.NewWriteHandler; the snappy decoding
// middleware and the DB behind it are ours.
//
// Prometheus' own storage/remote.NewWriteHandler, which db.DB could plug into, is
// not used, because its semantics do not fit what hbtsdb promises:
//   - on 1.0 it drops series with invalid labels (no __name__, duplicate names,
//     invalid UTF-8) and still answers 204, which the 1.0 spec forbids ("Receivers
//     MUST return a HTTP 400 status code for write requests that contain any
//     invalid samples") and which loses data silently;
//   - its limits are constants: samples more than 10 minutes ahead are rejected,
//     and the decoded body may be at most 32 MiB; ours are flags, and samples older
//     than the raw retention are rejected too (they would expire at once);
//   - it cannot say which sample of a partial write failed and why the way the
//     write pipeline's Result does.
//
// Decisions, each following the spec line quoted:
//   - Status codes. All written: 204 ("the status code SHOULD be 204 HTTP No
//     Content", 2.0 Response). Any invalid series or sample: 400 with a
//     human-readable message naming how many samples were rejected and why, the
//     valid rest written ("Receivers MAY write valid samples within a write request
//     that also contains some invalid or otherwise unwritten samples ... the
//     Receiver MUST return non-2xx status code", 2.0 Partial Write; "MUST return a
//     400 HTTP Bad Request status code for write requests that contain any invalid
//     samples", 2.0 Invalid Samples). Unsupported Content-Type, proto message or
//     Content-Encoding: 415 (2.0 Unsupported Request Content). A store that fails:
//     503 when it is unavailable or closed, 500 otherwise, and nothing is
//     acknowledged ("Senders MUST retry write requests on 5xx HTTP", 2.0 Retries
//     & Backoff); a retried request rewrites the same cells, so it is idempotent,
//     as "Retries on Partial Writes" requires. Too many requests in flight: 429
//     with Retry-After, before the body is read ("Receivers MAY return a 429 ...
//     MAY return the Retry-After header").
//   - 4xx other than 429 means "do not retry" ("Senders MUST NOT retry on a 4xx
//     HTTP status codes (other than 429), which MUST be used by Receivers to
//     indicate that the write operation will never be able to succeed"), so every
//     4xx here is something the sender must fix: malformed body, invalid data,
//     limits.
//   - Native histograms (integer and float, exponential schemas and custom
//     buckets) are stored, converted by Prometheus' own prompb/writev2
//     converters and validated as Prometheus' receiver and TSDB do (write's
//     validate.go): a histogram that fails is a rejected sample (400 naming the
//     series and the problem, the rest written, as for floats); schemas 9..52
//     are stored at 8, as Prometheus' receiver reduces them. On 2.0 the Written
//     headers give the true counts of float samples, histogram samples and
//     exemplars stored ("Receivers MUST send a dedicated HTTP
//     X-Prometheus-Remote-Write-*-Written response header with the precise
//     number of successfully written elements", 2.0 Required Written Response
//     Headers), on a 400 as on a 204. A 2.0 TimeSeries holding both samples
//     and histograms ("A TimeSeries MUST NOT include both") is accepted, as
//     Prometheus' receiver accepts it; a histogram at the timestamp of a float
//     sample of its series is a duplicate and rejected.
//   - Exemplars are stored; an invalid one (labels over 128 runes, repeated
//     label names, a timestamp out of range) is left out and logged without
//     failing the request, as Prometheus' receiver does ("we don't fail the
//     request on ingestion errors"); the Exemplars-Written header tells a 2.0
//     sender. A series that carries only exemplars is accepted — Prometheus'
//     own queue manager sends every exemplar in a TimeSeries of its own, in
//     1.0 and 2.0 alike, although Prometheus' 2.0 receiver answers such a
//     series 400 — and its exemplars are stored when the series already has
//     samples stored (in this request or before); an exemplar alone never
//     creates a series, as in Prometheus' TSDB.
//   - Symbols (2.0): symbols[0] must be "", every reference must be inside the
//     table and labels_refs must hold pairs ("References MUST point to the
//     existing index in the symbols string array", 2.0 Symbols). A message that
//     breaks this is corrupt as a whole: 400, nothing written.
//   - Start timestamps (2.0 start_timestamp of samples and histograms) are
//     stored with their samples (the experimental created_timestamp, field 6,
//     is reserved in the 2.0 proto and skipped); metadata (type/help/unit, per
//     series in 2.0, per family in 1.0) is handed to the writer, once per
//     metric name.
//   - A missing Content-Type is 1.0's application/x-protobuf and a missing
//     Content-Encoding is snappy, as client_golang and Prometheus treat them.
//     Content-Type is parsed per RFC 9110 (a space after ";" or upper-case names
//     do not turn a 2.0 request into a 1.0 one). Decoding a message with the
//     other version's schema gives an empty message ("Receiver accidental use of
//     wrong schema ... will result in empty message", 2.0 Content-Type); a body
//     that decodes to nothing but holds the other version's fields is answered
//     400 instead of an empty 204.
//   - 1.0 bodies are decoded by hand (wire.DecodeV1), straight into
//     write.Request: prompb's generated Unmarshal allocates a string per label
//     name and value, about ten allocations per sample; the hand-written decoder
//     takes one per series and accepts exactly what the generated code accepts
//     (wire.FuzzDecodeV1). 2.0 bodies, whose strings are interned in the symbols
//     table, use the generated code (wire.DecodeV2).
//   - Body limits (--write.max-body-bytes, --write.max-decompressed-bytes): a
//     Content-Length over the first is 413 before anything is read, as is a body
//     that turns out larger; a snappy block states its decoded length in its
//     header, which is checked against the second before decoding (400, as
//     client_golang's SnappyDecodeMiddleware answers). An empty body, garbage, a
//     truncated block or snappy's framed format (the specs require the block
//     format) is 400.
//
// # OpenTSDB put (POST /api/put)
//
// The body is one datapoint object or an array of them, optionally gzip-encoded
// (scollector sends gzip): {"metric": M, "timestamp": T, "value": V, "tags": {...}}.
// The metric becomes __name__ and the tags the other labels. Following OpenTSDB
// 2.4 (http://opentsdb.net/docs/build/html/api_http/put.html, PutDataPointRpc,
// IncomingDataPoint.validate, TSDB.addPoint):
//   - T is seconds when it fits in 32 bits, milliseconds in [1e12, 9999999999999]
//     otherwise (OpenTSDB's SECOND_MASK rule), and must be positive; a JSON integer
//     or a string of digits. V is a JSON number or a numeric string, parsed as a
//     float64 (integers beyond 2^53 are rounded); NaN and ±Inf are rejected
//     ("value is NaN or Infinite"), as OpenTSDB does. At least one tag is
//     required. The error texts are OpenTSDB's.
//   - Each datapoint stands alone: valid ones are written while invalid ones fail
//     (wire.DecodePut checks them; the writer may reject more).
//     Unparseable JSON fails the whole request. Datapoints with invalid UTF-8 fail
//     (encoding/json would otherwise replace the bytes silently).
//   - Responses: 204 when all were written; ?summary gives {"failed":F,"success":S}
//     and ?details adds "errors":[{"datapoint":{...},"error":"..."}], with 200 when
//     nothing failed and 400 when something did; without either, a failure is a 400
//     with OpenTSDB's {"error":{"code":400,"message":"One or more data points had
//     errors",...}}. Request-level failures use the same error object. A store
//     failure is a 5xx (OpenTSDB reports it per datapoint instead): nothing is
//     acknowledged and the client may retry.
//
// # Prometheus HTTP API (/api/v1/query, query_range, series, labels, ...)
//
// Served by Prometheus' own handlers (web/api/v1.NewAPI, as Mimir does) over
// db.DB as a storage.SampleAndChunkQueryable and the real engine
// (promql.NewEngine with --query.* limits, wrapped by query.Engine, which
// hands it rate & co. computed from rollups), rather than by a router of our own
// on top of promql and Prometheus' codecs. The handlers are where the contract
// lives: parameter parsing (times as RFC 3339 or float seconds, durations,
// step, the 11 000-points limit, match[], limit with its "results truncated"
// warning), the error texts, errorType-to-status mapping (bad_data 400,
// execution 422, canceled 499, timeout 503, internal 500, unavailable 503),
// warnings and infos, and the JSON codec (jsoniter with Prometheus' float and
// timestamp formats). Copying that into our own handlers would be more code and
// would drift on every Prometheus upgrade; reusing it gives Grafana exactly what
// Prometheus gives, at the price of a 50-argument constructor
// (registerPrometheusAPI). Only an allow-list of paths is routed to it
// (prometheusAPIPaths: query, query_range, query_exemplars, format_query,
// parse_query, series, labels, label/{name}/values, status/buildinfo); targets,
// rules, alerts, admin, TSDB status and its remote write are not served (404),
// since hbtsdb has no scrape loop, rules or local TSDB. query_exemplars
// answers from the DB's exemplar table (exemplars.go). Before the store is open every read
// endpoint answers 503 with errorType unavailable.
//
// Ours, in Prometheus' envelope and error types: /api/v1/metadata (Prometheus
// answers it from scrape targets; hbtsdb from the metadata remote write
// stored, see readHandler.metadata) and /api/v1/last (native; see readHandler.last).
// POST /api/v1/read is Prometheus' storage/remote.NewReadHandler over db.DB
// (SAMPLES and STREAMED_XOR_CHUNKS, --remote-read.* limits). The write
// endpoints and /-/healthy, /-/ready stay ours, on the same gorilla/mux router.
//
// # Bounds, whatever a client does
//
// Both write endpoints share one concurrency bound and the body limits (see
// WriteLimits); a slot is taken only once a body has arrived, within
// --write.body-read-timeout, so slow senders hold no slot; the bytes of bodies
// in flight (received and decompressed, reserved as they arrive, never from
// Content-Length or a snappy length claim) share --write.max-inflight-bytes;
// over a bound the answer is 429 with Retry-After. What a decoded request may
// carry is bounded by write.Limits in the write pipeline. On the read side
// (read_bounds.go): remote read counts samples per request across its queries
// and bounds the queries per request; PromQL text is bounded in length before
// anything parses it, format_query in nesting depth; a deadline the store runs
// into is a 503 timeout. /query and /query_range tell the read path the
// query's evaluation times and its resolution parameter (resolution.go). A
// panic in a handler is a 500 and one log line. A rejected or failed request
// is logged in one line (warn for the client's fault, error for the server's),
// never one line per sample.
package promapi
