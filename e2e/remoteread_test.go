package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Content types of remote-read responses (Prometheus' storage/remote/codec.go and
// the remote-read spec in prompb/remote.proto).
const (
	contentTypeSampled  = "application/x-protobuf"
	contentTypeStreamed = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
)

// castagnoli is the CRC32 table of a streamed remote-read frame's checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// remoteReadAnswer is a decoded remote-read response of one query.
type remoteReadAnswer struct {
	contentType string
	set         seriesSet
	// frames, maxFrame and chunks describe a streamed response: how many frames,
	// the largest one's size in bytes, how many chunks.
	frames, maxFrame, chunks int
	// outside counts the samples of streamed chunks outside [mint, maxt], which
	// the spec allows (a client drops them); they are not in set.
	outside int
}

// postRemoteRead posts one remote-read query of [mint, maxt] (ms) with the
// matchers ms to url, accepting only respType, and returns the 200 response,
// whose body the caller reads and closes; any other status is an error with
// the start of the body.
func postRemoteRead(ctx context.Context, url string, mint, maxt int64, ms []*prompb.LabelMatcher, respType prompb.ReadRequest_ResponseType) (*http.Response, error) {
	req := &prompb.ReadRequest{
		Queries:               []*prompb.Query{{StartTimestampMs: mint, EndTimestampMs: maxt, Matchers: ms}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{respType},
	}
	raw, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := httpClient.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("remote read %s: %w", respType, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("remote read %s: %s: %s", respType, resp.Status, truncate(string(body), 300))
	}
	return resp, nil
}

// rawRemoteRead posts one remote-read query to url accepting only respType, and
// decodes the answer by hand: a snappy-compressed ReadResponse for SAMPLES; for
// STREAMED_XOR_CHUNKS a stream of frames, each a uvarint length, a 4-byte
// big-endian CRC32-Castagnoli of the message and a ChunkedReadResponse, whose XOR
// chunks are decoded with Prometheus' chunkenc. Samples of the set lie in
// [mint, maxt] (ms, inclusive), stale markers included.
func rawRemoteRead(ctx context.Context, url string, mint, maxt int64, ms []*prompb.LabelMatcher, respType prompb.ReadRequest_ResponseType) (*remoteReadAnswer, error) {
	resp, err := postRemoteRead(ctx, url, mint, maxt, ms, respType)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	ans := &remoteReadAnswer{contentType: resp.Header.Get("Content-Type"), set: seriesSet{}}
	switch respType {
	case prompb.ReadRequest_SAMPLES:
		if ans.contentType != contentTypeSampled {
			return nil, fmt.Errorf("remote read SAMPLES: Content-Type %q, want %q", ans.contentType, contentTypeSampled)
		}
		if enc := resp.Header.Get("Content-Encoding"); enc != "snappy" {
			return nil, fmt.Errorf("remote read SAMPLES: Content-Encoding %q, want snappy", enc)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		err = decodeSampled(body, ans)
		return ans, err
	case prompb.ReadRequest_STREAMED_XOR_CHUNKS:
		if ans.contentType != contentTypeStreamed {
			return nil, fmt.Errorf("remote read STREAMED_XOR_CHUNKS: Content-Type %q, want %q", ans.contentType, contentTypeStreamed)
		}
		err := decodeStreamed(resp.Body, mint, maxt, ans)
		return ans, err
	}
	return nil, fmt.Errorf("response type %s not supported by this test", respType)
}

// decodeSampled decodes a sampled response of one query into ans.
func decodeSampled(body []byte, ans *remoteReadAnswer) error {
	dec, err := snappy.Decode(nil, body)
	if err != nil {
		return fmt.Errorf("remote read SAMPLES: response is not snappy: %w", err)
	}
	var rr prompb.ReadResponse
	if err := rr.Unmarshal(dec); err != nil {
		return fmt.Errorf("remote read SAMPLES: decode ReadResponse: %w", err)
	}
	if len(rr.Results) != 1 {
		return fmt.Errorf("remote read SAMPLES: %d results for 1 query", len(rr.Results))
	}
	for _, ts := range rr.Results[0].Timeseries {
		ls := protoLabels(ts.Labels)
		if len(ts.Histograms) > 0 {
			return fmt.Errorf("remote read SAMPLES: series %s has native histograms, which this test does not expect", ls)
		}
		s := &series{labels: ls}
		for _, smp := range ts.Samples {
			if n := len(s.samples); n > 0 && s.samples[n-1].t >= smp.Timestamp {
				return fmt.Errorf("remote read SAMPLES: series %s: sample at %s after %s", ls, fmtTime(smp.Timestamp), fmtTime(s.samples[n-1].t))
			}
			s.samples = append(s.samples, sample{t: smp.Timestamp, v: smp.Value})
		}
		if _, dup := ans.set[ls.String()]; dup {
			return fmt.Errorf("remote read SAMPLES: series %s twice", ls)
		}
		ans.set[ls.String()] = s
	}
	return nil
}

// decodeStreamed reads the frames of a streamed response of one query into ans.
// A series may span frames (consecutive frames then carry the same labels); series
// must come in label order, as the spec requires.
func decodeStreamed(body io.Reader, mint, maxt int64, ans *remoteReadAnswer) error {
	r := bufio.NewReader(body)
	var last *series
	for {
		size, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("frame %d: length: %w", ans.frames, err)
		}
		var crc [4]byte
		if _, err := io.ReadFull(r, crc[:]); err != nil {
			return fmt.Errorf("frame %d: checksum: %w", ans.frames, err)
		}
		msg := make([]byte, size)
		if _, err := io.ReadFull(r, msg); err != nil {
			return fmt.Errorf("frame %d: %d-byte message: %w", ans.frames, size, err)
		}
		if got, want := crc32.Checksum(msg, castagnoli), binary.BigEndian.Uint32(crc[:]); got != want {
			return fmt.Errorf("frame %d: CRC32-Castagnoli of the message is %#08x, the frame says %#08x", ans.frames, got, want)
		}
		ans.frames++
		ans.maxFrame = max(ans.maxFrame, int(size))
		var cr prompb.ChunkedReadResponse
		if err := cr.Unmarshal(msg); err != nil {
			return fmt.Errorf("frame %d: decode ChunkedReadResponse: %w", ans.frames-1, err)
		}
		if cr.QueryIndex != 0 {
			return fmt.Errorf("frame %d: query index %d for a request of 1 query", ans.frames-1, cr.QueryIndex)
		}
		for _, cs := range cr.ChunkedSeries {
			ls := protoLabels(cs.Labels)
			switch {
			case last != nil && labels.Equal(last.labels, ls):
				// The series continues from the previous frame.
			case last != nil && labels.Compare(last.labels, ls) > 0:
				return fmt.Errorf("frame %d: series %s after %s: not in label order", ans.frames-1, ls, last.labels)
			default:
				if _, dup := ans.set[ls.String()]; dup {
					return fmt.Errorf("frame %d: series %s again after other series", ans.frames-1, ls)
				}
				last = &series{labels: ls}
				ans.set[ls.String()] = last
			}
			for _, c := range cs.Chunks {
				if err := appendChunk(last, c, mint, maxt, ans); err != nil {
					return fmt.Errorf("frame %d: series %s: %w", ans.frames-1, ls, err)
				}
			}
		}
	}
}

// appendChunk decodes one XOR chunk and appends its samples in [mint, maxt] to s.
func appendChunk(s *series, c prompb.Chunk, mint, maxt int64, ans *remoteReadAnswer) error {
	if c.Type != prompb.Chunk_XOR {
		return fmt.Errorf("chunk of type %s, want XOR", c.Type)
	}
	ans.chunks++
	chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
	if err != nil {
		return fmt.Errorf("chunk [%d, %d]: %w", c.MinTimeMs, c.MaxTimeMs, err)
	}
	it := chk.Iterator(nil)
	n := 0
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			return fmt.Errorf("chunk [%d, %d]: a %s sample in an XOR chunk", c.MinTimeMs, c.MaxTimeMs, vt)
		}
		t, v := it.At()
		n++
		if t < c.MinTimeMs || t > c.MaxTimeMs {
			return fmt.Errorf("chunk [%d, %d] holds a sample at %s", c.MinTimeMs, c.MaxTimeMs, fmtTime(t))
		}
		if t < mint || t > maxt {
			ans.outside++
			continue
		}
		if k := len(s.samples); k > 0 && s.samples[k-1].t >= t {
			return fmt.Errorf("sample at %s after one at %s", fmtTime(t), fmtTime(s.samples[k-1].t))
		}
		s.samples = append(s.samples, sample{t: t, v: v})
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("chunk [%d, %d]: %w", c.MinTimeMs, c.MaxTimeMs, err)
	}
	if n != chk.NumSamples() {
		return fmt.Errorf("chunk [%d, %d]: iterated %d samples, the chunk says %d", c.MinTimeMs, c.MaxTimeMs, n, chk.NumSamples())
	}
	return nil
}

