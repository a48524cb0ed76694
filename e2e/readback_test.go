package e2e

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hbtsdb/hbtsdb/db"
	"github.com/hbtsdb/hbtsdb/schema/provision"
)

// readBack opens the store in-process (tsdb serve has stopped) and reads every series
// with samples in [mint, maxt] (ms, inclusive), stale markers included, through
// db.DB's reader — the package API tsdb's own reads use: the tag index for the
// series of the window, then each series' data rows. It also reads the metadata of
// each of families. Each read of the store has stallTimeout, the whole no budget: on
// a loaded HBase thousands of series take long but keep coming.
func readBack(ctx context.Context, st store, mint, maxt int64, families []string) (_ seriesSet, _ map[string]metadata, err error) {
	s, err := st.open(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("open the %s store: %w", st.name, err)
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, stallTimeout) }
	sctx, cancel := step()
	settings, err := provision.Read(sctx, s)
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("read the schema settings: %w", err)
	}
	sctx, cancel = step()
	d, err := db.Open(sctx, db.Options{Store: s, Settings: settings})
	cancel()
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, d.Close()) }()
	r := d.Reader()

	all := labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")
	sctx, cancel = step()
	lsets, err := r.SeriesInRange(sctx, mint, maxt, all)
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("series in [%d, %d]: %w", mint, maxt, err)
	}
	set := seriesSet{}
	for _, ls := range lsets {
		key := ls.String()
		if _, dup := set[key]; dup {
			return nil, nil, fmt.Errorf("series %s listed twice", key)
		}
		sctx, cancel := step()
		samples, err := r.Samples(sctx, ls, mint, maxt)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		out := &series{labels: ls}
		for _, p := range samples {
			if p.T < mint || p.T > maxt {
				return nil, nil, fmt.Errorf("series %s: sample at %s outside [%d, %d]", key, fmtTime(p.T), mint, maxt)
			}
			if n := len(out.samples); n > 0 && out.samples[n-1].t >= p.T {
				return nil, nil, fmt.Errorf("series %s: sample at %s after one at %s: not in strictly increasing time order",
					key, fmtTime(p.T), fmtTime(out.samples[n-1].t))
			}
			out.samples = append(out.samples, sample{t: p.T, v: p.V})
		}
		if len(out.samples) > 0 {
			set[key] = out
		}
	}
	meta := map[string]metadata{}
	for _, f := range families {
		sctx, cancel := step()
		m, ok, err := r.Metadata(sctx, f)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		if ok {
			meta[f] = metadata{Type: string(m.Type), Help: m.Help, Unit: m.Unit}
		}
	}
	return set, meta, nil
}
