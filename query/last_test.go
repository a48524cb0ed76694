package query_test

import (
	"context"
	"slices"
	"sync/atomic"
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

// rowCountingStore is a real store that counts the data rows its scans hand out.
type rowCountingStore struct {
	kv.Store
	rows atomic.Int64
}

func (s *rowCountingStore) Scan(ctx context.Context, table string, start, stop []byte, opts ...kv.ReadOption) kv.Scanner {
	sc := s.Store.Scan(ctx, table, start, stop, opts...)
	if table != schema.TableData {
		return sc
	}
	return &countingScanner{Scanner: sc, rows: &s.rows}
}

type countingScanner struct {
	kv.Scanner
	rows *atomic.Int64
}

func (c *countingScanner) Next() bool {
	ok := c.Scanner.Next()
	if ok {
		c.rows.Add(1)
	}
	return ok
}

// TestLastReadsOnlyTheNewestRows writes 30 days of hourly readings (720 data
// rows) for two series of one host/metric and checks that Last returns the
// newest n newest first while reading at most n rows per matching series and one
// row per other series, never the history.
func TestLastReadsOnlyTheNewestRows(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			b.TableOptions.RawRetention = 0
			st := b.Store(t)
			ctx := context.Background()
			w, err := write.New(st, b.Settings, nil, nil, write.Options{})
			if err != nil {
				t.Fatal(err)
			}
			const hours = 30 * 24
			start := time.Date(2023, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			a := labels.FromStrings("__name__", "temp", "host", "h1", "sensor", "a")
			bb := labels.FromStrings("__name__", "temp", "host", "h1", "sensor", "b")
			req := &write.Request{}
			for _, ls := range []labels.Labels{a, bb} {
				s := write.Series{Labels: ls}
				for i := range hours {
					// Two readings per hour: at :10 and :40.
					s.Samples = append(s.Samples, cellenc.Sample{T: start + int64(i)*3_600_000 + 600_000, V: float64(2 * i)},
						cellenc.Sample{T: start + int64(i)*3_600_000 + 2_400_000, V: float64(2*i + 1)})
				}
				req.Series = append(req.Series, s)
			}
			for i := 0; i < len(req.Series[0].Samples); i += 500 {
				part := &write.Request{}
				for _, s := range req.Series {
					part.Series = append(part.Series, write.Series{Labels: s.Labels, Samples: s.Samples[i:min(i+500, len(s.Samples))]})
				}
				if res, err := w.Write(ctx, part); err != nil || len(res.Rejected) > 0 {
					t.Fatalf("write: %v %+v", err, res.Rejected)
				}
			}
			counting := &rowCountingStore{Store: st}
			r := query.NewReader(counting, b.Settings, index.NewRegistry(st, index.RegistryOptions{}), nil)
			newest := func(i int) cellenc.Sample { // the i-th newest reading of series a
				k := 2*hours - 1 - i
				return cellenc.Sample{T: start + int64(k/2)*3_600_000 + 600_000 + int64(k%2)*1_800_000, V: float64(k)}
			}
			for _, tc := range []struct {
				name   string
				n      int
				sets   [][]*labels.Matcher
				series []labels.Labels
				rows   int64
			}{
				{name: "n=1 reads one row per series", n: 1, series: []labels.Labels{a, bb}, rows: 2},
				{name: "n=5 crosses two bucket boundaries and reads 3 rows per series", n: 5, series: []labels.Labels{a, bb}, rows: 6},
				{name: "a matcher skips the other series after its first row", n: 5,
					sets: [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "sensor", "a")}}, series: []labels.Labels{a}, rows: 3 + 1},
			} {
				t.Run(tc.name, func(t *testing.T) {
					counting.rows.Store(0)
					got, err := r.Last(ctx, "h1", "temp", tc.n, tc.sets...)
					if err != nil {
						t.Fatal(err)
					}
					if rows := counting.rows.Load(); rows != tc.rows {
						t.Errorf("read %d data rows, want %d", rows, tc.rows)
					}
					if len(got) != len(tc.series) {
						t.Fatalf("got %d series, want %d", len(got), len(tc.series))
					}
					for i, s := range got {
						if !labels.Equal(s.Labels, tc.series[i]) {
							t.Errorf("series %d is %s, want %s", i, s.Labels, tc.series[i])
						}
						var want []cellenc.Sample
						for j := range tc.n {
							want = append(want, newest(j))
						}
						if labels.Equal(s.Labels, a) && !slices.Equal(s.Samples, want) {
							t.Errorf("samples of %s = %v, want %v", s.Labels, s.Samples, want)
						}
						if len(s.Samples) != tc.n {
							t.Errorf("%s has %d samples, want %d", s.Labels, len(s.Samples), tc.n)
						}
					}
				})
			}
			if _, err := r.Last(ctx, "h1", "temp", 0); err == nil {
				t.Error("n=0 was accepted")
			}
		})
	}
}
