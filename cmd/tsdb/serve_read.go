package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/promapi"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
)

// queryFlags configure the PromQL engine and the read endpoints
// (promapi.QueryOptions). Names follow Prometheus' flags where there is one.
type queryFlags struct {
	lookbackDelta  *time.Duration
	maxSamples     *int
	timeout        *time.Duration
	maxConcurrency *int
	readSamples    *int
	readConcurrent *int
	readFrameBytes *units.Base2Bytes
	lastMaxN       *int
	selectSeries   *int
	selectSamples  *int
}

func registerQueryFlags(cmd flagger) queryFlags {
	d := promapi.DefaultQueryOptions()
	itoa := strconv.Itoa
	return queryFlags{
		lookbackDelta: durationFlag(flag(cmd, "query.lookback-delta", "How far back PromQL looks for the newest sample of a "+
			"series at each evaluation step (Prometheus' --query.lookback-delta)."), model.Duration(d.LookbackDelta).String()),
		maxSamples: flag(cmd, "query.max-samples", "Most samples one PromQL query may hold in memory at once; over it the "+
			"query fails with 422 (errorType execution).").Default(itoa(d.MaxSamples)).Int(),
		timeout: durationFlag(flag(cmd, "query.timeout", "Longest a PromQL query may take, waiting for a slot included; "+
			"over it: 503 (errorType timeout). A request's own timeout parameter can only shorten it."),
			model.Duration(d.Timeout).String()),
		maxConcurrency: flag(cmd, "query.max-concurrency", "PromQL queries executed at once; more wait for a slot "+
			"within --query.timeout.").Default(itoa(d.MaxConcurrent)).Int(),
		readSamples: flag(cmd, "remote-read.sample-limit", "Most samples one remote-read query may return in a SAMPLES "+
			"response (streamed chunk responses are bounded per frame instead).").Default(itoa(d.RemoteReadSampleLimit)).Int(),
		readConcurrent: flag(cmd, "remote-read.concurrent-limit", "Remote-read requests (POST /api/v1/read) served at "+
			"once; more wait.").Default(itoa(d.RemoteReadConcurrency)).Int(),
		readFrameBytes: flag(cmd, "remote-read.max-bytes-in-frame", "Largest frame of a STREAMED_XOR_CHUNKS remote-read "+
			"response, before compression.").Default(units.Base2Bytes(d.RemoteReadMaxBytesInFrame).String()).Bytes(),
		lastMaxN: flag(cmd, "query.last-max-n", "Largest n that GET /api/v1/last accepts (readings per series).").
			Default(itoa(d.LastMaxN)).Int(),
		selectSeries: flag(cmd, "query.max-series", "Most series one selector of a query (or one remote-read query) "+
			"may match; over it the query fails with 422 (errorType execution) naming the selector. 0: no limit.").
			Default(itoa(defaultSelectMaxSeries)).Int(),
		selectSamples: flag(cmd, "query.max-fetched-samples", "Most samples one selector of a query (or one "+
			"remote-read query) may read from the store; over it the query fails with 422. 0: no limit.").
			Default(itoa(defaultSelectMaxSamples)).Int(),
	}
}

// Defaults of the per-selector read limits: far above what a dashboard asks for
// (a million series is a whole fleet), low enough that one careless selector such
// as {__name__=~".+"} over a year cannot keep the store busy for minutes.
const (
	defaultSelectMaxSeries  = 1_000_000
	defaultSelectMaxSamples = 500_000_000
)

// readLimits are the query.Options of the per-selector limits.
func (f queryFlags) readLimits() query.Options {
	return query.Options{MaxSeries: *f.selectSeries, MaxSamples: *f.selectSamples}
}

// options are the promapi.QueryOptions of the flags.
func (f queryFlags) options() promapi.QueryOptions {
	return promapi.QueryOptions{
		LookbackDelta:             *f.lookbackDelta,
		MaxSamples:                *f.maxSamples,
		Timeout:                   *f.timeout,
		MaxConcurrent:             *f.maxConcurrency,
		RemoteReadSampleLimit:     *f.readSamples,
		RemoteReadConcurrency:     *f.readConcurrent,
		RemoteReadMaxBytesInFrame: int(*f.readFrameBytes),
		LastMaxN:                  *f.lastMaxN,
	}
}

