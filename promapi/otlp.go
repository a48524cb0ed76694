package promapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/storage/remote"
	"go.yaml.in/yaml/v2"
)

// OTLPPath is the OTLP/HTTP metrics endpoint, where Prometheus serves it with
// --web.enable-otlp-receiver: an OTLP exporter's endpoint is the server's base
// URL + "/api/v1/otlp" (the exporter appends "/v1/metrics").
const OTLPPath = "/api/v1/otlp/v1/metrics"

// OTLPOptions configure the OTLP endpoint: the choices Prometheus takes from
// its configuration file's otlp: section and its --enable-feature flags.
type OTLPOptions struct {
	// Config is Prometheus' otlp: configuration section: the translation
	// strategy of metric and label names, which resource attributes become
	// labels, whether scope metadata does, whether classic histograms become
	// native histograms with custom buckets. nil takes config.DefaultOTLPConfig
	// (UnderscoreEscapingWithSuffixes, no resource attribute promoted).
	Config *config.OTLPConfig
	// ConvertDelta converts delta temporality to cumulative in memory before
	// storing (Prometheus' otlp-deltatocumulative feature). The running sums
	// live in this process: several tsdb processes behind one load balancer
	// each keep their own. It starts one goroutine (the collector processor's
	// stale-stream sweeper) that lives as long as the process: Prometheus'
	// handler has no Close.
	ConvertDelta bool
	// NativeDelta stores delta samples as they come, as metrics of unknown
	// type (Prometheus' otlp-native-delta-ingestion feature). Not with
	// ConvertDelta.
	NativeDelta bool
	// TypeAndUnitLabels adds __type__ and __unit__ labels (Prometheus'
	// type-and-unit-labels feature).
	TypeAndUnitLabels bool
}

// Validate refuses options Prometheus refuses: the configuration section is
// checked by Prometheus' own configuration loader (translation strategy,
// promote_all_resource_attributes with promote_resource_attributes, ...), and
// the two delta modes exclude each other.
func (o OTLPOptions) Validate() error {
	_, err := o.config()
	return err
}

// config returns the Prometheus configuration the OTLP handler reads: the
// defaults with o.Config as its otlp: section, loaded and validated by
// config.Load.
func (o OTLPOptions) config() (config.Config, error) {
	if o.ConvertDelta && o.NativeDelta {
		return config.Config{}, errors.New("promapi: OTLPOptions.ConvertDelta and promapi: OTLPOptions.NativeDelta " +
			"exclude each other (Prometheus: otlp-deltatocumulative and otlp-native-delta-ingestion)")
	}
	c := config.DefaultOTLPConfig
	if o.Config != nil {
		c = *o.Config
	}
	// Every field is spelled out, as config.Load's defaults would otherwise
	// replace the false ones left out.
	section := struct {
		OTLP struct {
			PromoteAll     bool                                     `yaml:"promote_all_resource_attributes"`
			Promote        []string                                 `yaml:"promote_resource_attributes"`
			Ignore         []string                                 `yaml:"ignore_resource_attributes"`
			Strategy       otlptranslator.TranslationStrategyOption `yaml:"translation_strategy"`
			KeepIdentify   bool                                     `yaml:"keep_identifying_resource_attributes"`
			NHCB           bool                                     `yaml:"convert_histograms_to_nhcb"`
			ScopeMetadata  bool                                     `yaml:"promote_scope_metadata"`
			Sanitize       bool                                     `yaml:"label_name_underscore_sanitization"`
			KeepUnderscore bool                                     `yaml:"label_name_preserve_multiple_underscores"`
		} `yaml:"otlp"`
	}{}
	s := &section.OTLP
	s.PromoteAll, s.Promote, s.Ignore, s.Strategy = c.PromoteAllResourceAttributes, c.PromoteResourceAttributes,
		c.IgnoreResourceAttributes, c.TranslationStrategy
	s.KeepIdentify, s.NHCB, s.ScopeMetadata = c.KeepIdentifyingResourceAttributes, c.ConvertHistogramsToNHCB, c.PromoteScopeMetadata
	s.Sanitize, s.KeepUnderscore = c.LabelNameUnderscoreSanitization, c.LabelNamePreserveMultipleUnderscores
	text, err := yaml.Marshal(section)
	if err != nil {
		return config.Config{}, fmt.Errorf("promapi: OTLPOptions.Config: %w", err)
	}
	cfg, err := config.Load(string(text), slog.New(slog.DiscardHandler))
	if err != nil {
		return config.Config{}, fmt.Errorf("promapi: OTLPOptions.Config: %w", err)
	}
	return *cfg, nil
}

