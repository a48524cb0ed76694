package importer_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// point is one sample as the tests compare them: a float's bits, so that NaN
// compares too, or a native histogram's String.
type point struct {
	T    int64
	Bits uint64
	H    string
}

func (p point) String() string {
	if p.H != "" {
		return fmt.Sprintf("%d:%s", p.T, p.H)
	}
	return fmt.Sprintf("%d:%v", p.T, math.Float64frombits(p.Bits))
}

// dataset is series (by their labels' String) and their samples in time order.
type dataset map[string][]point

func (d dataset) samples() int {
	n := 0
	for _, ps := range d {
		n += len(ps)
	}
	return n
}

// openDB makes a store of backend b with its schema and opens a DB on it with
// the server's write limits.
func openDB(t *testing.T, b schematest.Backend) (*db.DB, kv.Store, schema.Settings) {
	t.Helper()
	st := b.Store(t)
	schematest.CreateWith(t, st, b.Settings, b.TableOptions)
	d, err := db.Open(context.Background(), db.Options{Store: st, Settings: b.Settings, Rollups: b.TableOptions.Rollups,
		RawRetention: b.TableOptions.RawRetention, Write: write.Options{Limits: write.DefaultLimits()}})
	if err != nil {
		t.Fatalf("db.Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, st, b.Settings
}

// readAll reads every series of d between mint and maxt through the query
// path (Prometheus' Querier).
func readAll(t *testing.T, d *db.DB, mint, maxt int64) dataset {
	t.Helper()
	q, err := d.Querier(mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	got := dataset{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var ps []point
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				ps = append(ps, point{T: ts, Bits: math.Float64bits(v)})
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				ps = append(ps, point{T: ts, H: h.String()})
			default:
				ts, fh := it.AtFloatHistogram(nil)
				ps = append(ps, point{T: ts, H: fh.String()})
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		got[s.Labels().String()] = ps
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// diff describes how got differs from want, "" when it does not.
func diff(want, got dataset) string {
	var b strings.Builder
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			fmt.Fprintf(&b, "series %s missing\n", k)
			continue
		}
		if !slices.Equal(want[k], g) {
			fmt.Fprintf(&b, "series %s: %d samples, want %d; first difference: %s\n", k, len(g), len(want[k]), firstDiff(want[k], g))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "series %s not expected (%d samples)\n", k, len(got[k]))
		}
	}
	return b.String()
}

func firstDiff(want, got []point) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("sample %d is %s, want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// embedded is the embedded backend of schematest.
func embedded() schematest.Backend { return schematest.Backends()[0] }

// hbaseBackend is the HBase backend of schematest (it skips or fails the test
// without a test HBase, as testing/hbasetest says).
func hbaseBackend() schematest.Backend { return schematest.Backends()[1] }

// hoursAgo is a time h hours before now, on a whole second.
func hoursAgo(h float64) int64 {
	return time.Now().Add(-time.Duration(h * float64(time.Hour))).Truncate(time.Second).UnixMilli()
}
