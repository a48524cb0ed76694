package promapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/golang/snappy"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
)

const (
	ctV1 = "application/x-protobuf"
	ctV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
)

// response is what a test request got back.
type response struct {
	status int
	body   string
	header http.Header
}

// post sends one request over real HTTP, on a connection of its own that is
// closed with the response (Request.Close), so that no keep-alive connection of
// the client, with its two goroutines, outlives the test.
func post(t testing.TB, url string, header map[string]string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Close = true
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: string(b), header: resp.Header}
}

// remoteHeaders are the headers Prometheus sends with a remote-write request.
func remoteHeaders(contentType string) map[string]string {
	h := map[string]string{
		"Content-Type":     contentType,
		"Content-Encoding": "snappy",
		"User-Agent":       "Prometheus/3.0.0",
	}
	if contentType == ctV2 {
		h["X-Prometheus-Remote-Write-Version"] = "2.0.0"
	} else {
		h["X-Prometheus-Remote-Write-Version"] = "0.1.0"
	}
	return h
}

func marshalV1(t testing.TB, req *prompb.WriteRequest) []byte {
	t.Helper()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, b)
}

func marshalV2(t testing.TB, req *writev2.Request) []byte {
	t.Helper()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, b)
}

// v1Series is one prompb series with float samples at (t, v) pairs.
func v1Series(lbls labels.Labels, samples ...prompb.Sample) prompb.TimeSeries {
	return prompb.TimeSeries{Labels: prompb.FromLabels(lbls, nil), Samples: samples}
}

// v1Labels builds prompb labels as given, without sorting or checks, for
// malformed-input tests.
func v1Labels(pairs ...string) []prompb.Label {
	var out []prompb.Label
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, prompb.Label{Name: pairs[i], Value: pairs[i+1]})
	}
	return out
}

// v2Request symbolizes series with writev2's own symbol table.
func v2Request(series ...v2In) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		ts := writev2.TimeSeries{
			LabelsRefs: st.SymbolizeLabels(s.labels, nil),
			Samples:    s.samples,
			Histograms: s.histograms,
			Exemplars:  s.exemplars,
		}
		if s.help != "" || s.unit != "" || s.typ != 0 {
			ts.Metadata = writev2.Metadata{Type: s.typ, HelpRef: st.Symbolize(s.help), UnitRef: st.Symbolize(s.unit)}
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	return req
}

// v2In is one series of a v2 request to build.
type v2In struct {
	labels     labels.Labels
	samples    []writev2.Sample
	histograms []writev2.Histogram
	exemplars  []writev2.Exemplar
	typ        writev2.Metadata_MetricType
	help, unit string
}

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeOnlyStore is a Store that writes with its Writer and serves no reads: the
// write endpoints' tests need nothing else.
type writeOnlyStore struct{ Writer }

var errWriteOnly = errors.New("promapi test: a write-only store serves no reads")

func (writeOnlyStore) Querier(int64, int64) (storage.Querier, error) { return nil, errWriteOnly }
func (writeOnlyStore) ChunkQuerier(int64, int64) (storage.ChunkQuerier, error) {
	return nil, errWriteOnly
}
func (writeOnlyStore) Last(context.Context, string, string, int, ...[]*labels.Matcher) ([]query.LastSeries, error) {
	return nil, errWriteOnly
}
func (writeOnlyStore) Metadata(context.Context, string) (schema.Metadata, bool, error) {
	return schema.Metadata{}, false, errWriteOnly
}
func (writeOnlyStore) ListMetadata(context.Context, int) ([]schema.Metadata, error) {
	return nil, errWriteOnly
}
func (writeOnlyStore) Ping(context.Context) error { return nil }

// writeRouter is the router with w as its store's Writer (nil: no store is
// configured) and the given write limits.
func writeRouter(t testing.TB, w Writer, limits WriteLimits, logger *slog.Logger) http.Handler {
	t.Helper()
	opts := Options{WriteLimits: limits, Logger: logger}
	if w != nil {
		opts.DB = StaticDB(writeOnlyStore{w})
	}
	h, err := NewRouter(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
