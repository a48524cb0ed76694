package promapi

import (
	"context"
	"testing"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// Stored start timestamps reach PromQL, which uses them only when
// QueryOptions.UseStartTimestamps (--query.use-start-timestamps) says so, as
// Prometheus' use-start-timestamps feature: a sample whose start timestamp is
// after the previous sample's time is a counter reset even though the value
// went up.
func TestQueryUseStartTimestamps(t *testing.T) {
	b := schematest.Backends()[0] // the engine's option, not the store, is under test
	counter := write.Series{Labels: ls("__name__", "st_counter"), Samples: []cellenc.Sample{
		{T: t0 * 1000, V: 10, ST: (t0 - 30) * 1000},
		{T: (t0 + 60) * 1000, V: 20, ST: (t0 + 30) * 1000}, // started after the previous sample: a reset
		{T: (t0 + 120) * 1000, V: 30, ST: (t0 + 30) * 1000},
	}}
	for _, tc := range []struct {
		use  bool
		want string
	}{
		{false, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000120,"0"]}]}}`},
		{true, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000120,"1"]}]}}`},
	} {
		var opts Options
		opts.Query.UseStartTimestamps = tc.use
		e := newQueryEnv(t, b, opts)
		if res, err := e.db.Write(context.Background(), &write.Request{Series: []write.Series{counter}}); err != nil || len(res.Rejected) > 0 {
			t.Fatalf("write: %v %+v", err, res.Rejected)
		}
		code, _, body := e.get(t, false, "/api/v1/query", q("query", "resets(st_counter[5m])", "time", "1700000120"))
		if code != 200 || body != tc.want {
			t.Errorf("UseStartTimestamps %v: resets(st_counter[5m]) = %d %s\nwant %s", tc.use, code, body, tc.want)
		}
	}
}
