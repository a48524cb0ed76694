package promquery

import "testing"

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %g, want %g", tc.in, got, tc.want)
		}
	}
}

func TestQuantileIsTheNearestRank(t *testing.T) {
	values := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}} {
		if got := Quantile(values, tc.q); got != tc.want {
			t.Errorf("Quantile(%v, %g) = %g, want %g", values, tc.q, got, tc.want)
		}
	}
	if got := Quantile([]float64(nil), 0.5); got != 0 {
		t.Errorf("Quantile of nothing = %g, want 0", got)
	}
}

func TestCountResultReadsSeriesSamplesAndStats(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"host":"a"},"values":[[1,"1"],[2,"2"]]},
		{"metric":{"host":"b"},"values":[[1,"1"]],"histograms":[[2,{"count":"1"}]]}],
		"stats":{"timings":{},"samples":{"totalQueryableSamples":42,"peakSamples":7}}}}`
	a, err := CountResult([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Answer{Series: 2, Samples: 4, QueryableSamples: 42}); a != want {
		t.Errorf("CountResult = %+v, want %+v", a, want)
	}
	if _, err := CountResult([]byte(`{"status":"error","error":"bad"}`)); err == nil {
		t.Error("an error answer was counted, want an error")
	}
}
