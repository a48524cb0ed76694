package query

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"
)

// selection is the outcome of a Select's plan: the series, sorted by labels,
// and the range to read. rows is set when the plan read the samples already
// (the host/metric scan), one entry per series.
type selection struct {
	series     []series
	rows       [][]bucketSamples
	mint, maxt int64
	onlyLabels bool
}

// plan selects the series of a Select of [mint, maxt] (clamped, mint <= maxt).
func (r *Reader) plan(ctx context.Context, mint, maxt int64, limit int, onlyLabels bool, ms []*labels.Matcher) (selection, error) {
	ss, err := r.selectSeries(ctx, mint, maxt, limit, ms)
	if err != nil {
		return selection{}, err
	}
	return selection{series: ss, mint: mint, maxt: maxt, onlyLabels: onlyLabels}, nil
}
