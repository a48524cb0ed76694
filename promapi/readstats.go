package promapi

import (
	"context"
	"net/http"

	"github.com/prometheus/prometheus/util/stats"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/hbtsdb/hbtsdb/query"
)

// What a query read, by table: every PromQL query and remote read
// counts the cells its Selects read (query.ReadStats) into
// hbtsdb_query_cells_read_total{source}; a PromQL query asked for stats
// (stats=true or stats=all, as in Prometheus) also answers them in its
// response, beside Prometheus' own statistics:
//
//	"stats": {"timings": {...}, "samples": {...},
//	          "hbtsdb": {"rawCells": 0, "chunkCells": 0, "rollupCells": 48}}
//
// so a client (and our tests) can tell which tables answered, not only which
// plan was chosen.

// cellsRead is the "hbtsdb" part of a query's stats.
type cellsRead struct {
	RawCells    int64 `json:"rawCells"`
	ChunkCells  int64 `json:"chunkCells"`
	RollupCells int64 `json:"rollupCells"`
}

// queryStats is Prometheus' statistics of a query and what it read.
type queryStats struct {
	stats.BuiltinStats
	Hbtsdb cellsRead `json:"hbtsdb"`
}

func (s *queryStats) Builtin() stats.BuiltinStats { return s.BuiltinStats }

// renderStats is the API's stats renderer: Prometheus' (any non-empty stats
// parameter asks for them) with the cells the query read.
func renderStats(ctx context.Context, s *stats.Statistics, param string) stats.QueryStats {
	qs := v1.DefaultStatsRenderer(ctx, s, param)
	if qs == nil {
		return nil
	}
	out := &queryStats{BuiltinStats: qs.Builtin()}
	if rs := query.ReadStatsFrom(ctx); rs != nil {
		out.Hbtsdb = cellsRead{RawCells: rs.RawCells(), ChunkCells: rs.ChunkCells(), RollupCells: rs.RollupCells()}
	}
	return out
}

// withReadStats gives each request its query.ReadStats and, once it is
// answered, adds them to m's hbtsdb_query_cells_read_total (m may be nil).
func withReadStats(m *httpMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, rs := query.WithReadStats(r.Context())
		next.ServeHTTP(w, r.WithContext(ctx))
		if m != nil {
			m.cellsRead.WithLabelValues("raw").Add(float64(rs.RawCells()))
			m.cellsRead.WithLabelValues("chunk").Add(float64(rs.ChunkCells()))
			m.cellsRead.WithLabelValues("rollup").Add(float64(rs.RollupCells()))
		}
	})
}
