package promapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/hbtsdb/hbtsdb/query"
)

// maxReadRequestBytes is what Prometheus' read handler reads of a request body
// (and allows its decoded message), storage/remote's decodeReadLimit.
const maxReadRequestBytes = 32 << 20

// remoteRead serves POST /api/v1/read with Prometheus' own remote-read handler
// (storage/remote.NewReadHandler) over q: snappy-compressed prompb.ReadRequest
// in, and either a snappy-compressed prompb.ReadResponse (SAMPLES) or, when the
// request accepts it, a stream of length-prefixed, CRC32-Castagnoli-checked
// prompb.ChunkedReadResponse frames (STREAMED_XOR_CHUNKS, Content-Type
// application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse), read
// through q's ChunkQuerier, so that memory stays bounded by a frame
// (https://prometheus.io/docs/prometheus/latest/querying/remote_read_api/).
//
// Limits: a request with more than opts' RemoteReadMaxQueries queries is
// answered 400 before any runs; a SAMPLES answer holds at most
// RemoteReadSampleLimit samples summed over the request's queries (Prometheus
// bounds each query alone, so that one request of many queries could hold any
// number): over it, 400 "exceeded sample limit (N)", Prometheus' answer; at
// most RemoteReadConcurrency requests run at once (more wait); frames hold at
// most RemoteReadMaxBytesInFrame bytes. There are no external labels to add.
//
// The request body is read before a slot is taken, within
// RemoteReadBodyTimeout (408), with its bytes, compressed and decoded, reserved
// in a budget of RemoteReadMaxInflightBytes across requests (429 with
// Retry-After), and its snappy length claim checked before anything is
// allocated for it (400); see readRemoteReadBody.
//
// Before the store is open the answer is 503 in plain text, as remote-read
// clients expect a non-protobuf error body.
func remoteRead(q storage.SampleAndChunkQueryable, opts QueryOptions, ready func() error, reg prometheus.Registerer,
	logger *slog.Logger) http.Handler {
	var h http.Handler
	if q != nil {
		h = remote.NewReadHandler(logger, reg, budgetQueryable{q}, func() config.Config { return config.Config{} },
			opts.RemoteReadSampleLimit, opts.RemoteReadConcurrency, opts.RemoteReadMaxBytesInFrame)
	}
	bodies := &byteBudget{max: opts.RemoteReadMaxInflightBytes, what: "remote-read request bodies",
		flag: "--remote-read.max-inflight-bytes"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		res := &reservation{budget: bodies}
		defer res.release()
		body, err := readRemoteReadBody(w, r, opts.RemoteReadBodyTimeout, res)
		if err != nil {
			status := statusOf(err)
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, err.Error(), status)
			return
		}
		// The request is decoded here too, to count its queries before any
		// runs and to learn its response type; Prometheus' handler decodes the
		// same bytes again.
		decode := r.Clone(r.Context())
		decode.Body = io.NopCloser(bytes.NewReader(body))
		req, err := remote.DecodeReadRequest(decode)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if n := len(req.Queries); n > opts.RemoteReadMaxQueries {
			logger.Warn("remote read refused", "remote", r.RemoteAddr, "queries", n, "limit", opts.RemoteReadMaxQueries)
			http.Error(w, fmt.Sprintf("exceeded query limit: %d queries in one remote-read request, more than the limit of %d (--remote-read.max-queries)",
				n, opts.RemoteReadMaxQueries), http.StatusBadRequest)
			return
		}
		// A matcher that cannot be built (a regular expression that does not
		// compile, an unknown type) is the client's error: 400 here, where
		// Prometheus' handler would answer 500.
		for i, q := range req.Queries {
			if _, err := remote.FromLabelMatchers(q.Matchers); err != nil {
				http.Error(w, fmt.Sprintf("query %d: %v", i, err), http.StatusBadRequest)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Remote read hands out stored samples: never rollups.
		ctx := query.WithResolution(r.Context(), query.ResolutionRaw)
		errs := &readErrors{}
		ctx = withReadErrors(ctx, errs)
		w = readErrorResponse{ResponseWriter: w, errs: errs}
		if typ, err := remote.NegotiateResponseType(req.AcceptedResponseTypes); err == nil && typ == prompb.ReadRequest_SAMPLES {
			b := &sampleBudget{limit: int64(opts.RemoteReadSampleLimit)}
			ctx = withSampleBudget(ctx, b)
			w = budgetResponse{ResponseWriter: w, budget: b}
			defer func() {
				if b.exceeded.Load() {
					logger.Warn("remote read refused", "remote", r.RemoteAddr, "queries", len(req.Queries),
						"err", b.err())
				}
			}()
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// readRemoteReadBody reads a remote-read request's snappy-compressed body
// within bounds, before anything decodes it and before a remote-read slot is
// taken (slow senders hold none): at most maxReadRequestBytes (413, by its
// Content-Length before anything is read), within timeout (408, and the
// connection is closed), with its bytes reserved in res as they arrive and its
// decoded size (twice: this handler and Prometheus' each decode it) before it
// is decoded (429 when they do not fit). A snappy header that claims more than
// a block of its size can hold, or more than maxReadRequestBytes, is 400
// before anything is allocated for it.
func readRemoteReadBody(w http.ResponseWriter, r *http.Request, timeout time.Duration, res *reservation) ([]byte, error) {
	if r.ContentLength > maxReadRequestBytes {
		closeConnection(w, r)
		return nil, fmt.Errorf("%w: Content-Length %d bytes is over the remote-read limit of %d bytes",
			errContentTooLarge, r.ContentLength, maxReadRequestBytes)
	}
	body, over, err := readBodyWithin(w, r, nil, maxReadRequestBytes, timeout, res)
	switch {
	case errors.Is(err, errOverloaded):
		return nil, err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, bodyTimeout{fmt.Errorf("remote-read request body not received within %v "+
			"(--remote-read.body-read-timeout); %d bytes arrived", timeout, len(body))}
	case err != nil:
		return nil, fmt.Errorf("%w: reading the remote-read request: %v", errInvalidRead, err)
	case over:
		return nil, fmt.Errorf("%w: remote-read request body is over the limit of %d bytes",
			errContentTooLarge, maxReadRequestBytes)
	}
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, fmt.Errorf("%w: remote-read request is not snappy block-compressed: %v", errInvalidRead, err)
	}
	if most := min(maxSnappyDecodedLen(body), maxReadRequestBytes); int64(n) > most {
		return nil, fmt.Errorf("%w: snappy block of %d bytes claims a decoded length of %d bytes, more than "+
			"the %d bytes it can hold or remote read accepts", errInvalidRead, len(body), n, most)
	}
	if err := res.reserve(2 * int64(n)); err != nil {
		return nil, err
	}
	return body, nil
}
