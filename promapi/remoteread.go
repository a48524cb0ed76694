package promapi

import (
	"github.com/hbtsdb/hbtsdb/query"

	"log/slog"
	"net/http"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
)

// remoteRead serves POST /api/v1/read with Prometheus' own remote-read handler
// (storage/remote.NewReadHandler) over q: snappy-compressed prompb.ReadRequest
// in, and either a snappy-compressed prompb.ReadResponse (SAMPLES) or, when the
// request accepts it, a stream of length-prefixed, CRC32-Castagnoli-checked
// prompb.ChunkedReadResponse frames (STREAMED_XOR_CHUNKS, Content-Type
// application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse), read
// through q's ChunkQuerier, so that memory stays bounded by a frame
// (https://prometheus.io/docs/prometheus/latest/querying/remote_read_api/).
// Limits and status codes are that handler's: more than opts'
// RemoteReadSampleLimit samples in a SAMPLES answer fails, at most
// RemoteReadConcurrency requests run at once (more wait), frames hold at most
// RemoteReadMaxBytesInFrame bytes. There are no external labels to add.
//
// Before the store is open the answer is 503 in plain text, as remote-read
// clients expect a non-protobuf error body.
func remoteRead(q storage.SampleAndChunkQueryable, opts QueryOptions, ready func() error, logger *slog.Logger) http.Handler {
	var h http.Handler
	if q != nil {
		h = remote.NewReadHandler(logger, nil, q, func() config.Config { return config.Config{} },
			opts.RemoteReadSampleLimit, opts.RemoteReadConcurrency, opts.RemoteReadMaxBytesInFrame)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		// Remote read hands out stored samples: never rollups.
		h.ServeHTTP(w, r.WithContext(query.WithResolution(r.Context(), query.ResolutionRaw)))
	})
}