// protoLabels turns remote-read labels into sorted labels.Labels.
func protoLabels(pls []prompb.Label) labels.Labels {
	b := labels.NewScratchBuilder(len(pls))
	for _, l := range pls {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels()
}

// readMatchers are the remote-read queries of the raw protocol test: every matcher
// type, the synthetic target's special values and stale markers included.
var readMatchers = [][]*prompb.LabelMatcher{
	{{Type: prompb.LabelMatcher_EQ, Name: "job", Value: "e2e-target"}},
	{
		{Type: prompb.LabelMatcher_RE, Name: labels.MetricName, Value: "e2e_(requests|resetting)_total"},
		{Type: prompb.LabelMatcher_NEQ, Name: "code", Value: "500"},
	},
	{
		{Type: prompb.LabelMatcher_EQ, Name: labels.MetricName, Value: "prometheus_http_requests_total"},
		{Type: prompb.LabelMatcher_NRE, Name: "handler", Value: "/api/v1/.*"},
	},
}

// checkRawRemoteRead asks tsdb's /api/v1/read for each of readMatchers over
// [mint, maxt], with each response type, and compares the samples with what
// Prometheus' own remote read gives for the same query: same series, same
// timestamps, the same bits (stale markers included).
func checkRawRemoteRead(ctx context.Context, t *testing.T, promURL, tsdbURL string, mint, maxt int64) {
	t.Helper()
	for _, ms := range readMatchers {
		want, err := rawRemoteRead(ctx, promURL+"/api/v1/read", mint, maxt, ms, prompb.ReadRequest_SAMPLES)
		if err != nil {
			t.Fatalf("Prometheus: %v", err)
		}
		if len(want.set) == 0 {
			t.Fatalf("Prometheus: remote read %s: no series; the comparison would prove nothing", fmtMatchers(ms))
		}
		for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
			got, err := rawRemoteRead(ctx, tsdbURL+"/api/v1/read", mint, maxt, ms, typ)
			if err != nil {
				t.Errorf("tsdb: %s: %v", fmtMatchers(ms), err)
				continue
			}
			if d := compareSets(want.set, got.set, bitsEqual); len(d) > 0 {
				t.Errorf("tsdb's remote read %s of %s differs from Prometheus' in %d places:%s", typ, fmtMatchers(ms), len(d), summarize(d, 10))
			}
			n, samples, stale := got.set.stats()
			t.Logf("tsdb remote read %s %s: %d series, %d samples (%d stale markers); %d frames (largest %d bytes), %d chunks, %d samples outside the range",
				typ, fmtMatchers(ms), n, samples, stale, got.frames, got.maxFrame, got.chunks, got.outside)
		}
	}
}

