package promapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// unavailableDB is a real DB whose queriers' series sets fail with err, as the
// HBase store's do while a region splits or its server is dead.
type unavailableDB struct {
	*db.DB
	err error
}

func (d unavailableDB) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := d.DB.Querier(mint, maxt)
	return errQuerier{Querier: q, err: d.err}, err
}

func (d unavailableDB) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	q, err := d.DB.ChunkQuerier(mint, maxt)
	return errChunkQuerier{ChunkQuerier: q, err: d.err}, err
}

type errQuerier struct {
	storage.Querier
	err error
}

func (q errQuerier) Select(context.Context, bool, *storage.SelectHints, ...*labels.Matcher) storage.SeriesSet {
	return storage.ErrSeriesSet(q.err)
}

type errChunkQuerier struct {
	storage.ChunkQuerier
	err error
}

func (q errChunkQuerier) Select(context.Context, bool, *storage.SelectHints, ...*labels.Matcher) storage.ChunkSeriesSet {
	return errChunkSet{err: q.err}
}

type errChunkSet struct{ err error }

func (errChunkSet) Next() bool                        { return false }
func (errChunkSet) At() storage.ChunkSeries           { return nil }
func (s errChunkSet) Err() error                      { return s.err }
func (errChunkSet) Warnings() annotations.Annotations { return nil }

// TestRemoteReadStoreFailureStatus: Prometheus' read handler answers 500 for any
// error of the store; tsdb answers 503 for a store that does not answer (the
// reader retries: a region in transition) and keeps 500 for anything else, for
// both response types.
func TestRemoteReadStoreFailureStatus(t *testing.T) {
	b := schematest.Backends()[0]
	env := newQueryEnv(t, b, Options{})
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"unavailable", fmt.Errorf("index: read 5 forward series rows: hbase: get rows from x-series: %w", kv.ErrUnavailable), http.StatusServiceUnavailable},
		{"other", fmt.Errorf("a bug"), http.StatusInternalServerError},
	} {
		for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
			t.Run(tc.name+"/"+typ.String(), func(t *testing.T) {
				srv := httptest.NewServer(mustRouter(t, Options{DB: StaticDB(unavailableDB{DB: env.db, err: tc.err})}))
				defer srv.Close()
				raw, err := readRequest(typ).Marshal()
				if err != nil {
					t.Fatal(err)
				}
				req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/read", bytes.NewReader(snappy.Encode(nil, raw)))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Encoding", "snappy")
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.err.Error()) {
					t.Errorf("status %d, body %q; want %d naming %q", resp.StatusCode, body, tc.want, tc.err)
				}
			})
		}
	}
}
