package write

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
)

// Validation.
//
// What Write checks, and the Rejection.Reason it gives (s is the series as sent,
// names and values over 128 bytes shortened, labels after about 1 KiB left out):
//
//	label name "" is empty in series s
//	label name "n" is not valid UTF-8 in series s
//	label name "n…" is 1025 bytes long, over the limit of 1024, in series s
//	value of label "n" is not valid UTF-8 in series s
//	value of label "n" is 4097 bytes long, over the limit of 4096, in series s
//	label name "n" appears more than once in series s
//	metric name (label __name__) is missing in series s
//	series s has 65 labels, over the limit of 64
//	labels of series s take 32768 bytes encoded, over the 32767-byte row key limit of HBase
//	timestamp -1 is negative (before 1970-01-01T00:00:00Z) in series s
//	timestamp t (date) is older than the max age of 400d (before date) in series s
//	timestamp t (date) is more than 10m ahead of the server's clock (date) in series s
//	timestamp t (date) is beyond the largest storable timestamp 9223372036854775806 in series s
//
// A label with an empty value is dropped before anything else is decided about it
// (Prometheus: "a label with an empty label value is considered equivalent to a
// label that does not exist"), except that its name must still be valid; it does
// not count against MaxLabelsPerSeries. NaN and ±Inf values are valid samples:
// Prometheus sends them, stale markers included.

// Errors of CheckSeries and CheckSample wrap ErrInvalid and one of these, so that
// callers can tell what kind of problem it was.
var (
	// ErrInvalidLabels: the series' labels are invalid or over a limit.
	ErrInvalidLabels = errors.New("invalid labels")
	// ErrTooOld: a sample is older than Limits.MaxAge.
	ErrTooOld = errors.New("sample too old")
	// ErrOutOfRange: a sample's timestamp is negative, more than
	// Limits.MaxFutureSkew ahead of the clock, or beyond kv.MaxTimestamp.
	ErrOutOfRange = errors.New("sample timestamp out of range")
)

// kindOf is which of the kinds of rejection err wraps (ErrInvalidLabels,
// ErrTooOld, ErrOutOfRange, ErrInvalidHistogram, ErrDuplicateSample,
// ErrInvalidExemplar), or nil.
func kindOf(err error) error {
	for _, kind := range []error{ErrInvalidLabels, ErrTooOld, ErrOutOfRange, ErrInvalidHistogram, ErrDuplicateSample, ErrInvalidExemplar} {
		if errors.Is(err, kind) {
			return kind
		}
	}
	return nil
}

// invalidError is an invalid series or sample: its text is the Rejection reason.
type invalidError struct {
	reason string
	kind   error
	cause  error // Prometheus' own error (a histogram.Error), or nil
}

func (e *invalidError) Error() string { return e.reason }
func (e *invalidError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrInvalid, e.kind, e.cause}
	}
	return []error{ErrInvalid, e.kind}
}

// rowKeyOverhead bounds how many bytes the longest row key built from a series'
// labels adds to their canonical encoding: a data row key is 1 (salt) + esc(host)
// + esc(metric) + 16, the forward registry row 1 + canonical labels, an index row
// 4 + esc(name) + esc(value). The canonical encoding holds esc(host) and
// esc(metric), so keeping it at least this much under kv.MaxRowKeyLen keeps
// every key within HBase's limit.
const rowKeyOverhead = 17

// labelProblem is the first thing found wrong with a series' labels.
type labelProblem int

const (
	labelsOK labelProblem = iota
	emptyName
	nameNotUTF8
	nameTooLong
	valueNotUTF8
	valueTooLong
	duplicateName
	missingMetricName
	tooManyLabels
	labelsTooBig
)

// labelCheck is what inspect found wrong with a series' labels: the first
// problem, the label it is about and the size or count at fault.
type labelCheck struct {
	problem labelProblem
	name    string
	size    int
}

// checkLabels validates a series' labels and returns them as they are stored:
// sorted by name, without labels whose value is empty. On a problem it returns an
// *invalidError.
func (l Limits) checkLabels(ls labels.Labels) (labels.Labels, error) {
	c, sorted, empties := l.inspect(ls)
	out := ls
	if c.problem == labelsOK && !sorted {
		// Rare: senders sort their labels. Sort a copy and check it again, which
		// also finds a name given twice but not in adjacent places.
		b := labels.NewScratchBuilder(ls.Len())
		ls.Range(func(lb labels.Label) { b.Add(lb.Name, lb.Value) })
		b.Sort()
		out = b.Labels()
		c, _, empties = l.inspect(out)
	}
	if c.problem != labelsOK {
		return labels.EmptyLabels(), l.labelsError(ls, c)
	}
	if empties > 0 {
		return out.WithoutEmpty(), nil
	}
	return out, nil
}

