package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// The tests below check the query half of the harness; they need neither Prometheus
// nor tsdb.

func TestCloseEnoughIsRelativeAndTreatsNaNAsEqual(t *testing.T) {
	cases := []struct {
		want, got float64
		same      bool
	}{
		{1, 1, true},
		{1e12, 1e12 * (1 + 5e-10), true},
		{1e12, 1e12 * (1 + 5e-9), false},
		{1e-300, 1.0000000001e-300, true},
		{0, 1e-300, false},
		{math.Copysign(0, -1), 0, true},
		{math.NaN(), math.NaN(), true},
		{math.NaN(), 0, false},
		{math.Inf(1), math.Inf(1), true},
		{math.Inf(1), math.MaxFloat64, false},
		{math.Inf(-1), math.Inf(1), false},
	}
	for _, c := range cases {
		if got := closeEnough(c.want, c.got); got != c.same {
			t.Errorf("closeEnough(%v, %v) = %v, want %v", c.want, c.got, got, c.same)
		}
	}
}

func TestDiffQueriesAreEnoughAndExpandOverTheWindow(t *testing.T) {
	if len(diffQueries) < 50 {
		t.Errorf("%d differential queries, want at least 50", len(diffQueries))
	}
	w := newDiffWindow(1_700_000_000_250, 1_700_000_030_000)
	if w.start != 1_700_000_007_000 || w.end != 1_700_000_030_000 || w.at != 1_700_000_020_000 {
		t.Errorf("window %+v", w)
	}
	reqs := w.requests(diffQueries)
	instant, ranged := 0, 0
	for _, q := range diffQueries {
		if !q.instant && !q.ranged {
			t.Errorf("%s is asked neither as an instant nor as a range query", q.expr)
		}
		if q.instant {
			instant++
		}
		if q.ranged {
			ranged++
		}
	}
	if len(reqs) != instant*len(w.instants)+ranged {
		t.Errorf("%d requests, want %d", len(reqs), instant*len(w.instants)+ranged)
	}
	for _, r := range reqs {
		if strings.Contains(r.params.Get("query"), atPlaceholder) {
			t.Errorf("%s: the @ placeholder was not replaced", r.desc)
		}
	}
}

// TestTargetHistogramIsCumulative parses the synthetic target's page and checks the
// classic histogram the differential test relies on: buckets cumulative in le,
// +Inf equal to _count, for every handler.
func TestTargetHistogramIsCumulative(t *testing.T) {
	page := exposition(37, time.UnixMilli(1732921234567))
	p, err := textparse.New([]byte(page), "text/plain; version=0.0.4; charset=utf-8", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	buckets := map[string][]float64{} // handler -> counts in le order
	counts := map[string]float64{}
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		var ls labels.Labels
		p.Labels(&ls)
		_, _, v := p.Series()
		switch ls.Get(labels.MetricName) {
		case metricDuration + "_bucket":
			buckets[ls.Get("handler")] = append(buckets[ls.Get("handler")], v)
		case metricDuration + "_count":
			counts[ls.Get("handler")] = v
		}
	}
	if len(buckets) != len(durationHandlers) {
		t.Fatalf("histograms for %d handlers, want %d", len(buckets), len(durationHandlers))
	}
	for h, bs := range buckets {
		if len(bs) != len(durationBuckets)+1 {
			t.Errorf("%s: %d buckets, want %d", h, len(bs), len(durationBuckets)+1)
		}
		for i := 1; i < len(bs); i++ {
			if bs[i] < bs[i-1] {
				t.Errorf("%s: bucket %d (%v) below bucket %d (%v)", h, i, bs[i], i-1, bs[i-1])
			}
		}
		if bs[len(bs)-1] != counts[h] || counts[h] == 0 {
			t.Errorf("%s: +Inf bucket %v, _count %v", h, bs[len(bs)-1], counts[h])
		}
	}
}

