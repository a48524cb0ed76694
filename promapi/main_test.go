package promapi

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any leaves a goroutine running: a
// handler or writer of ours, a store or server a test did not close, or a
// keep-alive connection of a test client (post closes its connections). Nothing
// is ignored: the stores (Pebble, gohbase) and httptest servers stop all their
// goroutines on Close. A dependency goroutine that outlives a test by design
// would be ignored here with goleak.IgnoreTopFunction, naming whose and why.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Prometheus' OTLP handler with delta-to-cumulative conversion
		// (OTLPOptions.ConvertDelta) starts the collector's processor, whose
		// stale-stream sweeper runs for the life of the process: the handler
		// has no Close to stop it.
		goleak.IgnoreTopFunction("github.com/open-telemetry/opentelemetry-collector-contrib/processor/"+
			"deltatocumulativeprocessor.(*deltaToCumulativeProcessor).Start.func1"))
}
