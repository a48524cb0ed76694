package main

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/promapi"
)

// logIngestSummaries logs, every interval, one info line summing up what the write
// endpoints took in since the previous line, so that an operator sees data
// arriving without a dashboard; an interval in which no write request arrived
// logs nothing. With an embedded store's head (head reports it), the line ends
// with what the head holds: its cells, memory (bounded by
// --storage.head.max-bytes) and log on disk. It returns when ctx is done.
func logIngestSummaries(ctx context.Context, stats *promapi.IngestStats, head func() (kv.HeadStats, bool), every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := stats.Counts()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := stats.Counts()
		if d := now.Sub(last); d.Requests > 0 {
			args := []any{"interval", every, "requests", d.Requests, "failed_requests", d.FailedRequests,
				"series_written", d.Series, "samples_written", d.Samples, "samples_rejected", d.RejectedSamples,
				"samples_per_second", float64(d.Samples) / every.Seconds()}
			if hs, ok := head(); ok {
				args = append(args, "head_cells", hs.Cells, "head_bytes", hs.Bytes, "head_log_bytes", hs.LogBytes)
			}
			logger.Info("ingest summary", args...)
		}
		last = now
	}
}

// serverURL is the base URL clients reach the server at, for the start-up line:
// a listener on every interface (":9201") is reached at localhost.
func serverURL(addr net.Addr, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + "://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	if _, err := strconv.Atoi(port); err != nil {
		return scheme + "://" + addr.String()
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
