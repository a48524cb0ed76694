package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/promapi"
)

// registerAdminFlags binds --web.enable-admin-api. It is off by default, as
// in Prometheus: a delete cannot be undone.
func (o *serveOptions) registerAdminFlags() {
	o.flags.flag("web.enable-admin-api", "", "Serve POST /api/v1/admin/tsdb/delete_series (match[], start, end: "+
		"removes those samples from raw cells, chunks, rollups and exemplars before it answers 204) and "+
		"/api/v1/admin/tsdb/clean_tombstones (204, nothing to clean), as Prometheus does with this flag; "+
		"404 without it. Only users in neither --web.read-only-users nor --web.write-only-users may call them.").
		Default("false").BoolVar(&o.adminAPI)
	registerDeleteConcurrency(o.flags, &o.deleteSalts)
}

// admin is the promapi.Admin of tsdb serve when --web.enable-admin-api is
// set, else nil (the endpoints are not served).
func (o *serveOptions) admin(rdb *readyDB, logger *slog.Logger) promapi.Admin {
	if !o.adminAPI {
		return nil
	}
	return &serveAdmin{rdb: rdb, opts: o.compact, salts: o.deleteSalts, logger: logger}
}

// serveAdmin deletes through the server's DB, taking the compaction leases as
// the server's compaction worker (opts: owner, lease TTL, rollups, batch and
// apply bounds) would.
type serveAdmin struct {
	rdb    *readyDB
	opts   compact.WorkerOptions
	salts  int // --delete.concurrency
	logger *slog.Logger
	// deletes numbers the deletes, so that each has an owner name of its own
	// in the leases: two at once, or one and this process' compaction worker,
	// wait for each other rather than take each other's leases over.
	deletes atomic.Int64
}

func (a *serveAdmin) DeleteSeries(ctx context.Context, matcherSets [][]*labels.Matcher, mint, maxt int64) error {
	d := a.rdb.openDB()
	if d == nil {
		return fmt.Errorf("delete: the store is not open yet: %w", kv.ErrUnavailable)
	}
	began := time.Now()
	copts := a.opts.Compact
	copts.Logger = a.logger
	st, err := d.Delete(ctx, db.DeleteRequest{MatcherSets: matcherSets, Mint: mint, Maxt: maxt},
		compact.DeleteOptions{Owner: fmt.Sprintf("%s-delete%d", a.opts.Owner, a.deletes.Add(1)), LeaseTTL: a.opts.LeaseTTL, Salts: a.salts, Compact: copts})
	a.logger.Info("delete_series", "match", fmt.Sprint(matcherSets), "start", time.UnixMilli(mint).UTC(), "end", time.UnixMilli(maxt).UTC(),
		"series", st.Series, "rows", st.Rows, "samples", st.Samples, "raw_cells", st.RawCells, "chunks", st.Chunks,
		"rollup_cells", st.RollupCells, "exemplars", st.Exemplars, "unindexed_series_days", st.Unindexed, "duration", time.Since(began), "err", err)
	return err
}
