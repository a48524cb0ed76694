package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strconv"
	"time"
)

// Load is the /api/put load: Hosts × Metrics series, Points points each,
// Interval apart, sent by Senders senders in requests of Batch datapoints.
//
// A series is one metric on one host: metric <Prefix>m<NNN>, tags
// host=host-<NNN> and dc=dc<host mod 4>. Even metrics are integer counters
// (JSON integers), odd ones gauges with a fractional part (JSON numbers with
// a '.'), so that OpenTSDB stores both of its value types. Sender s owns the
// hosts h with h mod Senders == s, as one collector per host (tcollector,
// scollector) sends only its own host's series, and sends them in time order:
// every series of its hosts at step k before any at step k+1.
type Load struct {
	Hosts    int
	Metrics  int // metric names, the same on every host
	Points   int // points per series
	Interval time.Duration
	Senders  int
	Batch    int // datapoints per request
	Gzip     bool
	Prefix   string // of every metric name: "bench." for the measured load
}

// Series is the number of series of the load.
func (l Load) Series() int { return l.Hosts * l.Metrics }

// Total is the number of datapoints of the load.
func (l Load) Total() int { return l.Series() * l.Points }

// Validate checks that every size is positive and the interval one that
// /api/put can carry: whole seconds (sent in seconds, as the collectors do)
// or whole milliseconds (sent in milliseconds).
func (l Load) Validate() error {
	switch {
	case l.Hosts < 1 || l.Metrics < 1 || l.Points < 1:
		return fmt.Errorf("load: -hosts, -metrics and -points must be at least 1, got %d, %d, %d", l.Hosts, l.Metrics, l.Points)
	case l.Hosts > 1000 || l.Metrics > 1000:
		return fmt.Errorf("load: -hosts and -metrics must be at most 1000 (three-digit names), got %d, %d", l.Hosts, l.Metrics)
	case l.Interval < time.Millisecond || l.Interval%time.Millisecond != 0:
		return fmt.Errorf("load: -interval must be a positive whole number of milliseconds, got %s", l.Interval)
	case l.Senders < 1 || l.Batch < 1:
		return fmt.Errorf("load: -senders and -batch must be at least 1, got %d, %d", l.Senders, l.Batch)
	}
	return nil
}

// inMillis reports whether timestamps are sent in milliseconds (13 digits,
// as OpenTSDB 2.x tells them apart) rather than seconds.
func (l Load) inMillis() bool { return l.Interval%time.Second != 0 }

// Encoded is a load's request bodies, built before the clock starts, so that
// each target receives the same bytes in the same order.
type Encoded struct {
	Load   Load
	Bodies [][][]byte // per sender, in sending order
	Points [][]int    // the datapoints of each body
	// Start and End are the first and last timestamps.
	Start, End time.Time
}

// Requests is the number of requests of e.
func (e *Encoded) Requests() int {
	n := 0
	for _, bs := range e.Bodies {
		n += len(bs)
	}
	return n
}

// Encode builds every request body of the load, the last point of every series
// at end (truncated to the unit timestamps are sent in).
func (l Load) Encode(end time.Time) (*Encoded, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	unit := time.Second
	if l.inMillis() {
		unit = time.Millisecond
	}
	end = end.Truncate(unit)
	start := end.Add(-time.Duration(l.Points-1) * l.Interval)
	e := &Encoded{Load: l, Bodies: make([][][]byte, l.Senders), Points: make([][]int, l.Senders), Start: start, End: end}
	metrics := make([]string, l.Metrics)
	for m := range metrics {
		metrics[m] = fmt.Sprintf("%sm%03d", l.Prefix, m)
	}
	for s := range l.Senders {
		var body []byte
		n := 0
		flush := func() error {
			body = append(body, ']')
			if l.Gzip {
				var err error
				if body, err = gzipped(body); err != nil {
					return err
				}
			}
			e.Bodies[s] = append(e.Bodies[s], body)
			e.Points[s] = append(e.Points[s], n)
			body, n = nil, 0
			return nil
		}
		for k := range l.Points {
			t := start.Add(time.Duration(k) * l.Interval)
			ts := t.Unix()
			if l.inMillis() {
				ts = t.UnixMilli()
			}
			for h := s; h < l.Hosts; h += l.Senders {
				for m, metric := range metrics {
					if n == 0 {
						body = append(make([]byte, 0, l.Batch*110), '[')
					} else {
						body = append(body, ',')
					}
					body = appendDatapoint(body, metric, h, ts, k, m)
					if n++; n == l.Batch {
						if err := flush(); err != nil {
							return nil, err
						}
					}
				}
			}
		}
		if n > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// appendDatapoint appends one datapoint as OpenTSDB's /api/put JSON, in the
// field order tcollector and scollector write it:
//
//	{"metric":"bench.m001","timestamp":1700000000,"value":12.5625,"tags":{"host":"host-007","dc":"dc3"}}
//
// The value of point k of metric m on host h: an integer counter for even m,
// a gauge of sixteenths that is never a whole number for odd m.
func appendDatapoint(b []byte, metric string, h int, ts int64, k, m int) []byte {
	b = append(b, `{"metric":"`...)
	b = append(b, metric...)
	b = append(b, `","timestamp":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"value":`...)
	if m%2 == 0 {
		b = strconv.AppendInt(b, int64(1_000_000*(m+1)+k*(h%13+1)*17), 10)
	} else {
		b = strconv.AppendFloat(b, float64(2*((h*7+m*13+k*31)%1000)+1)/16, 'f', -1, 64)
	}
	b = fmt.Appendf(b, `,"tags":{"host":"host-%03d","dc":"dc%d"}}`, h, h%4)
	return b
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		return nil, fmt.Errorf("load: gzip a request: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("load: gzip a request: %w", err)
	}
	return buf.Bytes(), nil
}
