package promapi

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// readQuery asks for host="web1" series of cpu with cpu="0" and mem, over the
// fixture's first 3 minutes.
func readRequest(types ...prompb.ReadRequest_ResponseType) *prompb.ReadRequest {
	return &prompb.ReadRequest{AcceptedResponseTypes: types, Queries: []*prompb.Query{{
		StartTimestampMs: t0 * 1000, EndTimestampMs: (t0 + 120) * 1000,
		Matchers: []*prompb.LabelMatcher{
			{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "cpu|mem"},
			{Type: prompb.LabelMatcher_EQ, Name: "host", Value: "web1"},
			{Type: prompb.LabelMatcher_NEQ, Name: "cpu", Value: "1"},
		},
	}}}
}

// wantRead is what readRequest must return, series sorted by labels.
var wantRead = []prompb.TimeSeries{
	{Labels: []prompb.Label{{Name: "__name__", Value: "cpu"}, {Name: "cpu", Value: "0"}, {Name: "host", Value: "web1"}, {Name: "job", Value: "node"}},
		Samples: []prompb.Sample{{Timestamp: t0 * 1000, Value: 0}, {Timestamp: (t0 + 60) * 1000, Value: 1}, {Timestamp: (t0 + 120) * 1000, Value: 2}}},
	{Labels: []prompb.Label{{Name: "__name__", Value: "mem"}, {Name: "host", Value: "web1"}},
		Samples: []prompb.Sample{{Timestamp: t0 * 1000, Value: 0.5}, {Timestamp: (t0 + 60) * 1000, Value: nan()}, {Timestamp: (t0 + 120) * 1000, Value: 1e-300}}},
}

func postRead(t *testing.T, e *queryEnv, req *prompb.ReadRequest) *http.Response {
	t.Helper()
	raw, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hreq, err := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/read", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		t.Fatal(err)
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp
}

func sameSeries(t *testing.T, got []prompb.TimeSeries) {
	t.Helper()
	if len(got) != len(wantRead) {
		t.Fatalf("got %d series, want %d: %v", len(got), len(wantRead), got)
	}
	for i, s := range got {
		w := wantRead[i]
		if len(s.Labels) != len(w.Labels) || len(s.Samples) != len(w.Samples) {
			t.Fatalf("series %d = %v, want %v", i, s, w)
		}
		for j := range s.Labels {
			if s.Labels[j].Name != w.Labels[j].Name || s.Labels[j].Value != w.Labels[j].Value {
				t.Errorf("series %d label %d = %v, want %v", i, j, s.Labels[j], w.Labels[j])
			}
		}
		for j := range s.Samples {
			if s.Samples[j].Timestamp != w.Samples[j].Timestamp || math.Float64bits(s.Samples[j].Value) != math.Float64bits(w.Samples[j].Value) {
				t.Errorf("series %d sample %d = %v (bits %x), want %v (bits %x)", i, j, s.Samples[j],
					math.Float64bits(s.Samples[j].Value), w.Samples[j], math.Float64bits(w.Samples[j].Value))
			}
		}
	}
}

// TestRemoteReadSamples: a SAMPLES remote read round trip with prompb and snappy.
func TestRemoteReadSamples(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newQueryEnv(t, b, Options{})
			resp := postRead(t, e, readRequest())
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-protobuf" {
				t.Errorf("Content-Type %q", ct)
			}
			if ce := resp.Header.Get("Content-Encoding"); ce != "snappy" {
				t.Errorf("Content-Encoding %q", ce)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := snappy.Decode(nil, body)
			if err != nil {
				t.Fatal(err)
			}
			var rr prompb.ReadResponse
			if err := rr.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
			if len(rr.Results) != 1 {
				t.Fatalf("%d results, want 1", len(rr.Results))
			}
			got := make([]prompb.TimeSeries, len(rr.Results[0].Timeseries))
			for i, ts := range rr.Results[0].Timeseries {
				got[i] = *ts
			}
			sameSeries(t, got)
		})
	}
}

