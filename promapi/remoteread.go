package promapi

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"

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
// Before the store is open the answer is 503 in plain text, as remote-read
// clients expect a non-protobuf error body.
func remoteRead(q storage.SampleAndChunkQueryable, opts QueryOptions, ready func() error, logger *slog.Logger) http.Handler {
	var h http.Handler
	if q != nil {
		h = remote.NewReadHandler(logger, nil, budgetQueryable{q}, func() config.Config { return config.Config{} },
			opts.RemoteReadSampleLimit, opts.RemoteReadConcurrency, opts.RemoteReadMaxBytesInFrame)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		// The request is decoded here too, to count its queries before any
		// runs and to learn its response type; Prometheus' handler decodes the
		// same bytes again.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReadRequestBytes))
		if err != nil {
			http.Error(w, fmt.Sprintf("reading the remote-read request: %v", err), http.StatusBadRequest)
			return
		}
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
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Remote read hands out stored samples: never rollups.
		ctx := query.WithResolution(r.Context(), query.ResolutionRaw)
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
