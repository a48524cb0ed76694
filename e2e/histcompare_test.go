package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

// histAnswer is a query API answer reduced to what must be equal between two
// servers, as text: each series' samples exactly as the JSON has them (the
// "value"/"values" and "histogram"/"histograms" fields, numbers as written: a
// float prints the same only if it has the same bits), the result type and the
// annotations.
type histAnswer struct {
	what       string
	resultType string
	series     map[string]string // labels.String() -> the series' samples as JSON text
	warnings   []string
	infos      []string
	// floats and histograms count the samples of a matrix or vector.
	floats, histograms int
}

// histAPIQuery runs a query against base and reduces the answer (histAnswer).
func histAPIQuery(ctx context.Context, base, path string, params url.Values) (*histAnswer, error) {
	r, err := apiPost(ctx, base, path, params)
	if err != nil {
		return nil, err
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return nil, fmt.Errorf("decode the query data: %w", err)
	}
	a := &histAnswer{
		what:       params.Get("query"),
		resultType: data.ResultType,
		series:     map[string]string{},
		warnings:   slices.Sorted(slices.Values(r.Warnings)),
		infos:      slices.Sorted(slices.Values(r.Infos)),
	}
	switch data.ResultType {
	case "vector", "matrix":
		var elems []map[string]json.RawMessage
		if err := json.Unmarshal(data.Result, &elems); err != nil {
			return nil, fmt.Errorf("decode the %s: %w", data.ResultType, err)
		}
		for _, e := range elems {
			var m map[string]string
			if err := json.Unmarshal(e["metric"], &m); err != nil {
				return nil, fmt.Errorf("decode a series' labels %s: %w", e["metric"], err)
			}
			key := labels.FromMap(m).String()
			if _, dup := a.series[key]; dup {
				return nil, fmt.Errorf("series %s twice in one result", key)
			}
			var parts []string
			for _, f := range []string{"value", "values", "histogram", "histograms"} {
				raw, ok := e[f]
				if !ok {
					continue
				}
				var c bytes.Buffer
				if err := json.Compact(&c, raw); err != nil {
					return nil, fmt.Errorf("series %s: %s: %w", key, f, err)
				}
				parts = append(parts, f+"="+c.String())
				var n []json.RawMessage
				switch f {
				case "value":
					a.floats++
				case "histogram":
					a.histograms++
				case "values":
					if json.Unmarshal(raw, &n) == nil {
						a.floats += len(n)
					}
				case "histograms":
					if json.Unmarshal(raw, &n) == nil {
						a.histograms += len(n)
					}
				}
			}
			a.series[key] = strings.Join(parts, " ")
		}
	default:
		var c bytes.Buffer
		if err := json.Compact(&c, data.Result); err != nil {
			return nil, fmt.Errorf("decode the %s: %w", data.ResultType, err)
		}
		a.series[""] = c.String()
	}
	return a, nil
}

// only returns a copy of a with the series that keep says it keeps.
func (a *histAnswer) only(keep func(key string) bool) *histAnswer {
	c := *a
	c.series = only(a.series, keep)
	return &c
}

