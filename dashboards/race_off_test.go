//go:build !race

package dashboards

// raceEnabled is true when the tests run with -race; the tsdb binary under test
// is then built with -race too, so a data race in the server fails the test.
const raceEnabled = false
