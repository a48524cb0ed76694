// Package figures computes and prints the figures the benchmarks report
// (bench/compare, bench/steady, bench/opentsdb): CPU-seconds per million
// samples, numbers with their thousands grouped for a Markdown table, and the
// share of a load's samples that tsdb takes as late. It measures nothing
// itself (bench/internal/proc does) and imports no server code but schema.
package figures

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hbtsdb/hbtsdb/schema"
)

// PerMillion is d in CPU-seconds per million samples; NaN when samples is
// not positive (a figure the run does not have).
func PerMillion(d time.Duration, samples int64) float64 {
	if samples <= 0 {
		return math.NaN()
	}
	return d.Seconds() / (float64(samples) / 1e6)
}

// Group puts thin spaces between thousands of the integer part of a printed
// number: 654000 → 654 000; numbers of up to four digits stay as they are.
func Group(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	if len(intPart) <= 4 {
		return s
	}
	var b strings.Builder
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteString(" ")
		}
		b.WriteRune(ch)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// Format prints v with format (fmt verbs), thousands grouped; NaN (a figure
// the server does not have) is "–".
func Format(format string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return Group(fmt.Sprintf(format, v))
}

// LateShare is the share of samples, at every interval from start to end,
// that tsdb (with its default bucket width) takes as late when sent at now:
// their bucket ended more than its on-time window ago. Each late sample costs
// tsdb a pending mark per request and row besides its cell
// (schema/pending.go). A load whose span ends when it is sent has a share
// that depends on the minute of the hour.
func LateShare(start, end time.Time, interval time.Duration, now time.Time) float64 {
	width := schema.DefaultBucketWidth
	var n, late int
	for t := start; !t.After(end); t = t.Add(interval) {
		n++
		if !schema.IsOnTime(schema.BucketStart(t.UnixMilli(), width), width, now.UnixMilli()) {
			late++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(late) / float64(n)
}

// Plural is one when n is 1 and many otherwise.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Table is a Markdown table of header and rows: the first column as it is,
// the others right-aligned; an empty cell is printed as nothing ("| |").
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			if c != "" {
				b.WriteString(" " + c)
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|---|" + strings.Repeat("---:|", len(header)-1) + "\n")
	for _, r := range rows {
		line(r)
	}
	return b.String()
}