// registerOTLP serves POST OTLPPath: Prometheus' own OTLP write handler and
// translator (storage/remote, otlptranslator) in front of the remote-write
// path (otlpAppendable), behind the write endpoints' limits
// (otlpMiddleware). It fails only on options Validate refuses.
func registerOTLP(r *mux.Router, wh *writeHandler, opts Options, metrics *httpMetrics) error {
	cfg, err := opts.OTLP.config()
	if err != nil {
		return err
	}
	prom := remote.NewOTLPWriteHandler(otlpLogger(opts.Logger), opts.Registerer, otlpAppendable{h: wh},
		func() config.Config { return cfg }, remote.OTLPOptions{
			ConvertDelta:            opts.OTLP.ConvertDelta,
			NativeDelta:             opts.OTLP.NativeDelta,
			LookbackDelta:           opts.Query.withDefaults().LookbackDelta,
			EnableTypeAndUnitLabels: opts.OTLP.TypeAndUnitLabels,
		})
	r.Handle(OTLPPath, countWrites(opts.Ingest, metrics, otlpProtocol, wh.otlpMiddleware(prom))).Methods(http.MethodPost)
	return nil
}

func otlpProtocol(*http.Request) string { return "otlp" }

// otlpFormat is the encoding of an OTLP/HTTP request body: "protobuf" or
// "JSON" (OTLP/HTTP, "Binary Protobuf Encoding" and "JSON Protobuf Encoding").
type otlpFormat string

// negotiateOTLP reads the body's format from Content-Type and checks its
// Content-Encoding. "If the server receives a request with unsupported
// Content-Type it MUST respond with HTTP 415 Unsupported Media Type"
// (OTLP/HTTP, "OTLP/HTTP Request"); gzip is the one compression the
// specification names ("The client MAY gzip the content and in that case MUST
// include 'Content-Encoding: gzip' request header"). The Content-Type is
// rewritten to the bare media type that Prometheus' decoder compares with.
func negotiateOTLP(r *http.Request) (otlpFormat, error) {
	ct := r.Header.Get("Content-Type")
	media, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", fmt.Errorf("%w: Content-Type %q: %v; OTLP/HTTP takes application/x-protobuf or application/json",
			errUnsupportedMedia, ct, err)
	}
	var format otlpFormat
	switch media {
	case "application/x-protobuf":
		format = "protobuf"
	case "application/json":
		format = "JSON"
	default:
		return "", fmt.Errorf("%w: Content-Type %q; OTLP/HTTP takes application/x-protobuf or application/json",
			errUnsupportedMedia, ct)
	}
	r.Header.Set("Content-Type", media)
	switch enc := contentEncoding(r); enc {
	case "", "identity", "gzip":
	default:
		return format, fmt.Errorf("%w: Content-Encoding %q is not accepted; OTLP/HTTP takes gzip or none", errUnsupportedMedia, enc)
	}
	return format, nil
}

// otlpMiddleware negotiates the format, reads the body within the write
// limits (413, 408, 429 as for remote write), takes a concurrency slot once
// it has all arrived, gunzips it within --write.max-decompressed-bytes (400
// over it) and hands the plain body to Prometheus' handler. Its answer is
// then rewritten by the request's otlpOutcome: a store or validation error
// gets the status remote write would give it (statusOf; Prometheus' handler
// answers 500 for all but out-of-order and out-of-bounds samples), a body
// that does not decode is a 400 naming the format, and one the translator
// refuses (delta temporality without a delta mode, ...) a 400 with its
// words; in both, Prometheus' handler has stored nothing.
func (h *writeHandler) otlpMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format, err := negotiateOTLP(r)
		if err != nil {
			closeConnection(w, r)
			h.failOTLP(w, r, format, err)
			return
		}
		raw, decompressed := getBuffer(), getBuffer()
		defer putBuffer(raw)
		defer putBuffer(decompressed)
		res := &reservation{budget: h.bytes}
		defer res.release()
		body, err := h.readOTLPBody(w, r, raw, decompressed, res)
		if err != nil {
			h.failOTLP(w, r, format, err)
			return
		}
		defer h.inflight.release()
		r.Body = decodedBody{Reader: bytes.NewReader(body), data: body}
		r.ContentLength = int64(len(body))
		r.Header.Del("Content-Encoding")
		outcome := &otlpOutcome{}
		rec := &otlpRecorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), outcomeKey{}, outcome)))
		translated, werr := outcome.result()
		msg := strings.TrimSpace(rec.body.String())
		switch {
		case werr != nil:
			h.failOTLP(w, r, format, werr)
		case rec.status == http.StatusBadRequest && !translated:
			h.failOTLP(w, r, format, fmt.Errorf("%w: OTLP %s body does not decode as an ExportMetricsServiceRequest: %s",
				errInvalidBody, format, msg))
		case rec.status >= 300 && r.Context().Err() != nil:
			h.failOTLP(w, r, format, fmt.Errorf("otlp: %s: %w", msg, r.Context().Err()))
		case rec.status >= 300:
			// Our appenders fail only on Commit, and record it; anything else
			// is the translator refusing the request (delta temporality without
			// a delta mode, a sample too far in the future, an unsupported
			// metric type), after which Prometheus' handler rolled everything
			// back: the sender's to fix, and nothing is stored.
			h.failOTLP(w, r, format, fmt.Errorf("%w: otlp: %s%s", errInvalidBody, msg, otlpHint(msg)))
		default:
			// "The server MUST respond with HTTP 200 OK" and "the response body
			// MUST be the Protobuf-encoded ExportMetricsServiceResponse message"
			// in the request's encoding (OTLP/HTTP, "Full Success"): an empty
			// message, which is no bytes in protobuf and {} in JSON.
			if format == "JSON" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte("{}"))
				return
			}
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK)
		}
	})
}