// inspect checks every rule of the package doc on ls, in label order, and reports
// whether ls is sorted by name and how many of its labels have an empty value.
func (l Limits) inspect(ls labels.Labels) (c labelCheck, sorted bool, empties int) {
	var (
		prev              string
		first             = true
		count, encoded    int
		hasMetricName     bool
		maxName, maxValue = l.MaxLabelNameLength, l.MaxLabelValueLength
	)
	sorted = true
	ls.Range(func(lb labels.Label) {
		if c.problem != labelsOK {
			return
		}
		switch {
		case lb.Name == "":
			c.problem = emptyName
		case !utf8.ValidString(lb.Name):
			c.problem, c.name = nameNotUTF8, lb.Name
		case maxName > 0 && len(lb.Name) > maxName:
			c.problem, c.name, c.size = nameTooLong, lb.Name, len(lb.Name)
		case !utf8.ValidString(lb.Value):
			c.problem, c.name = valueNotUTF8, lb.Name
		case maxValue > 0 && len(lb.Value) > maxValue:
			c.problem, c.name, c.size = valueTooLong, lb.Name, len(lb.Value)
		case !first && lb.Name == prev:
			c.problem, c.name = duplicateName, lb.Name
		}
		if c.problem != labelsOK {
			return
		}
		if !first && lb.Name < prev {
			sorted = false
		}
		first, prev = false, lb.Name
		if lb.Value == "" {
			empties++
			return
		}
		count++
		if lb.Name == model.MetricNameLabel {
			hasMetricName = true
		}
		encoded += schema.EscapedLen(lb.Name) + schema.EscapedLen(lb.Value)
	})
	switch {
	case c.problem != labelsOK || !sorted:
	case !hasMetricName:
		c.problem = missingMetricName
	case l.MaxLabelsPerSeries > 0 && count > l.MaxLabelsPerSeries:
		c.problem, c.size = tooManyLabels, count
	case encoded+rowKeyOverhead > kv.MaxRowKeyLen:
		c.problem, c.size = labelsTooBig, encoded
	}
	return c, sorted, empties
}

// labelsError builds the *invalidError of a label problem of series ls.
func (l Limits) labelsError(ls labels.Labels, c labelCheck) error {
	s := describe(ls)
	var reason string
	switch c.problem {
	case emptyName:
		reason = fmt.Sprintf("label name \"\" is empty in series %s", s)
	case nameNotUTF8:
		reason = fmt.Sprintf("label name %s is not valid UTF-8 in series %s", quote(c.name), s)
	case nameTooLong:
		reason = fmt.Sprintf("label name %s is %d bytes long, over the limit of %d, in series %s", quote(c.name), c.size, l.MaxLabelNameLength, s)
	case valueNotUTF8:
		reason = fmt.Sprintf("value of label %s is not valid UTF-8 in series %s", quote(c.name), s)
	case valueTooLong:
		reason = fmt.Sprintf("value of label %s is %d bytes long, over the limit of %d, in series %s", quote(c.name), c.size, l.MaxLabelValueLength, s)
	case duplicateName:
		reason = fmt.Sprintf("label name %s appears more than once in series %s", quote(c.name), s)
	case missingMetricName:
		reason = fmt.Sprintf("metric name (label __name__) is missing in series %s", s)
	case tooManyLabels:
		reason = fmt.Sprintf("series %s has %d labels, over the limit of %d", s, c.size, l.MaxLabelsPerSeries)
	default: // labelsTooBig
		reason = fmt.Sprintf("labels of series %s take %d bytes encoded, over the %d-byte row key limit of HBase",
			s, c.size+rowKeyOverhead, kv.MaxRowKeyLen)
	}
	return &invalidError{reason: reason, kind: ErrInvalidLabels}
}

// timeBounds are the sample timestamps a request may carry, [minT, maxT] in ms.
type timeBounds struct {
	now        time.Time
	minT, maxT int64
	limits     Limits
}

