package write_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/index"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// now is the writers' clock in these tests.
var (
	now   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	nowMs = now.UnixMilli()
)

var testLimits = write.Limits{
	MaxSeriesPerRequest:  10,
	MaxSamplesPerRequest: 20,
	MaxLabelsPerSeries:   4,
	MaxLabelNameLength:   16,
	MaxLabelValueLength:  32,
	MaxFutureSkew:        10 * time.Minute,
	MaxAge:               24 * time.Hour,
}

// fixture is a writer and a reader on one store, sharing registry and postings
// as a process does.
type fixture struct {
	st       *schematest.CountingStore
	reg      *index.Registry
	settings schema.Settings
	w        *write.Writer
	r        *query.Reader
}

func newFixture(t testing.TB, st kv.Store, settings schema.Settings, lim write.Limits) *fixture {
	t.Helper()
	cs := schematest.Counting(st)
	reg := index.NewRegistry(cs, index.RegistryOptions{})
	post := index.NewPostings(cs, index.PostingsOptions{})
	w, err := write.New(cs, settings, reg, post, write.Options{Limits: lim, Now: func() time.Time { return now }, Apply: kv.ApplyOptions{MaxBatch: 7}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: cs, reg: reg, settings: settings, w: w, r: query.NewReader(cs, settings, reg, post)}
}

func (f *fixture) write(t testing.TB, req write.Request) write.Result {
	t.Helper()
	res, err := f.w.Write(context.Background(), &req)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return res
}

// samples reads a series' samples of the last two days and the next hour.
func (f *fixture) samples(t testing.TB, lbls labels.Labels) []cellenc.Sample {
	t.Helper()
	got, err := f.r.Samples(context.Background(), lbls, nowMs-48*3600_000, nowMs+3600_000)
	if err != nil {
		t.Fatalf("Samples(%.200s): %v", lbls, err)
	}
	return got
}

func forEachBackend(t *testing.T, fn func(t *testing.T, b schematest.Backend)) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// unsorted builds labels in the order given, as a careless sender might.
func unsorted(ss ...string) labels.Labels {
	b := labels.NewScratchBuilder(len(ss) / 2)
	for i := 0; i < len(ss); i += 2 {
		b.Add(ss[i], ss[i+1])
	}
	return b.Labels()
}

// sorted builds labels sorted by name, keeping names given twice.
func sorted(ss ...string) labels.Labels {
	b := labels.NewScratchBuilder(len(ss) / 2)
	for i := 0; i < len(ss); i += 2 {
		b.Add(ss[i], ss[i+1])
	}
	b.Sort()
	return b.Labels()
}

func one(t int64, v float64) []cellenc.Sample { return []cellenc.Sample{{T: t, V: v}} }

func TestValidation(t *testing.T) {
	// The cases share one store per backend (creating tables on HBase takes
	// seconds); they write different series, and each has a writer of its own.
	shared := map[string]kv.Store{}
	for _, b := range schematest.Backends() {
		if b.Available() {
			shared[b.Name] = b.Store(t)
		}
	}
	long := strings.Repeat("v", 33)
	big := strings.Repeat("x", 32760)
	for _, tc := range []struct {
		name   string
		limits *write.Limits // testLimits if nil
		// series follow a valid series at index 0, so rejections index from 1.
		series []write.Series
		want   []write.Rejection
		// stored are label sets (as stored) that must read back with the samples sent.
		stored []labels.Labels
	}{
		{
			name:   "a series without __name__ is rejected",
			series: []write.Series{{Labels: labels.FromStrings("job", "x"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `metric name (label __name__) is missing in series {job="x"}`}},
		},
		{
			name:   "an empty __name__ counts as missing",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "", "job", "x"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `metric name (label __name__) is missing in series {__name__="", job="x"}`}},
		},
		{
			name:   "an empty label name is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "", "x"), Samples: []cellenc.Sample{{T: nowMs, V: 1}, {T: nowMs + 1, V: 2}}}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 2, Reason: `label name "" is empty in series {""="x", __name__="up"}`}},
		},
		{
			name:   "a label name given twice is rejected",
			series: []write.Series{{Labels: sorted("__name__", "up", "job", "a", "job", "b"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `label name "job" appears more than once in series {__name__="up", job="a", job="b"}`}},
		},
		{
			name:   "a label name given twice is found in unsorted labels too",
			series: []write.Series{{Labels: unsorted("job", "a", "__name__", "up", "job", "b"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `label name "job" appears more than once in series {job="a", __name__="up", job="b"}`}},
		},
		{
			name:   "a label name given twice is rejected even with an empty value",
			series: []write.Series{{Labels: sorted("__name__", "up", "job", "", "job", "b"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `label name "job" appears more than once in series {__name__="up", job="", job="b"}`}},
		},
		{
			name:   "a label name that is not UTF-8 is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "\xff", "x"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `label name "\xff" is not valid UTF-8 in series {__name__="up", "\xff"="x"}`}},
		},
		{
			name:   "a label value that is not UTF-8 is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "job", "a\xffb"), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `value of label "job" is not valid UTF-8 in series {__name__="up", job="a\xffb"}`}},
		},
		{
			name:   "a metric name that is not UTF-8 is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "\xc3("), Samples: one(nowMs, 1)}},
			want:   []write.Rejection{{Series: 1, Sample: -1, Samples: 1, Reason: `value of label "__name__" is not valid UTF-8 in series {__name__="\xc3("}`}},
		},
		{
			name:   "a label name over the limit is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "a_very_long_label", "x"), Samples: one(nowMs, 1)}},
			want: []write.Rejection{{Series: 1, Sample: -1, Samples: 1,
				Reason: `label name "a_very_long_label" is 17 bytes long, over the limit of 16, in series {__name__="up", a_very_long_label="x"}`}},
		},
		{
			name:   "a label value over the limit is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "job", long), Samples: one(nowMs, 1)}},
			want: []write.Rejection{{Series: 1, Sample: -1, Samples: 1,
				Reason: `value of label "job" is 33 bytes long, over the limit of 32, in series {__name__="up", job="` + long + `"}`}},
		},
		{
			name:   "a series over the label limit is rejected",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "a", "1", "b", "2", "c", "3", "d", "4"), Samples: one(nowMs, 1)}},
			want: []write.Rejection{{Series: 1, Sample: -1, Samples: 1,
				Reason: `series {__name__="up", a="1", b="2", c="3", d="4"} has 5 labels, over the limit of 4`}},
		},
		{
			name:   "labels with an empty value are dropped and do not count against the limit",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "empties", "a", "1", "b", "", "c", "3", "d", "4"), Samples: one(nowMs, 7)}},
			stored: []labels.Labels{labels.FromStrings("__name__", "empties", "a", "1", "c", "3", "d", "4")},
		},
		{
			name:   "unsorted labels are stored sorted",
			series: []write.Series{{Labels: unsorted("job", "j", "__name__", "unsorted", "instance", "i"), Samples: one(nowMs, 8)}},
			stored: []labels.Labels{labels.FromStrings("__name__", "unsorted", "instance", "i", "job", "j")},
		},
		{
			name:   "labels that would make a row key over HBase's limit are rejected",
			limits: &write.Limits{},
			series: []write.Series{{Labels: labels.FromStrings("__name__", "up", "big", big), Samples: one(nowMs, 1)}},
			want: []write.Rejection{{Series: 1, Sample: -1, Samples: 1,
				Reason: `labels of series {__name__="up", big="` + big[:128] + `"…} take 32794 bytes encoded, over the 32767-byte row key limit of HBase`}},
		},
		{
			name:   "labels just within HBase's row key limit are stored",
			limits: &write.Limits{},
			series: []write.Series{{Labels: labels.FromStrings("__name__", "huge", "big", big[:32731]), Samples: one(nowMs, 9)}},
			stored: []labels.Labels{labels.FromStrings("__name__", "huge", "big", big[:32731])},
		},
		{
			name: "samples out of the time window are rejected one by one, the others stored",
			series: []write.Series{{Labels: labels.FromStrings("__name__", "window"), Samples: []cellenc.Sample{
				{T: nowMs - 24*3600_000, V: 1}, // the oldest accepted
				{T: nowMs - 24*3600_000 - 1, V: 2},
				{T: -1, V: 3},
				{T: nowMs + 10*60_000, V: 4}, // the newest accepted
				{T: nowMs + 10*60_000 + 1, V: 5},
			}}},
			want: []write.Rejection{
				{Series: 1, Sample: 1, Samples: 1, Reason: `timestamp 1795867199999 (2026-11-28T11:59:59.999Z) is older than the max age of 1d (before 2026-11-28T12:00:00Z) in series {__name__="window"}`},
				{Series: 1, Sample: 2, Samples: 1, Reason: `timestamp -1 is negative (before 1970-01-01T00:00:00Z) in series {__name__="window"}`},
				{Series: 1, Sample: 4, Samples: 1, Reason: `timestamp 1795954200001 (2026-11-29T12:10:00.001Z) is more than 10m ahead of the server's clock (2026-11-29T12:00:00Z) in series {__name__="window"}`},
			},
		},
		{
			name:   "without limits only negative timestamps are out of range",
			limits: &write.Limits{},
			series: []write.Series{{Labels: labels.FromStrings("__name__", "unlimited"), Samples: []cellenc.Sample{{T: 0, V: 1}, {T: -5, V: 2}, {T: kv.MaxTimestamp, V: 3}}}},
			want: []write.Rejection{
				{Series: 1, Sample: 1, Samples: 1, Reason: `timestamp -5 is negative (before 1970-01-01T00:00:00Z) in series {__name__="unlimited"}`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, b schematest.Backend) {
				lim := testLimits
				if tc.limits != nil {
					lim = *tc.limits
				}
				st := shared[b.Name]
				if st == nil {
					st = b.Store(t)
				}
				f := newFixture(t, st, b.Settings, lim)
				valid := write.Series{Labels: labels.FromStrings("__name__", "valid", "job", "j"), Samples: one(nowMs, 42)}
				req := write.Request{Series: append([]write.Series{valid}, tc.series...)}
				res := f.write(t, req)
				checkKinds(t, res.Rejected)
				if !slices.Equal(withoutKinds(res.Rejected), tc.want) {
					t.Errorf("Rejected:\n%.2000s\nwant:\n%.2000s", rejections(res.Rejected), rejections(tc.want))
				}
				wantSamples := 0
				for _, s := range req.Series {
					wantSamples += len(s.Samples)
				}
				for _, r := range tc.want {
					wantSamples -= r.Samples
				}
				if res.SamplesWritten != wantSamples {
					t.Errorf("SamplesWritten = %d, want %d", res.SamplesWritten, wantSamples)
				}
				if got := f.samples(t, valid.Labels); !slices.Equal(got, valid.Samples) {
					t.Errorf("the valid series reads back %v", got)
				}
				for i, want := range tc.stored {
					if got := f.samples(t, want); !slices.Equal(got, tc.series[i].Samples) {
						t.Errorf("series %d reads back %v, want %v", i+1, got, tc.series[i].Samples)
					}
				}
				// Rejected series are not registered; a rejected sample is not stored.
				for _, r := range tc.want {
					s := req.Series[r.Series]
					if r.Sample == -1 {
						ids := make([]uint64, 1)
						if err := f.reg.Lookup(context.Background(), []labels.Labels{s.Labels.WithoutEmpty()}, ids); err != nil || ids[0] != 0 {
							t.Errorf("rejected series %d is registered as %d (%v)", r.Series, ids[0], err)
						}
						continue
					}
					got, err := f.r.Samples(context.Background(), s.Labels, 0, kv.MaxTimestamp)
					if err != nil {
						t.Fatal(err)
					}
					for _, smp := range got {
						if smp.T == s.Samples[r.Sample].T {
							t.Errorf("rejected sample %+v was stored", smp)
						}
					}
				}
			})
		})
	}
}

