package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
)

// defaultGOGC is the garbage collector's target percentage serve runs with, as
// Prometheus has since v2.53: Go's default of 100 lets the heap grow to twice
// what is live between collections, and ingest's request buffers are short
// lived. Measured with bench/compare (docs/performance.md): peak RSS 270 -> 216
// MiB for 4.64 -> 5.31 CPU-s per million samples.
const defaultGOGC = 50

// registerRuntimeFlags binds --runtime.gogc.
func (o *serveOptions) registerRuntimeFlags() {
	o.gogc = defaultGOGC
	o.flags.int("runtime.gogc", "", "The Go garbage collector's target percentage (GOGC): lower keeps the heap "+
		"smaller for more CPU. The GOGC environment variable, when set, takes precedence.", &o.gogc)
}

// setGCPercent sets the garbage collector's target percentage to percent (a
// positive number, or an error naming the flag), unless the GOGC environment
// variable sets it, and returns what is in force.
func setGCPercent(percent int, logger *slog.Logger) (int, error) {
	if os.Getenv("GOGC") != "" {
		inForce := debug.SetGCPercent(-1)
		debug.SetGCPercent(inForce)
		return inForce, nil
	}
	if percent <= 0 {
		return 0, fmt.Errorf("--runtime.gogc=%d: must be a positive percentage (set GOGC=off to turn the collector off)", percent)
	}
	debug.SetGCPercent(percent)
	logger.Debug("Go GC percent set", "gogc", percent, "from", "--runtime.gogc")
	return percent, nil
}
