package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
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
func ingest(ctx context.Context, log *slog.Logger, client *http.Client, r *running, el *encodedLoad, total, jvmPid int) (ingestResult, error) {
	url := r.base + "/api/v1/write"
	var sent atomic.Int64
	var jvm0, jvm1 time.Duration
	if jvmPid != 0 {
		var err error
		if jvm0, err = cpuTime(jvmPid); err != nil {
			return ingestResult{}, err
		}
	}
	cpu0, err := cpuTime(r.pid())
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
				log.Info("ingesting", "server", r.kind.short, "sent", n, "of", total,
					"samples_per_s", int(float64(n)/time.Since(t0).Seconds()))
			}
		}
	})
	g, gctx := errgroup.WithContext(ctx)
	for sender := range el.bodies {
		g.Go(func() error {
			for i, body := range el.bodies[sender] {
				if err := post(gctx, client, url, body, el.v2); err != nil {
					return fmt.Errorf("%s: sender %d request %d: %w", r.kind.short, sender, i, err)
				}
				sent.Add(int64(el.samples[sender][i]))
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
	cpu1, err := cpuTime(r.pid())
	if err != nil {
		return ingestResult{}, err
	}
	if jvmPid != 0 {
		if jvm1, err = cpuTime(jvmPid); err != nil {
			return ingestResult{}, err
		}
	}
	return ingestResult{samples: int(sent.Load()), wall: wall, cpu: cpu1 - cpu0, jvmCPU: jvm1 - jvm0, jvmCPU0: jvm0}, nil
}

// settle waits until the process uses under 5 % of a core for a second, at most limit,
// and returns its CPU time then and whether it went idle.
func settle(ctx context.Context, pid int, limit time.Duration) (time.Duration, bool, error) {
	deadline := time.Now().Add(limit)
	prev, err := cpuTime(pid)
	if err != nil {
		return 0, false, err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := cpuTime(pid)
		if err != nil {
			return 0, false, err
		}
		if now-prev < 50*time.Millisecond {
			return now, true, nil
		}
		prev = now
	}
	return prev, false, nil
}

// post sends one remote-write request: a snappy-compressed protobuf WriteRequest
// (1.0) or io.prometheus.write.v2.Request (v2) with the headers the spec requires
// (Content-Encoding: snappy, Content-Type: application/x-protobuf, with
// ;proto=io.prometheus.write.v2.Request for 2.0, X-Prometheus-Remote-Write-Version:
// 0.1.0 or 2.0.0).
func post(ctx context.Context, client *http.Client, url string, body []byte, v2 bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("User-Agent", "hbtsdb-bench-compare")
	if v2 {
		req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