// checkKinds checks each rejection's Kind against its reason: a whole series
// for its labels, a sample for its age or its timestamp's range.
func checkKinds(t *testing.T, rs []write.Rejection) {
	t.Helper()
	for _, r := range rs {
		want := write.ErrOutOfRange
		switch {
		case r.Sample == -1:
			want = write.ErrInvalidLabels
		case strings.Contains(r.Reason, "is older than the max age"):
			want = write.ErrTooOld
		}
		if r.Kind != want {
			t.Errorf("rejection %q: kind %v, want %v", r.Reason, r.Kind, want)
		}
	}
}

// withoutKinds is rs with every Kind cleared, to compare with wanted
// rejections that give only positions and reasons.
func withoutKinds(rs []write.Rejection) []write.Rejection {
	out := slices.Clone(rs)
	for i := range out {
		out[i].Kind = nil
	}
	return out
}

func rejections(rs []write.Rejection) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  series %d sample %d (%d): %s\n", r.Series, r.Sample, r.Samples, r.Reason)
	}
	return b.String()
}

func TestRequestLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		var tooManySeries, tooManySamples write.Request
		for i := range 11 {
			tooManySeries.Series = append(tooManySeries.Series, write.Series{Labels: labels.FromStrings("__name__", "many_series", "i", fmt.Sprint(i)), Samples: one(nowMs, 1)})
		}
		for i := range 3 {
			s := write.Series{Labels: labels.FromStrings("__name__", "many_samples", "i", fmt.Sprint(i))}
			for j := range 7 {
				s.Samples = append(s.Samples, cellenc.Sample{T: nowMs - int64(j), V: 1})
			}
			tooManySamples.Series = append(tooManySamples.Series, s)
		}
		for _, tc := range []struct {
			name   string
			req    write.Request
			msg    string
			metric string
		}{
			{"too many series", tooManySeries, "invalid write request: 11 series in the request, over the limit of 10", "many_series"},
			{"too many samples", tooManySamples, "invalid write request: 21 samples in the request, over the limit of 20", "many_samples"},
		} {
			t.Run(tc.name+" are refused whole", func(t *testing.T) {
				res, err := f.w.Write(context.Background(), &tc.req)
				if !errors.Is(err, write.ErrInvalid) || err.Error() != tc.msg {
					t.Errorf("Write = %v, want %q", err, tc.msg)
				}
				if res.SamplesWritten != 0 || res.SeriesWritten != 0 {
					t.Errorf("Result %+v", res)
				}
				series, err := f.r.SeriesInRange(context.Background(), 0, kv.MaxTimestamp, labels.MustNewMatcher(labels.MatchEqual, "__name__", tc.metric))
				if err != nil || len(series) != 0 {
					t.Errorf("a refused request left series %v, %v", series, err)
				}
				for _, table := range []string{schema.TableData, schema.TableIndex, schema.TableSeries} {
					for _, fam := range []string{schema.FamilyRaw, schema.FamilyTags, schema.FamilyPostings, schema.FamilySeriesID, schema.FamilySeriesLabels} {
						if n := f.st.Puts(table, fam); n != 0 {
							t.Errorf("a refused request put %d cells in %s/%s", n, table, fam)
						}
					}
				}
			})
		}
	})
}

