package query_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hbtsdb/hbtsdb/cellenc"
	"github.com/hbtsdb/hbtsdb/query"
	"github.com/hbtsdb/hbtsdb/schema/schematest"
)

// Every read path decodes data rows the same way: the fixture's series d has a
// stored chunk (20=2 30=3 40=4) and raw cells (30=103 50=105) in one bucket, and
// Select (querier_test.go), Samples and Last all see 20=2 30=103 40=4 50=105 —
// chunk and raw merged, the raw sample winning on the shared timestamp.
func TestEveryReadPathMergesChunkAndRawCells(t *testing.T) {
	for _, b := range schematest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			r := newFixture(t, b).reader(query.Options{})

			for _, tc := range []struct {
				name       string
				mint, maxt int64
				want       string
			}{
				{"the whole bucket", 0, 3 * hour, "20=2 30=103 40=4 50=105"},
				{"cut to a range inside the chunk", 25, 45, "30=103 40=4"},
				{"a range with only chunk samples", 35, 45, "40=4"},
			} {
				got, err := r.Samples(ctx, serD, tc.mint, tc.maxt)
				if err != nil {
					t.Fatal(err)
				}
				if s := render(got); s != tc.want {
					t.Errorf("Samples, %s: %s, want %s", tc.name, s, tc.want)
				}
			}

			for n, want := range map[int]string{1: "50=105", 2: "50=105 40=4", 3: "50=105 40=4 30=103", 10: "50=105 40=4 30=103 20=2"} {
				last, err := r.Last(ctx, "h1", "mem", n)
				if err != nil {
					t.Fatal(err)
				}
				if len(last) != 1 || last[0].Labels.String() != serD.String() {
					t.Fatalf("Last(n=%d) = %+v, want series d only", n, last)
				}
				if s := render(last[0].Samples); s != want {
					t.Errorf("Last(n=%d) = %s, want %s (newest first)", n, s, want)
				}
			}
		})
	}
}

func render(samples []cellenc.Sample) string {
	s := ""
	for i, x := range samples {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d=%s", x.T, bits(x.V))
	}
	return s
}