// only returns the entries of m whose key keep keeps.
func only[M ~map[string]V, V any](m M, keep func(key string) bool) M {
	out := M{}
	for k, v := range m {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// diff lists the differences of got from a (the reference).
func (a *histAnswer) diff(got *histAnswer) []string {
	if a.resultType != got.resultType {
		return []string{fmt.Sprintf("result type %s, want %s", got.resultType, a.resultType)}
	}
	var d []string
	for _, k := range sortedKeys(a.series) {
		g, ok := got.series[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("series %s: missing in tsdb", k))
		case g != a.series[k]:
			d = append(d, fmt.Sprintf("series %s:\n      tsdb       %s\n      Prometheus %s", k, truncate(g, 600), truncate(a.series[k], 600)))
		}
	}
	for _, k := range sortedKeys(got.series) {
		if _, ok := a.series[k]; !ok {
			d = append(d, fmt.Sprintf("series %s: in tsdb only: %s", k, truncate(got.series[k], 300)))
		}
	}
	if !slices.Equal(a.warnings, got.warnings) {
		d = append(d, fmt.Sprintf("warnings %q, want %q", got.warnings, a.warnings))
	}
	if !slices.Equal(a.infos, got.infos) {
		d = append(d, fmt.Sprintf("infos %q, want %q", got.infos, a.infos))
	}
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// histPoint is one raw sample of a remote-read answer: a float (h and fh nil), an
// integer histogram or a float histogram.
type histPoint struct {
	t  int64
	f  float64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

func (p histPoint) String() string {
	switch {
	case p.h != nil:
		return fmt.Sprintf("%s: histogram %s hint %d", fmtTime(p.t), p.h, p.h.CounterResetHint)
	case p.fh != nil:
		return fmt.Sprintf("%s: float histogram %s hint %d", fmtTime(p.t), p.fh, p.fh.CounterResetHint)
	}
	return fmt.Sprintf("%s: %s", fmtTime(p.t), fmtValue(p.f))
}

// histSet is a remote-read answer: each series' raw samples in time order, by
// labels.String().
type histSet map[string][]histPoint

// histRemoteRead posts one remote-read query to url accepting only respType and
// decodes the answer, histograms included: a snappy-compressed ReadResponse for
// SAMPLES, for STREAMED_XOR_CHUNKS frames of ChunkedReadResponse (uvarint length,
// CRC32-Castagnoli, message) whose chunks — XOR, histogram and float histogram,
// with or without start timestamps — are decoded with Prometheus' chunkenc. Only
// samples in [mint, maxt] (ms, inclusive) are kept.
func histRemoteRead(ctx context.Context, url string, mint, maxt int64, ms []*prompb.LabelMatcher, respType prompb.ReadRequest_ResponseType) (histSet, error) {
	resp, err := postRemoteRead(ctx, url, mint, maxt, ms, respType)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	set := histSet{}
	switch respType {
	case prompb.ReadRequest_SAMPLES:
		if ct := resp.Header.Get("Content-Type"); ct != contentTypeSampled {
			return nil, fmt.Errorf("remote read SAMPLES: Content-Type %q, want %q", ct, contentTypeSampled)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		dec, err := snappy.Decode(nil, body)
		if err != nil {
			return nil, fmt.Errorf("remote read SAMPLES: response is not snappy: %w", err)
		}
		var rr prompb.ReadResponse
		if err := rr.Unmarshal(dec); err != nil {
			return nil, fmt.Errorf("remote read SAMPLES: decode ReadResponse: %w", err)
		}
		if len(rr.Results) != 1 {
			return nil, fmt.Errorf("remote read SAMPLES: %d results for 1 query", len(rr.Results))
		}
		for _, ts := range rr.Results[0].Timeseries {
			key := protoLabels(ts.Labels).String()
			if _, dup := set[key]; dup {
				return nil, fmt.Errorf("remote read SAMPLES: series %s twice", key)
			}
			var pts []histPoint
			for _, s := range ts.Samples {
				pts = append(pts, histPoint{t: s.Timestamp, f: s.Value})
			}
			for _, h := range ts.Histograms {
				p := histPoint{t: h.Timestamp}
				if h.IsFloatHistogram() {
					p.fh = h.ToFloatHistogram()
				} else {
					p.h = h.ToIntHistogram()
				}
				pts = append(pts, p)
			}
			slices.SortStableFunc(pts, func(a, b histPoint) int { return int(a.t - b.t) })
			for i := 1; i < len(pts); i++ {
				if pts[i].t == pts[i-1].t {
					return nil, fmt.Errorf("remote read SAMPLES: series %s: two samples at %s", key, fmtTime(pts[i].t))
				}
			}
			set[key] = pts
		}
	case prompb.ReadRequest_STREAMED_XOR_CHUNKS:
		if ct := resp.Header.Get("Content-Type"); ct != contentTypeStreamed {
			return nil, fmt.Errorf("remote read STREAMED_XOR_CHUNKS: Content-Type %q, want %q", ct, contentTypeStreamed)
		}
		if err := decodeHistStreamed(resp.Body, mint, maxt, set); err != nil {
			return nil, fmt.Errorf("remote read STREAMED_XOR_CHUNKS: %w", err)
		}
	default:
		return nil, fmt.Errorf("response type %s not supported by this test", respType)
	}
	for k, pts := range set {
		if len(pts) == 0 {
			delete(set, k)
		}
	}
	return set, nil
}

// chunkEncodings maps remote read's chunk types to chunkenc's encodings.
var chunkEncodings = map[prompb.Chunk_Encoding]chunkenc.Encoding{
	prompb.Chunk_XOR:                chunkenc.EncXOR,
	prompb.Chunk_HISTOGRAM:          chunkenc.EncHistogram,
	prompb.Chunk_FLOAT_HISTOGRAM:    chunkenc.EncFloatHistogram,
	prompb.Chunk_XOR2:               chunkenc.EncXOR2,
	prompb.Chunk_HISTOGRAM_ST:       chunkenc.EncHistogramST,
	prompb.Chunk_FLOAT_HISTOGRAM_ST: chunkenc.EncFloatHistogramST,
}

// decodeHistStreamed reads the frames of a streamed answer into set; series come
// in label order and may span frames.
func decodeHistStreamed(body io.Reader, mint, maxt int64, set histSet) error {
	r := bufio.NewReader(body)
	var last labels.Labels
	for frame := 0; ; frame++ {
		size, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("frame %d: length: %w", frame, err)
		}
		var crc [4]byte
		if _, err := io.ReadFull(r, crc[:]); err != nil {
			return fmt.Errorf("frame %d: checksum: %w", frame, err)
		}
		msg := make([]byte, size)
		if _, err := io.ReadFull(r, msg); err != nil {
			return fmt.Errorf("frame %d: %d-byte message: %w", frame, size, err)
		}
		if got, want := crc32.Checksum(msg, castagnoli), binary.BigEndian.Uint32(crc[:]); got != want {
			return fmt.Errorf("frame %d: CRC32-Castagnoli %#08x, the frame says %#08x", frame, got, want)
		}
		var cr prompb.ChunkedReadResponse
		if err := cr.Unmarshal(msg); err != nil {
			return fmt.Errorf("frame %d: decode ChunkedReadResponse: %w", frame, err)
		}
		for _, cs := range cr.ChunkedSeries {
			ls := protoLabels(cs.Labels)
			key := ls.String()
			switch {
			case !last.IsEmpty() && labels.Equal(last, ls):
			case !last.IsEmpty() && labels.Compare(last, ls) > 0:
				return fmt.Errorf("frame %d: series %s after %s: not in label order", frame, ls, last)
			default:
				if _, dup := set[key]; dup {
					return fmt.Errorf("frame %d: series %s again after other series", frame, ls)
				}
				set[key] = nil
				last = ls
			}
			for _, c := range cs.Chunks {
				enc, ok := chunkEncodings[c.Type]
				if !ok {
					return fmt.Errorf("frame %d: series %s: chunk of type %s", frame, ls, c.Type)
				}
				chk, err := chunkenc.FromData(enc, c.Data)
				if err != nil {
					return fmt.Errorf("frame %d: series %s: %s chunk [%d, %d]: %w", frame, ls, c.Type, c.MinTimeMs, c.MaxTimeMs, err)
				}
				it := chk.Iterator(nil)
				n := 0
				for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
					n++
					var p histPoint
					switch vt {
					case chunkenc.ValFloat:
						p.t, p.f = it.At()
					case chunkenc.ValHistogram:
						p.t, p.h = it.AtHistogram(nil)
					case chunkenc.ValFloatHistogram:
						p.t, p.fh = it.AtFloatHistogram(nil)
					}
					if p.t < c.MinTimeMs || p.t > c.MaxTimeMs {
						return fmt.Errorf("frame %d: series %s: chunk [%d, %d] holds a sample at %s", frame, ls, c.MinTimeMs, c.MaxTimeMs, fmtTime(p.t))
					}
					if p.t < mint || p.t > maxt {
						continue
					}
					pts := set[key]
					if k := len(pts); k > 0 && pts[k-1].t >= p.t {
						return fmt.Errorf("frame %d: series %s: sample at %s after one at %s", frame, ls, fmtTime(p.t), fmtTime(pts[k-1].t))
					}
					set[key] = append(pts, p)
				}
				if err := it.Err(); err != nil {
					return fmt.Errorf("frame %d: series %s: chunk [%d, %d]: %w", frame, ls, c.MinTimeMs, c.MaxTimeMs, err)
				}
				if n != chk.NumSamples() {
					return fmt.Errorf("frame %d: series %s: chunk [%d, %d]: iterated %d samples, the chunk says %d", frame, ls, c.MinTimeMs, c.MaxTimeMs, n, chk.NumSamples())
				}
			}
		}
	}
}

// compareHistSets lists the differences of got from want, sample by sample: the
// same timestamps; floats with the same bits; histograms of the same kind
// (integer or float) equal in every field once both are compacted — Prometheus'
// chunks rewrite a histogram's bucket layout to the chunk's, adding empty
// buckets, which a store that keeps histograms as received does not have — and
// with counter-reset hints that agree: equal, or "unknown" against "not a reset"
// (hintDiff: a chunk's first sample says "unknown", the later ones "not a reset";
// where a chunk starts differs between stores).
func compareHistSets(want, got histSet) []string {
	var d []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		if !ok {
			d = append(d, fmt.Sprintf("series %s: missing (%d samples)", k, len(want[k])))
			continue
		}
		w := want[k]
		i, j := 0, 0
		for i < len(w) || j < len(g) {
			switch {
			case j == len(g) || (i < len(w) && w[i].t < g[j].t):
				d = append(d, fmt.Sprintf("series %s: sample %s missing", k, w[i]))
				i++
			case i == len(w) || g[j].t < w[i].t:
				d = append(d, fmt.Sprintf("series %s: extra sample %s", k, g[j]))
				j++
			default:
				if why := histPointDiff(w[i], g[j]); why != "" {
					d = append(d, fmt.Sprintf("series %s: %s:\n      got  %s\n      want %s", k, why, g[j], w[i]))
				}
				i, j = i+1, j+1
			}
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("series %s: extra (%d samples)", k, len(got[k])))
		}
	}
	return d
}