// TestValuesAreStoredBitExact writes the floats that are easy to lose: NaN
// payloads (the stale marker), infinities, negative zero, subnormals.
func TestValuesAreStoredBitExact(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		lbls := labels.FromStrings("__name__", "bits", "instance", "i")
		bits := []uint64{
			0x7ff0000000000002, // Prometheus' stale marker
			0x7ff8000000000001, // Prometheus' normal NaN
			0x7ff8000000000000, // math.NaN()
			0xfff8000000000000, // a negative quiet NaN
			math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1)),
			0x8000000000000000, // -0
			1,                  // the smallest subnormal
			math.Float64bits(math.MaxFloat64),
		}
		var samples []cellenc.Sample
		for i, b := range bits {
			samples = append(samples, cellenc.Sample{T: nowMs - int64(len(bits)-i)*1000, V: math.Float64frombits(b)})
		}
		f.write(t, write.Request{Series: []write.Series{{Labels: lbls, Samples: samples}}})
		got := f.samples(t, lbls)
		if len(got) != len(bits) {
			t.Fatalf("read %d samples, want %d", len(got), len(bits))
		}
		for i, s := range got {
			if s.T != samples[i].T || math.Float64bits(s.V) != bits[i] {
				t.Errorf("sample %d = (%d, %#x), want (%d, %#x)", i, s.T, math.Float64bits(s.V), samples[i].T, bits[i])
			}
		}
	})
}

