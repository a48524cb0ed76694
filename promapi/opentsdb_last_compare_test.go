package promapi

import (
	"fmt"
	"testing"
)

// qLastSeries are the series of q.last, which /api/query/last is asked about.
var qLastSeries = []map[string]string{
	{"host": "h1", "dc": "eu"},
	{"host": "h2", "dc": "eu"},
	{"host": "h3", "dc": "us"},
	{"host": "h1", "dc": "eu", "extra": "x"},
}

// lastDataset is q.last around hour (seconds, the start of the current
// hour): h1 newest in this hour, h2 newest three hours back, h3 in
// milliseconds and newest in this hour, h1+extra newest in the previous hour.
func lastDataset(hour int64) []compareDatapoint {
	var out []compareDatapoint
	add := func(i int, ts int64, ms bool, value string) {
		out = append(out, compareDatapoint{metric: "q.last", ts: ts, ms: ms, value: value, tags: qLastSeries[i]})
	}
	add(0, hour-3*3600+100, false, "1")
	add(0, hour-1800, false, "2")
	add(0, hour, false, "3")
	add(1, hour-2*3600-60, false, "4.5")
	add(1, hour-2*3600-30, false, "5.25")
	add(2, (hour-3600)*1000+500, true, "7")
	add(2, hour*1000, true, "8.5")
	add(3, hour-60, false, "9")
	return out
}

func (p *openTSDBPair) waitForTracking(t *testing.T, n int) {}

func (p *openTSDBPair) compareLast(t *testing.T)    { _ = fmt.Sprint() }
func (p *openTSDBPair) compareLookup(t *testing.T)  {}
func (p *openTSDBPair) compareFilters(t *testing.T) {}
func (p *openTSDBPair) compareGrafana(t *testing.T) {}