// frame encodes one streamed remote-read frame as the spec describes it.
func frame(t *testing.T, cr *prompb.ChunkedReadResponse) []byte {
	t.Helper()
	msg, err := cr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := binary.AppendUvarint(nil, uint64(len(msg)))
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(msg, castagnoli))
	return append(out, msg...)
}

// xorChunk encodes samples as a prompb XOR chunk.
func xorChunk(t *testing.T, ss ...sample) prompb.Chunk {
	t.Helper()
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		app.Append(0, s.t, s.v)
	}
	return prompb.Chunk{MinTimeMs: ss[0].t, MaxTimeMs: ss[len(ss)-1].t, Type: prompb.Chunk_XOR, Data: c.Bytes()}
}

func TestDecodeStreamedFramesChecksumsAndSeriesAcrossFrames(t *testing.T) {
	a := []prompb.Label{{Name: "__name__", Value: "a"}}
	b := []prompb.Label{{Name: "__name__", Value: "b"}}
	var stream []byte
	stream = append(stream, frame(t, &prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{
		{Labels: a, Chunks: []prompb.Chunk{xorChunk(t, sample{1000, 1}, sample{2000, 2})}},
	}})...)
	// a continues in the next frame; its last chunk reaches past maxt.
	stream = append(stream, frame(t, &prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{
		{Labels: a, Chunks: []prompb.Chunk{xorChunk(t, sample{3000, 3}, sample{9000, 9})}},
		{Labels: b, Chunks: []prompb.Chunk{xorChunk(t, sample{500, math.Inf(-1)}, sample{1500, -1})}},
	}})...)
	ans := &remoteReadAnswer{set: seriesSet{}}
	if err := decodeStreamed(bytes.NewReader(stream), 1000, 5000, ans); err != nil {
		t.Fatal(err)
	}
	if ans.frames != 2 || ans.chunks != 3 || ans.outside != 2 {
		t.Errorf("frames %d, chunks %d, outside %d; want 2, 3, 2", ans.frames, ans.chunks, ans.outside)
	}
	la, lb := protoLabels(a), protoLabels(b)
	want := seriesSet{
		la.String(): {labels: la, samples: []sample{{1000, 1}, {2000, 2}, {3000, 3}}},
		lb.String(): {labels: lb, samples: []sample{{1500, -1}}},
	}
	if d := compareSets(want, ans.set, bitsEqual); len(d) > 0 {
		t.Errorf("decoded stream differs:%s", summarize(d, 10))
	}

	// One flipped bit in a message fails its checksum.
	bad := bytes.Clone(stream)
	bad[len(bad)-3] ^= 0x10
	if err := decodeStreamed(bytes.NewReader(bad), 1000, 5000, &remoteReadAnswer{set: seriesSet{}}); err == nil || !strings.Contains(err.Error(), "CRC32-Castagnoli") {
		t.Errorf("a corrupted frame decoded with error %v, want a checksum error", err)
	}
	// A truncated stream is an error, not a short answer.
	if err := decodeStreamed(bytes.NewReader(stream[:len(stream)-4]), 1000, 5000, &remoteReadAnswer{set: seriesSet{}}); err == nil {
		t.Error("a truncated stream decoded without error")
	}
	// Series out of label order are an error.
	var swapped []byte
	swapped = append(swapped, frame(t, &prompb.ChunkedReadResponse{ChunkedSeries: []*prompb.ChunkedSeries{
		{Labels: b, Chunks: []prompb.Chunk{xorChunk(t, sample{1500, 1})}},
		{Labels: a, Chunks: []prompb.Chunk{xorChunk(t, sample{1500, 1})}},
	}})...)
	if err := decodeStreamed(bytes.NewReader(swapped), 1000, 5000, &remoteReadAnswer{set: seriesSet{}}); err == nil || !strings.Contains(err.Error(), "label order") {
		t.Errorf("series out of order decoded with error %v", err)
	}
}

