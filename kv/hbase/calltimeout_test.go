package hbase

import (
	"context"
	"testing"
	"time"
)

// TestBeginCallBoundsCallsWithoutAnEarlierDeadline: a call whose context has no
// deadline, or a later one, gets Options.CallTimeout (so that a write to a down
// HBase fails instead of waiting for it); one with an earlier deadline keeps it.
func TestBeginCallBoundsCallsWithoutAnEarlierDeadline(t *testing.T) {
	opts := Options{Quorum: "zk:2181", RegionLookupTimeout: 3 * time.Second, RegionReadTimeout: 7 * time.Second}.withDefaults()
	if opts.CallTimeout != 7*time.Second {
		t.Fatalf("default CallTimeout = %s, want the larger of the lookup and read timeouts, 7s", opts.CallTimeout)
	}
	closing, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Store{opts: opts, closing: closing, cancel: cancel}

	later, cancelLater := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLater()
	earlier, cancelEarlier := context.WithTimeout(context.Background(), time.Second)
	defer cancelEarlier()
	earlierDeadline, _ := earlier.Deadline()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		bounds func(time.Time) bool
	}{
		{"no deadline gets CallTimeout", context.Background(), func(d time.Time) bool { return time.Until(d) <= opts.CallTimeout }},
		{"a later deadline gets CallTimeout", later, func(d time.Time) bool { return time.Until(d) <= opts.CallTimeout }},
		{"an earlier deadline is kept", earlier, func(d time.Time) bool { return d.Equal(earlierDeadline) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, done, err := s.beginCall(tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			deadline, ok := ctx.Deadline()
			if !ok || !tc.bounds(deadline) {
				t.Fatalf("deadline %v (set: %v), %s from now", deadline, ok, time.Until(deadline))
			}
		})
	}
}
