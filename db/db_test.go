package db_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

var (
	now   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	nowMs = now.UnixMilli()
)

func forEachBackend(t *testing.T, fn func(t *testing.T, b schematest.Backend)) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

func open(t testing.TB, st kv.Store, settings schema.Settings, lim write.Limits) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), db.Options{
		Store: st, Settings: settings, Write: write.Options{Limits: lim}, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatalf("db.Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func samples(t testing.TB, d *db.DB, lbls labels.Labels) []cellenc.Sample {
	t.Helper()
	got, err := d.Reader().Samples(context.Background(), lbls, 0, kv.MaxTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAppenders loads data the way Prometheus' promqltest does — arbitrary
// series, timestamps from the epoch on, MaxAge unlimited — through both appender
// interfaces, and reads it back.
func TestAppenders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		b.TableOptions.RawRetention = 0 // keep samples of 1970
		d := open(t, b.Store(t), b.Settings, write.Limits{})
		a := labels.FromStrings("__name__", "http_requests", "job", "api", "instance", "0")
		c := labels.FromStrings("__name__", "http_requests", "job", "api", "instance", "1")

		t.Run("AppenderV2 buffers until Commit", func(t *testing.T) {
			app := d.AppenderV2(ctx)
			var refA, refC storage.SeriesRef
			for i := range int64(13) {
				var err error
				// Alternate series, passing back the refs like the remote-write handler.
				if refA, err = app.Append(refA, a, 0, i*300_000, float64(i), nil, nil, storage.AOptions{}); err != nil {
					t.Fatal(err)
				}
				if refC, err = app.Append(refC, c, 0, i*300_000, float64(10*i), nil, nil, storage.AOptions{
					Metadata: metadata.Metadata{Type: "counter", Help: "Requests.", Unit: "requests"},
				}); err != nil {
					t.Fatal(err)
				}
			}
			if refA == refC || refA == 0 {
				t.Errorf("refs %d and %d", refA, refC)
			}
			// A ref of another series is only a hint.
			if _, err := app.Append(refC, a, 0, 3_600_001, math.Float64frombits(0x7ff0000000000002), nil, nil, storage.AOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := samples(t, d, a); len(got) != 0 {
				t.Fatalf("samples visible before Commit: %v", got)
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			gotA, gotC := samples(t, d, a), samples(t, d, c)
			if len(gotA) != 14 || len(gotC) != 13 {
				t.Fatalf("read %d and %d samples, want 14 and 13", len(gotA), len(gotC))
			}
			for i := range int64(13) {
				if gotA[i] != (cellenc.Sample{T: i * 300_000, V: float64(i)}) || gotC[i] != (cellenc.Sample{T: i * 300_000, V: float64(10 * i)}) {
					t.Errorf("sample %d: %v, %v", i, gotA[i], gotC[i])
				}
			}
			if last := gotA[13]; last.T != 3_600_001 || math.Float64bits(last.V) != 0x7ff0000000000002 {
				t.Errorf("stale marker read back as (%d, %#x)", last.T, math.Float64bits(last.V))
			}
			md, ok, err := d.Reader().Metadata(ctx, "http_requests")
			if want := (schema.Metadata{Metric: "http_requests", Type: "counter", Help: "Requests.", Unit: "requests"}); err != nil || !ok || md != want {
				t.Errorf("metadata = %+v, %v, %v; want %+v", md, ok, err, want)
			}
			series, err := d.Reader().SeriesInRange(ctx, 0, 3_600_000, labels.MustNewMatcher(labels.MatchEqual, "job", "api"))
			if err != nil || len(series) != 2 || !labels.Equal(series[0], a) || !labels.Equal(series[1], c) {
				t.Errorf("SeriesInRange = %v, %v", series, err)
			}
			if err := app.Commit(); err == nil {
				t.Errorf("a second Commit succeeded")
			}
			if _, err := app.Append(0, a, 0, 1, 1, nil, nil, storage.AOptions{}); err == nil {
				t.Errorf("Append after Commit succeeded")
			}
		})

		t.Run("Rollback discards", func(t *testing.T) {
			rolled := labels.FromStrings("__name__", "rolled_back")
			app := d.AppenderV2(ctx)
			if _, err := app.Append(0, rolled, 0, 1000, 1, nil, nil, storage.AOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := app.Rollback(); err != nil {
				t.Fatal(err)
			}
			if got := samples(t, d, rolled); len(got) != 0 {
				t.Errorf("rolled back samples were stored: %v", got)
			}
		})

		t.Run("the older Appender interface", func(t *testing.T) {
			v1 := labels.FromStrings("__name__", "v1_metric", "host", "h")
			app := d.Appender(ctx)
			app.SetOptions(&storage.AppendOptions{DiscardOutOfOrder: true})
			ref, err := app.Append(0, v1, 2000, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := app.Append(ref, v1, 1000, 1); err != nil { // out of order: accepted
				t.Fatal(err)
			}
			if _, err := app.UpdateMetadata(ref, v1, metadata.Metadata{Type: "gauge", Help: "v1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := app.AppendSTZeroSample(ref, v1, 3000, 500); err != nil {
				t.Fatal(err)
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := samples(t, d, v1); !slices.Equal(got, []cellenc.Sample{{T: 1000, V: 1}, {T: 2000, V: 2}}) {
				t.Errorf("read %v", got)
			}
			if md, _, _ := d.Reader().Metadata(ctx, "v1_metric"); md.Type != "gauge" || md.Help != "v1" {
				t.Errorf("metadata %+v", md)
			}
		})
	})
}

// TestAppendErrors checks that each problem fails its own Append with our
// sentinel and the Prometheus one its remote-write handler maps to 400.
func TestAppendErrors(t *testing.T) {
	ctx := context.Background()
	b := schematest.Backends()[0] // validation needs no second backend
	lim := write.DefaultLimits()
	lim.MaxAge = 24 * time.Hour
	d := open(t, b.Store(t), b.Settings, lim)
	up := labels.FromStrings("__name__", "up", "job", "j")
	for _, tc := range []struct {
		name   string
		append func(storage.AppenderV2) (storage.SeriesRef, error)
		msg    string
		is     []error
	}{
		{
			"an invalid native histogram",
			func(a storage.AppenderV2) (storage.SeriesRef, error) {
				return a.Append(0, up, 0, nowMs, 0, &histogram.Histogram{Count: 1}, nil, storage.AOptions{})
			},
			`histogram at timestamp 1795953600000 (2026-11-29T12:00:00Z): 0 observations found in buckets, but the Count field is 1: ` +
				`histogram's observation count should equal the number of observations found in the buckets (in absence of NaN) in series {__name__="up", job="j"}`,
			[]error{write.ErrInvalid, write.ErrInvalidHistogram, histogram.ErrHistogramCountMismatch, storage.ErrOutOfBounds},
		},
		{
			"an invalid float histogram",
			func(a storage.AppenderV2) (storage.SeriesRef, error) {
				return a.Append(0, up, 0, nowMs, 0, nil, &histogram.FloatHistogram{Count: -1}, storage.AOptions{})
			},
			`histogram at timestamp 1795953600000 (2026-11-29T12:00:00Z): observation count is  -1: histogram's observation count is negative in series {__name__="up", job="j"}`,
			[]error{write.ErrInvalid, write.ErrInvalidHistogram, histogram.ErrHistogramNegativeCount, storage.ErrOutOfBounds},
		},
		{
			"a series without a metric name",
			func(a storage.AppenderV2) (storage.SeriesRef, error) {
				return a.Append(0, labels.FromStrings("job", "j"), 0, nowMs, 1, nil, nil, storage.AOptions{})
			},
			`metric name (label __name__) is missing in series {job="j"}`,
			[]error{write.ErrInvalid, write.ErrInvalidLabels, storage.ErrOutOfBounds},
		},
		{
			"a sample older than the max age",
			func(a storage.AppenderV2) (storage.SeriesRef, error) {
				return a.Append(0, up, 0, nowMs-24*3600_000-1, 1, nil, nil, storage.AOptions{})
			},
			`timestamp 1795867199999 (2026-11-28T11:59:59.999Z) is older than the max age of 1d (before 2026-11-28T12:00:00Z) in series {__name__="up", job="j"}`,
			[]error{write.ErrInvalid, write.ErrTooOld, storage.ErrTooOldSample},
		},
		{
			"a sample too far in the future",
			func(a storage.AppenderV2) (storage.SeriesRef, error) {
				return a.Append(0, up, 0, nowMs+10*60_000+1, 1, nil, nil, storage.AOptions{})
			},
			`timestamp 1795954200001 (2026-11-29T12:10:00.001Z) is more than 10m ahead of the server's clock (2026-11-29T12:00:00Z) in series {__name__="up", job="j"}`,
			[]error{write.ErrInvalid, write.ErrOutOfRange, storage.ErrOutOfBounds},
		},
	} {
		t.Run(tc.name+" fails its Append", func(t *testing.T) {
			app := d.AppenderV2(ctx)
			defer app.Rollback()
			ref, err := tc.append(app)
			if err == nil || err.Error() != tc.msg || ref != 0 {
				t.Errorf("Append = %d, %v\nwant error %s", ref, err, tc.msg)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("the error does not wrap %v", target)
				}
			}
			if errors.Is(err, storage.ErrTooOldSample) == errors.Is(err, storage.ErrOutOfBounds) {
				t.Errorf("the error should wrap exactly one of Prometheus' ErrTooOldSample and ErrOutOfBounds")
			}
		})
	}

	t.Run("an invalid exemplar is reported and its sample kept", func(t *testing.T) {
		app := d.AppenderV2(ctx)
		long := labels.FromStrings("trace_id", string(make([]byte, 129)))
		ex := []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "a"), Value: 1, Ts: nowMs, HasTs: true}, {Labels: long, Value: 2, Ts: nowMs, HasTs: true}}
		ref, err := app.Append(0, up, 0, nowMs, 5, nil, nil, storage.AOptions{Exemplars: ex})
		var pe *storage.AppendPartialError
		if ref == 0 || !errors.As(err, &pe) || len(pe.ExemplarErrors) != 1 || pe.ExemplarErrors[0].Index != 1 ||
			!errors.Is(pe.ExemplarErrors[0], write.ErrInvalidExemplar) || !errors.Is(pe.ExemplarErrors[0], storage.ErrOutOfBounds) {
			t.Fatalf("Append with exemplars = %d, %v", ref, err)
		}
		exApp := app.(storage.ExemplarAppenderV2)
		if _, err := exApp.AppendExemplars(ref, up, ex[:1]); err != nil {
			t.Errorf("AppendExemplars = %v", err)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := samples(t, d, up); !slices.Equal(got, []cellenc.Sample{{T: nowMs, V: 5}}) {
			t.Errorf("read %v", got)
		}
	})
}

func TestOpenAndClose(t *testing.T) {
	ctx := context.Background()
	b := schematest.Backends()[0]
	st := b.Store(t)
	other := b.Settings
	other.HostLabels = []string{"node"}
	if _, err := db.Open(ctx, db.Options{Store: st, Settings: other}); !errors.Is(err, schema.ErrMismatch) {
		t.Errorf("Open with other host labels = %v, want ErrMismatch", err)
	}
	if _, err := db.Open(ctx, db.Options{Settings: b.Settings}); !errors.Is(err, kv.ErrInvalidArgument) {
		t.Errorf("Open without a store = %v", err)
	}

	d := open(t, st, b.Settings, write.Limits{})
	app := d.AppenderV2(ctx)
	if _, err := app.Append(0, labels.FromStrings("__name__", "x"), 0, 1, 1, nil, nil, storage.AOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Commit after Close = %v, want ErrClosed", err)
	}
	if _, err := d.Write(ctx, &write.Request{}); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if _, err := st.ListTables(ctx); err != nil {
		t.Errorf("Close closed a store it does not own: %v", err)
	}

	owned, err := db.Open(ctx, db.Options{Store: st, Settings: b.Settings, CloseStore: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := owned.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListTables(ctx); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("with CloseStore, the store is still open: %v", err)
	}
}

// TestStoreFailureFailsCommit: what the store did not take is not acknowledged.
func TestStoreFailureFailsCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		st := b.Store(t)
		d := open(t, st, b.Settings, write.Limits{})
		if err := st.DropTable(ctx, schema.TableData); err != nil {
			t.Fatal(err)
		}
		app := d.AppenderV2(ctx)
		if _, err := app.Append(0, labels.FromStrings("__name__", "lost"), 0, nowMs, 1, nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := app.Commit(); !errors.Is(err, kv.ErrTableNotFound) {
			t.Errorf("Commit without a data table = %v, want ErrTableNotFound", err)
		}
	})
}

// TestConcurrentWritersAgreeOnSeriesIDs: 4 writers through two DBs (two
// processes' worth: on HBase, two connections) write overlapping new series at
// once. Every series gets exactly one ID, and every writer's samples are stored
// under it.
func TestConcurrentWritersAgreeOnSeriesIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		ctx := context.Background()
		sts := b.Stores(t, 2)
		dbs := []*db.DB{open(t, sts[0], b.Settings, write.Limits{}), open(t, sts[1], b.Settings, write.Limits{})}
		const (
			writers  = 4
			series   = 300
			requests = 6 // per writer; each carries half of the series
		)
		all := make([]labels.Labels, series)
		for i := range all {
			all[i] = labels.FromStrings("__name__", fmt.Sprintf("race_%d", i%7), "instance", fmt.Sprintf("host-%d", i%13), "i", fmt.Sprint(i))
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				d := dbs[w%2]
				for r := range requests {
					// Writer w sends, in request r, the series whose index is
					// congruent to w or r mod 2 — overlapping, in different orders.
					var req write.Request
					for k := range series {
						i := k
						if w%2 == 1 {
							i = series - 1 - k
						}
						if i%2 != w%2 && i%2 != r%2 {
							continue
						}
						// Each writer owns its timestamps, so the samples of all
						// writers must be found under the series' one ID.
						ts := nowMs - int64(r*writers+w)*1000
						req.Series = append(req.Series, write.Series{Labels: all[i], Samples: []cellenc.Sample{{T: ts, V: float64(w)}}})
					}
					res, err := d.Write(ctx, &req)
					if err != nil || res.SamplesWritten != len(req.Series) {
						t.Errorf("writer %d request %d: %+v, %v", w, r, res, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}

		// The registry: one forward row per series, distinct IDs.
		start := []byte{schema.SeriesForwardKind}
		sc := sts[0].Scan(ctx, schema.TableSeries, start, kv.PrefixEnd(start))
		idOf := map[string]uint64{}
		owner := map[uint64]string{}
		for sc.Next() {
			row := sc.Row()
			lbls, err := schema.ParseSeriesForwardRow(row.Key)
			if err != nil || len(row.Cells) != 1 {
				t.Fatalf("forward row %q: %v, %d cells", row.Key, err, len(row.Cells))
			}
			id, err := schema.DecodeSeriesID(row.Cells[0].Value)
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprint(lbls)
			if o, dup := owner[id]; dup {
				t.Errorf("ID %d belongs to %s and %s", id, o, key)
			}
			owner[id], idOf[key] = key, id
		}
		sc.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if len(idOf) != series {
			t.Errorf("%d forward rows, want %d", len(idOf), series)
		}

		// Every data row is under the registered ID of its series, and every
		// writer's samples are there.
		reader := dbs[0].Reader()
		for i, ls := range all {
			got, err := reader.Samples(ctx, ls, 0, kv.MaxTimestamp)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for w := range writers {
				for r := range requests {
					if i%2 == w%2 || i%2 == r%2 {
						want++
					}
				}
			}
			if len(got) != want {
				t.Errorf("series %s: %d samples, want %d", ls, len(got), want)
			}
		}
		sc = sts[0].Scan(ctx, schema.TableData, nil, nil, kv.Families(schema.FamilyTags))
		defer sc.Close()
		rows := 0
		for sc.Next() {
			row := sc.Row()
			k, err := schema.ParseDataRowKey(row.Key)
			if err != nil {
				t.Fatal(err)
			}
			var b labels.ScratchBuilder
			b.Add("__name__", k.Metric)
			for _, c := range row.Cells {
				b.Add(string(c.Qualifier), string(c.Value))
			}
			b.Sort()
			key := fmt.Sprint(toSchema(b.Labels()))
			if idOf[key] != k.SeriesID {
				t.Errorf("data row of %s is under ID %d, the registry says %d", key, k.SeriesID, idOf[key])
			}
			rows++
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if rows < series {
			t.Errorf("%d data rows, want at least one per series (%d)", rows, series)
		}
	})
}

func toSchema(ls labels.Labels) []schema.Label {
	var out []schema.Label
	ls.Range(func(l labels.Label) { out = append(out, schema.Label{Name: l.Name, Value: l.Value}) })
	return out
}