// TestHintDiffToleratesOnlyUnknownAgainstNotAReset: the one counter-reset hint
// difference compareHistSets lets pass is "unknown" against "not a reset"
// (either way: where a chunk starts differs between stores); a gauge against
// anything else, or a reset against "unknown", is a difference.
func TestHintDiffToleratesOnlyUnknownAgainstNotAReset(t *testing.T) {
	hints := []histogram.CounterResetHint{histogram.UnknownCounterReset, histogram.CounterReset,
		histogram.NotCounterReset, histogram.GaugeType}
	for _, want := range hints {
		for _, got := range hints {
			tolerated := want == got ||
				want == histogram.UnknownCounterReset && got == histogram.NotCounterReset ||
				want == histogram.NotCounterReset && got == histogram.UnknownCounterReset
			d := hintDiff(want, got)
			if (d == "") != tolerated {
				t.Errorf("hintDiff(want %s, got %s) = %q, want a difference: %v", hintName(want), hintName(got), d, !tolerated)
			}
		}
	}
	if d := hintDiff(histogram.UnknownCounterReset, histogram.CounterReset); d != "counter-reset hint CounterReset, want UnknownCounterReset" {
		t.Errorf("hintDiff says %q", d)
	}
}

// TestFlappingProblemsTellsAFailedScrapeFromAWrongAnswer: stale markers of
// e2e_flapping at failed scrapes (in a generation's middle, or ending it before
// the next starts) are expected; a missing end marker, one at the wrong time,
// or one after the next generation started is reported, failed scrapes or not.
func TestFlappingProblemsTellsAFailedScrapeFromAWrongAnswer(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	gen := func(g string, pts ...sample) *series {
		return &series{labels: labels.FromStrings("__name__", metricFlapping, "generation", g), samples: pts}
	}
	for _, tc := range []struct {
		name   string
		gens   []*series
		failed map[int64]bool
		want   []string // substrings of the problems, in order
	}{
		{name: "generations end at the next one's first sample",
			gens: []*series{gen("0", sample{1, 0}, sample{2, 1}, sample{3, stale}), gen("1", sample{3, 2}, sample{4, 3})}},
		{name: "a failed scrape in a generation's middle",
			gens:   []*series{gen("0", sample{1, 0}, sample{2, stale}, sample{3, 2}, sample{4, stale}), gen("1", sample{4, 3}, sample{5, stale})},
			failed: map[int64]bool{2: true, 5: true}},
		{name: "the scrape that changed generations failed",
			gens:   []*series{gen("0", sample{1, 0}, sample{2, stale}), gen("1", sample{3, 2})},
			failed: map[int64]bool{2: true}},
		{name: "no end marker",
			gens: []*series{gen("0", sample{1, 0}, sample{2, 1}), gen("1", sample{3, 2})},
			want: []string{`generation="0"}: last stored sample 2 `}},
		{name: "no end marker, failed scrapes elsewhere",
			gens:   []*series{gen("0", sample{1, 0}, sample{2, stale}, sample{3, 2}), gen("1", sample{4, 3}, sample{5, 4})},
			failed: map[int64]bool{2: true, 5: true},
			want:   []string{`generation="0"}: last stored sample 3 `}},
		{name: "an end marker at the wrong time",
			gens: []*series{gen("0", sample{1, 0}, sample{2, stale}), gen("1", sample{3, 2})},
			want: []string{`generation="0"}: a stale marker at 2 `}},
		{name: "a marker in the middle without a failed scrape",
			gens: []*series{gen("0", sample{1, 0}, sample{2, stale}, sample{3, 1}, sample{4, stale}), gen("1", sample{4, 2}, sample{5, stale})},
			want: []string{`generation="0"}: a stale marker at 2 `, `generation="1"}: a stale marker at 5 `}},
		{name: "a failed scrape's marker after the next generation started",
			gens:   []*series{gen("0", sample{1, 0}, sample{3, stale}), gen("1", sample{2, 2})},
			failed: map[int64]bool{3: true},
			want:   []string{`generation="0"}: stale marker at 3 `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := flappingProblems(tc.gens, tc.failed)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d: %q, want one containing %q", i, got[i], w)
				}
			}
		})
	}
}
