package promapi

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/hbtsdb/hbtsdb/opentsdb"
)

// names answers whether a metric, tag key or tag value was ever written
// (opentsdb.Names), which OpenTSDB knows from its UID table, from the tag
// index over all time: metrics are __name__'s values, tag keys the other
// label names, tag values the values of any of them. It reads each list once
// per request, and only when asked: the OpenTSDB endpoints ask only about
// names the series they read do not show, so that a query of names that
// exist costs nothing more.
type names struct {
	q     queryable
	lists map[string][]string // kind -> sorted names
	// valuesOf caches the values of one tag key, read for a tagv question.
	valuesOf map[string][]string
}

func newNameIndex(q queryable) *names {
	return &names{q: q, lists: map[string][]string{}, valuesOf: map[string][]string{}}
}

// NameExists implements opentsdb.Names.
func (n *names) NameExists(ctx context.Context, kind, name string) (bool, error) {
	qr, err := n.q.Querier(0, math.MaxInt64)
	if err != nil {
		return false, err
	}
	defer qr.Close()
	switch kind {
	case opentsdb.KindMetric:
		vs, err := n.list(ctx, qr, kind)
		_, found := slices.BinarySearch(vs, name)
		return found, err
	case opentsdb.KindTagk:
		ks, err := n.list(ctx, qr, kind)
		_, found := slices.BinarySearch(ks, name)
		return found, err
	case opentsdb.KindTagv:
		ks, err := n.list(ctx, qr, opentsdb.KindTagk)
		if err != nil {
			return false, err
		}
		for _, k := range ks {
			vs, ok := n.valuesOf[k]
			if !ok {
				if vs, _, err = qr.LabelValues(ctx, k, nil); err != nil {
					return false, fmt.Errorf("values of tag %s: %w", k, err)
				}
				n.valuesOf[k] = vs
			}
			if _, found := slices.BinarySearch(vs, name); found {
				return true, nil
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("no kind of name %q", kind)
}

// list reads (once) the metric names or the tag keys, sorted.
func (n *names) list(ctx context.Context, qr storage.Querier, kind string) ([]string, error) {
	if l, ok := n.lists[kind]; ok {
		return l, nil
	}
	var l []string
	var err error
	if kind == opentsdb.KindMetric {
		l, _, err = qr.LabelValues(ctx, labels.MetricName, nil)
	} else {
		l, _, err = qr.LabelNames(ctx, nil)
		l = dropName(l)
	}
	if err != nil {
		return nil, fmt.Errorf("%s of the tag index: %w", kind, err)
	}
	n.lists[kind] = l
	return l, nil
}
