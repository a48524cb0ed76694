package promapi

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// env is the router serving the real write pipeline (write.Writer with its series
// registry and tag index) on a real store with the schema created, over real HTTP.
type env struct {
	srv      *httptest.Server
	st       kv.Store
	settings schema.Settings
	writer   *write.Writer
	now      time.Time // the writer's clock
}

// testLimits are small, so that the corpus can cross every one of them cheaply.
var testLimits = write.Limits{
	MaxSeriesPerRequest:  5,
	MaxSamplesPerRequest: 20,
	MaxLabelsPerSeries:   8,
	MaxLabelNameLength:   64,
	MaxLabelValueLength:  128,
	MaxFutureSkew:        10 * time.Minute,
	MaxAge:               24 * time.Hour,
}

var testHTTPLimits = WriteLimits{MaxBodyBytes: 64 << 10, MaxDecompressedBytes: 256 << 10, MaxConcurrentRequests: 8}

// newEnv starts a server on a fresh store of backend b. The writer's clock is
// frozen at the second the env was made, so that messages naming it are exact.
func newEnv(t testing.TB, b schematest.Backend, limits write.Limits, httpLimits WriteLimits) *env {
	t.Helper()
	st := b.Store(t)
	return newEnvOn(t, st, b.Settings, limits, httpLimits)
}

func newEnvOn(t testing.TB, st kv.Store, settings schema.Settings, limits write.Limits, httpLimits WriteLimits) *env {
	t.Helper()
	return newEnvLogging(t, st, settings, limits, httpLimits, slog.New(slog.DiscardHandler))
}

func newEnvLogging(t testing.TB, st kv.Store, settings schema.Settings, limits write.Limits, httpLimits WriteLimits,
	logger *slog.Logger) *env {
	t.Helper()
	now := time.Now().Truncate(time.Second)
	clock := func() time.Time { return now }
	registry := index.NewRegistry(st, index.RegistryOptions{Now: clock, Logger: logger})
	w, err := write.New(st, settings, registry, index.NewPostings(st, index.PostingsOptions{}),
		write.Options{Limits: limits, Now: clock, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(writeRouter(t, w, httpLimits, logger))
	t.Cleanup(srv.Close)
	return &env{srv: srv, st: st, settings: settings, writer: w, now: now}
}

// cells counts every cell of the tables a write touches (data, series registry,
// index, meta), so that "nothing was written" can be checked as "no cell changed".
func (e *env) cells(t testing.TB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for _, table := range []string{schema.TableData, schema.TableSeries, schema.TableIndex, schema.TableMeta} {
		sc := e.st.Scan(ctx, table, nil, nil, kv.MaxVersions(math.MaxInt32))
		for sc.Next() {
			n += len(sc.Row().Cells)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		sc.Close()
	}
	return n
}

// stored reads every raw float sample back from the data table, by series (the
// labels' String()), oldest first, with the labels from the series registry.
func (e *env) stored(t testing.TB) map[string][]cellenc.Sample {
	t.Helper()
	floats, _ := e.storedRaw(t)
	return floats
}

// storedHistograms reads every raw histogram sample back from the data table,
// by series (the labels' String()), oldest first.
func (e *env) storedHistograms(t testing.TB) map[string][]cellenc.HistogramSample {
	t.Helper()
	_, hists := e.storedRaw(t)
	return hists
}

// storedRaw reads every raw cell of the data table back: the float samples and
// the histogram samples, each by series (the labels' String()), oldest first.
func (e *env) storedRaw(t testing.TB) (map[string][]cellenc.Sample, map[string][]cellenc.HistogramSample) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	floatsByID := map[uint64][]cellenc.Sample{}
	histsByID := map[uint64][]cellenc.HistogramSample{}
	sc := e.st.Scan(ctx, schema.TableData, nil, nil, kv.Families(schema.FamilyRaw))
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		key, err := schema.ParseDataRowKey(row.Key)
		if err != nil {
			t.Fatalf("data row key %q: %v", row.Key, err)
		}
		for _, c := range row.Cells {
			off, err := schema.DecodeRawQualifier(c.Qualifier, e.settings.BucketWidth)
			if err != nil {
				t.Fatal(err)
			}
			v, err := cellenc.DecodeSampleValue(c.Value)
			if err != nil {
				t.Fatal(err)
			}
			ts := key.BucketStart + off
			if v.H != nil || v.FH != nil {
				histsByID[key.SeriesID] = append(histsByID[key.SeriesID], cellenc.HistogramSample{T: ts, ST: v.ST, H: v.H, FH: v.FH})
				continue
			}
			floatsByID[key.SeriesID] = append(floatsByID[key.SeriesID], cellenc.Sample{T: ts, V: v.F})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan data: %v", err)
	}
	labelsOf := func(ids []uint64) []string {
		lbls, err := index.NewRegistry(e.st, index.RegistryOptions{}).Labels(ctx, ids)
		if err != nil {
			t.Fatalf("labels of %d series: %v", len(ids), err)
		}
		out := make([]string, len(lbls))
		for i, l := range lbls {
			out[i] = l.String()
		}
		return out
	}
	return byLabels(floatsByID, labelsOf, func(s cellenc.Sample) int64 { return s.T }),
		byLabels(histsByID, labelsOf, func(s cellenc.HistogramSample) int64 { return s.T })
}

// byLabels keys samples by series labels instead of series ID, each series'
// samples sorted oldest first.
func byLabels[S any](byID map[uint64][]S, labelsOf func([]uint64) []string, timeOf func(S) int64) map[string][]S {
	out := map[string][]S{}
	if len(byID) == 0 {
		return out
	}
	ids := make([]uint64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	names := labelsOf(ids)
	for i, id := range ids {
		s := byID[id]
		slices.SortFunc(s, func(a, b S) int { return cmp.Compare(timeOf(a), timeOf(b)) })
		out[names[i]] = s
	}
	return out
}

// sameSamples compares bit-exactly (NaN payloads included).
func sameSamples(a, b []cellenc.Sample) bool {
	return slices.EqualFunc(a, b, func(x, y cellenc.Sample) bool {
		return x.T == y.T && math.Float64bits(x.V) == math.Float64bits(y.V)
	})
}

func ls(pairs ...string) labels.Labels { return labels.FromStrings(pairs...) }
