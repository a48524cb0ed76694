package db_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/compact"
	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/kv"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
	"github.com/hbtsdb/hbtsdb/write"
)

// listedOnDelDay0 is what the tag index lists for __name__=~"x|y" on delDay0
// (the series API's answer), as label strings.
func listedOnDelDay0(t *testing.T, d *db.DB) []string {
	t.Helper()
	ls, err := d.Reader().SeriesInRange(context.Background(), delDay0.UnixMilli(), delDay0.Add(24*time.Hour).UnixMilli()-1,
		labels.MustNewMatcher(labels.MatchRegexp, "__name__", "x|y"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.String())
	}
	slices.Sort(out)
	return out
}

// namesOnDelDay0 is what the tag index answers for the values of __name__ on
// delDay0, with no matcher (the label values API: the index rows alone).
func namesOnDelDay0(t *testing.T, d *db.DB) []string {
	t.Helper()
	q, err := d.Reader().Querier(delDay0.UnixMilli(), delDay0.Add(24*time.Hour).UnixMilli()-1)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	vs, _, err := q.LabelValues(context.Background(), labels.MetricName, nil)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func deleteY(t *testing.T, d *db.DB, dry bool) (compact.DeleteStats, error) {
	t.Helper()
	opts := deleteOpts("deleter")
	opts.DryRun = dry
	return d.Delete(context.Background(), db.DeleteRequest{
		MatcherSets: [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "__name__", "y")}},
		Mint:        0, Maxt: kv.MaxTimestamp}, opts)
}

func writeAt(t *testing.T, d *db.DB, ls labels.Labels, at time.Time, v float64) {
	t.Helper()
	req := write.Request{Series: []write.Series{{Labels: ls, Samples: []cellenc.Sample{{T: at.UnixMilli(), V: v}}}}}
	if _, err := d.Write(context.Background(), &req); err != nil {
		t.Fatal(err)
	}
}

var (
	listedAll   = []string{delH0.String(), delH1.String(), delY.String()}
	listedOnlyX = []string{delH0.String(), delH1.String()}
)

// TestDeleteUnindexesSeriesDaysLeftEmpty: a delete that leaves a series no
// sample on a day removes its tag index entries of that day (the series API
// no longer lists it), one that leaves some keeps them, a dry run counts
// without removing; and a series written again on that day afterwards — by
// another process that had already indexed it there, and so would skip it
// without the index generation — is found again, on both backends (on HBase
// the postings' delete markers must not hide the new postings).
func TestDeleteUnindexesSeriesDaysLeftEmpty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		d, st := deleteDB(t, b, 4*time.Hour)
		other := openDeleteDB(t, st, b.Settings)
		writeAt(t, other, delY, delDay0.Add(6*time.Hour+30*time.Minute), 1) // other's cache: y indexed on delDay0

		if got, err := deleteH0(t, d, deleteOpts("deleter")); err != nil || got.Unindexed != 0 {
			t.Fatalf("delete of part of h0's day: %+v, %v; want nothing unindexed", got, err)
		}
		if got, err := deleteY(t, d, true); err != nil || got.Unindexed != 1 || got.Samples != 1441 {
			t.Fatalf("dry run: %+v, %v; want 1441 samples and 1 series-day unindexed", got, err)
		}
		if got := listedOnDelDay0(t, d); !slices.Equal(got, listedAll) {
			t.Fatalf("after the dry run, listed %v, want %v", got, listedAll)
		}
		if got, err := deleteY(t, d, false); err != nil || got.Unindexed != 1 || got.Samples != 1441 {
			t.Fatalf("delete of y: %+v, %v; want 1441 samples and 1 series-day unindexed", got, err)
		}
		for _, p := range []*db.DB{d, other} {
			if got := listedOnDelDay0(t, p); !slices.Equal(got, listedOnlyX) {
				t.Errorf("after deleting y, listed %v, want %v", got, listedOnlyX)
			}
			if got := namesOnDelDay0(t, p); !slices.Equal(got, []string{"x"}) {
				t.Errorf("after deleting y, __name__ values %v, want [x]", got)
			}
		}
		if got, err := deleteY(t, d, false); err != nil || got.Unindexed != 0 || got.Series != 0 {
			t.Errorf("deleting y again: %+v, %v; want nothing", got, err)
		}

		at := delDay0.Add(6*time.Hour + 45*time.Minute)
		writeAt(t, other, delY, at, 42)
		for _, p := range []*db.DB{d, other} {
			if got := listedOnDelDay0(t, p); !slices.Equal(got, listedAll) {
				t.Errorf("after writing y again, listed %v, want %v", got, listedAll)
			}
			if got := namesOnDelDay0(t, p); !slices.Equal(got, []string{"x", "y"}) {
				t.Errorf("after writing y again, __name__ values %v, want [x y]", got)
			}
			m, _ := runPromQL(t, p, "y", at, at, time.Minute, query.ResolutionRaw)
			if len(m) != 1 || len(m[0].Floats) != 1 || m[0].Floats[0].F != 42 {
				t.Errorf("y at %s after writing it again: %v, want 42", at, m)
			}
		}
	})
}

// TestUnindexInterruptedIsFinished: a delete whose removal of postings fails
// leaves its unindex row; the same delete run again, or any other delete,
// finishes it.
func TestUnindexInterruptedIsFinished(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b schematest.Backend) {
		for _, rerun := range []string{"the same delete", "another delete"} {
			t.Run(rerun, func(t *testing.T) {
				d, st := deleteDB(t, b, 4*time.Hour)
				st.failIndex.Store(true)
				if got, err := deleteY(t, d, false); err == nil || got.Samples != 1440 {
					t.Fatalf("delete with the index failing: %+v, %v; want the samples deleted and an error", got, err)
				}
				st.failIndex.Store(false)
				if n := unindexRows(t, st); n != 1 {
					t.Fatalf("%d unindex rows after the failed delete, want 1", n)
				}
				if got := listedOnDelDay0(t, d); !slices.Equal(got, listedAll) {
					t.Fatalf("after the failed delete, listed %v, want %v", got, listedAll)
				}
				var got compact.DeleteStats
				var err error
				if rerun == "the same delete" {
					got, err = deleteY(t, d, false)
				} else {
					got, err = d.Delete(context.Background(), db.DeleteRequest{
						MatcherSets: [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "__name__", "nothing")}},
						Mint:        0, Maxt: kv.MaxTimestamp}, deleteOpts("deleter"))
				}
				if err != nil || got.Unindexed != 1 {
					t.Fatalf("%s: %+v, %v; want 1 series-day unindexed", rerun, got, err)
				}
				if n := unindexRows(t, st); n != 0 {
					t.Errorf("%d unindex rows left, want 0", n)
				}
				if got := listedOnDelDay0(t, d); !slices.Equal(got, listedOnlyX) {
					t.Errorf("listed %v, want %v", got, listedOnlyX)
				}
			})
		}
	})
}

func unindexRows(t *testing.T, st kv.Store) int {
	t.Helper()
	prefix := []byte(schema.UnindexRowPrefix)
	sc := st.Scan(context.Background(), schema.TableMeta, prefix, kv.PrefixEnd(prefix))
	defer sc.Close()
	n := 0
	for sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
