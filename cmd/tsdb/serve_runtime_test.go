package main

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

// TestSetGCPercent: --runtime.gogc sets the collector's target unless GOGC is
// set, and refuses a percentage that is not positive.
func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	logger := slog.New(slog.DiscardHandler)

	t.Setenv("GOGC", "")
	if got, err := setGCPercent(defaultGOGC, logger); err != nil || got != 50 {
		t.Fatalf("setGCPercent(50) = %d, %v; want 50", got, err)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("the collector's target is %d after setGCPercent(50), want 50", got)
	}
	if _, err := setGCPercent(0, logger); err == nil ||
		err.Error() != "--runtime.gogc=0: must be a positive percentage (set GOGC=off to turn the collector off)" {
		t.Errorf("setGCPercent(0) = %v, want the flag named", err)
	}

	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // what the runtime read from GOGC at start
	if got, err := setGCPercent(defaultGOGC, logger); err != nil || got != 80 {
		t.Errorf("with GOGC=80, setGCPercent(50) = %d, %v; want 80 left in force", got, err)
	}
	if got := debug.SetGCPercent(100); got != 80 {
		t.Errorf("with GOGC=80 the collector's target became %d", got)
	}
}
