package e2e

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// specialValues are float64 values whose bits a store easily gets wrong: each is
// exposed by the synthetic target as e2e_special_value{kind="<name>"} and must come
// back from tsdb bit for bit.
var specialValues = map[string]float64{
	"neg_zero":        math.Copysign(0, -1),
	"zero":            0,
	"min_denormal":    math.SmallestNonzeroFloat64,
	"max_denormal":    math.Float64frombits(0x000fffffffffffff),
	"min_normal":      0x1p-1022,
	"max_float":       math.MaxFloat64,
	"neg_max_float":   -math.MaxFloat64,
	"pos_inf":         math.Inf(1),
	"neg_inf":         math.Inf(-1),
	"pi":              math.Pi,
	"one_third":       1.0 / 3,
	"two_pow_53_plus": 1<<53 + 2,
	"tiny_negative":   -1.2345678901234567e-300,
}

// flapEvery is how many scrapes one generation of e2e_flapping lasts; when the next
// generation replaces it, Prometheus writes a stale marker for the old one.
const flapEvery = 4

// target is a scrape target whose series exercise what remote write must carry
// exactly: special float values, NaN, a counter, series that come and go (stale
// markers), label values with escapes and non-ASCII text, long label values,
// explicit timestamps, and enough series to fill several remote-write batches.
type target struct {
	srv *httptest.Server

	mu      sync.Mutex
	scrapes int
}

// The synthetic target's metric families.
const (
	metricSpecial   = "e2e_special_value"
	metricNaN       = "e2e_nan"
	metricCounter   = "e2e_counter_total"
	metricChanging  = "e2e_changing"
	metricFlapping  = "e2e_flapping"
	metricLabels    = "e2e_labels"
	metricExplicitT = "e2e_explicit_timestamp"
	metricMany      = "e2e_many"
	manySeries      = 300
)

// labelEscapes are label values that need escaping in the text format or are not
// ASCII; they must arrive unchanged.
var labelEscapes = map[string]string{
	"quote":     `say "hi"`,
	"backslash": `C:\dir\file`,
	"newline":   "line one\nline two",
	"unicode":   "Grüße, 東京, 🚀",
	"long":      strings.Repeat("0123456789", 100),
	"spaces":    " leading and trailing ",
}

func startTarget(t *testing.T) *target {
	tg := &target{}
	tg.srv = httptest.NewServer(http.HandlerFunc(tg.serve))
	t.Cleanup(tg.srv.Close)
	return tg
}

// hostPort is the target's address for a scrape config.
func (tg *target) hostPort() string { return strings.TrimPrefix(tg.srv.URL, "http://") }

func (tg *target) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	tg.mu.Lock()
	n := tg.scrapes
	tg.scrapes++
	tg.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, exposition(n, time.Now()))
}

// exposition is the text-format page of scrape number n at time now.
func exposition(n int, now time.Time) string {
	var b strings.Builder
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

	fmt.Fprintf(&b, "# HELP %s Float64 values whose bits must survive remote write.\n# TYPE %s gauge\n", metricSpecial, metricSpecial)
	for kind, v := range specialValues {
		fmt.Fprintf(&b, "%s{kind=%q} %s\n", metricSpecial, kind, f(v))
	}
	fmt.Fprintf(&b, "# TYPE %s gauge\n%s NaN\n", metricNaN, metricNaN)

	fmt.Fprintf(&b, "# HELP %s A counter with fractional increments.\n# TYPE %s counter\n", metricCounter, metricCounter)
	fmt.Fprintf(&b, "%s %s\n", metricCounter, f(float64(n)*0.1))

	fmt.Fprintf(&b, "# TYPE %s gauge\n", metricChanging)
	fmt.Fprintf(&b, "%s{kind=\"sin\"} %s\n", metricChanging, f(math.Sin(float64(n))*1e10))
	fmt.Fprintf(&b, "%s{kind=\"exp\"} %s\n", metricChanging, f(math.Exp(float64(n%700))))
	fmt.Fprintf(&b, "%s{kind=\"unix_ms\"} %d\n", metricChanging, now.UnixMilli())

	fmt.Fprintf(&b, "# HELP %s One series per generation of %d scrapes; old generations go stale.\n# TYPE %s gauge\n", metricFlapping, flapEvery, metricFlapping)
	fmt.Fprintf(&b, "%s{generation=\"%d\"} %d\n", metricFlapping, n/flapEvery, n)

	fmt.Fprintf(&b, "# TYPE %s gauge\n", metricLabels)
	for name, v := range labelEscapes {
		fmt.Fprintf(&b, "%s{which=%q,value=\"%s\"} 1\n", metricLabels, name, escapeLabelValue(v))
	}

	// An explicit timestamp, 2.5 s in the past and not on a second boundary: the
	// sample's timestamp is the exposed one, not the scrape's.
	fmt.Fprintf(&b, "# TYPE %s gauge\n%s %d %d\n", metricExplicitT, metricExplicitT, n, now.UnixMilli()-2500+7)

	fmt.Fprintf(&b, "# TYPE %s gauge\n", metricMany)
	for i := range manySeries {
		fmt.Fprintf(&b, "%s{i=\"%03d\",parity=\"%d\"} %s\n", metricMany, i, i%2, f(float64(i*n)+float64(i)/7))
	}
	exposePromQLFamilies(&b, n)
	return b.String()
}

// escapeLabelValue escapes a label value for the text exposition format: backslash,
// double quote and line feed.
func escapeLabelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
