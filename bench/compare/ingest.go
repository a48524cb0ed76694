package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hbtsdb/hbtsdb/bench/internal/proc"
	"github.com/hbtsdb/hbtsdb/bench/internal/rwload"
	"github.com/hbtsdb/hbtsdb/bench/internal/server"
)

// ingestResult is what one ingest cost one server.
type ingestResult struct {
	samples  int
	wall     time.Duration // first request to last answer
	cpu      time.Duration // server CPU over the same interval
	cpuIdle  time.Duration // server CPU until it went idle after the ingest
	settled  bool          // false when it was still busy after the settle limit
	diskByte int64         // apparent size of the data directory once idle after the ingest
	jvmCPU   time.Duration // the HBase JVM's CPU over the ingest, for a tsdb (HBase) with a known JVM
	jvmCPU0  time.Duration // the HBase JVM's CPU time when the ingest started
}

// ingest sends el to r's remote-write endpoint, a goroutine per sender, each sending
// its requests one at a time in order, and measures the server's CPU around it, and
// that of the process jvmPid too when it is not 0 (the HBase JVM a tsdb writes to).
func ingest(ctx context.Context, log *slog.Logger, client *http.Client, r *server.Running, el *rwload.EncodedLoad, total, jvmPid int) (ingestResult, error) {
	url := r.Base + "/api/v1/write"
	var sent atomic.Int64
	var jvm0, jvm1 time.Duration
	if jvmPid != 0 {
		var err error
		if jvm0, err = proc.CPUTime(jvmPid); err != nil {
			return ingestResult{}, err
		}
	}
	cpu0, err := proc.CPUTime(r.Pid())
	if err != nil {
		return ingestResult{}, err
	}
	t0 := time.Now()
	stopProgress := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-tick.C:
				n := sent.Load()
				log.Info("ingesting", "server", r.Kind.Short, "sent", n, "of", total,
					"samples_per_s", int(float64(n)/time.Since(t0).Seconds()))
			}
		}
	})
	g, gctx := errgroup.WithContext(ctx)
	for sender := range el.Bodies {
		g.Go(func() error {
			for i, body := range el.Bodies[sender] {
				if err := rwload.Post(gctx, client, url, body, el.V2); err != nil {
					return fmt.Errorf("%s: sender %d request %d: %w", r.Kind.Short, sender, i, err)
				}
				sent.Add(int64(el.Samples[sender][i]))
			}
			return nil
		})
	}
	err = g.Wait()
	wall := time.Since(t0)
	close(stopProgress)
	wg.Wait()
	if err != nil {
		return ingestResult{}, err
	}
	cpu1, err := proc.CPUTime(r.Pid())
	if err != nil {
		return ingestResult{}, err
	}
	if jvmPid != 0 {
		if jvm1, err = proc.CPUTime(jvmPid); err != nil {
			return ingestResult{}, err
		}
	}
	return ingestResult{samples: int(sent.Load()), wall: wall, cpu: cpu1 - cpu0, jvmCPU: jvm1 - jvm0, jvmCPU0: jvm0}, nil
}