// histPointDiff says how got differs from want (same timestamp), or "".
//
// A stale marker of a histogram series is the one exception: Prometheus' head
// stores the float stale NaN a failed scrape appends as a histogram whose sum is
// the stale NaN (head_append.go), but remote write sends the float marker, and
// tsdb stores what it is sent. Both end the series for PromQL; remote read hands
// out the float marker where Prometheus hands out the histogram one, so the
// comparison takes them as the same marker.
func histPointDiff(want, got histPoint) string {
	switch {
	case got.h == nil && got.fh == nil && value.IsStaleNaN(got.f) &&
		((want.h != nil && value.IsStaleNaN(want.h.Sum)) || (want.fh != nil && value.IsStaleNaN(want.fh.Sum))):
		return ""
	case want.h != nil:
		if got.h == nil {
			return "not an integer histogram"
		}
		if !want.h.Copy().Compact(0).Equals(got.h.Copy().Compact(0)) {
			return "histograms differ"
		}
		return hintDiff(want.h.CounterResetHint, got.h.CounterResetHint)
	case want.fh != nil:
		if got.fh == nil {
			return "not a float histogram"
		}
		if !want.fh.Copy().Compact(0).Equals(got.fh.Copy().Compact(0)) {
			return "float histograms differ"
		}
		return hintDiff(want.fh.CounterResetHint, got.fh.CounterResetHint)
	case got.h != nil || got.fh != nil:
		return "not a float sample"
	case math.Float64bits(want.f) != math.Float64bits(got.f):
		return "values differ"
	}
	return ""
}

