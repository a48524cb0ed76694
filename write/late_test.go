package write_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// rawCell is one raw cell of a series as stored: its sample's offset in the
// bucket and its cell timestamp.
type rawCell struct {
	bucket, offset, ts int64
}

// rawCells returns the raw cells of the one series of metric in the store,
// in key order.
func rawCells(t *testing.T, st kv.Store, metric string) []rawCell {
	t.Helper()
	sc := st.Scan(context.Background(), schema.TableData, nil, nil, kv.Families(schema.FamilyRaw))
	defer sc.Close()
	var out []rawCell
	for sc.Next() {
		row := sc.Row()
		k, err := schema.ParseDataRowKey(row.Key)
		if err != nil {
			t.Fatal(err)
		}
		if k.Metric != metric {
			continue
		}
		for _, c := range row.Cells {
			off, err := schema.DecodeRawQualifier(c.Qualifier, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rawCell{k.BucketStart, off, c.Timestamp})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mark is a pending mark as stored: the bucket of the data row it names and
// whether it is a late one.
type mark struct {
	bucket int64
	late   bool
}

// marks returns the pending marks of the store, in key order.
func marks(t *testing.T, st kv.Store) []mark {
	t.Helper()
	sc := st.Scan(context.Background(), schema.TablePending, nil, nil)
	defer sc.Close()
	var out []mark
	for sc.Next() {
		row := sc.Row()
		_, bucket, late, err := schema.PendingDataRowKey(row.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range row.Cells {
			switch {
			case late && schema.IsPendingLateQualifier(c.Qualifier):
				out = append(out, mark{bucket, true})
			case !late && slices.Equal(c.Qualifier, schema.PendingOnTimeQualifier):
				out = append(out, mark{bucket, false})
			default:
				t.Fatalf("pending cell with column %x in a row of late marks %v", c.Qualifier, late)
			}
			if want := schema.PendingMarkTimestamp(bucket, time.Hour); c.Timestamp != want {
				t.Errorf("mark of bucket %d at %d, want the bucket's last millisecond %d", bucket, c.Timestamp, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A sample is on time while its bucket is less than schema.OnTimeWindow past
// its end by the writer's clock: its cell has its own timestamp, and its row
// gets one on-time mark per process. Later it is late: its cell timestamp is
// the bucket's last millisecond, and every request marks its row anew with a
// late mark of its own. Both read back at their own timestamps.
func TestOnTimeAndLateSamples(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		st := b.Store(t)
		f := newFixture(t, st, b.Settings, write.Limits{})
		lbls := labels.FromStrings("__name__", "m", "host", "h")
		hour := time.Hour.Milliseconds()
		open := schema.BucketStart(nowMs, time.Hour) // now is 12:00: the bucket 12:00-13:00 is open
		window := schema.OnTimeWindow(time.Hour).Milliseconds()
		if window != 3*60_000 {
			t.Fatalf("OnTimeWindow(1h) = %dms, want 3m", window)
		}
		req := func(ts ...int64) write.Request {
			s := write.Series{Labels: lbls}
			for _, t := range ts {
				s.Samples = append(s.Samples, cellenc.Sample{T: t, V: float64(t)})
			}
			return write.Request{Series: []write.Series{s}}
		}

		// 11:59:59 and 12:00:01 by a clock at 12:00: both buckets on time (the
		// one that just ended is within its window).
		f.write(t, req(open-1000, open+1000))
		// Again: nothing new to mark.
		f.write(t, req(open+2000))
		// 10:30 and 10:31, in two requests: their bucket ended an hour ago,
		// so both are late, and each request marks the row.
		f.write(t, req(open-hour-30*60_000))
		f.write(t, req(open-hour-29*60_000))

		want := []rawCell{
			{open, 1000, open + 1000},
			{open, 2000, open + 2000},
			{open - hour, hour - 1000, open - 1000},
			{open - 2*hour, 30 * 60_000, open - hour - 1},
			{open - 2*hour, 31 * 60_000, open - hour - 1},
		}
		if got := rawCells(t, st, "m"); !slices.Equal(got, want) {
			t.Errorf("raw cells (bucket, offset, cell timestamp):\n%v\nwant\n%v", got, want)
		}
		// On-time marks first (their key range comes first in a salt), then
		// the late ones.
		wantMarks := []mark{{open - hour, false}, {open, false}, {open - 2*hour, true}, {open - 2*hour, true}}
		if got := marks(t, st); !slices.Equal(got, wantMarks) {
			t.Errorf("pending marks %v, want %v", got, wantMarks)
		}
		wantSamples := []cellenc.Sample{
			{T: open - hour - 30*60_000, V: float64(open - hour - 30*60_000)},
			{T: open - hour - 29*60_000, V: float64(open - hour - 29*60_000)},
			{T: open - 1000, V: float64(open - 1000)},
			{T: open + 1000, V: float64(open + 1000)},
			{T: open + 2000, V: float64(open + 2000)},
		}
		if got := f.samples(t, lbls); !slices.Equal(got, wantSamples) {
			t.Errorf("samples read back:\n%v\nwant\n%v", got, wantSamples)
		}
	})
}

// The boundaries of the on-time window, by the writer's clock.
func TestIsOnTime(t *testing.T) {
	const hour = int64(3600_000)
	for _, tc := range []struct {
		name string
		now  int64
		want bool
	}{
		{"in the bucket", 10 * hour, true},
		{"at its end", 11 * hour, true},
		{"a millisecond before the window closes", 11*hour + 3*60_000 - 1, true},
		{"when the window closes", 11*hour + 3*60_000, false},
		{"an hour later", 12 * hour, false},
	} {
		if got := schema.IsOnTime(10*hour, time.Hour, tc.now); got != tc.want {
			t.Errorf("%s: IsOnTime = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, want := schema.OnTimeDeadline(10*hour, time.Hour), 11*hour+6*60_000; got != want {
		t.Errorf("OnTimeDeadline = %d, want %d", got, want)
	}
	if got := schema.MinGrace(time.Hour); got != 9*time.Minute {
		t.Errorf("MinGrace(1h) = %s, want 9m", got)
	}
	if got := schema.LateCellTimestamp(kv.MaxTimestamp-10, time.Hour); got != kv.MaxTimestamp {
		t.Errorf("LateCellTimestamp near the end of time = %d, want kv.MaxTimestamp", got)
	}
}

// slowStore holds every Apply to the data table until its context is done.
type slowStore struct{ kv.Store }

func (s slowStore) Apply(ctx context.Context, table string, muts []kv.Mutation) error {
	if table != schema.TableData {
		return s.Store.Apply(ctx, table, muts)
	}
	<-ctx.Done()
	return ctx.Err()
}

// On-time samples not stored by their bucket's on-time deadline fail the
// request, retriably (kv.ErrUnavailable: a 503), so that no on-time cell lands
// once its bucket may be sealed; the retry, late by then, stores them as late
// samples.
func TestOnTimeSamplesNotStoredByTheirDeadlineFailRetriably(t *testing.T) {
	// One-minute buckets: a 3s on-time window, so the request below waits 3s
	// for its deadline.
	b := schematest.Backends()[0]
	b.Settings.BucketWidth = time.Minute
	st := b.Store(t)
	width := b.Settings.BucketWidth
	open := schema.BucketStart(nowMs, width)
	// The clock stands 1ms before the window of the bucket that just ended
	// closes: the sample is on time, and has until the deadline, a window
	// later.
	clock := time.UnixMilli(open + schema.OnTimeWindow(width).Milliseconds() - 1)
	w, err := write.New(slowStore{st}, b.Settings, nil, nil, write.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	req := write.Request{Series: []write.Series{{Labels: labels.FromStrings("__name__", "m"), Samples: one(open-1000, 1)}}}
	_, err = w.Write(context.Background(), &req)
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(),
		"on-time samples not stored within their bucket's on-time window; a retry stores them as late samples") {
		t.Fatalf("Write = %v, want a retriable error about the on-time window", err)
	}
	// The retry, once the window closed, is late: stored at the bucket's
	// last millisecond.
	clock = clock.Add(time.Millisecond)
	retry, err := write.New(st, b.Settings, nil, nil, write.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := retry.Write(context.Background(), &req); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	sc := st.Scan(context.Background(), schema.TableData, nil, nil, kv.Families(schema.FamilyRaw))
	defer sc.Close()
	var ts []int64
	for sc.Next() {
		for _, c := range sc.Row().Cells {
			ts = append(ts, c.Timestamp)
		}
	}
	if want := []int64{schema.LateCellTimestamp(open-width.Milliseconds(), width)}; sc.Err() != nil || !slices.Equal(ts, want) {
		t.Errorf("raw cell timestamps after the retry = %v, %v; want %v", ts, sc.Err(), want)
	}
}
