package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hbtsdb/hbtsdb/internal/optcheck"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Defaults of Options.
const (
	DefaultConcurrency       = 8
	DefaultHostScanMaxSeries = 1000
	DefaultRollupMinBuckets  = 2
)

// ErrLimitExceeded is wrapped by every error of a query that went over one of
// Options' limits (ErrTooManySeries, ErrTooManySamples): the query was valid but
// too large, which the HTTP layer answers with 422 (Prometheus' "execution").
var ErrLimitExceeded = errors.New("query limit exceeded")

// ErrTooManySeries and ErrTooManySamples say which limit a Select went over;
// both wrap ErrLimitExceeded.
var (
	ErrTooManySeries  = fmt.Errorf("too many series: %w", ErrLimitExceeded)
	ErrTooManySamples = fmt.Errorf("too many samples: %w", ErrLimitExceeded)
)

// Options tune the read path. Zero values take the defaults in brackets;
// Validate reports values out of range.
type Options struct {
	// MaxSeries is the most series one Select may return; more fail the Select
	// with an error wrapping ErrTooManySeries [0: no limit].
	MaxSeries int
	// MaxSamples is the most samples one Select may read (counted after the
	// [mint, maxt] cut); more fail its series set with an error wrapping
	// ErrTooManySamples [0: no limit].
	MaxSamples int
	// Concurrency is how many index days or series rows a Select reads at once,
	// and so how many series' samples it holds in memory ahead of its consumer
	// [8].
	Concurrency int
	// HostScanMaxSeries bounds the host/metric scan plan (see plan.go): it is
	// considered only when the host and metric fixed by the matchers have at most
	// this many series on the days of the query [1000]; negative disables it.
	HostScanMaxSeries int
	// Timeout bounds each Select, from the call to the last series read: reads
	// after it fail with an error wrapping context.DeadlineExceeded (Prometheus'
	// "timeout", 503) [0: only the caller's context]. PromQL queries are bounded
	// by the engine's own timeout as well.
	Timeout time.Duration
	// Plan forces a plan on every Select (tests, benchmarks) [PlanAuto].
	Plan Plan

	// Rollups are the store's resolutions of downsampled data (schema.TableOptions)
	// [none: every Select reads raw data].
	Rollups []schema.Rollup
	// RawRetention is the TTL of the store's raw data [0: forever]: a Select
	// reaching further back is served from rollups for that part (rollup.go).
	RawRetention time.Duration
	// Resolution is what a query is served from when its context carries no
	// choice of its own (WithResolution): ResolutionAuto (rollups where they
	// give raw's answer), ResolutionRaw, or a resolution of Rollups [auto].
	Resolution Resolution
	// RollupMinBuckets: a Select is served from a rollup only when its range
	// spans more than this many data buckets; shorter ones read raw data, which
	// is then cheaper [2].
	RollupMinBuckets int
	// Now is the clock that says which data has expired [time.Now].
	Now func() time.Time
}

// Plan names a Select plan (plan.go).
type Plan uint8

const (
	// PlanAuto picks the index plan or the host/metric scan by estimated cost.
	PlanAuto Plan = iota
	// PlanIndex always uses the index.
	PlanIndex
	// PlanHostScan uses the host/metric scan whenever the matchers fix the
	// host and the metric, whatever it costs.
	PlanHostScan
)

// Validate reports every field of o that is out of range, one error per field
// (errors.Join): MaxSeries, MaxSamples, Concurrency and Timeout must not be
// negative, and Plan must be one of the Plan constants. A negative
// HostScanMaxSeries is valid: it disables the host/metric scan. The zero
// Options are valid. Reader.WithOptions does not call it (it cannot fail): a
// caller taking options from a user, such as db.Open, must.
func (o Options) Validate() error {
	var errs []error
	for _, f := range []struct {
		name, zero string
		v          int64
	}{
		{"MaxSeries", optcheck.NoLimit, int64(o.MaxSeries)},
		{"MaxSamples", optcheck.NoLimit, int64(o.MaxSamples)},
		{"Concurrency", optcheck.Default(DefaultConcurrency), int64(o.Concurrency)},
	} {
		errs = append(errs, optcheck.NotNegative("query: Options."+f.name, f.v, f.zero))
	}
	errs = append(errs,
		optcheck.NotNegative("query: Options.Timeout", o.Timeout, "0 means no timeout but the caller's"),
		optcheck.NotNegative("query: Options.RawRetention", o.RawRetention, "0 means forever"),
		optcheck.NotNegative("query: Options.RollupMinBuckets", o.RollupMinBuckets, optcheck.Default(DefaultRollupMinBuckets)),
	)
	// A caller that knows the store's rollups checks the resolution against
	// them (db.Open does); without them there is nothing to check.
	if err := o.Resolution.Validate(o.Rollups); err != nil && o.Rollups != nil {
		errs = append(errs, fmt.Errorf("query: Options.Resolution: %w", err))
	}
	if o.Plan > PlanHostScan {
		errs = append(errs, fmt.Errorf("query: Options.Plan must be PlanAuto, PlanIndex or PlanHostScan, got %d", o.Plan))
	}
	return errors.Join(errs...)
}

// withDefaults fills in the defaults of zero fields. Negative values, which
// Validate rejects, act as zero here, except HostScanMaxSeries.
func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.HostScanMaxSeries == 0 {
		o.HostScanMaxSeries = DefaultHostScanMaxSeries
	}
	if o.RollupMinBuckets <= 0 {
		o.RollupMinBuckets = DefaultRollupMinBuckets
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// withTimeout returns ctx bounded by Options.Timeout, if any.
func (r *Reader) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.opts.Timeout > 0 {
		return context.WithTimeout(ctx, r.opts.Timeout)
	}
	return context.WithCancel(ctx)
}