// bounds returns the timestamps a sample may have as of the clock reading now.
func (l Limits) bounds(now time.Time) timeBounds {
	b := timeBounds{now: now, minT: 0, maxT: kv.MaxTimestamp, limits: l}
	ms := now.UnixMilli()
	if l.MaxAge > 0 {
		b.minT = max(0, ms-l.MaxAge.Milliseconds())
	}
	if l.MaxFutureSkew > 0 && ms <= kv.MaxTimestamp-l.MaxFutureSkew.Milliseconds() {
		b.maxT = ms + l.MaxFutureSkew.Milliseconds()
	}
	return b
}

// ok reports whether a sample at t may be stored.
func (b timeBounds) ok(t int64) bool { return t >= b.minT && t <= b.maxT }

// check returns nil or the *invalidError of a sample at t of series ls.
func (b timeBounds) check(ls labels.Labels, t int64) error {
	if b.ok(t) {
		return nil
	}
	var reason string
	kind := ErrOutOfRange
	switch {
	case t < 0:
		reason = fmt.Sprintf("timestamp %d is negative (before 1970-01-01T00:00:00Z)", t)
	case t < b.minT:
		kind = ErrTooOld
		reason = fmt.Sprintf("timestamp %d (%s) is older than the max age of %s (before %s)",
			t, date(t), model.Duration(b.limits.MaxAge), date(b.minT))
	case b.limits.MaxFutureSkew > 0 && t > b.maxT && b.maxT < kv.MaxTimestamp:
		reason = fmt.Sprintf("timestamp %d (%s) is more than %s ahead of the server's clock (%s)",
			t, date(t), model.Duration(b.limits.MaxFutureSkew), date(b.now.UnixMilli()))
	default:
		reason = fmt.Sprintf("timestamp %d (%s) is beyond the largest storable timestamp %d", t, date(t), kv.MaxTimestamp)
	}
	return &invalidError{reason: reason + " in series " + describe(ls), kind: kind}
}

