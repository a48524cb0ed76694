package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// stallTimeout is how long anything the tests wait on may go without visible
// progress before the wait fails: Prometheus sending samples, a process starting or
// stopping, one HTTP request, one read of the store. Waits are bounded by progress,
// never by a total budget, because on a loaded machine (a 2-core CI runner with
// other jobs) a healthy but slow run takes many times longer than an idle one; only
// a run that stopped moving is broken. It is generous because some healthy silences
// are long: Prometheus flushing its remote-write queues at shutdown logs nothing
// for up to flushDeadline, and tsdb creating pre-split tables on a loaded HBase
// logs nothing until it is ready. It must stay longer than flushDeadline
// (TestStallTimeoutOutlastsFlushDeadline).
const stallTimeout = 3 * time.Minute

// errNoProgress is the error of a wait that gave up because what it waited on
// stopped making progress.
var errNoProgress = errors.New("no progress")

// httpClient makes every HTTP request of the tests. Its timeout bounds one request,
// not a series of them: a request not answered within stallTimeout has stalled,
// while a long series of answered requests is progress.
var httpClient = &http.Client{Timeout: stallTimeout}

// clock is the time a wait measures stalls with; tests replace it.
type clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// waitForProgress calls poll every interval until it reports done. It keeps waiting
// as long as the progress poll reports changes, and gives up with errNoProgress
// once the progress has stayed the same for stallTimeout. what names what is
// awaited, as in "prometheus to send samples up to …"; it starts every error.
func waitForProgress[P comparable](what string, interval time.Duration, poll func() (progress P, done bool, err error)) error {
	return waitForProgressOn(realClock{}, stallTimeout, interval, what, poll)
}

// waitForProgressOn is waitForProgress on clock c with a stall of stall. A poll
// error ends the wait at once and is returned wrapped; a poll that cannot tell
// (an answer that did not come) should report its last progress and no error, so
// that only the stall decides. Progress values are compared with ==, and the
// first poll sets the baseline.
func waitForProgressOn[P comparable](c clock, stall, interval time.Duration, what string, poll func() (progress P, done bool, err error)) error {
	var last P
	var since time.Time // when last was first seen
	for first := true; ; first = false {
		p, done, err := poll()
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if done {
			return nil
		}
		now := c.Now()
		if first || p != last {
			last, since = p, now
		} else if stalled := now.Sub(since); stalled >= stall {
			return fmt.Errorf("wait for %s: %w for %s (progress still %v)", what, errNoProgress, stalled, last)
		}
		c.Sleep(interval)
	}
}
