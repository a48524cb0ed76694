package main

import "github.com/hbtsdb/hbtsdb/promapi"

// registerOpenTSDBQueryFlags binds the bounds of OpenTSDB's /api/query and
// /api/query/last (promapi.OpenTSDBQueryOptions). The series and samples one sub-query reads
// are bounded by --query.max-series and --query.max-samples, as every read.
func (o *serveOptions) registerOpenTSDBQueryFlags() {
	b, q := o.flags, &o.http.OpenTSDBQuery
	*q = promapi.DefaultOpenTSDBQueryOptions()
	bytesFlag(b, "opentsdb.query.max-body-bytes", "promapi: OpenTSDBQueryOptions.MaxBodyBytes", "Largest POST body "+
		"of OpenTSDB's /api/query and /api/query/last; a larger one is answered 413.", &q.MaxBodyBytes)
	b.int("opentsdb.query.max-sub-queries", "promapi: OpenTSDBQueryOptions.MaxSubQueries", "Most sub-queries "+
		"(m= or timeseries= parameters, or queries[]) of one /api/query or /api/query/last request; more are answered 400.",
		&q.MaxSubQueries)
	b.int("opentsdb.query.max-fill-intervals", "promapi: OpenTSDBQueryOptions.MaxFillIntervals", "Most intervals a "+
		"filling downsampler (-zero, -nan, -null) of /api/query emits per series over the range read; more are answered 400.",
		&q.MaxFillIntervals)
}
