package promapi

import (
	"fmt"
	"net/http"
	"strconv"

	jsoniter "github.com/json-iterator/go"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/jsonutil"
)

// lastSeries is one element of /api/v1/last's data: Prometheus' range-vector
// ("matrix") element (web/api/v1's marshalSeriesJSON), with its float values
// and its native histograms each newest first, and each left out when there
// is none, as Prometheus leaves them out.
type lastSeries struct {
	Metric     labels.Labels `json:"metric"`
	Values     []lastPoint   `json:"values,omitempty"`
	Histograms []lastHPoint  `json:"histograms,omitempty"`
}

// lastPoint is one [unix seconds, "value"] pair, written exactly as Prometheus'
// query API writes a sample (util/jsonutil: milliseconds as a decimal fraction
// only when non-zero, values in the shortest form, 'e' notation below 1e-6 and
// from 1e21, "NaN", "+Inf", "-Inf").
type lastPoint struct {
	t int64
	v float64
}

func (p lastPoint) MarshalJSON() ([]byte, error) {
	stream := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
	defer jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(stream)
	stream.WriteArrayStart()
	jsonutil.MarshalTimestamp(p.t, stream)
	stream.WriteMore()
	jsonutil.MarshalFloat(p.v, stream)
	stream.WriteArrayEnd()
	return append([]byte(nil), stream.Buffer()...), stream.Error
}

// lastHPoint is one [unix seconds, histogram] pair, written exactly as
// Prometheus' query API writes a histogram sample (web/api/v1's
// marshalHPointJSON, util/jsonutil.MarshalHistogram): {"count": "c", "sum":
// "s", "buckets": [[boundaryRule, "lower", "upper", "count"], ...]}, the
// buckets with a count only, an integer histogram as its float form.
type lastHPoint struct {
	t  int64
	fh *histogram.FloatHistogram
}

func (p lastHPoint) MarshalJSON() ([]byte, error) {
	stream := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
	defer jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(stream)
	stream.WriteArrayStart()
	jsonutil.MarshalTimestamp(p.t, stream)
	stream.WriteMore()
	jsonutil.MarshalHistogram(p.fh, stream)
	stream.WriteArrayEnd()
	return append([]byte(nil), stream.Buffer()...), stream.Error
}

// last serves GET (or form POST) /api/v1/last: the newest readings of a metric
// on a host, newest first, read from the newest data rows and never from
// history (query.Reader.Last).
//
// Parameters:
//   - host (required): the series' host, the value of the first of the schema's
//     host labels (--schema.host-labels, [host, instance]) that a series has;
//   - metric (required): the metric name (__name__);
//   - n: how many readings per series, 1 to --query.last-max-n [1000]; default 1;
//   - match[] (repeatable): series selectors such as {job="node",cpu=~"0|1"}; a
//     series is returned when it matches any of them (all series of host and
//     metric without match[]), as match[] works in /api/v1/series.
//
// The answer is Prometheus' envelope whose data is a list of series sorted by
// labels, each with its labels and its n newest readings, newest first: float
// readings as [unix seconds, "value"] pairs under "values" (values as
// Prometheus formats them: "NaN", "+Inf", shortest round-trip decimal), native
// histograms as [unix seconds, {"count", "sum", "buckets"}] under
// "histograms", as Prometheus' query API writes a range vector's series (each
// key left out when the series has no reading of its kind among the n); a
// series with no readings is absent, so no series gives []:
//
//	GET /api/v1/last?host=web1&metric=cpu_seconds_total&n=2
//	{"status":"success","data":[
//	  {"metric":{"__name__":"cpu_seconds_total","cpu":"0","host":"web1"},
//	   "values":[[1700000060,"12.5"],[1700000045,"12.25"]]},
//	  {"metric":{"__name__":"cpu_seconds_total","cpu":"1","host":"web1"},
//	   "values":[[1700000060,"7"],[1700000045,"6.5"]]}]}
//
// A missing host or metric, an n that is not an integer in range or a match[]
// that does not parse is a 400 with errorType bad_data naming the parameter.
func (h *readHandler) last(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		respondError(w, errBadDataType, fmt.Errorf("error parsing form values: %w", err))
		return
	}
	host, metric := r.Form.Get("host"), r.Form.Get("metric")
	if host == "" {
		respondError(w, errBadDataType, fmt.Errorf(`missing parameter "host"`))
		return
	}
	if metric == "" {
		respondError(w, errBadDataType, fmt.Errorf(`missing parameter "metric"`))
		return
	}
	n := 1
	if s := r.Form.Get("n"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "n": %q is not an integer`, s))
			return
		}
		if n < 1 || n > h.limits.LastMaxN {
			respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "n": %d is not in 1..%d`, n, h.limits.LastMaxN))
			return
		}
	}
	p := parser.NewParser(parser.Options{})
	var sets [][]*labels.Matcher
	for _, s := range r.Form["match[]"] {
		ms, err := p.ParseMetricSelector(s)
		if err != nil {
			respondError(w, errBadDataType, fmt.Errorf(`invalid parameter "match[]": %w`, err))
			return
		}
		sets = append(sets, ms)
	}
	reader, err := h.reader()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	series, err := reader.Last(r.Context(), host, metric, n, sets...)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]lastSeries, 0, len(series))
	for _, s := range series {
		ls := lastSeries{Metric: s.Labels}
		for _, smp := range s.Samples {
			ls.Values = append(ls.Values, lastPoint{t: smp.T, v: smp.V})
		}
		for _, h := range s.Histograms {
			fh := h.FH
			if h.H != nil {
				fh = h.H.ToFloat(nil)
			}
			ls.Histograms = append(ls.Histograms, lastHPoint{t: h.T, fh: fh})
		}
		out = append(out, ls)
	}
	respondData(w, out)
}