// check refuses settings that cannot work (zero would silently take a default).
func (f queryFlags) check() error {
	switch {
	case *f.lookbackDelta <= 0:
		return fmt.Errorf("--query.lookback-delta must be positive, got %s", model.Duration(*f.lookbackDelta))
	case *f.maxSamples <= 0:
		return fmt.Errorf("--query.max-samples must be positive, got %d", *f.maxSamples)
	case *f.timeout <= 0:
		return fmt.Errorf("--query.timeout must be positive, got %s", model.Duration(*f.timeout))
	case *f.maxConcurrency <= 0:
		return fmt.Errorf("--query.max-concurrency must be positive, got %d", *f.maxConcurrency)
	case *f.readSamples <= 0:
		return fmt.Errorf("--remote-read.sample-limit must be positive, got %d", *f.readSamples)
	case *f.readConcurrent <= 0:
		return fmt.Errorf("--remote-read.concurrent-limit must be positive, got %d", *f.readConcurrent)
	case *f.readFrameBytes <= 0:
		return fmt.Errorf("--remote-read.max-bytes-in-frame must be positive, got %s", f.readFrameBytes)
	case *f.lastMaxN <= 0:
		return fmt.Errorf("--query.last-max-n must be positive, got %d", *f.lastMaxN)
	case *f.selectSeries < 0:
		return fmt.Errorf("--query.max-series must be 0 (no limit) or positive, got %d", *f.selectSeries)
	case *f.selectSamples < 0:
		return fmt.Errorf("--query.max-fetched-samples must be 0 (no limit) or positive, got %d", *f.selectSamples)
	}
	return nil
}

// buildInfo is /api/v1/status/buildinfo's answer. version is the Prometheus
// release whose HTTP API and PromQL engine hbtsdb embeds (the go.mod module
// v0.316.0 is Prometheus 3.16.0), so that clients such as Grafana, which enable
// features by the Prometheus version they read here, treat it as that release;
// branch and revision name hbtsdb's own build.
func buildInfo() promapi.BuildInfo {
	return promapi.BuildInfo{Version: prometheusAPIVersion, Revision: revision(), Branch: "hbtsdb-" + version,
		BuildUser: "hbtsdb", GoVersion: runtime.Version()}
}

// prometheusAPIVersion is the Prometheus release of the go.mod dependency.
const prometheusAPIVersion = "3.16.0"

// openDB is the DB once the store is open, and otherwise an error wrapping
// kv.ErrUnavailable.
func (s *storeState) openDB() (*db.DB, error) {
	s.mu.Lock()
	d, waiting := s.db, s.waiting
	s.mu.Unlock()
	if d == nil {
		if waiting == nil {
			waiting = errors.New("opening the store")
		}
		return nil, fmt.Errorf("%w: %v", kv.ErrUnavailable, waiting)
	}
	return d, nil
}

// readReady is promapi's ReadReady: nil once the store is open.
func (s *storeState) readReady() error {
	_, err := s.openDB()
	return err
}

// Querier is the DB's, for the PromQL engine and the series and label endpoints.
func (s *storeState) Querier(mint, maxt int64) (storage.Querier, error) {
	d, err := s.openDB()
	if err != nil {
		return nil, err
	}
	return d.Querier(mint, maxt)
}

// ChunkQuerier is the DB's, for STREAMED_XOR_CHUNKS remote read.
func (s *storeState) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	d, err := s.openDB()
	if err != nil {
		return nil, err
	}
	return d.ChunkQuerier(mint, maxt)
}

// Last is the DB reader's, for /api/v1/last.
func (s *storeState) Last(ctx context.Context, host, metric string, n int, sets ...[]*labels.Matcher) ([]query.LastSeries, error) {
	d, err := s.openDB()
	if err != nil {
		return nil, err
	}
	return d.Reader().Last(ctx, host, metric, n, sets...)
}

// Metadata is the DB reader's, for /api/v1/metadata?metric=.
func (s *storeState) Metadata(ctx context.Context, metric string) (schema.Metadata, bool, error) {
	d, err := s.openDB()
	if err != nil {
		return schema.Metadata{}, false, err
	}
	return d.Reader().Metadata(ctx, metric)
}

// ListMetadata is the DB reader's, for /api/v1/metadata.
func (s *storeState) ListMetadata(ctx context.Context, limit int) ([]schema.Metadata, error) {
	d, err := s.openDB()
	if err != nil {
		return nil, err
	}
	return d.Reader().ListMetadata(ctx, limit)
}
