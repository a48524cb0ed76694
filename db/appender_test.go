package db_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// rawContents is what the data table holds, by series (labels' String()):
// float and histogram samples, oldest first, as schema decodes the raw cells.
type rawContents struct {
	floats     map[string][]cellenc.Sample
	histograms map[string][]cellenc.HistogramSample
}

func readRaw(t testing.TB, st kv.Store, settings schema.Settings) rawContents {
	t.Helper()
	ctx := context.Background()
	out := rawContents{floats: map[string][]cellenc.Sample{}, histograms: map[string][]cellenc.HistogramSample{}}
	sc := st.Scan(ctx, schema.TableData, nil, nil)
	defer sc.Close()
	names := map[uint64]string{}
	for sc.Next() {
		row := sc.Row()
		key, err := schema.ParseDataRowKey(row.Key)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := cellenc.DecodeDataRow(row, settings.BucketWidth, 0, kv.MaxTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		name, ok := names[key.SeriesID]
		if !ok {
			lbls, err := index.NewRegistry(st, index.RegistryOptions{}).Labels(ctx, []uint64{key.SeriesID})
			if err != nil {
				t.Fatal(err)
			}
			name = lbls[0].String()
			names[key.SeriesID] = name
		}
		out.floats[name] = append(out.floats[name], rs.Samples...)
		out.histograms[name] = append(out.histograms[name], rs.Histograms...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range out.floats {
		slices.SortFunc(s, func(a, b cellenc.Sample) int { return int(a.T - b.T) })
	}
	for _, s := range out.histograms {
		slices.SortFunc(s, func(a, b cellenc.HistogramSample) int { return int(a.T - b.T) })
	}
	return out
}

// encodedHistogram is a histogram sample's raw cell value: every field, bit
// for bit.
func encodedHistogram(hs cellenc.HistogramSample) string {
	return string(cellenc.AppendHistogramSampleValue(nil, hs))
}

func exemplarCells(t testing.TB, st kv.Store) int {
	t.Helper()
	sc := st.Scan(context.Background(), schema.TableExemplars, nil, nil)
	defer sc.Close()
	n := 0
	for sc.Next() {
		n += len(sc.Row().Cells)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAppendersStoreHistogramsStartTimestampsAndExemplars appends through both
// appender interfaces and reads the raw cells back.
func TestAppendersStoreHistogramsStartTimestampsAndExemplars(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		st := b.Store(t)
		d := open(t, st, b.Settings, write.DefaultLimits())
		lat := labels.FromStrings("__name__", "lat_seconds", "job", "api")
		req := labels.FromStrings("__name__", "requests_total", "job", "api")
		v1 := labels.FromStrings("__name__", "v1_hist", "job", "api")
		h := &histogram.Histogram{CounterResetHint: histogram.CounterReset, Schema: 2, ZeroThreshold: 0.01, ZeroCount: 1, Count: 5, Sum: 3.25,
			PositiveSpans: []histogram.Span{{Offset: -1, Length: 2}}, PositiveBuckets: []int64{1, 1},
			NegativeSpans: []histogram.Span{{Offset: 2, Length: 1}}, NegativeBuckets: []int64{1}}
		fh := &histogram.FloatHistogram{Schema: histogram.CustomBucketsSchema, Count: 2.5, Sum: 7,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{0.5, 2}, CustomValues: []float64{1, 2}}
		fine := &histogram.Histogram{Schema: 12, Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []int64{1}}
		stale := &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN)}

		app := d.AppenderV2(ctx)
		ex := []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "abc"), Value: 0.3, Ts: nowMs - 3000, HasTs: true}}
		ref, err := app.Append(0, lat, nowMs-60_000, nowMs-3000, 0, h, nil, storage.AOptions{Exemplars: ex})
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			t  int64
			h  *histogram.Histogram
			fh *histogram.FloatHistogram
		}{{nowMs - 2000, nil, fh}, {nowMs - 1000, fine, nil}, {nowMs, stale, nil}} {
			if ref, err = app.Append(ref, lat, 0, step.t, 0, step.h, step.fh, storage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := app.Append(0, req, nowMs-60_000, nowMs-1000, 7, nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := app.(storage.ExemplarAppenderV2).AppendExemplars(0, req, []exemplar.Exemplar{
			{Labels: labels.FromStrings("trace_id", "def"), Value: 7, Ts: nowMs - 1000, HasTs: true}}); err != nil {
			t.Fatal(err)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		a1 := d.Appender(ctx)
		ref, err = a1.AppendHistogram(0, v1, nowMs, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a1.AppendExemplar(ref, v1, exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "ghi"), Value: 1, Ts: nowMs, HasTs: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := a1.AppendHistogramSTZeroSample(ref, v1, nowMs, nowMs-1, h, nil); err != nil {
			t.Fatal(err)
		}
		if err := a1.Commit(); err != nil {
			t.Fatal(err)
		}

		raw := readRaw(t, st, b.Settings)
		wantFine := &histogram.Histogram{Schema: 8, Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []int64{1}}
		want := []cellenc.HistogramSample{
			{T: nowMs - 3000, ST: nowMs - 60_000, H: h}, {T: nowMs - 2000, FH: fh}, {T: nowMs - 1000, H: wantFine}, {T: nowMs, H: stale}}
		got := raw.histograms[lat.String()]
		if len(got) != len(want) {
			t.Fatalf("stored %d histograms of %s, want %d: %v", len(got), lat, len(want), got)
		}
		for i := range want {
			if got[i].T != want[i].T || got[i].ST != want[i].ST || encodedHistogram(got[i]) != encodedHistogram(want[i]) {
				t.Errorf("histogram %d = %+v %v %v, want %+v %v %v", i, got[i], got[i].H, got[i].FH, want[i], want[i].H, want[i].FH)
			}
		}
		if fine.Schema != 12 {
			t.Errorf("the appended histogram was changed in place: schema %d", fine.Schema)
		}
		if got := raw.floats[req.String()]; !slices.Equal(got, []cellenc.Sample{{T: nowMs - 1000, V: 7, ST: nowMs - 60_000}}) {
			t.Errorf("floats of %s = %v", req, got)
		}
		if got := raw.histograms[v1.String()]; len(got) != 1 || encodedHistogram(got[0]) != encodedHistogram(cellenc.HistogramSample{T: nowMs, H: h}) {
			t.Errorf("histograms of %s = %v", v1, got)
		}
		if n := exemplarCells(t, st); n != 3 {
			t.Errorf("%d exemplar cells, want 3", n)
		}
	})
}

// TestAppendedHistogramDuplicatingAFloatFailsCommit: the writer finds the
// duplicate; the rest of the transaction is written.
func TestAppendedHistogramDuplicatingAFloatFailsCommit(t *testing.T) {
	b := schematest.Backends()[0]
	st := b.Store(t)
	d := open(t, st, b.Settings, write.DefaultLimits())
	m := labels.FromStrings("__name__", "mixed")
	app := d.AppenderV2(context.Background())
	if _, err := app.Append(0, m, 0, nowMs, 1, nil, nil, storage.AOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Append(0, m, 0, nowMs, 0, &histogram.Histogram{}, nil, storage.AOptions{}); err != nil {
		t.Fatal(err)
	}
	err := app.Commit()
	want := `invalid write request: 1 samples rejected, 1 written: histogram at timestamp 1795953600000 (2026-11-29T12:00:00Z) duplicates a float sample at the same timestamp in series {__name__="mixed"}`
	if err == nil || err.Error() != want || !errors.Is(err, write.ErrInvalid) {
		t.Errorf("Commit = %v, want %q", err, want)
	}
	raw := readRaw(t, st, b.Settings)
	if got := raw.floats[m.String()]; !slices.Equal(got, []cellenc.Sample{{T: nowMs, V: 1}}) || len(raw.histograms[m.String()]) != 0 {
		t.Errorf("stored %v and %v, want the float only", got, raw.histograms[m.String()])
	}
}

// TestPromqltestLoadReachesTheStore runs a promqltest load command (the
// acceptance suite's way of writing) against the DB: histograms of the
// {{...}} notation, custom buckets and @st start timestamps reach the raw
// cells.
func TestPromqltestLoadReachesTheStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		b.TableOptions.RawRetention = 0 // promqltest loads from the epoch on
		st := b.Store(t)
		promqltest.RunTestWithStorage(t, `
load 1m
    hist {{schema:0 sum:5 count:4 buckets:[1 2 1]}} {{schema:0 sum:-5 count:4 z_bucket:1 z_bucket_w:0.5 n_buckets:[1 2] counter_reset_hint:gauge}}
    nhcb {{schema:-53 sum:5 count:4 custom_values:[5 10] buckets:[1 2 1]}}
    cumulative{type="st"}@st _ -30s -1m
    cumulative{type="st"}    _ 0 60
`, promqltest.NewTestEngine(t, false, 0, 1000), func(tb testing.TB) storage.Storage {
			return open(tb, st, b.Settings, write.Limits{})
		})
		raw := readRaw(t, st, b.Settings)
		hist := raw.histograms[`{__name__="hist"}`]
		want := []cellenc.HistogramSample{
			{T: 0, FH: &histogram.FloatHistogram{Schema: 0, Sum: 5, Count: 4,
				PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{1, 2, 1}}},
			{T: 60_000, FH: &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Schema: 0, Sum: -5, Count: 4, ZeroCount: 1, ZeroThreshold: 0.5,
				NegativeSpans: []histogram.Span{{Offset: 0, Length: 2}}, NegativeBuckets: []float64{1, 2}}},
		}
		if len(hist) != 2 || encodedHistogram(hist[0]) != encodedHistogram(want[0]) || encodedHistogram(hist[1]) != encodedHistogram(want[1]) {
			t.Errorf("hist = %v, want %v", hist, want)
		}
		nhcb := raw.histograms[`{__name__="nhcb"}`]
		wantNHCB := cellenc.HistogramSample{FH: &histogram.FloatHistogram{Schema: -53, Sum: 5, Count: 4, CustomValues: []float64{5, 10},
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{1, 2, 1}}}
		if len(nhcb) != 1 || encodedHistogram(nhcb[0]) != encodedHistogram(wantNHCB) {
			t.Errorf("nhcb = %v, want %v", nhcb, wantNHCB)
		}
		wantST := []cellenc.Sample{{T: 60_000, V: 0, ST: 30_000}, {T: 120_000, V: 60, ST: 60_000}}
		if got := raw.floats[`{__name__="cumulative", type="st"}`]; !slices.Equal(got, wantST) {
			t.Errorf("cumulative = %v, want %v", got, wantST)
		}
	})
}
