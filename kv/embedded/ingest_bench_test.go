package embedded

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/provision"
	"github.com/hbtsdb/hbtsdb/write"
)

// The load of the ingest measurement in docs/performance.md, shaped like node exporters scraped
// by Prometheus and remote-written: ingestHosts × ingestSeriesPerHost series,
// ingestSteps samples each at 15 s, sent by ingestSenders goroutines sharded by
// series as Prometheus' queue manager shards them, each request one sample per
// series entry (a request of more samples than a shard has series carries
// several steps of each, as Prometheus sends them).
const (
	ingestHosts         = 100
	ingestSeriesPerHost = 100
	ingestSenders       = 4
	ingestPhases        = 4 // CPU is reported per quarter of the load, to see it grow
	ingestInterval      = 15_000
)

// ingestSteps is how many 15 s steps the load has [240: one hour, 2.4 M samples];
// a longer load shows how the cost grows with what is stored.
var ingestSteps = flag.Int("ingest.steps", 240, "steps of 15 s in BenchmarkIngestRemoteWrite's load (a multiple of 4)")

// ingestFreeze is whether the head freezes rows (HeadOptions.FreezeCells,
// FreezeAfter) [true].
var ingestFreeze = flag.Bool("ingest.freeze", true, "whether BenchmarkIngestRemoteWrite's head freezes rows")

// ingestFreezeCells is the head's HeadOptions.FreezeCells [0: the default].
var ingestFreezeCells = flag.Int("ingest.freeze-cells", 0, "BenchmarkIngestRemoteWrite's HeadOptions.FreezeCells (0: the default)")

// BenchmarkIngestRemoteWrite drives db.DB.Write — the write path behind the
// remote-write handler, without HTTP and protobuf decoding — over an embedded store
// opened with the options `tsdb serve` uses, with 2.4 M samples (100 hosts × 100
// series × 240 steps of 15 s) from 4 concurrent senders. It reports the process's
// CPU time (utime+stime from getrusage, so it counts Pebble's background
// flushes and compactions, and is fair on a shared machine) per million samples, for
// the whole load and for its first and last quarter, and samples/s of wall time.
// Each iteration loads a fresh store; run it with -benchtime 1x:
//
//	go test -run '^$' -bench IngestRemoteWrite -benchtime 1x ./kv/embedded/
//	go test -run '^$' -bench 'IngestRemoteWrite/batch=2000' -benchtime 1x -cpuprofile cpu.out ./kv/embedded/
//
// head=on is what `tsdb serve` runs (raw samples and pending marks in the
// head, schema.Transient); head=off is --no-storage.head, every cell a Pebble
// key. head-B/sample is the head's memory when the load ends, while the
// maintenance freezes rows (headfreeze.go) every second behind it;
// head-B/sample-settled after one more maintenance pass (every row of
// FreezeCells live cells or more frozen: the steady state of rows still
// written); head-B/sample-idle once every row has been idle for FreezeAfter
// (all frozen). -ingest.freeze=false runs the head without freezing, to
// compare its cost on the same binary.
func BenchmarkIngestRemoteWrite(b *testing.B) {
	for _, head := range []bool{true, false} {
		for _, batch := range []int{2_000, 10_000} {
			name := fmt.Sprintf("head=%s/batch=%d", map[bool]string{true: "on", false: "off"}[head], batch)
			b.Run(name, func(b *testing.B) { benchmarkIngest(b, head, batch) })
		}
	}
}

func benchmarkIngest(b *testing.B, head bool, batch int) {
	var res ingestResult
	for range b.N {
		res.add(runIngest(b, head, batch))
	}
	n := float64(b.N)
	b.ReportMetric(res.cpuPerM/n, "cpu-s/M")
	b.ReportMetric(res.firstCPUPerM/n, "cpu-s/M-first¼")
	b.ReportMetric(res.lastCPUPerM/n, "cpu-s/M-last¼")
	b.ReportMetric(res.samplesPerSec/n, "samples/s")
	b.ReportMetric(res.compactedPerSample/n, "compacted-B/sample")
	b.ReportMetric(res.flushes/n, "flushes")
	if head {
		b.ReportMetric(res.headPerSample/n, "head-B/sample")
		b.ReportMetric(res.headSettledPerSample/n, "head-B/sample-settled")
		b.ReportMetric(res.headIdlePerSample/n, "head-B/sample-idle")
		b.ReportMetric(res.headLogPerSample/n, "head-log-B/sample")
	}
}

type ingestResult struct {
	cpuPerM, firstCPUPerM, lastCPUPerM, samplesPerSec float64
	compactedPerSample, flushes                       float64
	headPerSample, headLogPerSample                   float64 // the head's memory and log per sample
	// the head's memory per sample after one more maintenance pass: the rows
	// the load left with FreezeCells live cells or more frozen, as they are
	// in a steady state
	headSettledPerSample float64
	// and once every row is idle for FreezeAfter: all frozen but the few
	// cells too few for a block
	headIdlePerSample float64
}

func (r *ingestResult) add(o ingestResult) {
	r.cpuPerM += o.cpuPerM
	r.firstCPUPerM += o.firstCPUPerM
	r.lastCPUPerM += o.lastCPUPerM
	r.samplesPerSec += o.samplesPerSec
	r.compactedPerSample += o.compactedPerSample
	r.flushes += o.flushes
	r.headPerSample += o.headPerSample
	r.headLogPerSample += o.headLogPerSample
	r.headSettledPerSample += o.headSettledPerSample
	r.headIdlePerSample += o.headIdlePerSample
}