// fmtMatchers shows remote-read matchers as a PromQL selector.
func fmtMatchers(ms []*prompb.LabelMatcher) string {
	ops := map[prompb.LabelMatcher_Type]string{
		prompb.LabelMatcher_EQ: "=", prompb.LabelMatcher_NEQ: "!=", prompb.LabelMatcher_RE: "=~", prompb.LabelMatcher_NRE: "!~",
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s%s%q", m.Name, ops[m.Type], m.Value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// readProxy stands between a Prometheus that remote-reads and tsdb. It checks that
// Prometheus asks for streamed chunks first and, when forceSamples is set, takes
// STREAMED_XOR_CHUNKS out of the request's accepted response types, so that
// Prometheus gets — and must decode — a sampled response (its remote_read
// configuration cannot choose the type). It counts the Content-Types tsdb answered.
type readProxy struct {
	srv     *httptest.Server
	backend string // tsdb's /api/v1/read

	mu           sync.Mutex
	forceSamples bool
	answered     map[string]int // Content-Type -> responses
	err          error          // the first problem seen
}

func startReadProxy(t *testing.T, backend string) *readProxy {
	p := &readProxy{backend: backend, answered: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// setForceSamples switches between passing requests through and forcing SAMPLES,
// and resets the counts.
func (p *readProxy) setForceSamples(force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forceSamples = force
	p.answered = map[string]int{}
}

// result returns the Content-Types answered since the last setForceSamples and the
// first problem seen.
func (p *readProxy) result() (map[string]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.answered {
		out[k] = v
	}
	return out, p.err
}

func (p *readProxy) fail(w http.ResponseWriter, err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadGateway)
}

func (p *readProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.fail(w, fmt.Errorf("read proxy: request body: %w", err))
		return
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		p.fail(w, fmt.Errorf("read proxy: request is not snappy: %w", err))
		return
	}
	var req prompb.ReadRequest
	if err := req.Unmarshal(raw); err != nil {
		p.fail(w, fmt.Errorf("read proxy: decode ReadRequest: %w", err))
		return
	}
	if len(req.AcceptedResponseTypes) == 0 || req.AcceptedResponseTypes[0] != prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		p.fail(w, fmt.Errorf("read proxy: Prometheus accepts %v, expected STREAMED_XOR_CHUNKS first", req.AcceptedResponseTypes))
		return
	}
	p.mu.Lock()
	force := p.forceSamples
	p.mu.Unlock()
	if force {
		req.AcceptedResponseTypes = []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}
		if raw, err = req.Marshal(); err != nil {
			p.fail(w, fmt.Errorf("read proxy: encode ReadRequest: %w", err))
			return
		}
		body = snappy.Encode(nil, raw)
	}
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.backend, bytes.NewReader(body))
	if err != nil {
		p.fail(w, err)
		return
	}
	for _, h := range []string{"Content-Encoding", "Content-Type", "Accept-Encoding", "X-Prometheus-Remote-Read-Version", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	resp, err := httpClient.Do(out)
	if err != nil {
		p.fail(w, fmt.Errorf("read proxy: %w", err))
		return
	}
	defer resp.Body.Close()
	p.mu.Lock()
	p.answered[resp.Header.Get("Content-Type")]++
	p.mu.Unlock()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	// A streamed response is flushed frame by frame by tsdb; copying it whole is
	// fine for the small answers of this test.
	io.Copy(w, resp.Body)
}
