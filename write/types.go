package write

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Series is one label set (with __name__) and its samples, in any order: float
// samples, native histogram samples (integer or float, one of H and FH set) and
// exemplars. A timestamp that is both a float and a histogram sample of one
// request is a duplicate: the histogram is rejected.
type Series struct {
	Labels     labels.Labels
	Samples    []cellenc.Sample
	Histograms []cellenc.HistogramSample
	Exemplars  []exemplar.Exemplar
}

// Request is one write: what one remote-write or /api/put request carries once
// decoded.
type Request struct {
	Series   []Series
	Metadata []schema.Metadata
}

// Limits bound what one request may carry. Zero means "no limit" for each field;
// DefaultLimits gives the defaults the server runs with.
type Limits struct {
	// MaxSeriesPerRequest and MaxSamplesPerRequest bound a whole request; over
	// them the request is rejected whole. Samples are float and histogram
	// samples.
	MaxSeriesPerRequest  int
	MaxSamplesPerRequest int
	// MaxLabelsPerSeries, MaxLabelNameLength and MaxLabelValueLength (bytes)
	// bound each series; a series over them is rejected.
	MaxLabelsPerSeries  int
	MaxLabelNameLength  int
	MaxLabelValueLength int
	// MaxFutureSkew rejects samples more than this far ahead of the server's
	// clock (Prometheus' own receiver allows 10m).
	MaxFutureSkew time.Duration
	// MaxAge rejects samples older than now - MaxAge (the raw retention: they
	// would expire at once).
	MaxAge time.Duration
	// MaxHistogramBuckets bounds the buckets (both sides) of a native
	// histogram sample: one with more is stored at the highest resolution at
	// which it fits, and rejected when it does not fit even at schema -4 or
	// has custom buckets (as Mimir's max_native_histogram_buckets and
	// Prometheus' native_histogram_bucket_limit).
	MaxHistogramBuckets int
}

// DefaultMaxHistogramBuckets is the default of Limits.MaxHistogramBuckets:
// far above what instrumentation libraries produce (client_golang and
// OpenTelemetry SDKs default to at most 160 per side), it bounds what one
// cell holds (about 9 bytes per bucket at worst).
const DefaultMaxHistogramBuckets = 4096

// DefaultLimits are the server's default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxSeriesPerRequest:  100_000,
		MaxSamplesPerRequest: 500_000,
		MaxLabelsPerSeries:   64,
		MaxLabelNameLength:   1024,
		MaxLabelValueLength:  4096,
		MaxFutureSkew:        10 * time.Minute,
		MaxAge:               400 * 24 * time.Hour,
		MaxHistogramBuckets:  DefaultMaxHistogramBuckets,
	}
}

// Validate reports every field of l that cannot work, joined (errors.Join): no
// limit may be negative, since 0 already means "no limit". Each error names the
// field and its value, e.g. "write: Limits.MaxSeriesPerRequest must not be
// negative (0 means no limit), got -1". New refuses options whose limits do not
// validate.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name  string
		value int
	}{
		{"MaxSeriesPerRequest", l.MaxSeriesPerRequest},
		{"MaxSamplesPerRequest", l.MaxSamplesPerRequest},
		{"MaxLabelsPerSeries", l.MaxLabelsPerSeries},
		{"MaxLabelNameLength", l.MaxLabelNameLength},
		{"MaxLabelValueLength", l.MaxLabelValueLength},
		{"MaxHistogramBuckets", l.MaxHistogramBuckets},
	} {
		errs = append(errs, optcheck.NotNegative("write: Limits."+f.name, f.value, optcheck.NoLimit))
	}
	for _, f := range []struct {
		name  string
		value time.Duration
	}{
		{"MaxFutureSkew", l.MaxFutureSkew},
		{"MaxAge", l.MaxAge},
	} {
		errs = append(errs, optcheck.NotNegative("write: Limits."+f.name, f.value, optcheck.NoLimit))
	}
	return errors.Join(errs...)
}

// Result says what a Write stored.
type Result struct {
	// SeriesWritten and SamplesWritten count what was durably stored.
	SeriesWritten  int
	SamplesWritten int
	// HistogramsWritten and ExemplarsWritten count the native histogram
	// samples and exemplars durably stored (SamplesWritten counts floats only,
	// as remote write 2.0's Samples-Written header does).
	HistogramsWritten int
	ExemplarsWritten  int
	// MetadataWritten counts the entries of Request.Metadata that are stored
	// (including those this process had stored already, unchanged).
	MetadataWritten int
	// Rejected lists the series and samples that were not written because they are
	// invalid; the rest of the request was written. Empty when all was written.
	Rejected []Rejection
	// RejectedExemplars lists the exemplars that were left out because they
	// are invalid (Kind ErrInvalidExemplar; Sample is the exemplar's index in
	// Series.Exemplars, Samples 0). They do not make the request fail, as in
	// Prometheus' receiver, and are not part of RejectionError.
	RejectedExemplars []Rejection
}

// Rejection is one invalid series or sample of a request.
type Rejection struct {
	// Series is the index of the series in Request.Series; Sample the index of the
	// sample in that series (histogram sample j of a series with n float
	// samples is sample n+j), or -1 when the whole series was rejected. For an
	// invalid entry of Request.Metadata, Series is -1 and Sample its index.
	Series, Sample int
	// Samples is how many samples (float and histogram) the rejection dropped.
	Samples int
	// Reason says what is wrong, naming the series, e.g.
	// `label name "" is empty in series {__name__="up", ""="x"}`.
	Reason string
	// Kind is the kind of problem, for counting: ErrInvalidLabels, ErrTooOld,
	// ErrOutOfRange, ErrInvalidHistogram, ErrDuplicateSample or
	// ErrInvalidExemplar; nil for an invalid metadata entry.
	Kind error
}

// ErrInvalid is wrapped by errors about the request itself (too many series, ...);
// such a request is rejected whole and nothing of it is written. HTTP: 400.
var ErrInvalid = errors.New("invalid write request")

// RejectionError summarizes Result.Rejected as an error for a 400 response;
// "written" counts float and histogram samples.
func RejectionError(res Result) error {
	if len(res.Rejected) == 0 {
		return nil
	}
	const show = 10
	var b strings.Builder
	dropped := 0
	for _, r := range res.Rejected {
		dropped += r.Samples
	}
	fmt.Fprintf(&b, "%d samples rejected, %d written:", dropped, res.SamplesWritten+res.HistogramsWritten)
	for i, r := range res.Rejected {
		if i == show {
			fmt.Fprintf(&b, "; and %d more", len(res.Rejected)-show)
			break
		}
		b.WriteString(" ")
		b.WriteString(r.Reason)
		if i < len(res.Rejected)-1 && i < show-1 {
			b.WriteString(";")
		}
	}
	return fmt.Errorf("%w: %s", ErrInvalid, b.String())
}
