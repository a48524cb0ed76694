package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// queryResult is the data of a /api/v1/query or /api/v1/query_range answer in a form
// that compares across servers: every result type as a set of series (a scalar or a
// string is one series without labels), a vector's samples at their evaluation time.
type queryResult struct {
	// resultType is Prometheus' name: vector, matrix, scalar or string.
	resultType string
	series     seriesSet
	// str is the value of a string result.
	str string
	// warnings and infos are the annotations of the answer, sorted.
	warnings, infos []string
	// stats is the answer's data.stats, when the request asked for it
	// (stats=all), else nil.
	stats json.RawMessage
}

// apiPost posts params as a form to base+path (a Prometheus HTTP API endpoint) and
// returns the envelope of a successful answer; an error answer is an error naming
// its type.
func apiPost(ctx context.Context, base, path string, params url.Values) (*apiResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("POST %s: read the answer: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("POST %s: %s: not an API response: %w: %s", path, resp.Status, err, truncate(string(body), 300))
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("POST %s: %s: %s: %s", path, resp.Status, r.ErrorType, r.Error)
	}
	return &r, nil
}

// apiQuery runs a query (path /api/v1/query or /api/v1/query_range) at base and
// returns its result.
func apiQuery(ctx context.Context, base, path string, params url.Values) (*queryResult, error) {
	r, err := apiPost(ctx, base, path, params)
	if err != nil {
		return nil, err
	}
	var raw struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
		Stats      json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal(r.Data, &raw); err != nil {
		return nil, fmt.Errorf("decode the query data: %w", err)
	}
	res := &queryResult{
		resultType: raw.ResultType,
		series:     seriesSet{},
		warnings:   slices.Sorted(slices.Values(r.Warnings)),
		infos:      slices.Sorted(slices.Values(r.Infos)),
		stats:      raw.Stats,
	}
	switch raw.ResultType {
	case "vector":
		var v []struct {
			Metric map[string]string  `json:"metric"`
			Value  [2]json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw.Result, &v); err != nil {
			return nil, fmt.Errorf("decode the vector: %w", err)
		}
		for _, e := range v {
			s, err := parsePoint(e.Value)
			if err != nil {
				return nil, err
			}
			if err := res.add(labels.FromMap(e.Metric), []sample{s}); err != nil {
				return nil, err
			}
		}
	case "matrix":
		var m []struct {
			Metric map[string]string    `json:"metric"`
			Values [][2]json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(raw.Result, &m); err != nil {
			return nil, fmt.Errorf("decode the matrix: %w", err)
		}
		for _, e := range m {
			var pts []sample
			for _, p := range e.Values {
				s, err := parsePoint(p)
				if err != nil {
					return nil, err
				}
				pts = append(pts, s)
			}
			if err := res.add(labels.FromMap(e.Metric), pts); err != nil {
				return nil, err
			}
		}
	case "scalar":
		var p [2]json.RawMessage
		if err := json.Unmarshal(raw.Result, &p); err != nil {
			return nil, fmt.Errorf("decode the scalar: %w", err)
		}
		s, err := parsePoint(p)
		if err != nil {
			return nil, err
		}
		res.series["scalar"] = &series{samples: []sample{s}}
	case "string":
		var p [2]json.RawMessage
		if err := json.Unmarshal(raw.Result, &p); err != nil {
			return nil, fmt.Errorf("decode the string: %w", err)
		}
		if err := json.Unmarshal(p[1], &res.str); err != nil {
			return nil, fmt.Errorf("decode the string: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown result type %q", raw.ResultType)
	}
	return res, nil
}

// add adds a series to the result; a label set twice is an error.
func (r *queryResult) add(ls labels.Labels, pts []sample) error {
	k := ls.String()
	if _, dup := r.series[k]; dup {
		return fmt.Errorf("series %s twice in one result", k)
	}
	r.series[k] = &series{labels: ls, samples: pts}
	return nil
}

// parsePoint parses an API [timestamp, "value"] pair.
func parsePoint(p [2]json.RawMessage) (sample, error) {
	ts, err := parseAPITimestamp(string(p[0]))
	if err != nil {
		return sample{}, err
	}
	var vs string
	if err := json.Unmarshal(p[1], &vs); err != nil {
		return sample{}, fmt.Errorf("value %s is not a string: %w", p[1], err)
	}
	v, err := parseAPIValue(vs)
	if err != nil {
		return sample{}, err
	}
	return sample{t: ts, v: v}, nil
}

// relTolerance is how far two query results' values may be apart, relative to the
// larger of them: the engine is the same, but a store may hand it samples in another
// series order, and float sums depend on their order.
const relTolerance = 1e-9

// closeEnough reports whether two query values are equal within relTolerance: NaN
// equals NaN, infinities equal themselves, and -0 equals 0.
func closeEnough(want, got float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case want == got:
		return true
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return false
	}
	return math.Abs(want-got) <= relTolerance*math.Max(math.Abs(want), math.Abs(got))
}

// compareResults lists the differences between a reference result (Prometheus) and
// another server's: result type, series, timestamps, values equal by eq
// (closeEnough: within relTolerance; sameBits: exactly, as the JSON prints them).
// Annotations are compared too: the same engine must say the same things.
func compareResults(want, got *queryResult, eq valueEqual) []string {
	if want.resultType != got.resultType {
		return []string{fmt.Sprintf("result type %s, want %s", got.resultType, want.resultType)}
	}
	if want.str != got.str {
		return []string{fmt.Sprintf("string %q, want %q", got.str, want.str)}
	}
	diffs := compareSets(want.series, got.series, eq)
	if !slices.Equal(want.warnings, got.warnings) {
		diffs = append(diffs, fmt.Sprintf("warnings %q, want %q", got.warnings, want.warnings))
	}
	if !slices.Equal(want.infos, got.infos) {
		diffs = append(diffs, fmt.Sprintf("infos %q, want %q", got.infos, want.infos))
	}
	return diffs
}

// apiSeries asks base's /api/v1/series for the series matching match in [start, end]
// (ms) and returns their label sets by labels.String.
func apiSeries(ctx context.Context, base string, match []string, start, end int64) (map[string]bool, error) {
	r, err := apiPost(ctx, base, "/api/v1/series", url.Values{"match[]": match, "start": {apiTime(start)}, "end": {apiTime(end)}})
	if err != nil {
		return nil, err
	}
	var list []map[string]string
	if err := json.Unmarshal(r.Data, &list); err != nil {
		return nil, fmt.Errorf("decode the series list: %w", err)
	}
	out := map[string]bool{}
	for _, m := range list {
		k := labels.FromMap(m).String()
		if out[k] {
			return nil, fmt.Errorf("series %s listed twice", k)
		}
		out[k] = true
	}
	return out, nil
}

// apiLabels asks base's /api/v1/labels for the label names of the series matching
// match in [start, end] (ms), in the order the server gives them.
func apiLabels(ctx context.Context, base string, match []string, start, end int64) ([]string, error) {
	r, err := apiPost(ctx, base, "/api/v1/labels", url.Values{"match[]": match, "start": {apiTime(start)}, "end": {apiTime(end)}})
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(r.Data, &names); err != nil {
		return nil, fmt.Errorf("decode the label names: %w", err)
	}
	return names, nil
}
