package main

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/hbtsdb/hbtsdb/kv/embedded"
	"github.com/hbtsdb/hbtsdb/schema"
)

// A signal can arrive while the store is being opened in the background. serve
// must wait for that goroutine and close what it opened before it returns: the
// proof is that the embedded directory's lock is free the moment run returns.
// The cancellation lands at a different point of the start each round (after a
// growing number of scheduler yields), so that some rounds stop before the store
// is open, some while it opens and some after.
func TestServeClosesTheStoreWhateverPointShutdownBegins(t *testing.T) {
	for round := range 40 {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--storage=embedded:" + dir, "--listen=127.0.0.1:0"}, io.Discard, io.Discard)
		}()
		for range round * 50 {
			runtime.Gosched()
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("round %d: serve exited %d after cancellation, want 0", round, code)
		}
		st, err := embedded.Open(context.Background(), dir, embedded.Options{Head: embedded.HeadOptions{Holds: schema.Transient}, SweepInterval: -1})
		if err != nil {
			t.Fatalf("round %d: the store is still held after serve returned: %v", round, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadyDBRefusesADBSetAfterClose(t *testing.T) {
	var r readyDB
	if _, err := r.DB(); err == nil || err.Error() != "store unavailable: the store is being opened" {
		t.Fatalf("Store() before open = %v", err)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	if r.set(nil) {
		t.Fatal("set after close kept the DB; the caller would never close it")
	}
	if _, err := r.DB(); err == nil || err.Error() != "the server is stopping: store closed" {
		t.Fatalf("Store() after close = %v", err)
	}
}
