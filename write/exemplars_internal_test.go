package write

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/schema"
)

// describePuts renders puts as "bucket slot/index @ts value {labels}" lines.
func describePuts(t *testing.T, w *Writer, k schema.DataKey, ex []exemplar.Exemplar) (string, int) {
	t.Helper()
	muts, _, n := w.appendExemplarMutations(nil, nil, k, ex)
	var b strings.Builder
	for _, m := range muts {
		dk, err := schema.ParseDataRowKey(m.Row)
		if err != nil {
			t.Fatal(err)
		}
		if dk.SeriesID != k.SeriesID || dk.Host != k.Host || dk.Metric != k.Metric || dk.Salt != k.Salt {
			t.Errorf("row %+v, want the series of %+v", dk, k)
		}
		off, idx, err := schema.ParseExemplarQualifier(m.Qualifier)
		if err != nil {
			t.Fatal(err)
		}
		e, err := cellenc.DecodeExemplarValue(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if m.Family != schema.FamilyExemplars || m.Timestamp != e.Ts {
			t.Errorf("family %s, cell timestamp %d for exemplar at %d", m.Family, m.Timestamp, e.Ts)
		}
		fmt.Fprintf(&b, "%d %d/%d @%d %g %s\n", dk.BucketStart, off, idx, m.Timestamp, e.Value, e.Labels)
	}
	return b.String(), n
}

func TestAppendExemplarMutations(t *testing.T) {
	w := &Writer{width: time.Hour, opts: Options{}.withDefaults()}
	k := schema.DataKey{Salt: 3, Host: "h", Metric: "m_bucket", SeriesID: 42, BucketStart: 123} // BucketStart is ignored
	tr := func(id string) labels.Labels { return labels.FromStrings("trace_id", id) }
	const h = 3_600_000
	for _, tc := range []struct {
		name string
		ex   []exemplar.Exemplar
		want string
		n    int
	}{
		{
			name: "one exemplar per scrape lands in its own slot, at the place its time in the slot points to",
			ex: []exemplar.Exemplar{
				{Labels: tr("b"), Value: 2, Ts: h + 15_000, HasTs: true},
				{Labels: tr("a"), Value: 1, Ts: h + 1_000, HasTs: true},
			},
			want: "3600000 0/1 @3601000 1 {trace_id=\"a\"}\n3600000 10000/5 @3615000 2 {trace_id=\"b\"}\n",
			n:    2,
		},
		{
			name: "repeats are stored once and counted once",
			ex: []exemplar.Exemplar{
				{Labels: tr("a"), Value: 1, Ts: h + 1_000, HasTs: true},
				{Labels: tr("a"), Value: 1, Ts: h + 1_000, HasTs: true},
			},
			want: "3600000 0/1 @3601000 1 {trace_id=\"a\"}\n",
			n:    1,
		},
		{
			name: "exemplars of one timestamp (native histogram buckets) take indexes of one slot",
			ex: []exemplar.Exemplar{
				{Labels: tr("y"), Value: 0.5, Ts: 2*h + 3, HasTs: true},
				{Labels: tr("x"), Value: 0.25, Ts: 2*h + 3, HasTs: true},
			},
			want: "7200000 0/0 @7200003 0.25 {trace_id=\"x\"}\n7200000 0/1 @7200003 0.5 {trace_id=\"y\"}\n",
			n:    2,
		},
		{
			name: "a slot keeps the newest ten of a request: places taken move to the next free one",
			ex: func() []exemplar.Exemplar {
				var ex []exemplar.Exemplar
				for i := range 12 {
					ex = append(ex, exemplar.Exemplar{Labels: tr(fmt.Sprint(i)), Value: float64(i), Ts: h + int64(i)*100, HasTs: true})
				}
				return ex
			}(),
			want: func() string {
				var b strings.Builder
				for i := 2; i < 12; i++ {
					fmt.Fprintf(&b, "3600000 0/%d @%d %d {trace_id=\"%d\"}\n", i-2, h+i*100, i, i)
				}
				return b.String()
			}(),
			n: 10,
		},
		{
			name: "exemplars of two buckets go to two rows; a negative timestamp is left out",
			ex: []exemplar.Exemplar{
				{Labels: tr("late"), Value: 3, Ts: 2*h - 1, HasTs: true},
				{Labels: tr("next"), Value: 4, Ts: 2 * h, HasTs: false},
				{Labels: tr("neg"), Value: 5, Ts: -1, HasTs: true},
			},
			want: "3600000 3590000/9 @7199999 3 {trace_id=\"late\"}\n7200000 0/0 @7200000 4 {trace_id=\"next\"}\n",
			n:    2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.ex)
			got, n := describePuts(t, w, k, tc.ex)
			if got != tc.want || n != tc.n {
				t.Errorf("puts (%d):\n%s\nwant (%d):\n%s", n, got, tc.n, tc.want)
			}
			if after := fmt.Sprint(tc.ex); after != before {
				t.Errorf("the exemplars were modified: %s, were %s", after, before)
			}
		})
	}
}

func TestAppendExemplarMutationsKeepsHasTsAndValueBits(t *testing.T) {
	w := &Writer{width: time.Hour, opts: Options{}.withDefaults()}
	k := schema.DataKey{Host: "h", Metric: "m", SeriesID: 1}
	muts, _, n := w.appendExemplarMutations(nil, nil, k, []exemplar.Exemplar{{Labels: labels.EmptyLabels(), Value: 0, Ts: 5, HasTs: false}})
	if n != 1 || len(muts) != 1 {
		t.Fatalf("%d stored, %d puts", n, len(muts))
	}
	if got := muts[0].Value[0]; got != 0 {
		t.Errorf("flags %#x for an exemplar without its own timestamp", got)
	}
	if got := binary.BigEndian.Uint64(muts[0].Value[1:]); got != 5 {
		t.Errorf("ts %d, want 5", got)
	}
}

func TestExemplarOptions(t *testing.T) {
	if err := (Options{ExemplarSlot: 1500 * time.Microsecond, ExemplarsPerSlot: 257}).Validate(); err == nil ||
		err.Error() != "write: Options.ExemplarSlot must be a whole number of milliseconds (0 means the default, 10s), got 1.5ms\n"+
			"write: Options.ExemplarsPerSlot must be in [1, 256] (0 means the default, 10), got 257" {
		t.Errorf("Validate: %v", err)
	}
	// A one-minute slot keeping two: the newest two of the minute; both point
	// to place 1, the second moves on to place 0.
	w := &Writer{width: time.Hour, opts: Options{ExemplarSlot: time.Minute, ExemplarsPerSlot: 2}.withDefaults()}
	var ex []exemplar.Exemplar
	for i := range 5 {
		ex = append(ex, exemplar.Exemplar{Labels: labels.FromStrings("i", fmt.Sprint(i)), Value: float64(i), Ts: int64(i) * 10_000, HasTs: true})
	}
	got, n := describePuts(t, w, schema.DataKey{Host: "h", Metric: "m", SeriesID: 1}, ex)
	want := "0 0/1 @30000 3 {i=\"3\"}\n0 0/0 @40000 4 {i=\"4\"}\n"
	if got != want || n != 2 {
		t.Errorf("puts (%d):\n%s\nwant:\n%s", n, got, want)
	}
}
