//go:build race

package db_test

// raceEnabled is true when the tests run with -race, which makes the PromQL
// engine several times slower: the rollup comparisons then run fewer steps.
const raceEnabled = true