// TestRetriesAreIdempotent sends one request three times (and out of order, and
// across buckets and days): every sample is stored once, bit-exact.
func TestRetriesAreIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		stale := math.Float64frombits(0x7ff0000000000002)
		a := labels.FromStrings("__name__", "retried", "host", "web-1", "job", "node")
		c := labels.FromStrings("__name__", "retried", "host", "web-2", "job", "node")
		req := write.Request{Series: []write.Series{
			{Labels: a, Samples: []cellenc.Sample{{T: nowMs, V: 1}, {T: nowMs - 3600_000, V: 2}, {T: nowMs - 13*3600_000, V: 3}, {T: nowMs + 1, V: stale}}},
			{Labels: c, Samples: []cellenc.Sample{{T: nowMs - 1000, V: 0.5}}},
		}}
		for range 3 {
			res := f.write(t, req)
			if res.SamplesWritten != 5 || res.SeriesWritten != 2 || len(res.Rejected) != 0 {
				t.Fatalf("Result %+v", res)
			}
		}
		want := []cellenc.Sample{{T: nowMs - 13*3600_000, V: 3}, {T: nowMs - 3600_000, V: 2}, {T: nowMs, V: 1}, {T: nowMs + 1, V: stale}}
		got := f.samples(t, a)
		if len(got) != len(want) {
			t.Fatalf("read %v, want %v", got, want)
		}
		for i := range want {
			if got[i].T != want[i].T || math.Float64bits(got[i].V) != math.Float64bits(want[i].V) {
				t.Errorf("sample %d = (%d, %#x), want (%d, %#x)", i, got[i].T, math.Float64bits(got[i].V), want[i].T, math.Float64bits(want[i].V))
			}
		}
		// Every raw cell has exactly one version.
		sc := f.st.Scan(context.Background(), schema.TableData, nil, nil, kv.MaxVersions(10))
		defer sc.Close()
		cells := 0
		for sc.Next() {
			row := sc.Row()
			for i, cell := range row.Cells {
				if i > 0 && cell.Family == row.Cells[i-1].Family && string(cell.Qualifier) == string(row.Cells[i-1].Qualifier) {
					t.Errorf("row %q: two versions of %s:%x", row.Key, cell.Family, cell.Qualifier)
				}
				if cell.Family == schema.FamilyRaw {
					cells++
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if cells != 5 {
			t.Errorf("%d raw cells, want 5", cells)
		}
	})
}

