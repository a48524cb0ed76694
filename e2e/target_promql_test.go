package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The synthetic target's families for the PromQL differential test
// (TestPrometheusRemoteWrite's query runs, see promql_diff_test.go): counters, gauges
// and a classic histogram with a few label values each, so that rate, sum by,
// histogram_quantile, topk and vector matching have something to work on. Every
// value is a function of the scrape number only, and no two series of a family
// share a value, so topk/bottomk have no ties whose order a store could change.
const (
	// metricRequests is a counter per (handler, method, code).
	metricRequests = "e2e_requests_total"
	// metricResetting is a counter that resets to 0 every resetEvery scrapes.
	metricResetting = "e2e_resetting_total"
	// metricTemperature is a gauge per (room, floor).
	metricTemperature = "e2e_temperature_celsius"
	// metricDuration is a classic histogram per handler.
	metricDuration = "e2e_request_duration_seconds"
	resetEvery     = 12
)

// requestSeries are the label values of metricRequests: handler, method, code.
var requestSeries = [][3]string{
	{"/api", "GET", "200"},
	{"/api", "GET", "500"},
	{"/api", "POST", "200"},
	{"/login", "GET", "200"},
	{"/login", "POST", "200"},
	{"/login", "POST", "401"},
}

// rooms are the label values of metricTemperature: room and floor.
var rooms = [][2]string{
	{"kitchen", "0"},
	{"garage", "0"},
	{"bedroom", "1"},
	{"attic", "2"},
}

// durationBuckets are the upper bounds of metricDuration's buckets (+Inf implied);
// durationHandlers its handler label values.
var (
	durationBuckets  = []float64{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5}
	durationHandlers = []string{"/api", "/login"}
)

// exposePromQLFamilies writes the PromQL families of scrape number n.
func exposePromQLFamilies(b *strings.Builder, n int) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

	fmt.Fprintf(b, "# HELP %s Requests served, by handler, method and code.\n# TYPE %s counter\n", metricRequests, metricRequests)
	for i, s := range requestSeries {
		// Series i grows by i+1.25 per scrape, with a little extra every third
		// scrape so that rates vary over time.
		v := float64(n)*(float64(i)+1.25) + float64(n/3)*0.5*float64(i+1)
		fmt.Fprintf(b, "%s{handler=%q,method=%q,code=%q} %s\n", metricRequests, s[0], s[1], s[2], f(v))
	}

	fmt.Fprintf(b, "# HELP %s A counter that resets every %d scrapes.\n# TYPE %s counter\n", metricResetting, resetEvery, metricResetting)
	fmt.Fprintf(b, "%s %s\n", metricResetting, f(float64(n%resetEvery)*3+0.5))

	fmt.Fprintf(b, "# HELP %s Room temperatures.\n# TYPE %s gauge\n", metricTemperature, metricTemperature)
	for i, r := range rooms {
		v := 18 + float64(i)*2.5 + 4*math.Sin(float64(n)/5+float64(i))
		fmt.Fprintf(b, "%s{room=%q,floor=%q} %s\n", metricTemperature, r[0], r[1], f(v))
	}

	fmt.Fprintf(b, "# HELP %s Request latency.\n# TYPE %s histogram\n", metricDuration, metricDuration)
	for h, handler := range durationHandlers {
		// Observations per scrape in each bucket (not cumulative); which bucket
		// gets the extra ones changes with n, so quantiles move.
		perScrape := []int{1, 2, 4, 6, 3, 2, 1, 1} // last: above the largest bound
		var cum, sum float64
		for j := range len(durationBuckets) + 1 {
			count := float64(n * perScrape[j] * (h + 1))
			if j == (n/4)%len(perScrape) {
				count += float64(n / 4 * 3)
			}
			cum += count
			ub := math.Inf(1)
			if j < len(durationBuckets) {
				ub = durationBuckets[j]
			}
			le := "+Inf"
			if !math.IsInf(ub, 1) {
				le = f(ub)
			}
			fmt.Fprintf(b, "%s_bucket{handler=%q,le=%q} %s\n", metricDuration, handler, le, f(cum))
			// A bucket's observations count at three quarters of its upper bound
			// (7.5 above the largest).
			mid := 7.5
			if j < len(durationBuckets) {
				mid = ub * 0.75
			}
			sum += count * mid
		}
		fmt.Fprintf(b, "%s_sum{handler=%q} %s\n", metricDuration, handler, f(sum))
		fmt.Fprintf(b, "%s_count{handler=%q} %s\n", metricDuration, handler, f(cum))
	}
}