// TestRemoteReadStreamedChunks: a STREAMED_XOR_CHUNKS round trip; every frame's
// CRC32-Castagnoli is checked by hand, then the stream is decoded with
// remote.NewChunkedReader and the XOR chunks with chunkenc.
func TestRemoteReadStreamedChunks(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := newQueryEnv(t, b, Options{})
			resp := postRead(t, e, readRequest(prompb.ReadRequest_STREAMED_XOR_CHUNKS))
			defer resp.Body.Close()
			if ct, want := resp.Header.Get("Content-Type"), "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"; ct != want {
				t.Errorf("Content-Type %q, want %q", ct, want)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			// Frame: uvarint(len) | CRC32-Castagnoli(data), big-endian | data.
			castagnoli := crc32.MakeTable(crc32.Castagnoli)
			frames := 0
			for rest := body; len(rest) > 0; frames++ {
				n, k := binary.Uvarint(rest)
				if k <= 0 || len(rest) < k+4+int(n) {
					t.Fatalf("frame %d: bad length prefix", frames)
				}
				sum := binary.BigEndian.Uint32(rest[k:])
				data := rest[k+4 : k+4+int(n)]
				if got := crc32.Checksum(data, castagnoli); got != sum {
					t.Fatalf("frame %d: CRC32-Castagnoli %08x, header says %08x", frames, got, sum)
				}
				rest = rest[k+4+int(n):]
			}
			if frames == 0 {
				t.Fatal("no frames")
			}
			cr := remote.NewChunkedReader(bytes.NewReader(body), 50<<20, nil)
			var got []prompb.TimeSeries
			for {
				var msg prompb.ChunkedReadResponse
				if err := cr.NextProto(&msg); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				if msg.QueryIndex != 0 {
					t.Errorf("query index %d", msg.QueryIndex)
				}
				for _, cs := range msg.ChunkedSeries {
					ts := prompb.TimeSeries{Labels: cs.Labels}
					for _, c := range cs.Chunks {
						if c.Type != prompb.Chunk_XOR {
							t.Fatalf("chunk type %v", c.Type)
						}
						ch, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
						if err != nil {
							t.Fatal(err)
						}
						it := ch.Iterator(nil)
						for it.Next() == chunkenc.ValFloat {
							ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: it.AtT(), Value: atV(it)})
						}
						if err := it.Err(); err != nil {
							t.Fatal(err)
						}
					}
					got = append(got, ts)
				}
			}
			sameSeries(t, got)
		})
	}
}

func atV(it chunkenc.Iterator) float64 {
	_, v := it.At()
	return v
}

// FuzzRemoteRead posts arbitrary bytes (snappy-compressed or as sent) to
// /api/v1/read over the query fixture: whatever arrives, the answer is 200 or a
// 4xx with a reason, never a panic (recoverPanics would make it a 500) nor
// another 5xx: the fixture's store does not fail. Seeds: the requests of the
// tests above, each response type, a length claim, nothing.
func FuzzRemoteRead(f *testing.F) {
	e := newQueryEnv(f, schematest.Backends()[0], Options{})
	h := mustRouter(f, Options{DB: StaticDB(e.db), Query: QueryOptions{RemoteReadSampleLimit: 1000}})
	for _, req := range []*prompb.ReadRequest{readRequest(), readRequest(prompb.ReadRequest_STREAMED_XOR_CHUNKS),
		copies(3, prompb.ReadRequest_SAMPLES), {Queries: []*prompb.Query{{StartTimestampMs: math.MinInt64,
			EndTimestampMs: math.MaxInt64, Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_NRE, Name: "x", Value: "("}}}}}} {
		raw, err := req.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, true)
	}
	f.Add(binary.AppendUvarint(nil, 30<<20), false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, body []byte, compress bool) {
		if compress {
			body = snappy.Encode(nil, body)
		}
		r := httptest.NewRequest(http.MethodPost, "/api/v1/read", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/x-protobuf")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch status := w.Code; {
		case status == http.StatusOK:
		case status >= 400 && status < 500:
			if len(bytes.TrimSpace(w.Body.Bytes())) == 0 {
				t.Fatalf("%d with no reason", status)
			}
		default:
			t.Fatalf("%d: %s", status, w.Body.Bytes())
		}
	})
}