// TestTagsPostingsAndMetadataAreWrittenOncePerProcess checks the layout beyond raw
// samples: t: columns per row, postings per day, metadata; and that a process
// writes each of them once.
func TestTagsPostingsAndMetadataAreWrittenOncePerProcess(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		st := b.Store(t)
		f := newFixture(t, st, b.Settings, testLimits)
		lbls := labels.FromStrings("__name__", "node_load1", "instance", "10.0.0.1:9100", "job", "node")
		today, yesterday := nowMs-1000, nowMs-20*3600_000 // yesterday is another day and bucket
		req := write.Request{
			Series: []write.Series{{Labels: lbls, Samples: []cellenc.Sample{{T: today, V: 1}, {T: yesterday, V: 2}, {T: today + 1, V: 3}}}},
			Metadata: []schema.Metadata{
				{Metric: "node_load1", Type: "gauge", Help: "1m load average.", Unit: ""},
				{}, // no metadata: ignored
			},
		}
		res := f.write(t, req)
		if res.SamplesWritten != 3 || res.MetadataWritten != 1 || len(res.Rejected) != 0 {
			t.Fatalf("Result %+v", res)
		}
		if n := f.st.Puts(schema.TableData, schema.FamilyTags); n != 4 {
			t.Errorf("first write put %d tag cells, want 2 rows x 2 labels", n)
		}
		if n := f.st.Puts(schema.TableIndex, schema.FamilyPostings); n != 6 {
			t.Errorf("first write put %d postings, want 2 days x 3 labels", n)
		}
		if n := f.st.Puts(schema.TableMeta, schema.FamilyMeta); n != 3 {
			t.Errorf("first write put %d metadata cells, want 3", n)
		}

		// The rows: salt, host (instance: there is no host label), metric, ID, bucket.
		host := "10.0.0.1:9100"
		salt := schema.Salt(host, b.Settings.Salts)
		prefix := schema.HostMetricPrefix(nil, salt, host, "node_load1")
		sc := st.Scan(ctx, schema.TableData, prefix, kv.PrefixEnd(prefix), kv.MaxVersions(10))
		defer sc.Close()
		var buckets []int64
		for sc.Next() {
			row := sc.Row()
			k, err := schema.ParseDataRowKey(row.Key)
			if err != nil {
				t.Fatal(err)
			}
			buckets = append(buckets, k.BucketStart)
			tags := map[string]string{}
			for _, c := range row.Cells {
				if c.Family != schema.FamilyTags {
					continue
				}
				if _, dup := tags[string(c.Qualifier)]; dup {
					t.Errorf("row of bucket %d has two versions of t:%s", k.BucketStart, c.Qualifier)
				}
				tags[string(c.Qualifier)] = string(c.Value)
				if want := k.BucketStart + b.Settings.BucketWidth.Milliseconds() - 1; c.Timestamp != want {
					t.Errorf("t:%s has timestamp %d, want the bucket's last millisecond %d", c.Qualifier, c.Timestamp, want)
				}
			}
			if want := map[string]string{"instance": host, "job": "node"}; fmt.Sprint(tags) != fmt.Sprint(want) {
				t.Errorf("row of bucket %d has tags %v, want %v", k.BucketStart, tags, want)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		width := b.Settings.BucketWidth
		if want := []int64{schema.BucketStart(today, width), schema.BucketStart(yesterday, width)}; !slices.Equal(buckets, want) {
			t.Errorf("rows of buckets %v, want %v (newest first)", buckets, want)
		}

		// Postings of both days, for every label.
		p := index.NewPostings(st, index.PostingsOptions{})
		ids := make([]uint64, 1)
		if err := index.NewRegistry(st, index.RegistryOptions{}).Lookup(ctx, []labels.Labels{lbls}, ids); err != nil || ids[0] == 0 {
			t.Fatalf("Lookup = %v, %v", ids, err)
		}
		for _, day := range []uint32{schema.Day(today), schema.Day(yesterday)} {
			lbls.Range(func(l labels.Label) {
				got, err := p.Equal(ctx, day, l.Name, l.Value)
				if err != nil || !slices.Equal(got, ids) {
					t.Errorf("postings of %s=%q on day %d = %v, %v; want %v", l.Name, l.Value, day, got, err, ids)
				}
			})
		}
		if day := schema.Day(today) + 1; day != schema.Day(yesterday) {
			if got, _ := p.Equal(ctx, day, "job", "node"); len(got) != 0 {
				t.Errorf("postings on a day without samples: %v", got)
			}
		}

		// Metadata.
		md, ok, err := f.r.Metadata(ctx, "node_load1")
		if want := (schema.Metadata{Metric: "node_load1", Type: "gauge", Help: "1m load average."}); err != nil || !ok || md != want {
			t.Errorf("Metadata = %+v, %v, %v; want %+v", md, ok, err, want)
		}

		// The same request again writes samples only.
		f.write(t, req)
		if n := f.st.Puts(schema.TableData, schema.FamilyRaw); n != 6 {
			t.Errorf("two writes put %d raw cells, want 6", n)
		}
		for _, c := range []struct{ table, family string }{
			{schema.TableData, schema.FamilyTags}, {schema.TableIndex, schema.FamilyPostings}, {schema.TableMeta, schema.FamilyMeta},
		} {
			if n := f.st.Puts(c.table, c.family); n != 0 {
				t.Errorf("the second write put %d cells in %s/%s, want 0", n, c.table, c.family)
			}
		}
		// Changed metadata is written again.
		req.Metadata[0].Help = "Load average over 1 minute."
		f.write(t, req)
		if n := f.st.Puts(schema.TableMeta, schema.FamilyMeta); n != 3 {
			t.Errorf("changed metadata put %d cells, want 3", n)
		}
		if md, _, _ := f.r.Metadata(ctx, "node_load1"); md.Help != "Load average over 1 minute." {
			t.Errorf("Metadata after a change = %+v", md)
		}
	})
}

