package wire

import (
	"fmt"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// putBenchPoints is the number of datapoints of every benchmark body, as
// bench/opentsdb sends them and about what tcollector batches.
const putBenchPoints = 500

// tcollectorBody is an /api/put body as tcollector's HTTP sender writes it:
// Python's json.dumps (", " and ": " separators), float values, the host tag
// first, then the collector's tags; 100 series of one host over 5 intervals.
func tcollectorBody() []byte {
	b := []byte{'['}
	for k := range putBenchPoints / 100 {
		for s := range 100 {
			if len(b) > 1 {
				b = append(b, ", "...)
			}
			metric := fmt.Sprintf("proc.stat.m%02d", s/4)
			b = fmt.Appendf(b, `{"metric": %q, "timestamp": %d, "value": %s, "tags": {"host": "web01", "cpu": "%d", "type": "user"}}`,
				metric, 1_700_000_000+15*k, strconv.FormatFloat(float64(s*1000+k)/8, 'f', 1, 64), s%4)
		}
	}
	return append(b, ']')
}

// benchOpenTSDBBody is a body of bench/opentsdb's load (bench/opentsdb/load.go):
// compact JSON, 5 hosts × 100 metrics at one timestamp, every datapoint its own
// series, integer counters and float gauges.
func benchOpenTSDBBody() []byte {
	b := []byte{'['}
	for h := range putBenchPoints / 100 {
		for m := range 100 {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"metric":"bench.m%03d","timestamp":1700000000,"value":`, m)
			if m%2 == 0 {
				b = strconv.AppendInt(b, int64(1_000_000*(m+1)+(h%13+1)*17), 10)
			} else {
				b = strconv.AppendFloat(b, float64(2*((h*7+m*13)%1000)+1)/16, 'f', -1, 64)
			}
			b = fmt.Appendf(b, `,"tags":{"host":"host-%03d","dc":"dc%d"}}`, h, h%4)
		}
	}
	return append(b, ']')
}

// BenchmarkDecodePut decodes bodies of 500 datapoints; ns/point and
// allocs/point are per datapoint, cpu-ns/point the CPU time of the process
// (the GC's included) per datapoint, which a machine shared with other work
// disturbs less than the wall time.
func BenchmarkDecodePut(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"tcollector", tcollectorBody()},
		{"bench-opentsdb", benchOpenTSDBBody()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := DecodePut(bc.body)
			if err != nil || len(p.Datapoints) != putBenchPoints || p.Datapoints[0].Error != "" {
				b.Fatalf("DecodePut: %v", err)
			}
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpuBefore := processCPU(b)
			b.ResetTimer()
			for b.Loop() {
				if _, err := DecodePut(bc.body); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := processCPU(b) - cpuBefore
			runtime.ReadMemStats(&after)
			points := float64(b.N * putBenchPoints)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/points, "ns/point")
			b.ReportMetric(float64(cpu.Nanoseconds())/points, "cpu-ns/point")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/points, "allocs/point")
		})
	}
}

// processCPU is the user and system CPU time of the process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
