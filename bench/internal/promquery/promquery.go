// Package promquery asks a server's Prometheus HTTP API (tsdb, Prometheus,
// VictoriaMetrics) what the benchmarks ask it, and reads the answers: the time
// to the last byte, the series and samples of a matrix or vector, the query's
// statistics when asked for them.
package promquery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Get fetches u and returns the body and the time to the last byte. An answer
// other than 200 is an error.
func Get(ctx context.Context, client *http.Client, u string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("build request: %w", err)
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("get: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(t0)
	if err != nil {
		return nil, 0, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: %.300s", resp.Status, body)
	}
	return body, d, nil
}

// Answer is what CountResult reads of an answer of the Prometheus HTTP API.
type Answer struct {
	// Series and Samples count the result's series and their samples, floats
	// and histograms.
	Series, Samples int
	// QueryableSamples is stats.samples.totalQueryableSamples, the samples the
	// engine read from the store (answers to stats=all); 0 when absent.
	QueryableSamples int64
}

// CountResult reads an answer of resultType matrix or vector; an answer whose status
// is not success is an error.
func CountResult(body []byte) (Answer, error) {
	var ans struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value      json.RawMessage   `json:"value"`
				Values     []json.RawMessage `json:"values"`
				Histogram  json.RawMessage   `json:"histogram"`
				Histograms []json.RawMessage `json:"histograms"`
			} `json:"result"`
			Stats struct {
				Samples struct {
					TotalQueryableSamples int64 `json:"totalQueryableSamples"`
				} `json:"samples"`
			} `json:"stats"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return Answer{}, fmt.Errorf("decode answer %.200s: %w", body, err)
	}
	if ans.Status != "success" {
		return Answer{}, fmt.Errorf("answer status %q: %.200s", ans.Status, body)
	}
	a := Answer{Series: len(ans.Data.Result), QueryableSamples: ans.Data.Stats.Samples.TotalQueryableSamples}
	for _, r := range ans.Data.Result {
		a.Samples += len(r.Values) + len(r.Histograms)
		if len(r.Value) > 0 {
			a.Samples++
		}
		if len(r.Histogram) > 0 {
			a.Samples++
		}
	}
	return a, nil
}

// UnixSeconds writes t as the API takes times: Unix seconds with milliseconds.
func UnixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// Median returns the median of ds (the mean of the middle two for an even count).
func Median[T ~int64 | ~float64](ds []T) T {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Quantile returns the q-quantile (0 <= q <= 1) of ds, the nearest rank: the
// smallest value with at least q of the values at or below it.
func Quantile[T ~int64 | ~float64](ds []T, q float64) T {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
