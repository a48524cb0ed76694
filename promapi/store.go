package promapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
)

// DB is what every data endpoint serves from: writes, PromQL, the series and
// label endpoints, remote read, /api/v1/last and /api/v1/metadata. *db.DB
// satisfies it. A DB that is also a storage.ExemplarQueryable (*db.DB is)
// serves /api/v1/query_exemplars (exemplars.go); another answers none.
type DB interface {
	Writer
	storage.SampleAndChunkQueryable
	Reader
	// Ping reports whether the store answers now; /-/ready calls it.
	Ping(ctx context.Context) error
}

// Provider hands the endpoints their DB for one request: the DB once it can
// serve, or an error saying why not (yet) — the store is still being opened, or
// unreachable — which the endpoints answer with 503 so that clients retry.
// It is called once per request and must be cheap and safe for concurrent use.
type Provider func() (DB, error)

// StaticDB is the Provider of a DB that is always there (tests, tools).
func StaticDB(s DB) Provider {
	return func() (DB, error) { return s, nil }
}

// errNoStore: Options.DB is nil, so there is nothing to serve data from. HTTP
// 503, as for a store that is not open yet.
var errNoStore = fmt.Errorf("%w: no store is configured", errStoreUnavailable)

// store returns the DB of p for one request, or, when there is none (yet),
// an error that the endpoints answer with 503: errNoStore without a Provider,
// the Provider's error as it is when it says the store is unavailable
// (kv.ErrUnavailable: the store's condition, not promapi's), and otherwise the
// Provider's error wrapped in errStoreUnavailable.
func (p Provider) store() (DB, error) {
	if p == nil {
		return nil, errNoStore
	}
	s, err := p()
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, kv.ErrUnavailable):
		return nil, err
	default:
		return nil, fmt.Errorf("%w: %w", errStoreUnavailable, err)
	}
}

// queryable is the SampleAndChunkQueryable that Prometheus' API and remote-read
// handlers are built with once, at start: each Querier comes from the DB the
// Provider hands out at that moment.
type queryable struct{ p Provider }

func (q queryable) Querier(mint, maxt int64) (storage.Querier, error) {
	s, err := q.p.store()
	if err != nil {
		return nil, err
	}
	return s.Querier(mint, maxt)
}

// QueryReader is the read path of the DB the Provider hands out now, for
// query.Engine; nil when that DB has none (a DB other than *db.DB).
func (q queryable) QueryReader() (*query.Reader, error) {
	s, err := q.p.store()
	if err != nil {
		return nil, err
	}
	if src, ok := s.(query.ReaderSource); ok {
		return src.QueryReader()
	}
	return nil, nil
}

func (q queryable) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	s, err := q.p.store()
	if err != nil {
		return nil, err
	}
	return s.ChunkQuerier(mint, maxt)
}
