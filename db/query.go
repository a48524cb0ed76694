package db

import (
	"context"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/kv"
)

var (
	_ storage.Storage           = (*DB)(nil)
	_ storage.ExemplarQueryable = (*DB)(nil)
)

// Querier returns a Prometheus querier of the samples in [mint, maxt]
// (inclusive, milliseconds); see query.Reader.Querier. It fails with
// kv.ErrClosed after Close.
func (db *DB) Querier(mint, maxt int64) (storage.Querier, error) {
	if db.closed.Load() {
		return nil, fmt.Errorf("db: querier: %w", kv.ErrClosed)
	}
	return db.reader.Querier(mint, maxt)
}

// ChunkQuerier returns a Prometheus chunk querier of [mint, maxt] (inclusive,
// milliseconds), for remote read's streamed chunks (XOR, and histogram, float
// histogram and their start-timestamp forms where the samples are such); see
// query.Reader.ChunkQuerier.
func (db *DB) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	if db.closed.Load() {
		return nil, fmt.Errorf("db: chunk querier: %w", kv.ErrClosed)
	}
	return db.reader.ChunkQuerier(mint, maxt)
}

// ExemplarQuerier returns a Prometheus exemplar querier of the exemplar
// table, whose reads are bound to ctx; see query.Reader.ExemplarQuerier. It
// fails with kv.ErrClosed after Close, as Querier does; promapi serves
// /api/v1/query_exemplars through it.
func (db *DB) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	if db.closed.Load() {
		return nil, fmt.Errorf("db: exemplar querier: %w", kv.ErrClosed)
	}
	return db.reader.ExemplarQuerier(ctx)
}

// StartTime is math.MinInt64: the DB keeps no notion of its oldest sample
// (HBase's TTL expires cells on its own), so every range may hold data and is
// read. Prometheus uses a storage's StartTime only to skip ranges before it
// (fanout's remote-read "read recent" logic, the web UI), so claiming nothing is
// the answer that never hides data.
func (db *DB) StartTime() (int64, error) { return math.MinInt64, nil }
