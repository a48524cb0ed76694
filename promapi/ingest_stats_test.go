package promapi

import (
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// The ingest counts follow what each request stored and rejected, over real
// HTTP, on both write endpoints, whatever answers the request.
func TestIngestStatsCountWhatWasStored(t *testing.T) {
	e := newEnv(t, schematest.Backends()[0], write.DefaultLimits(), WriteLimits{})
	stats := &IngestStats{}
	h, err := NewRouter(Options{DB: StaticDB(writeOnlyStore{e.writer}), Ingest: stats, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ts := e.now.UnixMilli()

	step := func(name string, send func() int, wantStatus int, want IngestCounts) {
		t.Helper()
		if got := send(); got != wantStatus {
			t.Fatalf("%s: status %d, want %d", name, got, wantStatus)
		}
		if got := stats.Counts(); got != want {
			t.Fatalf("%s: counts %+v, want %+v", name, got, want)
		}
	}
	step("a remote write of 2 series, 3 samples", func() int {
		return post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			v1Series(labels.FromStrings("__name__", "a", "host", "h"), prompb.Sample{Timestamp: ts - 1000, Value: 1}, prompb.Sample{Timestamp: ts, Value: 2}),
			v1Series(labels.FromStrings("__name__", "b", "host", "h"), prompb.Sample{Timestamp: ts, Value: 3}),
		}})).status
	}, 204, IngestCounts{Requests: 1, Series: 2, Samples: 3})
	step("a remote write with one invalid sample of 2", func() int {
		return post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), marshalV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			v1Series(labels.FromStrings("__name__", "c", "host", "h"), prompb.Sample{Timestamp: ts, Value: 1}),
			v1Series(labels.FromStrings("__name__", "d", "host", "h"), prompb.Sample{Timestamp: math.MinInt64, Value: 1}),
		}})).status
	}, 400, IngestCounts{Requests: 2, FailedRequests: 1, Series: 3, Samples: 4, RejectedSamples: 1})
	step("a put of 3 datapoints, one without tags", func() int {
		body := fmt.Sprintf(`[{"metric":"p","timestamp":%d,"value":1,"tags":{"host":"a"}},`+
			`{"metric":"p","timestamp":%d,"value":2,"tags":{"host":"b"}},{"metric":"p","timestamp":%d,"value":3,"tags":{}}]`,
			ts, ts, ts)
		return post(t, srv.URL+"/api/put", nil, []byte(body)).status
	}, 400, IngestCounts{Requests: 3, FailedRequests: 2, Series: 5, Samples: 6, RejectedSamples: 2})
	step("a body that is not snappy", func() int {
		return post(t, srv.URL+"/api/v1/write", remoteHeaders(ctV1), []byte("not snappy")).status
	}, 400, IngestCounts{Requests: 4, FailedRequests: 3, Series: 5, Samples: 6, RejectedSamples: 2})

	if d := stats.Counts().Sub(IngestCounts{Requests: 1, Series: 2, Samples: 3}); d != (IngestCounts{Requests: 3, FailedRequests: 3,
		Series: 3, Samples: 3, RejectedSamples: 2}) {
		t.Fatalf("Sub: %+v", d)
	}
}