// hintDiff says how got's counter-reset hint differs from want's, or "". The
// one difference tolerated is "unknown" against "not a reset", either way: a
// chunk's first sample says "unknown" and the later ones "not a reset", and
// where a chunk starts differs between stores. Anything else must be equal: a
// gauge histogram is a gauge everywhere, and a reset one store saw is a reset in
// the other (never "unknown", which would let a reset go unnoticed).
func hintDiff(want, got histogram.CounterResetHint) string {
	if want == got {
		return ""
	}
	pair := [2]histogram.CounterResetHint{min(want, got), max(want, got)}
	if pair == [2]histogram.CounterResetHint{histogram.UnknownCounterReset, histogram.NotCounterReset} {
		return ""
	}
	return fmt.Sprintf("counter-reset hint %s, want %s", hintName(got), hintName(want))
}

// hintName names a counter-reset hint as Prometheus' constants do.
func hintName(h histogram.CounterResetHint) string {
	switch h {
	case histogram.UnknownCounterReset:
		return "UnknownCounterReset"
	case histogram.CounterReset:
		return "CounterReset"
	case histogram.NotCounterReset:
		return "NotCounterReset"
	case histogram.GaugeType:
		return "GaugeType"
	}
	return fmt.Sprintf("CounterResetHint(%d)", h)
}