func TestInvalidMetadataIsRejected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		f := newFixture(t, b.Store(t), b.Settings, testLimits)
		res := f.write(t, write.Request{Metadata: []schema.Metadata{
			{Metric: "good_total", Type: "counter"},
			{Type: "counter", Help: "x"},
			{Metric: "up", Type: "foo"},
			{Metric: "up", Help: "\xff"},
			{Metric: strings.Repeat("m", 33), Type: "gauge"},
		}})
		want := []write.Rejection{
			{Series: -1, Sample: 1, Reason: `metadata (type "counter", help "x", unit "") has no metric name`},
			{Series: -1, Sample: 2, Reason: `metadata of metric "up": type "foo" is not one of counter, gauge, histogram, gaugehistogram, summary, info, stateset, unknown`},
			{Series: -1, Sample: 3, Reason: `metadata of metric "up": the help text is not valid UTF-8`},
			{Series: -1, Sample: 4, Reason: `metadata of metric "` + strings.Repeat("m", 33) + `": the metric name is 33 bytes long, over the limit of 32`},
		}
		if !slices.Equal(res.Rejected, want) || res.MetadataWritten != 1 {
			t.Errorf("Rejected:\n%s\nwant:\n%s\nMetadataWritten %d", rejections(res.Rejected), rejections(want), res.MetadataWritten)
		}
		if md, ok, err := f.r.Metadata(context.Background(), "good_total"); err != nil || !ok || md.Type != "counter" {
			t.Errorf("Metadata(good_total) = %+v, %v, %v", md, ok, err)
		}
		if _, ok, _ := f.r.Metadata(context.Background(), "up"); ok {
			t.Errorf("invalid metadata of up was stored")
		}
	})
}

