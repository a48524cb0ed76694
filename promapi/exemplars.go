package promapi

import (
	"context"
	"errors"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/query"
)

// GET/POST /api/v1/query_exemplars is Prometheus' own handler (web/api/v1):
// it parses query, extracts its selectors (parser.ExtractSelectors: for
// histogram_quantile(0.9, rate(x_bucket[5m])) the one selector x_bucket) and
// asks the ExemplarQueryable of the API for the exemplars of the series
// matching any selector in [start, end]. That queryable is the DB's when
// the DB is a storage.ExemplarQueryable: *db.DB is, and its ExemplarQuerier
// goes through the DB's closed check, as its other queriers do, before it
// reads the exemplar table (query/exemplars.go); a DB that is not answers
// no exemplars.
//
// Errors are mapped to Prometheus' error types, which its handler turns into
// statuses: a query over a limit (query.ErrLimitExceeded) is "execution" (422),
// a timeout "timeout" (503), anything else a store failure, "internal" (500).

// exemplarsOf is the ExemplarQueryable of the Prometheus API mounted over q.
func exemplarsOf(q storage.SampleAndChunkQueryable) storage.ExemplarQueryable {
	if p, ok := q.(queryable); ok {
		return exemplarQueryable(p)
	}
	if eq, ok := q.(storage.ExemplarQueryable); ok {
		return eq
	}
	return emptyExemplars{}
}

// exemplarQueryable hands out the exemplar querier of the DB the Provider
// has at the moment of each request.
type exemplarQueryable struct{ p Provider }

func (q exemplarQueryable) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	s, err := q.p.store()
	if err != nil {
		return nil, promql.ErrStorage{Err: err}
	}
	eqs, ok := s.(storage.ExemplarQueryable)
	if !ok {
		return emptyExemplars{}, nil
	}
	eq, err := eqs.ExemplarQuerier(ctx)
	if err != nil {
		return nil, promql.ErrStorage{Err: err}
	}
	return exemplarErrors{eq}, nil
}

// exemplarErrors maps a querier's errors to Prometheus' error types.
type exemplarErrors struct{ storage.ExemplarQuerier }

func (q exemplarErrors) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	res, err := q.ExemplarQuerier.Select(start, end, matchers...)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, query.ErrLimitExceeded):
		return nil, err
	case errors.Is(err, context.DeadlineExceeded):
		return nil, promql.ErrQueryTimeout(err.Error())
	case errors.Is(err, context.Canceled):
		return nil, promql.ErrQueryCanceled(err.Error())
	default:
		return nil, promql.ErrStorage{Err: err}
	}
}

// emptyExemplars answers /api/v1/query_exemplars with no exemplars, for a
// DB that has none to give.
type emptyExemplars struct{}

func (emptyExemplars) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return emptyExemplars{}, nil
}

// Select returns an empty, non-nil list, as Prometheus' exemplar storage does,
// so that the answer's data is [] rather than null.
func (emptyExemplars) Select(int64, int64, ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	return []exemplar.QueryResult{}, nil
}