// histExemplars asks base's /api/v1/query_exemplars and returns each series'
// exemplars as JSON text (in the order given), by labels.String().
func histExemplars(ctx context.Context, base string, params url.Values) (map[string]string, error) {
	r, err := apiPost(ctx, base, "/api/v1/query_exemplars", params)
	if err != nil {
		return nil, err
	}
	var data []struct {
		SeriesLabels map[string]string `json:"seriesLabels"`
		Exemplars    json.RawMessage   `json:"exemplars"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return nil, fmt.Errorf("decode the exemplars: %w: %s", err, truncate(string(r.Data), 300))
	}
	out := map[string]string{}
	for _, s := range data {
		key := labels.FromMap(s.SeriesLabels).String()
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("series %s twice", key)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, s.Exemplars); err != nil {
			return nil, fmt.Errorf("series %s: %w", key, err)
		}
		out[key] = c.String()
	}
	return out, nil
}

// compareExemplars lists the differences of got from want.
func compareExemplars(want, got map[string]string) []string {
	var d []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("series %s: no exemplars in tsdb, Prometheus has %s", k, truncate(want[k], 300)))
		case g != want[k]:
			d = append(d, fmt.Sprintf("series %s:\n      tsdb       %s\n      Prometheus %s", k, truncate(g, 600), truncate(want[k], 600)))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("series %s: exemplars in tsdb only: %s", k, truncate(got[k], 300)))
		}
	}
	return d
}

// createdTimestamps returns the created timestamp (ms) the target exposes for
// each series of the counter and the native histograms that checkStartTimestamps
// checks, keyed by the label set the hist-native job stores them under.
func (tg *histTarget) createdTimestamps(t *testing.T) map[string]int64 {
	t.Helper()
	mfs, err := tg.reg.Gather()
	if err != nil {
		t.Fatalf("gather the target's metrics: %v", err)
	}
	out := map[string]int64{}
	for _, mf := range mfs {
		name := mf.GetName()
		if name != metricHistRequests && name != metricHistLatency && name != metricHistSizes {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ct interface{ AsTime() time.Time }
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				ct = m.GetCounter().GetCreatedTimestamp()
			case dto.MetricType_HISTOGRAM:
				ct = m.GetHistogram().GetCreatedTimestamp()
			}
			if ct == nil {
				t.Fatalf("%s has no created timestamp", name)
			}
			ls := map[string]string{labels.MetricName: name, "job": "hist-native", "instance": tg.hostPort()}
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = lp.GetValue()
			}
			out[labels.FromMap(ls).String()] = ct.AsTime().UnixMilli()
		}
	}
	return out
}

// stPoint is a sample's timestamp and start timestamp.
type stPoint struct{ t, st int64 }

// readStartTimestamps opens the store in-process (tsdb has stopped) and reads the
// start timestamp of every sample of the series matching ms in [mint, maxt]
// through db.DB's querier.
func readStartTimestamps(ctx context.Context, st store, mint, maxt int64, ms ...*labels.Matcher) (_ map[string][]stPoint, err error) {
	s, err := st.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the %s store: %w", st.name, err)
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	sctx, cancel := context.WithTimeout(ctx, stallTimeout)
	defer cancel()
	settings, err := provision.Read(sctx, s)
	if err != nil {
		return nil, fmt.Errorf("read the schema settings: %w", err)
	}
	d, err := db.Open(sctx, db.Options{Store: s, Settings: settings})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, d.Close()) }()
	q, err := d.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, q.Close()) }()
	ss := q.Select(sctx, true, nil, ms...)
	out := map[string][]stPoint{}
	var it chunkenc.Iterator
	for ss.Next() {
		sr := ss.At()
		key := sr.Labels().String()
		it = sr.Iterator(it)
		var pts []stPoint
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			pts = append(pts, stPoint{t: it.AtT(), st: it.AtST()})
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("series %s: %w", key, err)
		}
		out[key] = pts
	}
	return out, ss.Err()
}