// cpuTime is the CPU time of this process so far, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runIngest(b *testing.B, head bool, batch int) ingestResult {
	b.StopTimer()
	ctx := context.Background()
	// As kv/backend opens the store for `tsdb serve` (no free-space check here).
	opts := Options{MinFreeBytes: -1}
	if head {
		opts.Head.Holds = schema.Transient
		opts.Head.FreezeCells = *ingestFreezeCells
		if !*ingestFreeze {
			opts.Head.FreezeCells, opts.Head.FreezeAfter = -1, -1
		}
	}
	st, err := Open(ctx, b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	settings := schema.DefaultEmbeddedSettings()
	topts := schema.DefaultTableOptions()
	topts.Salts = settings.Salts
	if err := provision.Create(ctx, st, settings, topts); err != nil {
		b.Fatal(err)
	}
	d, err := db.Open(ctx, db.Options{Store: st, CloseStore: true, Settings: settings,
		Write: write.Options{Limits: write.DefaultLimits()}})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()

	series := make([]labels.Labels, ingestHosts*ingestSeriesPerHost)
	for k := range series {
		series[k] = labels.FromStrings("__name__", fmt.Sprintf("node_bench_metric_%d", k%ingestSeriesPerHost),
			"instance", fmt.Sprintf("host-%d:9100", k/ingestSeriesPerHost), "job", "node")
	}
	// The last sample is a minute old: inside every write limit.
	t0 := time.Now().Add(-time.Duration(*ingestSteps)*ingestInterval*time.Millisecond - time.Minute).UnixMilli()
	var sent [ingestSenders]int

	// sendPhase makes sender s send its series' samples of steps [from, to),
	// batch samples a request.
	sendPhase := func(s, from, to int) error {
		req := write.Request{Series: make([]write.Series, 0, batch)}
		samples := make([]cellenc.Sample, batch)
		flush := func() error {
			if len(req.Series) == 0 {
				return nil
			}
			res, err := d.Write(ctx, &req)
			if err != nil {
				return err
			}
			if res.SamplesWritten != len(req.Series) {
				return fmt.Errorf("wrote %d samples of %d", res.SamplesWritten, len(req.Series))
			}
			sent[s] += len(req.Series)
			req.Series = req.Series[:0]
			return nil
		}
		for step := from; step < to; step++ {
			ts := t0 + int64(step)*ingestInterval
			for k := s; k < len(series); k += ingestSenders {
				// Counters for even metrics, gauges with a fractional part for odd ones.
				v := float64(step * (k%7 + 1))
				if k%2 == 1 {
					v = float64((k*31+step*17)%1000) / 8
				}
				i := len(req.Series)
				samples[i] = cellenc.Sample{T: ts, V: v}
				req.Series = append(req.Series, write.Series{Labels: series[k], Samples: samples[i : i+1 : i+1]})
				if len(req.Series) == batch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return flush()
	}

	var cpu [ingestPhases + 1]time.Duration
	start := time.Now()
	cpu[0] = cpuTime(b)
	b.StartTimer()
	per := *ingestSteps / ingestPhases
	for p := range ingestPhases {
		var wg sync.WaitGroup
		errs := make([]error, ingestSenders)
		for s := range ingestSenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[s] = sendPhase(s, p*per, (p+1)*per)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		cpu[p+1] = cpuTime(b)
	}
	b.StopTimer()
	wall := time.Since(start)

	total := 0
	for _, n := range sent {
		total += n
	}
	if want := ingestHosts * ingestSeriesPerHost * *ingestSteps; total != want {
		b.Fatalf("sent %d samples, want %d", total, want)
	}
	m := st.db.Metrics()
	var compacted uint64
	for _, l := range m.Levels {
		compacted += l.TableBytesCompacted
	}
	quarter := float64(total) / ingestPhases / 1e6
	hs, _ := st.HeadStats()
	settled, idle := hs, hs
	if head {
		if err := st.maintainHead(); err != nil {
			b.Fatal(err)
		}
		settled, _ = st.HeadStats()
		// As if no write came for FreezeAfter: two scans for idle rows.
		now := time.Now()
		for i := range 2 {
			if _, err := st.head.freezePass(now.Add(time.Duration(i+1) * st.headOpts.FreezeAfter)); err != nil {
				b.Fatal(err)
			}
		}
		idle, _ = st.HeadStats()
	}
	return ingestResult{
		headPerSample:        float64(hs.Bytes) / float64(total),
		headSettledPerSample: float64(settled.Bytes) / float64(total),
		headIdlePerSample:    float64(idle.Bytes) / float64(total),
		headLogPerSample:     float64(hs.LogBytes) / float64(total),
		cpuPerM:              (cpu[ingestPhases] - cpu[0]).Seconds() / (float64(total) / 1e6),
		firstCPUPerM:         (cpu[1] - cpu[0]).Seconds() / quarter,
		lastCPUPerM:          (cpu[ingestPhases] - cpu[ingestPhases-1]).Seconds() / quarter,
		samplesPerSec:        float64(total) / wall.Seconds(),
		compactedPerSample:   float64(compacted) / float64(total),
		flushes:              float64(m.Flush.Count),
	}
}
