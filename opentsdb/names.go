package opentsdb

import (
	"context"
	"fmt"
)

// The kinds of names OpenTSDB keeps UIDs for, as its NoSuchUniqueName names
// them.
const (
	KindMetric = "metrics"
	KindTagk   = "tagk"
	KindTagv   = "tagv"
)

// Names tells whether a metric, tag key or tag value was ever written, which
// OpenTSDB knows from its UID table: a sub-query naming one that was not is
// answered 400 "No such name for 'metrics': 'x'". A Source that implements it
// gets its sub-queries checked; Run asks only about names the series it read
// do not show.
type Names interface {
	// NameExists reports whether a name of the kind (KindMetric, KindTagk,
	// KindTagv) exists. A tag value exists when any tag key has it.
	NameExists(ctx context.Context, kind, name string) (bool, error)
}

// literalExpansionLimit is tsd.query.filter.expansion_limit [4096]: a
// case-sensitive literal_or filter of at most so many values resolves each
// to its UID (TagVLiteralOrFilter.resolveTagkName), so an unknown one is an
// error; a longer one resolves its tag key only.
const literalExpansionLimit = 4096

// checkNames is TsdbQuery.configureFromQuery's UID resolution for q, whose
// metric's series are series: the metric, then each filter's tag key and, for
// a case-sensitive literal_or, its values.
func (q *SubQuery) checkNames(ctx context.Context, names Names, series []Series) error {
	seen := func(kind, name string) bool {
		for i := range series {
			switch kind {
			case KindMetric:
				return true
			case KindTagk:
				if _, ok := series[i].Tags[name]; ok {
					return true
				}
			case KindTagv:
				for _, v := range series[i].Tags {
					if v == name {
						return true
					}
				}
			}
		}
		return false
	}
	check := func(kind, name string) error {
		if seen(kind, name) {
			return nil
		}
		ok, err := names.NameExists(ctx, kind, name)
		if err != nil {
			return fmt.Errorf("opentsdb: is there a %s named %q: %w", kind, name, err)
		}
		if !ok {
			msg := fmt.Sprintf("No such name for '%s': '%s'", kind, name)
			return &Error{Status: 400, Message: msg, Details: msg}
		}
		return nil
	}
	if err := check(KindMetric, q.Metric); err != nil {
		return err
	}
	for _, f := range q.Filters {
		if f.Type == "literal_or" && len(f.literals) <= literalExpansionLimit {
			// resolveTags looks the values up first and the tag key last.
			for _, v := range f.literals {
				if err := check(KindTagv, v); err != nil {
					return err
				}
			}
		}
		if err := check(KindTagk, f.Tagk); err != nil {
			return err
		}
	}
	return nil
}
