//go:build !race

package db_test

// raceEnabled is true when the tests run with -race.
const raceEnabled = false
