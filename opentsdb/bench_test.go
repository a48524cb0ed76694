package opentsdb

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// sliceSource is a Source over series held in memory.
type sliceSource []Series

func (s sliceSource) Series(_ context.Context, metric string, mint, maxt int64) ([]Series, error) {
	out := make([]Series, 0, len(s))
	for _, x := range s {
		out = append(out, Series{Tags: x.Tags, ID: x.ID, Points: x.Points})
	}
	return out, nil
}

// BenchmarkRun: 100 series of one hour at 10s, staggered by 1s so that sum
// interpolates at every timestamp; one query as Grafana's OpenTSDB data source
// asks it, raw and downsampled.
func BenchmarkRun(b *testing.B) {
	const series, step = 100, 10_000
	start := base
	src := make(sliceSource, series)
	for i := range src {
		pts := make([]Point, 0, 360)
		for t := start + int64(i%10)*1000; t < start+3600_000; t += step {
			pts = append(pts, Point{t, float64(i) + float64(t%7)})
		}
		src[i] = Series{Tags: map[string]string{"host": fmt.Sprintf("h%03d", i)}, ID: fmt.Sprint(i), Points: pts}
	}
	for _, m := range []string{"sum:m", "sum:1m-avg:m", "sum:rate:m", "p99:m"} {
		b.Run(m, func(b *testing.B) {
			req, err := ParseForm(map[string][]string{"start": {fmt.Sprint(start / 1000)}, "end": {fmt.Sprint(start/1000 + 3599)}, "m": {m}},
				timeOf(start))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Run(context.Background(), src, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(series*360*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

func timeOf(ms int64) time.Time { return time.UnixMilli(ms) }