// TestStoreFailuresAreNotAcknowledged: a write the store refused returns an error
// and a zero Result, and nothing of it counts as written: a retry writes it all.
func TestStoreFailuresAreNotAcknowledged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		st := b.Store(t)
		f := newFixture(t, st, b.Settings, testLimits)
		lbls := labels.FromStrings("__name__", "fails", "job", "j")
		req := write.Request{Series: []write.Series{{Labels: lbls, Samples: one(nowMs, 1)}}}

		if err := st.DropTable(ctx, schema.TableData); err != nil {
			t.Fatal(err)
		}
		res, err := f.w.Write(ctx, &req)
		if !errors.Is(err, kv.ErrTableNotFound) || !strings.HasPrefix(err.Error(), "write: store 1 samples: ") {
			t.Errorf("Write without a data table = %v, want ErrTableNotFound", err)
		}
		if res.SamplesWritten != 0 || res.SeriesWritten != 0 || res.MetadataWritten != 0 {
			t.Errorf("a failed write reports %+v", res)
		}
		schematest.Create(t, st, b.Settings)
		f.st.Puts(schema.TableData, schema.FamilyTags)
		f.write(t, req)
		if n := f.st.Puts(schema.TableData, schema.FamilyTags); n != 1 {
			t.Errorf("the retry put %d tag cells, want 1: a failed write must not mark its row's tags as written", n)
		}
		if got := f.samples(t, lbls); !slices.Equal(got, one(nowMs, 1)) {
			t.Errorf("after the retry: %v", got)
		}

		// A closed store.
		closed := b.Store(t)
		g := newFixture(t, closed, b.Settings, testLimits)
		if err := closed.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := g.w.Write(ctx, &req); !errors.Is(err, kv.ErrClosed) {
			t.Errorf("Write on a closed store = %v, want ErrClosed", err)
		}
	})
}
