package compact

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
	"github.com/hbtsdb/hbtsdb/schema"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// rowsOf returns the data row keys of series i of the fixture, buckets day0 ..
// day0+3h.
func (f *fixture) rowsOf(i int) [][]byte {
	p := f.settings.PlacementOf(f.series[i])
	id, err := f.r.SeriesRefs(context.Background(), day0, day0+4*hour, labelsMatchers(f.series[i])...)
	if err != nil || len(id) != 1 {
		panic(fmt.Sprintf("series %d: %v, %v", i, id, err))
	}
	var keys [][]byte
	for b := day0; b <= day0+3*hour; b += hour {
		keys = append(keys, schema.DataRowKey(nil, p.DataKey(id[0].ID, b)))
	}
	return keys
}

// A delete that stops after any of its steps is finished by running it again:
// exactly the range's samples are gone, and the rollup cells are those of
// the samples left, to the bit.
func TestDeleteSurvivesACrashAtEveryStep(t *testing.T) {
	for _, b := range schematest.Backends() {
		for _, step := range []string{"rollups rewritten", "chunks rewritten", "raw deleted"} {
			t.Run(b.Name+"/"+step, func(t *testing.T) {
				f := newFixture(t, b)
				if _, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background()); err != nil {
					t.Fatal(err)
				}
				// Series 0 from 00:30 to 01:30 (inclusive) and into the open
				// bucket: parts of the chunks of buckets 0 and 1, and raw cells
				// of bucket 3.
				mint, maxt := day0+hour/2, day0+hour+hour/2
				want := f.samples(t)
				want[0] = slices.DeleteFunc(want[0], func(s cellenc.Sample) bool { return s.T >= mint && s.T <= maxt })
				wantDump := dumpOf(f, want)
				keys := append(f.rowsOf(0), f.rowsOf(0)...) // a row named twice is deleted once
				crash := errors.New("crash")
				opts := DeleteOptions{Owner: "deleter", Compact: Options{Rollups: testRollups, Now: func() time.Time { return f.now }}}
				opts.afterStep = func(s string) error {
					if s == step {
						return crash
					}
					return nil
				}
				if _, err := Delete(context.Background(), f.st, f.settings, opts, keys, mint, maxt); !errors.Is(err, crash) {
					t.Fatalf("Delete = %v, want the crash", err)
				}
				opts.afterStep = nil
				st, err := Delete(context.Background(), f.st, f.settings, opts, keys, mint, maxt)
				if err != nil {
					t.Fatal(err)
				}
				if st.Series > 1 {
					t.Errorf("the second run counted %d series, want at most 1", st.Series)
				}
				if got := f.dump(t); got != wantDump {
					t.Errorf("samples after the delete run again:\ngot  %s\nwant %s", got, wantDump)
				}
				f.checkRollups(t, testRollups, want)
				// Compaction afterwards leaves it so.
				f.now = f.now.Add(2 * time.Hour)
				if _, err := f.compactor(t, Options{Rollups: testRollups}).Compact(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := f.dump(t); got != wantDump {
					t.Errorf("samples after compaction:\ngot  %s\nwant %s", got, wantDump)
				}
			})
		}
	}
}

// dumpOf renders samples as fixture.dump renders what is stored.
func dumpOf(f *fixture, samples [][]cellenc.Sample) string {
	var b strings.Builder
	for i, ls := range f.series {
		fmt.Fprintf(&b, "%s:", ls)
		for _, s := range samples[i] {
			fmt.Fprintf(&b, " %d=%x", s.T, math.Float64bits(s.V))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// labelsMatchers selects exactly the series ls.
func labelsMatchers(ls labels.Labels) []*labels.Matcher {
	var ms []*labels.Matcher
	ls.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
	return ms
}