// date writes a millisecond timestamp as RFC 3339 in UTC.
func date(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// maxQuoted is how many bytes of a label name or value a Reason quotes.
const maxQuoted = 128

// quote quotes s as Go does, shortened to maxQuoted bytes (at a rune boundary).
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// maxDescribed is about how many bytes of a series' labels a Reason writes;
// the labels after that are left out ("…").
const maxDescribed = 1024

// describe writes a series as labels.Labels.String does ({__name__="up",
// job="node"}; names quoted when they are not classic label names), with long
// names and values shortened and the labels after the first maxDescribed
// bytes left out, so that a reason stays short whatever was sent.
func describe(ls labels.Labels) string {
	var b strings.Builder
	b.WriteByte('{')
	i := 0
	ls.Range(func(l labels.Label) {
		if b.Len() > maxDescribed {
			return
		}
		if i > 0 {
			b.WriteString(", ")
		}
		i++
		switch {
		case model.LegacyValidation.IsValidLabelName(l.Name) && len(l.Name) <= maxQuoted:
			b.WriteString(l.Name)
		case model.LegacyValidation.IsValidLabelName(l.Name):
			b.WriteString(l.Name[:maxQuoted] + "…")
		default:
			b.WriteString(quote(l.Name))
		}
		b.WriteByte('=')
		b.WriteString(quote(l.Value))
		if b.Len() > maxDescribed && i < ls.Len() {
			b.WriteString(", …")
		}
	})
	b.WriteByte('}')
	return b.String()
}

// Native histograms.
//
// What Write checks of a histogram sample, beside its timestamp (as for a
// float), and the Rejection.Reason it gives (h the histogram's timestamp and
// date, p Prometheus' own error text):
//
//	histogram at timestamp h has neither an integer nor a float histogram in series s
//	histogram at timestamp h has the unknown counter reset hint 7 in series s
//	histogram at timestamp h has an invalid zero threshold NaN (it must be a number >= 0) in series s
//	histogram at timestamp h: p in series s        (histogram.Validate: spans and
//	                                               buckets, negative counts, count
//	                                               consistency, schemas, custom bounds)
//	histogram at timestamp h has 200 buckets, over the limit of 160, even at schema -4 in series s
//	histogram at timestamp h duplicates a float sample at the same timestamp in series s
//
// As Prometheus' receiver (storage/remote/write_handler.go, timeLimitAppender),
// a histogram whose exponential schema is above 8 but within Prometheus'
// reserved range (9..52) is stored at schema 8 (histogram.ReduceResolution)
// rather than rejected; schemas below -4 (other than -53, custom buckets)
// are rejected by Validate as Prometheus' TSDB rejects them. A histogram with
// more buckets than Limits.MaxHistogramBuckets is stored at the highest
// resolution at which it fits, as Prometheus' scrape bucket limit and Mimir's
// max_native_histogram_buckets do, and rejected when even schema -4 is over
// (or it has custom buckets, which cannot be merged). Stale markers (Sum =
// value.StaleNaN) are histograms like others: Validate allows a NaN Sum. The
// zero threshold must be a number >= 0, which Prometheus assumes but does not
// check: a NaN or negative threshold makes every later operation on the
// histogram meaningless. A histogram is never changed in place: a reduced one
// is a copy.
//
// A float sample and a histogram sample of one series at one timestamp in one
// request are a duplicate (Prometheus: ErrDuplicateSampleForTimestamp): the
// float is kept and the histogram rejected.

// Exemplars.
//
// Exemplars are checked as Prometheus' TSDB checks them (tsdb/exemplar.go,
// ValidateExemplar), after dropping labels with an empty value:
//
//	exemplar e: label name "n" is not unique in series s
//	exemplar e: label name "n" is not valid UTF-8 in series s   (value likewise)
//	exemplar e: label length for exemplar exceeds maximum of 128 UTF-8 characters in series s
//	exemplar e: timestamp t (date) is ... in series s        (the bounds of samples)
//	exemplar e: series s is not stored, and an exemplar alone does not create it
//
// where e is the exemplar as Prometheus writes one ({trace_id="abc"} 0.5 1000).
// An invalid exemplar does not fail its series or the request: it is listed in
// Result.RejectedExemplars and left out, as Prometheus' receiver logs exemplar
// errors without failing the request ("we don't fail the request on ingestion
// errors", write_handler.go); the 2.0 Exemplars-Written header counts only
// the stored ones.

var (
	// ErrInvalidHistogram: a native histogram sample is invalid (see above).
	ErrInvalidHistogram = errors.New("invalid native histogram")
	// ErrDuplicateSample: a histogram sample has the timestamp of a float
	// sample of the same series in the same request.
	ErrDuplicateSample = errors.New("duplicate sample for timestamp")
	// ErrInvalidExemplar: an exemplar is invalid; it is left out and does
	// not fail its series.
	ErrInvalidExemplar = errors.New("invalid exemplar")
)

// histogramError builds the *invalidError of histogram sample hs of series ls.
func histogramError(ls labels.Labels, t int64, problem string, kind error) error {
	return &invalidError{reason: fmt.Sprintf("histogram at timestamp %d (%s)%s in series %s", t, date(t), problem, describe(ls)), kind: kind}
}

// histogramBuckets is how many buckets hs has, both sides.
func histogramBuckets(hs cellenc.HistogramSample) int {
	if hs.H != nil {
		return len(hs.H.PositiveBuckets) + len(hs.H.NegativeBuckets)
	}
	return len(hs.FH.PositiveBuckets) + len(hs.FH.NegativeBuckets)
}

// checkHistogram validates histogram sample hs of series ls (its timestamp
// aside) and returns it as it is stored: hs itself, or a copy at a lower
// resolution (see above). On a problem it returns an *invalidError of kind
// ErrInvalidHistogram.
func (l Limits) checkHistogram(ls labels.Labels, hs cellenc.HistogramSample) (cellenc.HistogramSample, error) {
	if (hs.H == nil) == (hs.FH == nil) {
		return hs, histogramError(ls, hs.T, " has neither an integer nor a float histogram", ErrInvalidHistogram)
	}
	var (
		hint      histogram.CounterResetHint
		sch       int32
		threshold float64
	)
	if hs.H != nil {
		hint, sch, threshold = hs.H.CounterResetHint, hs.H.Schema, hs.H.ZeroThreshold
	} else {
		hint, sch, threshold = hs.FH.CounterResetHint, hs.FH.Schema, hs.FH.ZeroThreshold
	}
	if hint > histogram.GaugeType {
		return hs, histogramError(ls, hs.T, fmt.Sprintf(" has the unknown counter reset hint %d", hint), ErrInvalidHistogram)
	}
	if math.IsNaN(threshold) || threshold < 0 {
		return hs, histogramError(ls, hs.T, fmt.Sprintf(" has an invalid zero threshold %v (it must be a number >= 0)", threshold), ErrInvalidHistogram)
	}
	// Schemas 9..52: validate the structure as schema 8 (spans, buckets and
	// counts do not depend on the schema), then reduce a copy, which needs a
	// valid structure.
	reduce := histogram.IsExponentialSchemaReserved(sch) && sch > histogram.ExponentialSchemaMax
	var err error
	switch {
	case hs.H != nil && reduce:
		h := *hs.H
		h.Schema = histogram.ExponentialSchemaMax
		err = h.Validate()
	case hs.H != nil:
		err = hs.H.Validate()
	case reduce:
		fh := *hs.FH
		fh.Schema = histogram.ExponentialSchemaMax
		err = fh.Validate()
	default:
		err = hs.FH.Validate()
	}
	if err != nil {
		e := histogramError(ls, hs.T, ": "+err.Error(), ErrInvalidHistogram).(*invalidError)
		e.cause = err
		return hs, e
	}
	target := sch
	if reduce {
		target = histogram.ExponentialSchemaMax
	}
	n := histogramBuckets(hs)
	if max := l.MaxHistogramBuckets; max > 0 && n > max {
		if histogram.IsCustomBucketsSchema(sch) {
			return hs, histogramError(ls, hs.T, fmt.Sprintf(" has %d custom buckets, over the limit of %d", n, max), ErrInvalidHistogram)
		}
		// Each schema step down merges pairs of buckets: at most halves them.
		for target > histogram.ExponentialSchemaMin && n > max {
			target--
			n = bucketsAt(hs, target)
		}
		if n > max {
			return hs, histogramError(ls, hs.T, fmt.Sprintf(" has %d buckets, over the limit of %d, even at schema %d",
				histogramBuckets(hs), max, histogram.ExponentialSchemaMin), ErrInvalidHistogram)
		}
	}
	if target == sch {
		return hs, nil
	}
	// ReduceResolution cannot fail here: the schema is exponential, the
	// target lower and the structure valid.
	if hs.H != nil {
		h := hs.H.Copy()
		_ = h.ReduceResolution(target)
		hs.H = h
	} else {
		fh := hs.FH.Copy()
		_ = fh.ReduceResolution(target)
		hs.FH = fh
	}
	return hs, nil
}

// bucketsAt is how many buckets hs has once reduced to schema target, which
// is below its schema.
func bucketsAt(hs cellenc.HistogramSample, target int32) int {
	if hs.H != nil {
		h := hs.H.Copy()
		_ = h.ReduceResolution(target)
		return len(h.PositiveBuckets) + len(h.NegativeBuckets)
	}
	fh := hs.FH.Copy()
	_ = fh.ReduceResolution(target)
	return len(fh.PositiveBuckets) + len(fh.NegativeBuckets)
}

// exemplarError builds the *invalidError of exemplar e of series ls.
func exemplarError(ls labels.Labels, e exemplar.Exemplar, problem string) error {
	return &invalidError{reason: fmt.Sprintf("exemplar %s %s %d: %s in series %s",
		describe(e.Labels), strconv.FormatFloat(e.Value, 'g', -1, 64), e.Ts, problem, describe(ls)), kind: ErrInvalidExemplar}
}

// checkExemplar validates exemplar e of series ls against the time bounds b and
// returns it as it is stored (labels with an empty value dropped), or an
// *invalidError of kind ErrInvalidExemplar.
func (b timeBounds) checkExemplar(ls labels.Labels, e exemplar.Exemplar) (exemplar.Exemplar, error) {
	e.Labels = e.Labels.WithoutEmpty()
	if name, dup := e.Labels.HasDuplicateLabelNames(); dup {
		return e, exemplarError(ls, e, fmt.Sprintf("label name %s is not unique", quote(name)))
	}
	var (
		runes   int
		problem string
	)
	e.Labels.Range(func(l labels.Label) {
		switch {
		case problem != "":
		case !utf8.ValidString(l.Name):
			problem = fmt.Sprintf("label name %s is not valid UTF-8", quote(l.Name))
		case !utf8.ValidString(l.Value):
			problem = fmt.Sprintf("value of label %s is not valid UTF-8", quote(l.Name))
		}
		runes += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value)
	})
	if problem == "" && runes > exemplar.ExemplarMaxLabelSetLength {
		// Prometheus' storage.ErrExemplarLabelLength.
		problem = fmt.Sprintf("label length for exemplar exceeds maximum of %d UTF-8 characters", exemplar.ExemplarMaxLabelSetLength)
	}
	if problem != "" {
		return e, exemplarError(ls, e, problem)
	}
	if err := b.check(ls, e.Ts); err != nil {
		// The bounds' reason ends with the series; keep its first part.
		reason := strings.TrimSuffix(err.Error(), " in series "+describe(ls))
		return e, exemplarError(ls, e, reason)
	}
	return e, nil
}
