package main

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/hbtsdb/hbtsdb/importer"
)

// showProgress shows an import's progress until the returned function is
// called: a progress bar (of bytes or slices) with the sample rate and an ETA
// on errOut when --progress is bar (or auto, out being a terminal), else a log
// line every --progress.interval. The total is known once the source started,
// so the bar is made on the first tick with a total.
func showProgress(out, errOut io.Writer, o *importOptions, p *importer.Progress, logger *slog.Logger) func() {
	bar := o.progress == "bar" || (o.progress == "auto" && isTerminal(out))
	every := o.progressEvery
	if bar {
		every = 200 * time.Millisecond
	}
	started := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var pb *progressbar.ProgressBar
	tick := func() {
		total, at := p.Total.Load(), p.Done.Load()
		samples := p.Samples.Load()
		rate := float64(samples) / max(time.Since(started).Seconds(), 1e-3)
		if !bar {
			eta := "unknown"
			if at > 0 && total > 0 {
				eta = (time.Duration(float64(time.Since(started)) * float64(total-at) / float64(at))).Round(time.Second).String()
			}
			logger.Info("import progress", "done", at, "total", total, "samples", samples,
				"samples_per_second", int64(rate), "skipped", p.Skipped.Load(), "eta", eta)
			return
		}
		if pb == nil {
			if total == 0 {
				return
			}
			pb = progressbar.NewOptions64(total, progressbar.OptionSetWriter(errOut),
				progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
				progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond))
		}
		_ = pb.Set64(at)
		pb.Describe(fmt.Sprintf("%d samples, %.0f samples/s", samples, rate))
	}
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tick()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if pb != nil {
			tick()
			_ = pb.Finish()
			fmt.Fprintln(errOut)
		}
	}
}
