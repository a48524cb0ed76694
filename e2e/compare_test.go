package e2e

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// sample is one float sample: t in milliseconds, v bit-exact.
type sample struct {
	t int64
	v float64
}

// series is a label set and its samples in time order.
type series struct {
	labels  labels.Labels
	samples []sample
}

// seriesSet holds series by their canonical label string (labels.Labels.String,
// which sorts by name and quotes values), so two sets compare label sets exactly.
type seriesSet map[string]*series

// stats counts a set's series, samples and stale markers.
func (s seriesSet) stats() (seriesN, samples, stale int) {
	for _, se := range s {
		seriesN++
		for _, p := range se.samples {
			samples++
			if value.IsStaleNaN(p.v) {
				stale++
			}
		}
	}
	return seriesN, samples, stale
}

// withoutStale returns the set without stale markers, and without series left with
// no samples: what Prometheus' query API shows of the same data.
func (s seriesSet) withoutStale() seriesSet {
	out := seriesSet{}
	for k, se := range s {
		var kept []sample
		for _, p := range se.samples {
			if !value.IsStaleNaN(p.v) {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			out[k] = &series{labels: se.labels, samples: kept}
		}
	}
	return out
}

// filter returns the series whose labels match keep.
func (s seriesSet) filter(keep func(labels.Labels) bool) seriesSet {
	out := seriesSet{}
	for k, se := range s {
		if keep(se.labels) {
			out[k] = se
		}
	}
	return out
}

// sortedKeys returns the set's keys in order.
func (s seriesSet) sortedKeys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// valueEqual decides whether a reference value and a stored value are the same.
type valueEqual func(want, got float64) bool

// bitsEqual demands the same 64 bits of what remote write can carry: NaN payloads
// (stale markers) count, and -0 must arrive as 0 (see onTheWire).
func bitsEqual(want, got float64) bool { return sameBits(onTheWire(want), got) }

// sameBits reports whether a and b are the same 64 bits.
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// onTheWire is the value a receiver gets when Prometheus remote-writes v. It is v
// itself except for -0: Prometheus' (gogo-protobuf) encoders of remote write 1.0 and
// 2.0 omit a Sample.value that compares equal to 0 (`if m.Value != 0`), so -0 is not
// sent at all and every receiver decodes the proto3 default, +0. No receiver can keep
// what it never gets; the control experiment TestHarnessWithReferenceReceiver shows
// the same.
func onTheWire(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
}

// apiEqual compares with a value from Prometheus' JSON API, which spells every NaN
// "NaN": a NaN matches any NaN that is not a stale marker (the API never shows those);
// everything else must have the same bits as in bitsEqual.
func apiEqual(want, got float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got) && !value.IsStaleNaN(got)
	}
	return bitsEqual(want, got)
}

// compareSets lists every difference between a reference set (Prometheus) and the
// set tsdb stored: missing and extra series, missing and extra samples, different
// values. An empty result means the sets are equal.
func compareSets(want, got seriesSet, eq valueEqual) []string {
	var diffs []string
	for _, k := range want.sortedKeys() {
		w := want[k]
		g, ok := got[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("series %s: missing in tsdb (%d samples in Prometheus, first %s)", k, len(w.samples), fmtFirst(w.samples)))
			continue
		}
		diffs = append(diffs, compareSamples(k, w.samples, g.samples, eq)...)
	}
	for _, k := range got.sortedKeys() {
		if _, ok := want[k]; !ok {
			g := got[k]
			diffs = append(diffs, fmt.Sprintf("series %s: in tsdb only (%d samples, first %s)", k, len(g.samples), fmtFirst(g.samples)))
		}
	}
	return diffs
}

func fmtFirst(s []sample) string {
	if len(s) == 0 {
		return "none"
	}
	return fmtSample(s[0])
}

// compareSamples compares two time-ordered sample lists of one series.
func compareSamples(key string, want, got []sample, eq valueEqual) []string {
	var diffs []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j >= len(got) || (i < len(want) && want[i].t < got[j].t):
			diffs = append(diffs, fmt.Sprintf("series %s: sample %s missing in tsdb", key, fmtSample(want[i])))
			i++
		case i >= len(want) || got[j].t < want[i].t:
			diffs = append(diffs, fmt.Sprintf("series %s: sample %s in tsdb only", key, fmtSample(got[j])))
			j++
		default:
			if !eq(want[i].v, got[j].v) {
				diffs = append(diffs, fmt.Sprintf("series %s at %s: Prometheus %s, tsdb %s",
					key, fmtTime(want[i].t), fmtValue(want[i].v), fmtValue(got[j].v)))
			}
			i++
			j++
		}
	}
	return diffs
}

// fmtSample shows a sample with its timestamp in ms and UTC and its value's bits.
func fmtSample(s sample) string { return fmtTime(s.t) + " = " + fmtValue(s.v) }

func fmtTime(t int64) string {
	return fmt.Sprintf("%d (%s)", t, time.UnixMilli(t).UTC().Format("15:04:05.000"))
}

func fmtValue(v float64) string {
	name := strconv.FormatFloat(v, 'g', -1, 64)
	if value.IsStaleNaN(v) {
		name = "stale marker"
	}
	return fmt.Sprintf("%s [%#016x]", name, math.Float64bits(v))
}

// summarize formats at most max differences, and how many more there are.
func summarize(diffs []string, max int) string {
	var b strings.Builder
	for i, d := range diffs {
		if i == max {
			fmt.Fprintf(&b, "\n  … and %d more", len(diffs)-max)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(d)
	}
	return b.String()
}

// evalRange is what Prometheus' query_range answers for a plain selector of one
// series, computed from its raw samples: at each step t from start to end (ms,
// inclusive), the newest sample in (t-lookback, t], unless that sample is a stale
// marker, in which case the series has no value at t.
func evalRange(raw []sample, start, end, step, lookback int64) []sample {
	var out []sample
	for t := start; t <= end; t += step {
		// The newest sample at or before t.
		i, found := slices.BinarySearchFunc(raw, t, func(s sample, t int64) int {
			switch {
			case s.t < t:
				return -1
			case s.t > t:
				return 1
			}
			return 0
		})
		if !found {
			i--
		}
		if i < 0 || raw[i].t <= t-lookback || value.IsStaleNaN(raw[i].v) {
			continue
		}
		out = append(out, sample{t: t, v: raw[i].v})
	}
	return out
}