// otlpHint is what a translator error message (Prometheus' words) leaves the
// sender to guess: the flags that would let the request in.
func otlpHint(msg string) string {
	if strings.Contains(msg, "invalid temporality") {
		return " (delta temporality is stored only with --otlp.delta-to-cumulative or --otlp.native-delta-ingestion)"
	}
	return ""
}

// readOTLPBody reads the body within the limits (see readBody), takes a
// concurrency slot once it has all arrived (the caller releases it with
// h.inflight.release when this returns no error) and gunzips it when it is
// gzip-encoded. An empty body is passed on: it is an empty protobuf message,
// and not valid JSON, which the decoder says.
func (h *writeHandler) readOTLPBody(w http.ResponseWriter, r *http.Request, raw, decompressed *[]byte, res *reservation) ([]byte, error) {
	if err := h.readBody(w, r, raw, res); err != nil && !errors.Is(err, errEmptyBody) {
		return nil, err
	}
	if err := h.acquireSlot(); err != nil {
		return nil, err
	}
	body := *raw
	switch {
	case contentEncoding(r) == "gzip":
		var err error
		if body, err = h.decodeGzip(decompressed, body, res); err != nil {
			h.inflight.release()
			return nil, err
		}
	case int64(len(body)) > h.limits.MaxDecompressedBytes:
		h.inflight.release()
		return nil, fmt.Errorf("%w: request body is over the limit of %d bytes (--write.max-decompressed-bytes)",
			errInvalidBody, h.limits.MaxDecompressedBytes)
	}
	return body, nil
}

// failOTLP answers an OTLP request that failed with the status statusOf gives
// err and err's text as the body, as remote write answers; except that a 500
// is a 503: OTLP senders retry only "429, 502, 503, 504" (OTLP/HTTP,
// "Retryable Response Codes") and drop the data of any other status, while a
// failure of ours (a dropped table, a bug) may pass, and nothing of the
// request was acknowledged.
func (h *writeHandler) failOTLP(w http.ResponseWriter, r *http.Request, format otlpFormat, err error) {
	status := statusOf(err)
	if status == http.StatusInternalServerError {
		status = http.StatusServiceUnavailable
	}
	h.setRetryAfter(w, status)
	logWriteFailure(h.logger, r, status, err, "format", string(format))
	http.Error(w, err.Error(), status)
}

// otlpRecorder holds the answer of Prometheus' handler, which otlpMiddleware
// rewrites: a status and a short text.
type otlpRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *otlpRecorder) Header() http.Header         { return r.header }
func (r *otlpRecorder) WriteHeader(status int)      { r.status = status }
func (r *otlpRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// otlpLogger is the logger of Prometheus' handler without its lines for failed
// requests, which failOTLP logs once with the status it answers (theirs would
// say ERROR for a client's malformed body).
func otlpLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(otlpLogFilter{logger.Handler()})
}

type otlpLogFilter struct{ slog.Handler }

func (f otlpLogFilter) Handle(ctx context.Context, rec slog.Record) error {
	switch rec.Message {
	case "Error decoding OTLP write request", "Error appending remote write":
		return nil
	}
	return f.Handler.Handle(ctx, rec)
}

func (f otlpLogFilter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return otlpLogFilter{f.Handler.WithAttrs(attrs)}
}

func (f otlpLogFilter) WithGroup(name string) slog.Handler {
	return otlpLogFilter{f.Handler.WithGroup(name)}
}
